"""A trained BERT-like encoder behind the explorer's model interface (models/base.py), made from a spec.

Every trained model of the page is one `TrainedSpec` (its id, the pinned files it is made from, its
sizes, presets, sentence pairs and texts: models/minilm.py is one) and one `TrainedModel(spec)`
in models/__init__.py's registry. build.py makes each spec's bundle and the page lists it; nothing
else names a trained model.

The description is known at once, so the model picker can list the model, but the tokenizer and
the forward pass need its bundle, which build.py writes to ``dist/models/`` and the worker
downloads when a reader chooses the model: one safetensors file in the int8 format of
``quantize.py`` whose metadata carries, besides the format and config.json, the vocabulary
(``vocab``: vocab.txt's text) and the measured head labels (``heads``: JSON, see
head_patterns), so one download brings everything the model needs.

    model.install(blob)        bytes of the bundle -> the model is available
    model.available            False until then; tokenize/forward raise NotLoaded

bert, quantize and safetensors are imported only when the weights arrive: the worker fetches
those modules with the bundle, so the default page loads none of them (build.TRAINED_ONLY_MODULES).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np

from .. import core, tokens as tokens_mod
from .base import DimRegion, EmbeddingTrace, HeadInfo, ModelDescription, ModelRun, PairPreset, Preset
from .wordpiece import CLS, CONTINUATION, MAX_PIECES, SEP, SPECIAL_TOKENS, UNK, WordPiece


@dataclass(frozen=True)
class TrainedSpec:
    """One trained BERT-like model: all the page needs to know before its weights are downloaded."""

    id: str  # the #model value and the permalink's m= ("minilm")
    name: str  # "all-MiniLM-L6-v2": the comparison card and the download button name it
    about: str  # an honest paragraph: what it was trained for, how its weights are stored
    source: str  # where its files come from and their licence (credits)
    pins: str  # the runtime-pins.json group with model.safetensors, config.json, vocab.txt, README.md
    card: str  # the model card's file name in dist/models/ (attribution)
    n_layers: int  # the sizes config.json states; install() checks the weights against them
    n_heads: int
    d_model: int
    d_ff: int
    download_mb: int  # the bundle's size, gzip-compressed, rounded (build.py checks it)
    presets: tuple[Preset, ...]  # queries given by word (query_word): found once the vocabulary is in
    pairs: tuple[PairPreset, ...] = ()  # the two-sentence view's ready-made pairs

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def label(self) -> str:
        """The name in the model picker and the page's texts."""
        return f"Trained: {self.name} ({self.n_layers} layers × {self.n_heads} heads)"


# What a pattern label means, for the head picker's explanation (head_patterns' "label" values).
PATTERN_TEXT = {
    "previous token": "mostly attends to the token just before the query",
    "next token": "mostly attends to the token just after the query",
    "self": "mostly attends to the query token itself",
    "[CLS]": "mostly rests on [CLS], the start token: a no-op for queries with nothing to look up",
    "[SEP]": "mostly rests on [SEP], the end token: a no-op for queries with nothing to look up",
    "punctuation": "mostly attends to punctuation (commas and full stops)",
    "broad": "spreads its attention over many tokens (a bag-of-words average)",
}

# Published findings, cited with care: Clark et al. (2019), "What Does BERT Look At?", studied the
# masked-LM BERT-base; a distilled student fine-tuned for another task shows a family resemblance
# at most, never a guarantee.
CLARK = "Clark et al. (2019, “What Does BERT Look At?”)"
FINDINGS = {
    "previous token": f"{CLARK} found heads like this in BERT-base's early layers, each attending to the "
    "previous token; they help the model know what sits next to a word.",
    "next token": f"{CLARK} found such next-token heads in BERT-base's early layers too.",
    "[SEP]": f"{CLARK} found many BERT-base heads parked on [SEP], and showed that the attention there "
    "changes the output little: a no-op for queries with nothing to look up.",
    "[CLS]": f"{CLARK} found BERT-base's heads parking on [SEP] as a no-op; this model, trained differently, "
    "parks on [CLS] instead (measured); whether that is a no-op here, the routing panel shows: how "
    "much of what the head brings back comes from [CLS].",
    "broad": f"{CLARK} found broad heads in BERT-base's lower layers, averaging over the sentence much like "
    "a bag of words.",
}

# A pattern label in plain words: the head picker's name for a head ("Head 3: the previous word, 100 %"),
# short enough for the picker (its explanation says more)
PLAIN_NAMES = {
    "previous token": "the previous word",
    "next token": "the next word",
    "self": "the word itself",
    "[CLS]": "[CLS]: does nothing",
    "[SEP]": "[SEP]: does nothing",
    "punctuation": "punctuation",
    "broad": "spread over the words",
}
# The patterns a reader can see at a glance in any sentence: a trained model opens on its clearest
# such head (the highest measured score), not on its first head (showcase)
CLEAR = ("previous token", "next token", "self", "punctuation")

PRONOUNS = frozenset("it he she they him her them its his their we us you i".split())


def preset(id, title, text, look_for, query_word, layer=0, head=0) -> Preset:
    """A trained model's preset: its query is a word piece, found when the vocabulary is loaded."""
    return Preset(id, title, text, look_for, query=-1, head=head, layer=layer, query_word=query_word)


def _placeholder_heads(spec: TrainedSpec) -> tuple:
    """Before the bundle is loaded the heads have numbers only; install() replaces them."""
    return tuple(
        tuple(
            HeadInfo(
                "trained head", f"l{l}h{h}", "A trained head; its measured pattern is shown once the model is loaded."
            )
            for h in range(spec.n_heads)
        )
        for l in range(spec.n_layers)
    )


def _measured_heads(spec: TrainedSpec, labels) -> tuple:
    """HeadInfo per layer from the bundle's measured labels: [[{"label", "score"}, ...] per layer]."""
    out = []
    for l, layer in enumerate(labels):
        infos = []
        for h, m in enumerate(layer):
            label, score = str(m["label"]), float(m["score"])
            what = PATTERN_TEXT.get(label, label)
            infos.append(
                HeadInfo(
                    f"{PLAIN_NAMES.get(label, label)}, {round(score * 100)} %",
                    f"l{l}h{h}",
                    f"Layer {l + 1}, head {h + 1} {what}: on a corpus of sentences, {round(score * 100)} % of its "
                    "attention follows this pattern (measured, not designed). Trained heads are rarely this tidy: "
                    "most mix several patterns."
                    + (
                        f" {FINDINGS[label]} {spec.name} is not the masked-LM BERT those findings come from."
                        if label in FINDINGS
                        else ""
                    ),
                )
            )
        out.append(tuple(infos))
    assert len(out) == spec.n_layers and all(len(l) == spec.n_heads for l in out), "one label per head of every layer"
    return tuple(out)


def showcase(labels) -> tuple[int, int]:
    """(layer, head) of the clearest measured head: the highest score among the CLEAR patterns (any
    pattern when none is clear)."""
    heads = [
        (float(m["score"]), l, h, m["label"] in CLEAR) for l, layer in enumerate(labels) for h, m in enumerate(layer)
    ]
    clear = [x for x in heads if x[3]] or heads
    _, l, h, _ = max(clear, key=lambda x: (x[0], -x[1], -x[2]))
    return l, h


def describe(spec: TrainedSpec, heads) -> ModelDescription:
    return ModelDescription(
        id=spec.id,
        name=spec.label,
        about=spec.about,
        n_layers=spec.n_layers,
        heads=heads,
        d_model=spec.d_model,
        d_k=spec.d_k,
        d_ff=spec.d_ff,
        activations=("gelu",),
        max_tokens=MAX_PIECES,
        dim_names=("",) * spec.d_model,
        dim_regions=(
            DimRegion(
                0,
                spec.d_model,
                "learned",
                "learned dims",
                "a trained model's dimensions have no names: each mixes many features",
            ),
        ),
        unit_names=("",) * spec.d_ff,
        presets=spec.presets,
        pairs=spec.pairs,
        download_mb=spec.download_mb,
        default_text=spec.presets[0].text,
        default_query=-1,  # -1: the query is found by default_query()
        headline=f"This is a trained model, {spec.name}: its weights were learned from data, so what its heads "
        "do was measured, not designed, and most of them mix several jobs.",
    )


class NotLoaded(tokens_mod.TokenError):
    """The model's bundle has not been downloaded yet (the message is for the reader)."""


class TrainedModel:
    """A trained BERT-like encoder: the spec's description at once, its weights once installed."""

    def __init__(self, spec: TrainedSpec):
        self.spec = spec
        self.description = describe(spec, _placeholder_heads(spec))
        self._weights = None  # bert.BertWeights once installed
        self._tokenizer = None  # WordPiece once installed

    @property
    def available(self) -> bool:
        return self._weights is not None

    def install(self, blob) -> None:
        """Load the bundle (bytes of the int8 safetensors file build.py writes)."""
        from . import bert, quantize, safetensors

        tensors, meta = safetensors.load_with_metadata(blob)
        if meta.get("format") != quantize.FORMAT or "vocab" not in meta or "heads" not in meta:
            raise ValueError(
                f"this file is not the explorer's bundle of {self.spec.name} (format, vocab or head labels missing)"
            )
        config = json.loads(meta["config"]) if "config" in meta else None
        weights = bert.load_weights(quantize.dequantize(tensors, lazy_embeddings=True), config)
        self.install_weights(weights, WordPiece.from_text(meta["vocab"]), json.loads(meta["heads"]))

    def install_weights(self, weights, tokenizer: WordPiece, labels=None) -> None:
        """Weights already in memory (build time, tests, install); labels None: placeholder names."""
        s = self.spec
        found = (weights.n_layers, weights.n_heads, weights.d_model, weights.layers[0].w_1.shape[1])
        if found != (s.n_layers, s.n_heads, s.d_model, s.d_ff):
            raise ValueError(
                f"{s.name}: the weights have (layers, heads, d_model, d_ff) = {found}; its spec says "
                f"{(s.n_layers, s.n_heads, s.d_model, s.d_ff)}"
            )
        self._weights, self._tokenizer = weights, tokenizer
        heads = _measured_heads(s, labels) if labels is not None else _placeholder_heads(s)
        presets = tuple(self._locate(p) for p in s.presets)
        self.description = dataclasses.replace(
            describe(s, heads),
            presets=presets,
            default_query=presets[0].query,
            showcase=showcase(labels) if labels is not None else None,
        )

    def _locate(self, preset: Preset) -> Preset:
        toks = self.tokenize(preset.text)
        assert preset.query_word in toks, f"preset {preset.id!r}: {preset.query_word!r} is not in {toks}"
        return dataclasses.replace(preset, query=toks.index(preset.query_word))

    def _need(self):
        if not self.available:
            raise NotLoaded(
                f"The trained model is not loaded yet: choose it in the Model menu to download it "
                f"(about {self.spec.download_mb} MB)."
            )

    def tokenize(self, text: str) -> tuple[str, ...]:
        self._need()
        return tuple(self._tokenizer.tokenize(text))

    def default_query(self, toks) -> int:
        """The first pronoun (the classic question: what does it refer to?), else the last word piece."""
        for i, t in enumerate(toks):
            if t in PRONOUNS:
                return i
        words = [i for i, t in enumerate(toks) if t not in SPECIAL_TOKENS]
        return words[-1] if words else 0

    def forward(self, toks, settings: core.Settings) -> ModelRun:
        self._need()
        from . import bert

        ids = np.array([self._tokenizer.vocab[t] for t in toks], dtype=np.int64)
        emb, traces = bert.forward(self._weights, ids, settings=settings)
        w = self._weights
        embedding = EmbeddingTrace(
            token=emb.word,
            position=emb.position,
            x=emb.out,
            token_type=emb.token_type,
            summed=emb.summed,
            ln_mean=emb.ln_mean,
            ln_std=emb.ln_std,
            ln_gamma=np.asarray(w.emb_ln_gamma, dtype=np.float64),
            ln_beta=np.asarray(w.emb_ln_beta, dtype=np.float64),
        )
        return ModelRun(
            tokens=tuple(toks),
            token_tags=tuple(_tags(t) for t in toks),
            special=tuple(i for i, t in enumerate(toks) if t in (CLS, SEP)),
            embedding=embedding,
            layers=traces,
            params=w.layers,
        )


def _tags(piece: str) -> tuple[str, ...]:
    if piece == CLS:
        return ("special: start of the input",)
    if piece == SEP:
        return ("special: end of the sentence",)
    if piece == UNK:
        return ("unknown: not in the vocabulary",)
    if piece.startswith(CONTINUATION):
        return ("word piece: continues the word before it",)
    return ("word piece",)
