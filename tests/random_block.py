"""Random weights for one transformer block (core.BlockParams), for the tests that check core against
loop references, the toy model and the browser's agreement with CPython."""

from __future__ import annotations

import numpy as np

from attention_explorer import core


def random_block_params(rng, d_model, d_ff, scale, ln_scale=None, gated=False, dtype=np.float64) -> core.BlockParams:
    """Normal(0, scale) weights and biases; LayerNorm gains 1 + Normal(0, ln_scale) and shifts
    Normal(0, ln_scale) (ln_scale defaults to scale); a gate (SwiGLU) when gated. Drawn in one order,
    so a seed gives the same block everywhere."""
    ln = scale if ln_scale is None else ln_scale
    w = lambda s, *shape: rng.normal(0.0, s, shape).astype(dtype)  # noqa: E731
    return core.BlockParams(
        w_q=w(scale, d_model, d_model),
        w_k=w(scale, d_model, d_model),
        w_v=w(scale, d_model, d_model),
        w_o=w(scale, d_model, d_model),
        b_q=w(scale, d_model),
        b_k=w(scale, d_model),
        b_v=w(scale, d_model),
        b_o=w(scale, d_model),
        ln1_gamma=(1.0 + w(ln, d_model)).astype(dtype),
        ln1_beta=w(ln, d_model),
        w_1=w(scale, d_model, d_ff),
        b_1=w(scale, d_ff),
        w_2=w(scale, d_ff, d_model),
        b_2=w(scale, d_model),
        ln2_gamma=(1.0 + w(ln, d_model)).astype(dtype),
        ln2_beta=w(ln, d_model),
        w_gate=w(scale, d_model, d_ff) if gated else None,
    )
