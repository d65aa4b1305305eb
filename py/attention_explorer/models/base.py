"""The one small interface every model of the explorer implements.

A model is an object with

    description: ModelDescription          what the views may know about it (names, sizes, layout)
    tokenize(text) -> tuple[str, ...]      the tokens as the model sees them (specials included);
                                           raises tokens.TokenError with a message for the reader
    forward(tokens, settings: core.Settings) -> ModelRun
                                           every intermediate of every layer, read-only, under the
                                           page's knobs (temperature, √d_k, mask, activation, heads
                                           switched off, the reader's attention function), each
                                           layer computed by core.run_block
    default_query(tokens) -> int           the token most worth clicking in a sentence the reader
                                           typed (the query falls back to it when its word is gone)
    available: bool                        False while its weights are still to be downloaded

Views draw from (state, description, run) and never import a model module, so
a second model needs no view to know it exists. Only plain records live here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

import numpy as np

from .. import core


@dataclass(frozen=True)
class HeadInfo:
    """A head's name and what it does, for the head picker and its explanation."""

    name: str  # "Coreference"; shown in the head picker
    short: str  # "coref"; prefixes residual dims the head writes
    explanation: str  # a paragraph: what the head does and why


@dataclass(frozen=True)
class Preset:
    """A preset sentence with the query, head and note that go with it."""

    id: str
    title: str
    text: str
    look_for: str  # what to look for, shown under the input
    query: int  # index of the token most worth clicking (the token the note talks about)
    head: int = 0  # 0-based index (in `layer`) of the head the note talks about; the preset opens it
    layer: int = 0  # 0-based layer of that head
    query_word: str = ""  # the query's token, for models whose tokenizer is loaded later (query then set)


@dataclass(frozen=True)
class PairPreset:
    """A ready-made pair. `first` becomes the sentence, `second` the second sentence, the first
    `query_word` token of the first sentence the query, (layer, head) the head both pictures show."""

    id: str
    title: str
    first: str
    second: str
    query_word: str  # the token as the model spells it (the trained model lowercases: "it")
    layer: int = 0
    head: int = 0
    note: str = ""  # one line: what to look for (plain text; the view escapes it)
    expect_first: str = ""  # the word a reader takes the query to mean in the first sentence
    expect_second: str = ""  # ... and in the second; "" = no single right answer
    # the words the head picks (strongest_word) at the preset's head with the model's own settings
    # (T = 1, its √d_k, no mask): what the note talks about; tests/test_pairs.py checks them
    picks: tuple = ()

    def __post_init__(self):
        assert self.first and self.second and self.first != self.second, f"{self.id}: two different sentences"
        assert self.query_word, f"{self.id}: a pair needs a query word"
        assert not self.picks or len(self.picks) == 2, f"{self.id}: picks are (first, second)"


def pair(id, title, first, second, query_word, expect, picks, note, layer=0, head=0) -> PairPreset:
    return PairPreset(id, title, first, second, query_word, layer, head, note, expect[0], expect[1], picks)


@dataclass(frozen=True)
class DimRegion:
    """A span of the residual stream with one purpose (the designed model lays its dims out by hand)."""

    start: int
    stop: int
    kind: str  # "features" | "head-slots" | "detectors" | "position" | "learned"
    label: str  # short, for axes: "features", "head slots", "FFN", "position code"
    purpose: str  # for tooltips on empty dims: "the heads write what they found into dims 42–105"


@dataclass(frozen=True)
class ModelDescription:
    """What a model is, for the page: its shape, heads, presets and an honest note."""

    id: str  # the #model value and the permalink's m=
    name: str  # "Designed model (1 layer × 4 heads)"
    about: str  # an honest paragraph: how the weights came to be
    n_layers: int
    heads: tuple  # tuple per layer of tuple[HeadInfo, ...]
    d_model: int
    d_k: int  # per-head dimension; √d_k is the softmax's default scale
    d_ff: int  # FFN width
    activations: tuple[str, ...]  # the FFN nonlinearities this model can run
    max_tokens: int  # the longest input its tokenizer accepts
    dim_names: tuple[str, ...]  # a name per residual dim ("" when it has none)
    dim_regions: tuple[DimRegion, ...]  # the layout of the residual stream, in order
    unit_names: tuple[str, ...]  # a name per FFN unit ("" when it has none)
    presets: tuple[Preset, ...]
    default_text: str
    default_query: int
    pairs: tuple[PairPreset, ...] = ()  # the two-sentence view's ready-made pairs (pairs.py)
    download_mb: int = 0  # its weights' download, rounded (0: nothing to download)
    showcase: Optional[tuple[int, int]] = None  # (layer, head) a reader choosing the model sees first
    headline: str = ""  # one plain line for the first screen: what kind of model this is

    def __post_init__(self):
        assert len(self.heads) == self.n_layers, "one tuple of heads per layer"
        assert len(self.dim_names) == self.d_model, "one name per residual dim"
        assert len(self.unit_names) == self.d_ff, "one name per FFN unit"
        spans = [(r.start, r.stop) for r in self.dim_regions]
        assert len({p.id for p in self.pairs}) == len(self.pairs), f"{self.id}: pair ids must be unique"
        assert (
            spans
            and spans[0][0] == 0
            and spans[-1][1] == self.d_model
            and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        ), "regions must tile the residual stream in order"

    @property
    def picker_label(self) -> str:
        """The name without its size ("Designed model"): the model picker shows this, where the whole
        name would be cut off; the layer and head pickers show the size."""
        return self.name.split(" (", 1)[0]

    @property
    def true_dk_scale(self) -> float:
        return float(np.sqrt(self.d_k))

    @property
    def as_made(self) -> core.Settings:
        """The settings the model was made for: T = 1, its true √d_k, no mask, its first activation."""
        return core.Settings(dk_scale=self.true_dk_scale, activation=self.activations[0])

    def region(self, kind: str) -> Optional[DimRegion]:
        """The first region of that kind, or None."""
        return next((r for r in self.dim_regions if r.kind == kind), None)


@dataclass(frozen=True, eq=False)
class EmbeddingTrace:
    """How the tokens become the vectors the first layer reads.

    Designed model: x = token + position (the optional fields are None).
    Trained BERT-style model: summed = token + position + token_type, then
    x = LayerNorm(summed) = (summed - ln_mean) / ln_std * ln_gamma + ln_beta.
    """

    token: np.ndarray  # [n, d_model] what each token is (a word-piece table's row, or named features)
    position: np.ndarray  # [n, d_model] where it stands (sinusoidal code, or a learned table's row)
    x: np.ndarray  # [n, d_model] what enters the first layer
    token_type: Optional[np.ndarray] = None  # [n, d_model] BERT's segment row (sentence A for all)
    summed: Optional[np.ndarray] = None  # [n, d_model] token + position + token_type, before LayerNorm
    ln_mean: Optional[np.ndarray] = None  # [n] mean of each summed row
    ln_std: Optional[np.ndarray] = None  # [n] sqrt(var + eps) of each summed row
    ln_gamma: Optional[np.ndarray] = None  # [d_model] the embedding LayerNorm's gain
    ln_beta: Optional[np.ndarray] = None  # [d_model] its shift

    def __post_init__(self):
        for name in ("token", "position", "x", "token_type", "summed", "ln_mean", "ln_std", "ln_gamma", "ln_beta"):
            a = getattr(self, name)
            if a is not None:
                a.setflags(write=False)

    @property
    def learned(self) -> bool:
        """True when the embedding ends in a LayerNorm (a trained BERT-style model)."""
        return self.summed is not None


@dataclass(frozen=True, eq=False)
class ModelRun:
    """One forward pass: what every view draws for one sentence and one setting of the knobs."""

    tokens: tuple[str, ...]  # as the model sees them, specials included
    token_tags: tuple[tuple[str, ...], ...]  # short descriptions per token ("noun", "subject"); () if none
    special: tuple[int, ...]  # indices of special tokens ([CLS], [SEP]); () if none
    embedding: EmbeddingTrace
    layers: tuple[core.BlockTrace, ...]  # one per layer, in order
    params: tuple[core.BlockParams, ...]  # the weights of each layer

    def __post_init__(self):
        assert len(self.layers) == len(self.params) >= 1, "one trace and one set of weights per layer"
        assert len(self.token_tags) == len(self.tokens), "one tuple of tags per token"


class Model(Protocol):
    description: ModelDescription
    available: bool  # False while its weights are still to be downloaded (tokenize/forward would raise)

    def tokenize(self, text: str) -> tuple[str, ...]: ...

    def default_query(self, tokens: tuple[str, ...]) -> int: ...

    def forward(self, tokens: tuple[str, ...], settings: core.Settings) -> ModelRun: ...
