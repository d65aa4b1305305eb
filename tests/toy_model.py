"""A second model for tests only: proof that the views and the state serve any model behind the seam.

Small and unlike the designed model on purpose: 2 layers of 3 heads, d_model 24 (d_k 8),
FFN width 40, GELU only, seeded random weights with biases and non-trivial LayerNorm,
a whitespace tokenizer that adds a special start token "[CLS]". It goes through the
same core.transformer_block, so its numbers are right by construction; the tests use it
to check that nothing outside models/ assumes the designed model's sizes or names.

    with toy_model.registered():   # models.MODELS gains "toy" for the block
        ...
"""

from __future__ import annotations

import contextlib

import numpy as np

from attention_explorer import core, models, tokens
from attention_explorer.models.base import DimRegion, EmbeddingTrace, HeadInfo, ModelDescription, ModelRun, Preset
from random_block import random_block_params

D_MODEL, N_HEADS, D_K, D_FF, N_LAYERS = 24, 3, 8, 40, 2
MAX_TOKENS = 12
SPECIAL = "[CLS]"


def _heads(layer: int) -> tuple:
    return tuple(
        HeadInfo(f"L{layer + 1} head {h + 1}", f"l{layer}h{h}", f"Toy head {h + 1} of layer {layer + 1}.")
        for h in range(N_HEADS)
    )


DESCRIPTION = ModelDescription(
    id="toy",
    name="Toy model (2 layers × 3 heads)",
    about="Random weights, for tests.",
    n_layers=N_LAYERS,
    heads=tuple(_heads(l) for l in range(N_LAYERS)),
    d_model=D_MODEL,
    d_k=D_K,
    d_ff=D_FF,
    activations=("gelu",),
    max_tokens=MAX_TOKENS,
    dim_names=tuple(f"toy {d}" if d < 12 else "" for d in range(D_MODEL)),
    dim_regions=(
        DimRegion(0, 12, "features", "features", "toy features"),
        DimRegion(12, D_MODEL, "position", "position code", "toy positions"),
    ),
    unit_names=("",) * D_FF,
    presets=(Preset("toy-one", "A toy sentence", "the toy sees the toy", "Anything.", 2),),
    default_text="the toy sees the toy",
    default_query=2,
)


def _params(rng) -> core.BlockParams:
    return random_block_params(rng, D_MODEL, D_FF, 0.4)


class ToyModel:
    description = DESCRIPTION

    def __init__(self, seed: int = 7):
        rng = np.random.default_rng(seed)
        self._params = tuple(_params(rng) for _ in range(N_LAYERS))
        self._vocab_rng_seed = seed

    def tokenize(self, text: str) -> tuple[str, ...]:
        words = text.split()
        if not words:
            raise tokens.TokenError("Type at least one word.")
        if len(words) + 1 > MAX_TOKENS:
            raise tokens.TokenError(f"The toy model takes at most {MAX_TOKENS - 1} words; this has {len(words)}.")
        return (SPECIAL, *words)

    def default_query(self, toks) -> int:
        return len(toks) - 1  # no lexicon to find a pronoun in: the last token

    def _token_vector(self, token: str) -> np.ndarray:  # -> [12], the same vector for the same token
        seed = sum(token.encode("utf-8")) + 31 * len(token)
        return np.random.default_rng(seed).normal(0.0, 1.0, 12)

    def forward(self, toks, settings: core.Settings) -> ModelRun:
        n = len(toks)
        token = np.zeros((n, D_MODEL))
        token[:, :12] = [self._token_vector(t) for t in toks]
        position = np.zeros((n, D_MODEL))
        position[:, 12:] = core.sinusoidal_positional_encoding(n, D_MODEL - 12)
        emb = EmbeddingTrace(token=token, position=position, x=token + position)
        x, traces = emb.x, []
        for layer, p in enumerate(self._params):
            trace = core.run_block(x, p, N_HEADS, settings, layer=layer)
            traces.append(trace)
            x = trace.out
        tags = tuple(("special",) if t == SPECIAL else ("word",) for t in toks)
        return ModelRun(
            tokens=tuple(toks), token_tags=tags, special=(0,), embedding=emb, layers=tuple(traces), params=self._params
        )


MODEL = ToyModel()


@contextlib.contextmanager
def registered():
    """models.MODELS with the toy model added (after the default) for the duration of the block."""
    models.MODELS["toy"] = MODEL
    try:
        yield MODEL
    finally:
        del models.MODELS["toy"]
