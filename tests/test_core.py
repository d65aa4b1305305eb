"""Tests for attention_explorer.core.

Every function is checked against an independent reference written below with
plain Python loops over the paper's formulas (math.exp, math.erf, math.sin,
explicit sums) -- never against numbers produced by the code under test.
"""

import dataclasses
import math
import pathlib
import sys

import numpy as np
import pytest

from random_block import random_block_params

try:
    from attention_explorer import core
except ImportError:  # running without PYTHONPATH=py or an editable install
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "py"))
    from attention_explorer import core

TOL = 1e-10


# --------------------------------------------------------------------------
# loop references (lists of lists of floats in, lists out)
# --------------------------------------------------------------------------


def ref_matmul(a, b):
    return [[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def ref_add_bias(a, b):
    return [[a[i][j] + b[j] for j in range(len(b))] for i in range(len(a))]


def ref_softmax_row(row, allowed=None):
    allowed = allowed if allowed is not None else [True] * len(row)
    live = [r for r, ok in zip(row, allowed) if ok]
    if not live:
        return [0.0] * len(row)
    m = max(live)
    e = [math.exp(r - m) if ok else 0.0 for r, ok in zip(row, allowed)]
    s = sum(e)
    return [x / s for x in e]


def ref_attention(q, k, v, scale, temperature, mask=None):
    """softmax(q k^T / (scale * temperature)) v for one head, by index loops."""
    n_q, n_k, d_k, d_v = len(q), len(k), len(q[0]), len(v[0])
    scores = [[sum(q[i][t] * k[j][t] for t in range(d_k)) for j in range(n_k)] for i in range(n_q)]
    weights = []
    for i in range(n_q):
        row = [scores[i][j] / (scale * temperature) for j in range(n_k)]
        weights.append(ref_softmax_row(row, None if mask is None else [bool(mask[i][j]) for j in range(n_k)]))
    z = [[sum(weights[i][j] * v[j][c] for j in range(n_k)) for c in range(d_v)] for i in range(n_q)]
    return scores, weights, z


def ref_mha(x, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, n_heads, temperature=1.0, scale=None, mask=None):
    d_model = len(x[0])
    d_head = d_model // n_heads
    scale = math.sqrt(d_head) if scale is None else scale
    Q = ref_add_bias(ref_matmul(x, w_q), b_q)
    K = ref_add_bias(ref_matmul(x, w_k), b_k)
    V = ref_add_bias(ref_matmul(x, w_v), b_v)
    heads, weights = [], []
    for h in range(n_heads):
        cols = range(h * d_head, (h + 1) * d_head)
        qh = [[r[c] for c in cols] for r in Q]
        kh = [[r[c] for c in cols] for r in K]
        vh = [[r[c] for c in cols] for r in V]
        _, w, z = ref_attention(qh, kh, vh, scale, temperature, mask)
        heads.append(z)
        weights.append(w)
    concat = [sum((heads[h][i] for h in range(n_heads)), []) for i in range(len(x))]
    out = ref_add_bias(ref_matmul(concat, w_o), b_o)
    return out, weights


def ref_layer_norm(x, gamma, beta, eps=1e-5):
    out = []
    for row in x:
        d = len(row)
        mean = sum(row) / d
        var = sum((r - mean) ** 2 for r in row) / d  # biased, as nn.LayerNorm
        out.append([(row[j] - mean) / math.sqrt(var + eps) * gamma[j] + beta[j] for j in range(d)])
    return out


def ref_gelu(t):
    return 0.5 * t * (1.0 + math.erf(t / math.sqrt(2.0)))


def ref_relu(t):
    return t if t > 0 else 0.0


def ref_silu(t):
    return t / (1.0 + math.exp(-t))


def ref_ffn(x, w_1, b_1, w_2, b_2, act):
    hid = [[act(t) for t in row] for row in ref_add_bias(ref_matmul(x, w_1), b_1)]
    return ref_add_bias(ref_matmul(hid, w_2), b_2)


def ref_swiglu(x, w_1, w_gate, w_2):
    up, gate = ref_matmul(x, w_1), ref_matmul(x, w_gate)
    hid = [[ref_silu(g) * u for g, u in zip(gr, ur)] for gr, ur in zip(gate, up)]
    return ref_matmul(hid, w_2)


def ref_pe(n, d_model):
    pe = [[0.0] * d_model for _ in range(n)]
    for pos in range(n):
        for i in range((d_model + 1) // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos][2 * i] = math.sin(angle)
            if 2 * i + 1 < d_model:
                pe[pos][2 * i + 1] = math.cos(angle)
    return pe


def ref_block(x, p, n_heads, temperature, scale, mask, activation, eps=1e-5):
    L = lambda a: None if a is None else np.asarray(a).tolist()  # noqa: E731
    attn, _ = ref_mha(
        x,
        L(p.w_q),
        L(p.w_k),
        L(p.w_v),
        L(p.w_o),
        L(p.b_q),
        L(p.b_k),
        L(p.b_v),
        L(p.b_o),
        n_heads,
        temperature,
        scale,
        mask,
    )
    h = ref_layer_norm([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(x, attn)], L(p.ln1_gamma), L(p.ln1_beta), eps)
    if activation == "swiglu":
        f = ref_add_bias(ref_swiglu(h, L(p.w_1), L(p.w_gate), L(p.w_2)), L(p.b_2))
    else:
        act = ref_relu if activation == "relu" else ref_gelu
        f = ref_ffn(h, L(p.w_1), L(p.b_1), L(p.w_2), L(p.b_2), act)
    return ref_layer_norm([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(h, f)], L(p.ln2_gamma), L(p.ln2_beta), eps)


def close(actual, expected, tol=TOL):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected, dtype=np.float64), rtol=0, atol=tol)


def make_params(rng, d_model=8, d_ff=12, gated=False):
    return random_block_params(rng, d_model, d_ff, 0.5, gated=gated)


def mha_args(p):
    return (p.w_q, p.w_k, p.w_v, p.w_o)


def mha_biases(p):
    return dict(b_q=p.b_q, b_k=p.b_k, b_v=p.b_v, b_o=p.b_o)


# --------------------------------------------------------------------------
# softmax
# --------------------------------------------------------------------------


def test_softmax_matches_loop_reference_on_both_axes():
    x = np.random.default_rng(0).normal(size=(4, 6)) * 3
    close(core.softmax(x), [ref_softmax_row(r) for r in x.tolist()])
    close(core.softmax(x, axis=0).T, [ref_softmax_row(r) for r in x.T.tolist()])


def test_softmax_rows_sum_to_one():
    x = np.random.default_rng(1).normal(size=(3, 5, 7)) * 10
    close(core.softmax(x).sum(axis=-1), np.ones((3, 5)))


def test_softmax_fully_masked_row_is_zero_not_nan():
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]])
    with np.errstate(over="raise", divide="raise", invalid="raise"):  # no invalid/divide warnings either
        s = core.softmax(x)
    close(s[0], [0, 0, 0])
    close(s[1], ref_softmax_row([0.0, 0.0, 1.0], [True, False, True]))
    assert s[1, 1] == 0.0


def test_softmax_huge_logits_are_stable():
    x = np.array([[1e6, -1e6, 1e6 - 1.0], [-1e6, -1e6 + 2.0, -1e6]])
    s = core.softmax(x)
    assert np.isfinite(s).all()
    close(s, [ref_softmax_row(r) for r in x.tolist()])


# --------------------------------------------------------------------------
# scaled dot-product attention and masks
# --------------------------------------------------------------------------


@pytest.mark.parametrize("use_mask", [False, True])
@pytest.mark.parametrize("temperature", [0.5, 1.0, 3.0])
def test_sdpa_matches_loop_reference(use_mask, temperature):
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))  # n_q != n_k, d_v != d_k
    mask = rng.random((3, 5)) < 0.6 if use_mask else None
    if use_mask:
        mask[1] = False  # one fully masked row
    z, w = core.scaled_dot_product_attention(q, k, v, temperature=temperature, mask=mask)
    _, rw, rz = ref_attention(
        q.tolist(), k.tolist(), v.tolist(), math.sqrt(4), temperature, None if mask is None else mask.tolist()
    )
    assert z.shape == (3, 2) and w.shape == (3, 5)
    close(w, rw)
    close(z, rz)


def test_sdpa_batched_equals_per_item_with_broadcast_mask():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 4, 6))
    mask = core.causal_mask(4)  # [n, n] broadcast over batch and heads
    z, w = core.scaled_dot_product_attention(q, k, v, mask=mask)
    for b in range(2):
        for h in range(3):
            _, rw, rz = ref_attention(
                q[b, h].tolist(), k[b, h].tolist(), v[b, h].tolist(), math.sqrt(5), 1.0, mask.tolist()
            )
            close(w[b, h], rw)
            close(z[b, h], rz)


def test_sdpa_attention_rows_sum_to_one():
    rng = np.random.default_rng(4)
    _, w = core.scaled_dot_product_attention(rng.normal(size=(6, 3)), rng.normal(size=(7, 3)), rng.normal(size=(7, 3)))
    close(w.sum(axis=-1), np.ones(6))


def test_sdpa_default_scale_is_sqrt_dk():
    rng = np.random.default_rng(5)
    q, k, v = rng.normal(size=(4, 9)), rng.normal(size=(4, 9)), rng.normal(size=(4, 2))
    z0, w0 = core.scaled_dot_product_attention(q, k, v)
    z1, w1 = core.scaled_dot_product_attention(q, k, v, scale=3.0)  # sqrt(9)
    close(w0, w1, 0)
    close(z0, z1, 0)
    _, rw, _ = ref_attention(q.tolist(), k.tolist(), v.tolist(), 3.0, 1.0)
    close(w0, rw)


def test_sdpa_scale_and_temperature_act_only_through_their_product():
    rng = np.random.default_rng(6)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    ref = core.scaled_dot_product_attention(q, k, v, scale=6.0, temperature=1.0)
    for scale, temperature in [(1.0, 6.0), (2.0, 3.0), (12.0, 0.5), (0.06, 100.0)]:
        z, w = core.scaled_dot_product_attention(q, k, v, scale=scale, temperature=temperature)
        close(w, ref[1])
        close(z, ref[0])


def test_high_temperature_gives_near_uniform_rows():
    rng = np.random.default_rng(7)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    _, w = core.scaled_dot_product_attention(q, k, v, temperature=100.0)
    assert np.abs(w - 1 / 5).max() < 0.01


def test_low_temperature_puts_the_weight_on_the_row_maximum():
    rng = np.random.default_rng(8)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    _, w = core.scaled_dot_product_attention(q, k, v, temperature=0.01)
    best = np.argmax(q @ k.T, axis=-1)
    close(w[np.arange(5), best], np.ones(5), 1e-6)
    close(w.sum(-1), np.ones(5))


def test_causal_mask_matches_definition():
    n = 5
    m = core.causal_mask(n)
    assert m.dtype == np.bool_ and m.shape == (n, n)
    assert m.tolist() == [[j <= i for j in range(n)] for i in range(n)]
    assert core.causal_mask(0).shape == (0, 0)


def test_causal_mask_hides_the_future():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(6, 8))
    p = make_params(rng)
    _, w = core.multi_head_attention(x, *mha_args(p), 2, mask=core.causal_mask(6), **mha_biases(p))
    upper = np.triu(np.ones((6, 6), bool), k=1)
    assert (w[:, upper] == 0.0).all()  # exactly zero, not merely small
    close(w[:, 0, 0], np.ones(2))  # the first token can only see itself


def test_fully_masked_rows_give_zero_weights_and_zero_output():
    rng = np.random.default_rng(10)
    q, k, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 5))
    mask = np.ones((4, 4), bool)
    mask[2] = False
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        z, w = core.scaled_dot_product_attention(q, k, v, mask=mask)
    assert (w[2] == 0).all() and (z[2] == 0).all()
    close(w[[0, 1, 3]].sum(-1), np.ones(3))
    z, w = core.scaled_dot_product_attention(q, k, v, mask=np.zeros((4, 4), bool))
    assert (w == 0).all() and (z == 0).all()


@pytest.mark.parametrize("temperature", [0.01, 1.0, 100.0])
def test_extreme_scores_and_masks_stay_finite(temperature):
    rng = np.random.default_rng(11)
    # q.k = +-1e4 exactly: one-hot keys times +-1e4 queries
    q = rng.choice([-1e4, 1e4], size=(6, 6))
    k = np.eye(6)
    v = rng.normal(size=(6, 3))
    for mask in [None, core.causal_mask(6), rng.random((6, 6)) < 0.3, np.zeros((6, 6), bool)]:
        with np.errstate(over="raise", divide="raise", invalid="raise"):
            z, w = core.scaled_dot_product_attention(q, k, v, temperature=temperature, mask=mask)
        assert np.isfinite(z).all() and np.isfinite(w).all()
        m = np.ones((6, 6), bool) if mask is None else mask
        close(
            w,
            [
                ref_softmax_row((row / (math.sqrt(6) * temperature)).tolist(), mr.tolist())
                for row, mr in zip(q @ k.T, m)
            ],
        )
    # and through a whole block, whose trace must be finite everywhere
    p = make_params(rng, d_model=6, d_ff=4)
    x = rng.choice([-30.0, 30.0], size=(6, 6))
    mask = rng.random((6, 6)) < 0.5
    mask[0] = False
    for act in ["relu", "gelu"]:
        t = core.transformer_block(x, p, 3, temperature=temperature, mask=mask, activation=act)
        for name in ["scores", "scaled_scores", "weights", "head_outputs", "out", "ln1_std", "ffn_act"]:
            assert np.isfinite(getattr(t, name)).all(), name


# --------------------------------------------------------------------------
# multi-head attention
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_mha_matches_loop_reference(n_heads):
    rng = np.random.default_rng(12)
    x = rng.normal(size=(5, 8))
    p = make_params(rng)
    mask = rng.random((5, 5)) < 0.7
    out, w = core.multi_head_attention(x, *mha_args(p), n_heads, temperature=1.7, mask=mask, **mha_biases(p))
    L = lambda a: a.tolist()  # noqa: E731
    rout, rw = ref_mha(
        L(x),
        L(p.w_q),
        L(p.w_k),
        L(p.w_v),
        L(p.w_o),
        L(p.b_q),
        L(p.b_k),
        L(p.b_v),
        L(p.b_o),
        n_heads,
        1.7,
        None,
        L(mask),
    )
    assert out.shape == (5, 8) and w.shape == (n_heads, 5, 5)
    close(out, rout)
    close(w, rw)


def test_mha_biases_default_to_zero():
    rng = np.random.default_rng(13)
    x = rng.normal(size=(3, 4))
    p = make_params(rng, d_model=4)
    out, w = core.multi_head_attention(x, *mha_args(p), 2)
    z = np.zeros(4)
    out0, w0 = core.multi_head_attention(x, *mha_args(p), 2, b_q=z, b_k=z, b_v=z, b_o=z)
    close(out, out0, 0)
    close(w, w0, 0)


def test_mha_default_scale_is_sqrt_d_head():
    rng = np.random.default_rng(14)
    x = rng.normal(size=(4, 8))
    p = make_params(rng)
    a = core.multi_head_attention(x, *mha_args(p), 2, **mha_biases(p))
    b = core.multi_head_attention(x, *mha_args(p), 2, scale=2.0, **mha_biases(p))  # sqrt(8 / 2)
    close(a[0], b[0], 0)
    close(a[1], b[1], 0)
    assert core.transformer_block(x, p, 2).scale == 2.0
    assert core.transformer_block(x, p, 8).scale == 1.0


def test_mha_is_permutation_equivariant_without_positions():
    rng = np.random.default_rng(15)
    x = rng.normal(size=(6, 8))
    p = make_params(rng)
    perm = rng.permutation(6)
    out, w = core.multi_head_attention(x, *mha_args(p), 4, **mha_biases(p))
    out_p, w_p = core.multi_head_attention(x[perm], *mha_args(p), 4, **mha_biases(p))
    close(out_p, out[perm])
    close(w_p, w[:, perm][:, :, perm])


def test_mha_accepts_per_head_masks():
    rng = np.random.default_rng(16)
    x = rng.normal(size=(4, 8))
    p = make_params(rng)
    masks = rng.random((2, 4, 4)) < 0.6
    _, w = core.multi_head_attention(x, *mha_args(p), 2, mask=masks, **mha_biases(p))
    for h in range(2):
        _, wh = core.multi_head_attention(x, *mha_args(p), 2, mask=masks[h], **mha_biases(p))
        close(w[h], wh[h], 0)


# --------------------------------------------------------------------------
# layer norm, activations, feed-forward, positions
# --------------------------------------------------------------------------


def test_layer_norm_matches_loop_reference():
    rng = np.random.default_rng(17)
    x, g, b = rng.normal(size=(5, 7)) * 4 + 3, rng.normal(size=7), rng.normal(size=7)
    close(core.layer_norm(x, g, b), ref_layer_norm(x.tolist(), g.tolist(), b.tolist()))
    close(core.layer_norm(x, g, b, eps=0.1), ref_layer_norm(x.tolist(), g.tolist(), b.tolist(), 0.1))
    close(core.layer_norm(x[None], g, b)[0], core.layer_norm(x, g, b))  # any leading axes


def test_layer_norm_gives_zero_mean_and_unit_biased_variance():
    x = np.random.default_rng(18).normal(size=(4, 16)) * 10 + 5
    y = core.layer_norm(x, np.ones(16), np.zeros(16))
    close(y.mean(-1), np.zeros(4))
    close(y.var(-1), np.ones(4), 1e-6)  # var / (var + eps): ~1, not exactly
    y = core.layer_norm(np.full((1, 4), 3.0), np.ones(4), np.zeros(4))  # constant row: eps keeps it finite
    close(y, np.zeros((1, 4)), 0)


def test_erf_and_gelu_match_math_erf():
    xs = np.concatenate([np.linspace(-8, 8, 161), [-40.0, -1e-8, 0.0, 1e-8, 40.0, 1e300, -1e300]])
    close(core.erf(xs), [math.erf(t) for t in xs], 1e-15)
    close(core.gelu(xs), [ref_gelu(t) for t in xs])
    g = core.gelu(xs.reshape(-1, 8))
    assert g.shape == (21, 8) and g.dtype == np.float64
    assert float(core.gelu(1.0)) == pytest.approx(ref_gelu(1.0), abs=1e-15)


def test_float32_erf_and_gelu_stay_float32_within_a_few_float32_steps():
    """The trained model's GELU: vectorised (no Python call per value), within 6e-7 of math.erf on every
    float32 in [-10, 10] (7.1.26's own 1.5e-7 plus float32 rounding), finite and exact at the ends.
    The bound is absolute: near 0, erf's relative error is larger, which GELU's factor x makes harmless."""
    xs = np.concatenate(
        [
            np.linspace(-10, 10, 400_001, dtype=np.float32),
            np.array([0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, np.inf, -np.inf], dtype=np.float32),
        ]
    )
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        e, g = core.erf(xs), core.gelu(xs[:-2])  # gelu(-inf) = -inf * 0 is NaN in any precision
    assert e.dtype == np.float32 and g.dtype == np.float32
    want = np.array([math.erf(float(t)) for t in xs])
    np.testing.assert_allclose(e, want, rtol=0, atol=6e-7)
    np.testing.assert_allclose(g, [ref_gelu(float(t)) for t in xs[:-2]], rtol=0, atol=5e-7)
    assert e[-1] == -1.0 and e[-2] == 1.0 and np.all(np.abs(e) <= 1.0)
    assert g[-2] == np.float32(1e30) and g[-1] == 0.0  # gelu(x) = x far right, 0 far left
    np.testing.assert_array_equal(core.erf(-xs), -e)  # odd, exactly


def test_precision_follows_the_arguments():
    """float32 in -> float32 throughout (the trained model); float64, ints and lists -> float64 (the designed
    model); a mix promotes as NumPy does. Each building block keeps the dtype of what it is given."""
    x32 = np.linspace(-3, 3, 24, dtype=np.float32).reshape(3, 8)
    w32 = np.ones((8, 8), np.float32)
    for f in (core.softmax, core.relu, core.gelu, core.silu, core.sigmoid, core.erf):
        assert f(x32).dtype == np.float32, f.__name__
        assert f(x32.astype(np.float64)).dtype == np.float64, f.__name__
        assert f([1, 2]).dtype == np.float64, f.__name__
    assert core.layer_norm(x32, np.ones(8, np.float32), np.zeros(8, np.float32)).dtype == np.float32
    assert core.layer_norm(x32, np.ones(8), np.zeros(8)).dtype == np.float64
    assert core.feed_forward(x32, w32, None, w32, None).dtype == np.float32
    assert core.multi_head_attention(x32, w32, w32, w32, w32, 2)[0].dtype == np.float32
    assert core.multi_head_attention(x32, w32, w32, w32, w32.astype(np.float64), 2)[0].dtype == np.float64
    assert core.dot_product_terms(x32[0], x32[1]).dtype == np.float32


@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_float32_block_matches_loop_reference_and_stays_float32(activation):
    """The same block in float32: every trace array is float32, and the output is the float64 loop
    reference's (on the same float32 numbers) to float32 accuracy."""
    rng = np.random.default_rng(28)
    p64 = make_params(rng, d_model=32, d_ff=64, gated=activation == "swiglu")
    p = core.BlockParams(**{k: None if v is None else v.astype(np.float32) for k, v in vars(p64).items()})
    x = rng.normal(size=(6, 32)).astype(np.float32)
    mask = core.causal_mask(6)
    t = core.transformer_block(x, p, 4, temperature=0.8, mask=mask, activation=activation)
    for name, a in vars(t).items():
        if isinstance(a, np.ndarray):
            assert a.dtype == (np.bool_ if name in ("mask", "head_on") else np.float32), name
    close(t.out, ref_block(x.tolist(), p, 4, 0.8, None, mask.tolist(), activation), 2e-5)
    exact = core.transformer_block(x.astype(np.float64), p64, 4, temperature=0.8, mask=mask, activation=activation)
    assert exact.out.dtype == np.float64  # float64 x promotes, whatever the weights


def test_relu_and_silu_match_loop_reference():
    xs = np.linspace(-20, 20, 81)
    close(core.relu(xs), [ref_relu(t) for t in xs])
    close(core.silu(xs), [ref_silu(t) for t in xs])


def test_silu_is_finite_for_extreme_inputs():
    with np.errstate(over="raise", divide="raise", invalid="raise"):  # no overflow in exp
        y = core.silu(np.array([-1e4, -800.0, 800.0, 1e4]))
    close(y, [0.0, 0.0, 800.0, 1e4])


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feed_forward_matches_loop_reference(activation):
    rng = np.random.default_rng(19)
    x, w_1, b_1, w_2, b_2 = (rng.normal(size=s) for s in [(4, 6), (6, 10), (10,), (10, 6), (6,)])
    act = ref_relu if activation == "relu" else ref_gelu
    close(
        core.feed_forward(x, w_1, b_1, w_2, b_2, activation=activation),
        ref_ffn(x.tolist(), w_1.tolist(), b_1.tolist(), w_2.tolist(), b_2.tolist(), act),
    )


def test_feed_forward_defaults_to_gelu():
    rng = np.random.default_rng(20)
    x, w_1, b_1, w_2, b_2 = (rng.normal(size=s) for s in [(3, 4), (4, 5), (5,), (5, 4), (4,)])
    close(core.feed_forward(x, w_1, b_1, w_2, b_2), core.feed_forward(x, w_1, b_1, w_2, b_2, "gelu"), 0)


def test_swiglu_matches_loop_reference():
    rng = np.random.default_rng(21)
    x, w_1, w_gate, w_2 = (rng.normal(size=s) for s in [(4, 6), (6, 10), (6, 10), (10, 6)])
    close(core.swiglu(x, w_1, w_gate, w_2), ref_swiglu(x.tolist(), w_1.tolist(), w_gate.tolist(), w_2.tolist()))
    # the gate goes through silu, the up projection does not: swapping them changes the result
    assert not np.allclose(core.swiglu(x, w_1, w_gate, w_2), core.swiglu(x, w_gate, w_1, w_2))


@pytest.mark.parametrize("n,d_model", [(7, 8), (5, 7), (3, 1), (50, 16)])
def test_sinusoidal_positional_encoding_matches_vaswani(n, d_model):
    pe = core.sinusoidal_positional_encoding(n, d_model)
    assert pe.shape == (n, d_model)
    close(pe, ref_pe(n, d_model))
    close(pe[0], [0.0 if j % 2 == 0 else 1.0 for j in range(d_model)], 0)  # position 0: sin 0, cos 0


# --------------------------------------------------------------------------
# transformer block and its trace
# --------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_transformer_block_matches_loop_reference(activation):
    rng = np.random.default_rng(22)
    x = rng.normal(size=(5, 8))
    p = make_params(rng, gated=activation == "swiglu")
    mask = core.causal_mask(5)
    t = core.transformer_block(x, p, 2, temperature=0.8, mask=mask, activation=activation)
    close(t.out, ref_block(x.tolist(), p, 2, 0.8, None, mask.tolist(), activation))
    t = core.transformer_block(x, p, 4, scale=1.5, activation=activation, eps=1e-3)
    close(t.out, ref_block(x.tolist(), p, 4, 1.0, 1.5, None, activation, eps=1e-3))


def test_transformer_block_swiglu_trace_matches_loop_reference():
    rng = np.random.default_rng(23)
    x = rng.normal(size=(4, 8))
    p = make_params(rng, gated=True)
    t = core.transformer_block(x, p, 2, activation="swiglu")
    h = t.ln1.tolist()
    up, gate = ref_matmul(h, p.w_1.tolist()), ref_matmul(h, p.w_gate.tolist())
    close(t.ffn_pre, up)  # no b_1 for swiglu
    close(t.ffn_gate, gate)
    close(t.ffn_act, [[ref_silu(g) * u for g, u in zip(gr, ur)] for gr, ur in zip(gate, up)])
    close(t.ffn_out, ref_add_bias(ref_swiglu(h, p.w_1.tolist(), p.w_gate.tolist(), p.w_2.tolist()), p.b_2.tolist()))
    # b_1 really is unused
    p_nob1 = core.BlockParams(**{**p.__dict__, "b_1": None})
    close(core.transformer_block(x, p_nob1, 2, activation="swiglu").out, t.out, 0)


def test_transformer_block_trace_is_consistent():
    rng = np.random.default_rng(24)
    x = rng.normal(size=(6, 8))
    p = make_params(rng)
    mask = rng.random((6, 6)) < 0.7
    t = core.transformer_block(x, p, 2, temperature=2.5, mask=mask, activation="gelu")
    dh = 4
    close(t.x, x, 0)
    assert (t.mask == mask).all()
    assert (t.temperature, t.scale, t.activation, t.n_heads, t.d_head) == (2.5, 2.0, "gelu", 2, dh)
    assert (t.n_tokens, t.d_model, t.d_ff) == (6, 8, 12)
    for h in range(2):
        cols = slice(h * dh, (h + 1) * dh)
        close(t.q[h], x @ p.w_q[:, cols] + p.b_q[cols])
        close(t.k[h], x @ p.w_k[:, cols] + p.b_k[cols])
        close(t.v[h], x @ p.w_v[:, cols] + p.b_v[cols])
        close(t.concat[:, cols], t.head_outputs[h])
        close(t.scores[h], t.q[h] @ t.k[h].T)
        _, rw, rz = ref_attention(t.q[h].tolist(), t.k[h].tolist(), t.v[h].tolist(), 2.0, 2.5, mask.tolist())
        close(t.weights[h], rw)
        close(t.head_outputs[h], rz)
    close(t.scaled_scores, t.scores / (2.0 * 2.5))  # masked cells keep their finite value
    assert np.isfinite(t.scaled_scores).all()
    close(t.weights[:, ~mask], 0, 0)
    close(t.attn_out, t.concat @ p.w_o + p.b_o)
    out, w = core.multi_head_attention(x, *mha_args(p), 2, temperature=2.5, mask=mask, **mha_biases(p))
    close(t.attn_out, out, 0)
    close(t.weights, w, 0)
    close(t.resid1, x + t.attn_out, 0)
    close(t.ln1_mean, t.resid1.mean(-1))
    close(t.ln1_std, np.sqrt(t.resid1.var(-1) + 1e-5))
    close(t.ln1, core.layer_norm(t.resid1, p.ln1_gamma, p.ln1_beta))
    close(t.ln1, (t.resid1 - t.ln1_mean[:, None]) / t.ln1_std[:, None] * p.ln1_gamma + p.ln1_beta)
    close(t.ffn_pre, t.ln1 @ p.w_1 + p.b_1)
    assert t.ffn_gate is None
    close(t.ffn_act, core.gelu(t.ffn_pre), 0)
    close(t.ffn_out, core.feed_forward(t.ln1, p.w_1, p.b_1, p.w_2, p.b_2, "gelu"))
    close(t.resid2, t.ln1 + t.ffn_out, 0)
    close(t.ln2_mean, t.resid2.mean(-1))
    close(t.ln2_std, np.sqrt(t.resid2.var(-1) + 1e-5))
    close(t.out, core.layer_norm(t.resid2, p.ln2_gamma, p.ln2_beta))


def test_transformer_block_trace_is_read_only_and_owns_its_arrays():
    rng = np.random.default_rng(25)
    x = rng.normal(size=(4, 8))
    mask = core.causal_mask(4)
    p = make_params(rng, gated=True)
    for act in ["gelu", "swiglu"]:
        t = core.transformer_block(x, p, 2, mask=mask, activation=act)
        read = {f.name: getattr(t, f.name) for f in dataclasses.fields(t)}  # the lazy part included
        arrays = {k: v for k, v in read.items() if isinstance(v, np.ndarray)}
        assert len(arrays) == 24 - (act != "swiglu")
        for name, a in arrays.items():
            assert not a.flags.writeable, name
            with pytest.raises(ValueError):
                a[...] = 0
            assert a.dtype == (np.bool_ if name in ("mask", "head_on") else np.float64), name
        with pytest.raises(AttributeError):  # frozen dataclass
            t.out = None
    assert x.flags.writeable and mask.flags.writeable  # the caller's arrays are untouched
    x[0, 0] = 99.0
    assert t.x[0, 0] != 99.0


def test_the_block_after_attention_is_computed_on_first_read_and_checked_at_once():
    rng = np.random.default_rng(27)
    x = rng.normal(size=(5, 8))
    p = make_params(rng)
    lazy = core.transformer_block(x, p, 2)
    assert core.AFTER_ATTENTION.isdisjoint(vars(lazy)), "nothing after attention before it is read"
    assert lazy.weights.shape == (2, 5, 5) and core.AFTER_ATTENTION.isdisjoint(vars(lazy))
    out = lazy.out
    assert core.AFTER_ATTENTION <= set(vars(lazy)) and lazy.out is out, "all of it at once, kept"
    # the same numbers as the block written out with the module's public pieces
    attn, _ = core.multi_head_attention(x, *mha_args(p), 2, **mha_biases(p))
    h = core.layer_norm(x + attn, p.ln1_gamma, p.ln1_beta)
    want = core.layer_norm(h + core.feed_forward(h, p.w_1, p.b_1, p.w_2, p.b_2), p.ln2_gamma, p.ln2_beta)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    # a bad weight of the lazy part is refused by the call, not by a later read
    for name, bad in (("ln2_gamma", np.ones(7)), ("w_2", np.ones((12, 7))), ("b_1", np.ones(3))):
        with pytest.raises(ValueError, match=name):
            core.transformer_block(x, dataclasses.replace(p, **{name: bad}), 2)
    with pytest.raises(AttributeError):
        lazy.not_a_field


def test_transformer_block_trace_shapes_and_default_mask():
    rng = np.random.default_rng(26)
    n, d, f = 5, 8, 12
    t = core.transformer_block(rng.normal(size=(n, d)), make_params(rng), 4)
    assert t.mask.shape == (n, n) and t.mask.dtype == np.bool_ and t.mask.all()
    assert (t.temperature, t.scale, t.activation, t.d_head) == (1.0, math.sqrt(2), "gelu", 2)
    shapes = dict(
        x=(n, d),
        q=(4, n, 2),
        k=(4, n, 2),
        v=(4, n, 2),
        scores=(4, n, n),
        scaled_scores=(4, n, n),
        weights=(4, n, n),
        head_outputs=(4, n, 2),
        concat=(n, d),
        attn_out=(n, d),
        resid1=(n, d),
        ln1_mean=(n,),
        ln1_std=(n,),
        ln1=(n, d),
        ffn_pre=(n, f),
        ffn_act=(n, f),
        ffn_out=(n, d),
        resid2=(n, d),
        ln2_mean=(n,),
        ln2_std=(n,),
        out=(n, d),
    )
    for name, shape in shapes.items():
        assert getattr(t, name).shape == shape, name
    close(t.weights.sum(-1), np.ones((4, n)))


def test_transformer_block_records_the_layernorm_eps_it_used():
    """The trace says which ε its LayerNorms added, and σ is the biased std with that ε."""
    rng = np.random.default_rng(27)
    x = rng.normal(size=(4, 8))
    for eps in (1e-5, 0.5):
        t = core.transformer_block(x, make_params(rng), 2, eps=eps)
        assert t.eps == eps
        for i in range(4):
            r = t.resid1[i]
            mean = sum(r) / len(r)
            var = sum((v - mean) ** 2 for v in r) / len(r)
            assert t.ln1_std[i] == pytest.approx(math.sqrt(var + eps), rel=1e-12)


# --------------------------------------------------------------------------
# validation: ValueError naming the argument
# --------------------------------------------------------------------------


def _sdpa(**kw):
    rng = np.random.default_rng(27)
    args = dict(q=rng.normal(size=(3, 4)), k=rng.normal(size=(5, 4)), v=rng.normal(size=(5, 2)))
    args.update(kw)
    return core.scaled_dot_product_attention(args.pop("q"), args.pop("k"), args.pop("v"), **args)


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(k=np.zeros((5, 3))), "d_k"),
        (dict(v=np.zeros((4, 2))), "n_k"),
        (dict(q=np.zeros(4)), "q"),
        (dict(temperature=0.0), "temperature"),
        (dict(temperature=-1.0), "temperature"),
        (dict(temperature=np.inf), "temperature"),
        (dict(temperature=np.nan), "temperature"),
        (dict(temperature="hot"), "temperature"),
        (dict(temperature=np.ones(2)), "temperature"),
        (dict(scale=0.0), "scale"),
        (dict(scale=-2.0), "scale"),
        (dict(scale=np.inf), "scale"),
        (dict(mask=np.ones((3, 5))), "mask"),  # float, not bool
        (dict(mask=np.ones((3, 5), dtype=int)), "mask"),
        (dict(mask=np.ones((5, 3), bool)), "mask"),  # does not broadcast
        (dict(mask=np.ones((2, 3, 5), bool)), "mask"),  # would add a batch axis
    ],
)
def test_sdpa_rejects_invalid_arguments(kw, name):
    with pytest.raises(ValueError, match=name):
        _sdpa(**kw)


def test_tiny_scale_times_temperature_is_rejected():
    with pytest.raises(ValueError, match="scale"):
        _sdpa(scale=1e-200, temperature=1e-200)


def _mha(x=None, n_heads=2, **kw):
    rng = np.random.default_rng(28)
    p = make_params(rng)
    args = dict(w_q=p.w_q, w_k=p.w_k, w_v=p.w_v, w_o=p.w_o, **mha_biases(p))
    args.update(kw)
    x = rng.normal(size=(4, 8)) if x is None else x
    return core.multi_head_attention(
        x, args.pop("w_q"), args.pop("w_k"), args.pop("w_v"), args.pop("w_o"), n_heads, **args
    )


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(n_heads=3), "n_heads"),
        (dict(n_heads=0), "n_heads"),
        (dict(n_heads=2.0), "n_heads"),
        (dict(x=np.zeros(8)), "x"),
        (dict(w_q=np.zeros((8, 6))), "w_q"),
        (dict(w_k=np.zeros((6, 8))), "w_k"),
        (dict(w_v=np.zeros((8,))), "w_v"),
        (dict(w_o=np.zeros((8, 9))), "w_o"),
        (dict(b_q=np.zeros(7)), "b_q"),
        (dict(b_k=np.zeros((1, 8))), "b_k"),
        (dict(b_v=np.zeros(9)), "b_v"),
        (dict(b_o=np.zeros(4)), "b_o"),
        (dict(temperature=0), "temperature"),
        (dict(scale=-1), "scale"),
        (dict(mask=np.ones((4, 4))), "mask"),
        (dict(mask=np.ones((3, 4, 4), bool)), "mask"),  # 3 masks for 2 heads
    ],
)
def test_mha_rejects_invalid_arguments(kw, name):
    with pytest.raises(ValueError, match=name):
        _mha(**kw)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: core.layer_norm(np.zeros((2, 4)), np.ones(3), np.zeros(4)), "gamma"),
        (lambda: core.layer_norm(np.zeros((2, 4)), np.ones(4), np.zeros(5)), "beta"),
        (lambda: core.layer_norm(np.zeros((2, 4)), np.ones(4), np.zeros(4), eps=0.0), "eps"),
        (
            lambda: core.feed_forward(
                np.zeros((2, 4)), np.zeros((4, 6)), np.zeros(6), np.zeros((6, 4)), np.zeros(4), activation="tanh"
            ),
            "activation",
        ),
        (
            lambda: core.feed_forward(
                np.zeros((2, 4)), np.zeros((4, 6)), np.zeros(6), np.zeros((6, 4)), np.zeros(4), activation="swiglu"
            ),
            "activation",
        ),
        (
            lambda: core.feed_forward(np.zeros((2, 4)), np.zeros((5, 6)), np.zeros(6), np.zeros((6, 4)), np.zeros(4)),
            "w_1",
        ),
        (
            lambda: core.feed_forward(np.zeros((2, 4)), np.zeros((4, 6)), np.zeros(5), np.zeros((6, 4)), np.zeros(4)),
            "b_1",
        ),
        (
            lambda: core.feed_forward(np.zeros((2, 4)), np.zeros((4, 6)), np.zeros(6), np.zeros((6, 3)), np.zeros(4)),
            "w_2",
        ),
        (
            lambda: core.feed_forward(np.zeros((2, 4)), np.zeros((4, 6)), np.zeros(6), np.zeros((6, 4)), np.zeros(3)),
            "b_2",
        ),
        (lambda: core.swiglu(np.zeros((2, 4)), np.zeros((4, 6)), np.zeros((4, 5)), np.zeros((6, 4))), "w_gate"),
        (lambda: core.causal_mask(-1), "n"),
        (lambda: core.causal_mask(2.5), "n"),
        (lambda: core.sinusoidal_positional_encoding(-1, 4), "n"),
        (lambda: core.sinusoidal_positional_encoding(4, 0), "d_model"),
    ],
)
def test_helpers_reject_invalid_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def _block(p_kw=(), gated=False, x=None, n_heads=2, **kw):
    rng = np.random.default_rng(29)
    p = make_params(rng, gated=gated)
    p = core.BlockParams(**{**p.__dict__, **dict(p_kw)})
    x = rng.normal(size=(4, 8)) if x is None else x
    return core.transformer_block(x, p, n_heads, **kw)


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(activation="tanh"), "activation"),
        (dict(activation="swiglu"), "w_gate"),
        (dict(activation="swiglu", gated=True, p_kw=dict(w_gate=np.zeros((8, 5)))), "w_gate"),
        (dict(n_heads=3), "n_heads"),
        (dict(temperature=-0.5), "temperature"),
        (dict(scale=0.0), "scale"),
        (dict(mask=np.ones((4, 4), dtype=np.int8)), "mask"),
        (dict(mask=np.ones((2, 4, 4), bool)), "mask"),  # the trace stores one [n, n] mask
        (dict(mask=np.ones((4, 3), bool)), "mask"),
        (dict(eps=-1e-5), "eps"),
        (dict(p_kw=dict(w_q=np.zeros((8, 4)))), "w_q"),
        (dict(p_kw=dict(w_o=np.zeros((4, 8)))), "w_o"),
        (dict(p_kw=dict(b_v=np.zeros(5))), "b_v"),
        (dict(p_kw=dict(ln1_gamma=np.ones(5))), "ln1_gamma"),
        (dict(p_kw=dict(ln1_beta=np.ones(5))), "ln1_beta"),
        (dict(p_kw=dict(w_1=np.zeros((7, 12)))), "w_1"),
        (dict(p_kw=dict(b_1=np.zeros(11))), "b_1"),
        (dict(p_kw=dict(w_2=np.zeros((12, 7)))), "w_2"),
        (dict(p_kw=dict(b_2=np.zeros(7))), "b_2"),
        (dict(p_kw=dict(ln2_gamma=np.ones(9))), "ln2_gamma"),
        (dict(p_kw=dict(ln2_beta=np.ones(9))), "ln2_beta"),
    ],
)
def test_transformer_block_rejects_invalid_arguments(kw, name):
    with pytest.raises(ValueError, match=name):
        _block(**kw)


@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_block_with_mostly_unwired_ffn_units_matches_the_loop_reference(activation):
    """The FFN skips the products of units whose input weights are all 0 (the designed model wires 14
    of 1,024): the block must still equal the plain loop reference, idle units and their biases included."""
    rng = np.random.default_rng(11)
    p = make_params(rng, d_model=8, d_ff=40, gated=activation == "swiglu")
    idle = np.ones(40, dtype=bool)
    idle[[3, 17, 29]] = False  # three wired units
    w_1 = np.where(idle[None, :], 0.0, p.w_1)
    w_gate = None if p.w_gate is None else np.where(idle[None, :], 0.0, p.w_gate)
    p = core.BlockParams(**{**p.__dict__, "w_1": w_1, "w_gate": w_gate})
    x = rng.normal(size=(5, 8))
    trace = core.transformer_block(x, p, 2, temperature=0.8, activation=activation)
    want = ref_block(x.tolist(), p, 2, 0.8, None, None, activation)
    close(trace.out, want)
    pre_want = trace.ln1 @ w_1 + (0 if activation == "swiglu" else p.b_1)
    close(trace.ffn_pre, pre_want)
    if activation != "swiglu":
        act = core.relu if activation == "relu" else core.gelu
        close(trace.ffn_act[:, idle], np.broadcast_to(act(p.b_1[idle]), (5, int(idle.sum()))))


def test_a_block_given_its_projections_equals_the_block_that_computes_them():
    """project_qkv + transformer_block(qkv=...) (what a slider reuses) is the same block, to the last bit."""
    rng = np.random.default_rng(5)
    p = make_params(rng, d_model=8, d_ff=12)
    x = rng.normal(size=(6, 8))
    qkv = core.project_qkv(x, p, 2)
    for temperature, scale in ((1.0, None), (0.3, 1.5)):
        a = core.transformer_block(x, p, 2, temperature=temperature, scale=scale)
        b = core.transformer_block(x, p, 2, temperature=temperature, scale=scale, qkv=qkv)
        for name in ("q", "k", "v", "scores", "weights", "out"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    with pytest.raises(ValueError, match="q must have shape"):
        core.transformer_block(x[:5], p, 2, qkv=qkv)


def test_the_wired_units_of_read_only_weights_are_kept_and_of_writable_ones_found_anew():
    """core._wired_units: a slider move reuses the mask of a model's (read-only) w_1; an array that can
    still change is scanned every time, so a change to it is seen."""
    rng = np.random.default_rng(5)
    w_1 = np.zeros((6, 10))
    w_1[:, [1, 4]] = rng.normal(size=(6, 2))
    frozen = w_1.copy()
    frozen.setflags(write=False)
    expected = np.isin(np.arange(10), [1, 4])
    np.testing.assert_array_equal(core._wired_units(frozen, None), expected)
    assert core._wired_units(frozen, None) is core._wired_units(frozen, None), "read-only weights: kept"
    np.testing.assert_array_equal(core._wired_units(w_1, None), expected)
    w_1[2, 7] = 0.5  # a writable array changed: the new unit is found
    np.testing.assert_array_equal(core._wired_units(w_1, None), np.isin(np.arange(10), [1, 4, 7]))
    gate = np.zeros((6, 10))
    gate[0, 9] = 1.0
    gate.setflags(write=False)
    np.testing.assert_array_equal(core._wired_units(frozen, gate), np.isin(np.arange(10), [1, 4, 9]))


def test_a_mostly_zero_read_only_matrix_is_multiplied_over_its_nonzero_rows_and_columns_alone():
    """core._matmul: the designed model's sparse weights skip their zero rows and columns; the product
    is x @ w all the same, a NaN in x still reaches the output, and dense or writable matrices (which
    may still change) take the plain product."""
    rng = np.random.default_rng(11)
    w = np.zeros((64, 48))
    w[rng.integers(0, 64, 20), rng.integers(0, 48, 20)] = rng.normal(size=20)
    w.setflags(write=False)
    rows, cols, block = core._support(w)  # premise: the sparse route is taken
    assert set(rows) == set(np.flatnonzero(w.any(axis=1))) and set(cols) == set(np.flatnonzero(w.any(axis=0)))
    x = rng.normal(size=(5, 64))
    np.testing.assert_allclose(core._matmul(x, w), x @ w, rtol=1e-13, atol=0)
    np.testing.assert_allclose(core._matmul(x[None], w), x[None] @ w, rtol=1e-13, atol=0)  # batched [..., d_in]
    zero_row = int(np.flatnonzero(~w.any(axis=1))[0])
    x[2, zero_row] = np.nan  # where w's row is all zeros: x @ w gives NaN in that row of the output
    np.testing.assert_array_equal(np.isnan(core._matmul(x, w)), np.isnan(x @ w))
    dense = rng.normal(size=(64, 48))
    dense.setflags(write=False)
    assert core._support(dense) is None
    writable = w.copy()
    assert core._support(writable) is None
    writable[0, 0] = 7.0  # a change to a writable matrix is always seen
    np.testing.assert_allclose(core._matmul(x[:1], writable), x[:1] @ writable)
