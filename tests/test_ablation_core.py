"""Ablation in the numerical core: core.transformer_block(..., head_mask=...) and the models' ablated=.

What the product promises: switching a head off sets its output z to 0 before W_O, and nothing else
changes: its attention weights are still computed, the other heads are untouched, all heads on is
exactly the unmasked block, a bad mask is refused with a message naming head_mask, and in a model
with several layers a head switched off in layer l leaves every earlier layer exactly as it was.

Expected numbers come from references written here with plain Python loops (lists of floats,
math.exp, math.erf), or from NumPy formulas written out by hand from the designed model's weights,
never from the code under test.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import toy_model
from attention_explorer import core, state as st
from attention_explorer.models import designed
from random_block import random_block_params

# --------------------------------------------------------------------------- loop reference


def _matmul(a, b):  # [n][k], [k][m] -> [n][m]
    return [[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def _layer_norm_row(row, gamma, beta, eps):
    mean = sum(row) / len(row)
    var = sum((v - mean) ** 2 for v in row) / len(row)
    std = math.sqrt(var + eps)
    return [(v - mean) / std * g + b for v, g, b in zip(row, gamma, beta)]


def _gelu(v):
    return 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))


def ref_block(x, p, n_heads, on, mask, temperature=1.0, eps=1e-5):
    """One post-LN block by loops; heads whose on[h] is False contribute z = 0 before W_O.

    x: [n][d] lists; p: BlockParams (read as lists); mask: [n][n] bools (True = may attend).
    Returns (weights [h][n][n], attn_out [n][d], out [n][d])."""
    L = lambda a: np.asarray(a, dtype=np.float64).tolist()  # noqa: E731
    n, d = len(x), len(x[0])
    dh = d // n_heads
    proj = {}
    for c, w, b in (("q", p.w_q, p.b_q), ("k", p.w_k, p.b_k), ("v", p.w_v, p.b_v)):
        m = _matmul(x, L(w))
        proj[c] = [[m[i][j] + L(b)[j] for j in range(d)] for i in range(n)]
    weights, concat = [], [[0.0] * d for _ in range(n)]
    for h in range(n_heads):
        cols = range(h * dh, (h + 1) * dh)
        head_w = []
        for i in range(n):
            scores = [
                sum(proj["q"][i][c] * proj["k"][j][c] for c in cols) / (math.sqrt(dh) * temperature) for j in range(n)
            ]
            live = [s for s, ok in zip(scores, mask[i]) if ok]
            top = max(live)
            e = [math.exp(s - top) if ok else 0.0 for s, ok in zip(scores, mask[i])]
            total = sum(e)
            row = [v / total for v in e]
            head_w.append(row)
            for c in cols:  # z of head h, written into its columns of the concatenation (0 when off)
                concat[i][c] = sum(row[j] * proj["v"][j][c] for j in range(n)) if on[h] else 0.0
        weights.append(head_w)
    attn = _matmul(concat, L(p.w_o))
    attn_out = [[attn[i][j] + L(p.b_o)[j] for j in range(d)] for i in range(n)]
    h1 = [
        _layer_norm_row([x[i][j] + attn_out[i][j] for j in range(d)], L(p.ln1_gamma), L(p.ln1_beta), eps)
        for i in range(n)
    ]
    pre = _matmul(h1, L(p.w_1))
    act = [[_gelu(pre[i][u] + L(p.b_1)[u]) for u in range(len(pre[0]))] for i in range(n)]
    ffn = _matmul(act, L(p.w_2))
    out = [
        _layer_norm_row([h1[i][j] + ffn[i][j] + L(p.b_2)[j] for j in range(d)], L(p.ln2_gamma), L(p.ln2_beta), eps)
        for i in range(n)
    ]
    return weights, attn_out, out


def random_params(rng, d, d_ff, dtype=np.float64) -> core.BlockParams:
    return random_block_params(rng, d, d_ff, 0.5, dtype=dtype)


def close(actual, expected, tol):
    a, e = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, (a.shape, e.shape)
    assert np.max(np.abs(a - e)) <= tol * max(1.0, float(np.max(np.abs(e)))), np.max(np.abs(a - e))


# --------------------------------------------------------------------------- core.transformer_block


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-4)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_switched_off_heads_z_is_zero_before_w_o_against_a_loop_reference(dtype, tol, seed):
    """Small random sizes, a causal mask: the block with some heads off equals the loop reference in
    which those heads' z rows are 0; their attention weights are still the full softmax."""
    rng = np.random.default_rng(seed)
    n, n_heads, d_head, d_ff = int(rng.integers(2, 6)), int(rng.integers(2, 4)), int(rng.integers(1, 4)), 5
    d = n_heads * d_head
    p = random_params(rng, d, d_ff, dtype)
    x = rng.normal(0.0, 1.0, (n, d)).astype(dtype)
    mask = core.causal_mask(n)
    on = rng.random(n_heads) < 0.5
    on[int(rng.integers(n_heads))] = False  # at least one off
    t = core.transformer_block(x, p, n_heads, mask=mask, head_mask=on)
    ref_w, ref_attn, ref_out = ref_block(x.astype(np.float64).tolist(), p, n_heads, on.tolist(), mask.tolist())
    assert t.out.dtype == dtype and t.attn_out.dtype == dtype
    close(t.weights, ref_w, tol)
    close(t.attn_out, ref_attn, tol)
    close(t.out, ref_out, tol)
    for h in range(n_heads):
        assert bool(t.head_on[h]) == bool(on[h])
        if not on[h]:
            assert not np.any(t.head_outputs[h]), f"head {h} is off: its z must be all 0"
            assert np.all(t.concat[:, h * d_head : (h + 1) * d_head] == 0)
    # and the loop reference with every head on is a different block (the test can fail)
    _, all_on_attn, _ = ref_block(x.astype(np.float64).tolist(), p, n_heads, [True] * n_heads, mask.tolist())
    assert np.max(np.abs(np.asarray(all_on_attn) - np.asarray(ref_attn))) > 10 * tol


def test_every_head_on_is_exactly_the_block_without_a_head_mask():
    rng = np.random.default_rng(5)
    p = random_params(rng, 6, 7)
    x = rng.normal(0.0, 1.0, (4, 6))
    plain = core.transformer_block(x, p, 3, mask=core.causal_mask(4))
    masked = core.transformer_block(x, p, 3, mask=core.causal_mask(4), head_mask=np.ones(3, bool))
    for f in dataclasses.fields(core.BlockTrace):
        a, b = getattr(plain, f.name), getattr(masked, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), f.name
        else:
            assert a == b, f.name
    assert plain.head_on.tolist() == [True, True, True]


@pytest.mark.parametrize(
    "bad",
    [
        np.ones(4, bool),
        np.ones((1, 3), bool),
        np.array([1, 0, 1]),
        np.array([1.0, 0.0, 1.0]),
        [1, 0, 1],
        np.ones(2, bool),
    ],
)
def test_a_head_mask_of_the_wrong_shape_or_type_is_refused_by_name(bad):
    rng = np.random.default_rng(6)
    p = random_params(rng, 6, 7)
    with pytest.raises(ValueError, match="head_mask"):
        core.transformer_block(rng.normal(size=(3, 6)), p, 3, head_mask=bad)


# --------------------------------------------------------------------------- the designed model


def _gelu_np(a):
    return 0.5 * a * (1.0 + np.vectorize(math.erf)(a / math.sqrt(2.0)))


def _ln(a, gamma, beta, eps=1e-5):
    mean = a.mean(axis=-1, keepdims=True)
    return (a - mean) / np.sqrt(((a - mean) ** 2).mean(axis=-1, keepdims=True) + eps) * gamma + beta


@pytest.mark.parametrize("head", range(designed.CONFIG.n_heads))
def test_designed_forward_with_one_head_off_equals_the_block_by_hand(head):
    """designed.MODEL.forward(ablated=((0, h),)) against the block written out from its weights, with
    head h's z zeroed: softmax(QKᵀ/√d_k) V per head, concat @ W_O, residual, LayerNorm, GELU FFN, LayerNorm."""
    toks = designed.tokenize(designed.DEFAULT_TEXT)
    run = designed.MODEL.forward(
        toks, core.Settings(temperature=1.0, dk_scale=8.0, causal=False, activation="gelu", ablated=((0, head),))
    )
    p = designed.block_params()
    x = np.asarray(run.embedding.x, dtype=np.float64)  # [n, 256]
    dh = designed.CONFIG.d_head
    zs = []
    for h in range(designed.CONFIG.n_heads):
        cols = slice(h * dh, (h + 1) * dh)
        q, k, v = x @ p.w_q[:, cols], x @ p.w_k[:, cols], x @ p.w_v[:, cols]
        s = q @ k.T / 8.0
        e = np.exp(s - s.max(axis=1, keepdims=True))
        a = e / e.sum(axis=1, keepdims=True)
        assert np.allclose(run.layers[0].weights[h], a, atol=1e-12), "an off head still computes its attention"
        zs.append(np.zeros_like(a @ v) if h == head else a @ v)
    attn_out = np.concatenate(zs, axis=1) @ p.w_o
    h1 = _ln(x + attn_out, p.ln1_gamma, p.ln1_beta)
    out = _ln(h1 + _gelu_np(h1 @ p.w_1) @ p.w_2, p.ln2_gamma, p.ln2_beta)
    t = run.layers[0]
    assert t.head_on.tolist() == [h != head for h in range(designed.CONFIG.n_heads)]
    assert np.allclose(t.attn_out, attn_out, atol=1e-10)
    assert np.allclose(t.out, out, atol=1e-9)
    intact = designed.MODEL.forward(toks, core.Settings(temperature=1.0, dk_scale=8.0, causal=False, activation="gelu"))
    assert not np.allclose(intact.layers[0].attn_out, attn_out, atol=1e-6), "switching a head off changed nothing"


def test_state_compute_passes_the_switched_off_heads_and_compute_intact_does_not():
    s = dataclasses.replace(st.State(), ablated=(st.flat_head("designed", 0, 2),))
    assert st.compute(s).run.layers[0].head_on.tolist() == [True, True, False, True]
    assert st.compute_intact(s).run.layers[0].head_on.tolist() == [True] * 4


# --------------------------------------------------------------------------- several layers (toy model)


def _toy_runs(ablated):
    with toy_model.registered():
        s = dataclasses.replace(st.State(), model="toy", ablated=ablated)
        return st.compute(s).run, st.compute_intact(s).run


def _arrays(trace):
    return {
        f.name: getattr(trace, f.name)
        for f in dataclasses.fields(core.BlockTrace)
        if isinstance(getattr(trace, f.name), np.ndarray) and f.name != "head_on"
    }


def test_a_head_off_in_layer_1_leaves_layer_0_identical_and_changes_layer_1s_output():
    flat = toy_model.N_HEADS * 1 + 2  # layer 1, head 2
    off, on = _toy_runs((flat,))
    with toy_model.registered():
        assert st.head_pairs("toy", (flat,)) == ((1, 2),)
    for name, a in _arrays(off.layers[0]).items():
        assert np.array_equal(a, _arrays(on.layers[0])[name]), f"layer 0's {name} changed"
    assert off.layers[0].head_on.all()
    assert off.layers[1].head_on.tolist() == [True, True, False]
    # the off head's own attention is computed as before (same input); what it passes on is gone
    assert np.array_equal(off.layers[1].weights, on.layers[1].weights)
    assert not np.any(off.layers[1].head_outputs[2])
    assert not np.allclose(off.layers[1].out, on.layers[1].out)


def test_a_head_off_in_layer_0_changes_the_attention_of_the_later_layer():
    off, on = _toy_runs((1,))  # layer 0, head 1
    assert np.array_equal(off.layers[0].weights, on.layers[0].weights)  # its own layer's attention: as before
    assert not np.allclose(off.layers[0].out, on.layers[0].out)
    assert np.array_equal(off.layers[1].x, off.layers[0].out)  # layer 1 reads the changed output
    assert not np.allclose(off.layers[1].weights, on.layers[1].weights), "layer 1's attention must change"
    assert off.layers[1].head_on.all()
