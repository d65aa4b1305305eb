"""The numerical core of Attention Explorer: one transformer block in plain NumPy.

Contract
--------
* Pure functions, NumPy only (plus ``math.erf`` for GELU). No I/O, no global
  random state; runs unchanged on CPython 3.11+ and on Pyodide (CPython 3.12,
  NumPy 2.0.2).
* Precision follows the arguments: float32 arrays stay float32, anything else
  is cast to float64, and NumPy's promotion does the rest, so the result is
  float32 only when every array argument is. The designed model computes in
  float64; the trained model in float32 (its weights are float32, and Pyodide
  has no BLAS: its forward pass is the page's slowest step). Only the product
  of big matrices and erf take a different route in float32 (``_matmul``,
  ``erf``); float64 results are what they always were, to the last bit.
* Weights act on the right, ``x @ w + b`` with ``w`` of shape ``[d_in, d_out]``
  (the transpose of PyTorch's ``nn.Linear.weight``). Head ``h`` of multi-head
  attention owns columns ``h*d_head:(h+1)*d_head`` of ``w_q``/``w_k``/``w_v``,
  the same split ``nn.MultiheadAttention`` makes.
* ``weights = softmax(q @ k.T / (scale * temperature))``; ``scale`` defaults
  to sqrt(d_k) (Vaswani et al. 2017), ``temperature`` is the explorer's knob.
  Only their product matters.
* Masks are boolean, True where attention is *allowed*. A fully masked row
  gets all-zero weights and a zero output (PyTorch would give NaN there).
* Stable: no NaN/inf for temperature in [0.01, 100], scores up to +-1e4 or
  any mask (softmax subtracts the row max; masked logits are -inf, never a
  large finite negative that could win a fully masked row).
* Invalid arguments raise ``ValueError`` whose message names the argument.
* ``transformer_block`` is the original post-LN block and returns a
  read-only ``BlockTrace`` of every intermediate, for the views to draw.
  What follows the attention sublayer (LayerNorms, FFN) is computed when
  first read (``AFTER_ATTENTION``); the arguments are all checked at once.
  ``head_mask`` switches heads off (ablation): an off head's output z is set
  to 0 before W_O; its attention weights are still computed and traced.
* Aggregates over heads and layers (``head_mean``, ``attention_rollout``) read
  the traced weights; rollout follows Abnar & Zuidema (2020).
* ``attention_fn`` (``transformer_block``, ``_mha``) replaces the softmax with
  the reader's own function, head by head:
  ``attention_fn(q_h, k_h, v_h, mask, temperature, scale, head) -> (z_h, weights_h)``
  with q_h/k_h [n, d_k], v_h [n, d_v], mask [n, n] bool, temperature and the
  scale actually used as floats, head 0-based. Each call gets its own copies,
  so the function may change them in place. Scores and scaled scores are still
  computed here (the views draw them); the results are cast to the inputs'
  dtype and checked for shape only (ValueError naming attention_fn): what
  they mean is custom_attention's business. ``head_mask`` applies after it.
* ``Settings`` is everything a forward pass reads besides the tokens and the
  weights (the page's knobs), one value from the page's state through every
  model into ``run_block``, which turns it into ``transformer_block``'s
  arguments for one layer. A new knob is a field there and its use in
  ``run_block`` (and its ``fields.Field``, which ``state.settings`` fills in by name).
"""

import math
from dataclasses import dataclass, field, fields
from typing import Callable, Optional

import numpy as np

ACTIVATIONS = ("relu", "gelu", "swiglu")


# --------------------------------------------------------------------------
# validation helpers (every message starts with the argument's name)
# --------------------------------------------------------------------------


def _float(name, x, ndim=None):  # any -> float32 ndarray if x is one, else float64 ndarray
    try:
        a = np.asarray(x)
        if a.dtype != np.float32:
            a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a real-valued array: {e}") from None
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    return a


def _check_shape(name, a, shape):  # raises unless a.shape == shape
    if a.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {a.shape}")


def _positive_finite(name, value):  # scalar -> float > 0
    a = np.asarray(value)
    if a.ndim != 0 or a.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a real scalar, got {value!r}")
    v = float(a)
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{name} must be positive and finite, got {v!r}")
    return v


def _positive_int(name, value, minimum=1):  # scalar -> int >= minimum
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _bool_mask(mask, shape):  # None | bool array broadcastable to shape -> bool [*shape]
    if mask is None:
        return np.ones(shape, dtype=bool)
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {m.dtype}")
    try:
        return np.broadcast_to(m, shape)
    except ValueError:
        raise ValueError(f"mask of shape {m.shape} does not broadcast to {tuple(shape)}") from None


def _bias(name, b, n, dtype):  # None | [n] -> [n] (None: zeros of the activations' dtype)
    if b is None:
        return np.zeros(n, dtype)
    b = _float(name, b)
    _check_shape(name, b, (n,))
    return b


def _check_activation(activation, allowed):
    if activation not in allowed:
        raise ValueError(f"activation must be one of {allowed}, got {activation!r}")


# --------------------------------------------------------------------------
# building blocks
# --------------------------------------------------------------------------


def _matmul(x, w):  # [..., d_in], [d_in, d_out] -> [..., d_out]: x @ w for a weight matrix w
    # Pyodide's NumPy has no BLAS: there matmul falls back to a strided loop, while einsum runs contiguous
    # inner products about twice as fast (measured in Pyodide, float32 [16, 384] @ [384, 1536]: 4.4 ms vs
    # 8.9 ms; [16, 1536] @ [1536, 384]: 4.4 vs 9.2; the same whether w is C- or Fortran-ordered). Only
    # float32 takes that route: einsum sums in another order, and float64 (the designed model) keeps every
    # last bit it had. The attention products (q k^T, weights v: small, batched) stay matmul, faster there.
    if x.dtype == np.float32 and w.dtype == np.float32:
        return np.einsum("...i,io->...o", x, w)
    sparse = _support(w)
    if sparse is not None and np.isfinite(x).all():  # (a NaN or inf in x must reach the output as x @ w has it)
        rows, cols, block = sparse
        out = np.zeros(x.shape[:-1] + (w.shape[1],), np.result_type(x, w))
        out[..., cols] = x[..., rows] @ block
        return out
    return x @ w


_KEPT: dict = {}  # (what, id of each array) -> (the arrays, result): see _kept


def _kept(what: str, arrays: tuple, compute):  # -> compute(), kept while `arrays` are read-only
    # A model's weights do not change between slider moves, so what is derived from read-only weight
    # arrays alone is computed once. The entry holds the arrays themselves, so their ids cannot be
    # reused while it stands. Writable arrays (a caller's own): computed every time.
    key = (what, *map(id, arrays))
    hit = _KEPT.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], arrays)):
        return hit[1]
    result = compute()
    if not any(a.flags.writeable for a in arrays):
        if len(_KEPT) >= 128:  # a handful of models' matrices; never grows without bound
            _KEPT.clear()
        _KEPT[key] = (arrays, result)
    return result


def _support(w):  # [d_in, d_out] -> None | (rows [r], cols [c], w[rows][:, cols] [r, c])
    # A read-only float64 weight matrix that is mostly zeros (the designed model's: W_O has 64 nonzero
    # entries in 256 x 256) is multiplied over its nonzero rows and columns only: the same sums of the
    # same nonzero products in the same order, ~16x fewer multiplications (~0.6 ms of each slider move
    # in Pyodide, where NumPy has no BLAS). Kept per matrix (_kept); writable ones: plain @.
    if w.dtype != np.float64 or w.ndim != 2 or w.flags.writeable:
        return None

    def scan():
        nonzero = w != 0
        rows, cols = np.flatnonzero(nonzero.any(axis=1)), np.flatnonzero(nonzero.any(axis=0))
        return (
            (rows, cols, np.ascontiguousarray(w[np.ix_(rows, cols)])) if 4 * len(rows) * len(cols) <= w.size else None
        )

    return _kept("support", (w,), scan)


def softmax(x, axis=-1):  # [..., n] -> [..., n]
    x = _float("x", x)
    m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)  # initial: empty axes are fine too
    # an all -inf (fully masked) row has max -inf; shift by 0 instead so it
    # stays -inf -> exp 0 -> zero row, rather than -inf - -inf = NaN
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)


def dot_product_terms(q, k):  # [d], [d] -> [d]
    # q·k taken apart: the per-dimension products q[d]·k[d], which sum to the score
    q, k = _float("q", q, ndim=1), _float("k", k, ndim=1)
    _check_shape("k", k, q.shape)
    return q * k


def projection_terms(x, w, col):  # [d_in], [d_in, d_out], int -> [d_in]
    # (x @ w)[col] taken apart: x[a]·w[a, col] per input dimension a (the bias is not included)
    x, w = _float("x", x, ndim=1), _float("w", w, ndim=2)
    _check_shape("w", w, (x.shape[0], w.shape[1]))
    if not 0 <= int(col) < w.shape[1]:
        raise ValueError(f"col must be in 0..{w.shape[1] - 1}, got {col}")
    return x * w[:, int(col)]


def causal_mask(n):  # int -> [n, n] bool
    n = _positive_int("n", n, minimum=0)
    return np.tril(np.ones((n, n), dtype=bool))  # token i sees tokens 0..i


def scaled_dot_product_attention(
    q, k, v, *, temperature=1.0, scale=None, mask=None
):  # [..., n_q, d_k], [..., n_k, d_k], [..., n_k, d_v] -> ([..., n_q, d_v], [..., n_q, n_k])
    # mask: bool, broadcastable to [..., n_q, n_k], True = may attend
    _, _, weights, z, _ = _attention(q, k, v, temperature, scale, mask)
    return z, weights


def _attention(q, k, v, temperature, scale, mask, attention_fn=None):
    # -> (scores, scaled_scores, weights, z, scale_used); see scaled_dot_product_attention;
    # attention_fn (q, k, v of shape [n_heads, n, d] only): weights and z come from it, head by head
    q, k, v = _float("q", q), _float("k", k), _float("v", v)
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions [..., n, d], got shape {a.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share d_k (last axis), got q {q.shape} and k {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must share n_k (second-to-last axis), got k {k.shape} and v {v.shape}")
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"q, k, v batch axes do not broadcast: {q.shape}, {k.shape}, {v.shape}") from None
    temperature = _positive_finite("temperature", temperature)
    scale = math.sqrt(q.shape[-1]) if scale is None else _positive_finite("scale", scale)
    denom = scale * temperature
    if not (math.isfinite(denom) and denom > 0.0):
        raise ValueError(f"scale * temperature must be positive and finite, got {denom!r}")
    mask = _bool_mask(mask, batch + (q.shape[-2], k.shape[-2]))

    scores = q @ np.swapaxes(k, -1, -2)  # [..., n_q, n_k]
    scaled = scores / denom
    if attention_fn is not None:
        weights, z = _custom_attention(attention_fn, q, k, v, mask, temperature, scale)
        return scores, scaled, weights, z, scale
    # -inf, not a big negative number: a fully masked row must come out zero
    weights = softmax(np.where(mask, scaled, -np.inf), axis=-1)
    z = weights @ v  # [..., n_q, d_v]
    return scores, scaled, weights, z, scale


def _custom_attention(attention_fn, q, k, v, mask, temperature, scale):
    # q, k [n_heads, n_q, d_k], v [n_heads, n_k, d_v], mask bool [n_heads, n_q, n_k], floats
    # -> (weights [n_heads, n_q, n_k], z [n_heads, n_q, d_v]), from attention_fn one head at a time
    if q.ndim != 3:
        raise ValueError(f"attention_fn needs q, k, v of shape [n_heads, n, d], got q {q.shape}")
    n_heads, n_q, _ = q.shape
    n_k, d_v = v.shape[-2:]
    dtype = np.result_type(q, k, v)  # what the built-in softmax gives: float32 only when q, k, v all are
    weights, z = [], []
    for h in range(n_heads):
        # copies: the function may write into its arguments without touching the trace or a cached q, k, v
        q_h, k_h, v_h, mask_h = (np.array(a[h]) for a in (q, k, v, mask))
        out = attention_fn(q_h, k_h, v_h, mask_h, temperature, scale, h)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise ValueError(
                f"attention_fn must return a pair (z, weights); for head {h} it returned {type(out).__name__}"
            )
        z.append(_custom_result("z", out[0], h, (n_q, d_v), dtype))
        weights.append(_custom_result("weights", out[1], h, (n_q, n_k), dtype))
    return np.stack(weights), np.stack(z)


def _custom_result(name, a, head, shape, dtype):  # one array attention_fn returned -> ndarray of dtype, shape checked
    try:
        a = np.asarray(a, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(f"attention_fn's {name} for head {head} must be a real-valued array: {e}") from None
    if a.shape != shape:
        raise ValueError(f"attention_fn's {name} for head {head} must have shape {shape}, got {a.shape}")
    return a


def split_heads(x, n_heads):  # [n, d_model] -> [n_heads, n, d_head]
    n, d_model = x.shape
    return x.reshape(n, n_heads, d_model // n_heads).transpose(1, 0, 2)


def merge_heads(x):  # [n_heads, n, d_head] -> [n, n_heads * d_head]
    n_heads, n, d_head = x.shape
    return x.transpose(1, 0, 2).reshape(n, n_heads * d_head)


def multi_head_attention(
    x, w_q, w_k, w_v, w_o, n_heads, *, b_q=None, b_k=None, b_v=None, b_o=None, temperature=1.0, scale=None, mask=None
):  # [n, d_model] -> ([n, d_model], [n_heads, n, n])
    # w_* [d_model, d_model], b_* [d_model] (None = 0), mask bool broadcastable to [n_heads, n, n]
    t = _mha(x, w_q, w_k, w_v, w_o, n_heads, b_q, b_k, b_v, b_o, temperature, scale, mask)
    return t["attn_out"], t["weights"]


def _mha(
    x,
    w_q,
    w_k,
    w_v,
    w_o,
    n_heads,
    b_q,
    b_k,
    b_v,
    b_o,
    temperature,
    scale,
    mask,
    qkv=None,
    head_mask=None,
    attention_fn=None,
):
    # -> dict of every intermediate of multi_head_attention; qkv: (q, k, v) already projected from this x;
    # head_mask: bool [n_heads] (None = all on), an off head's output z is 0 before W_O;
    # attention_fn: each head's weights and z come from it (see the module docstring), head_mask still applies
    x = _float("x", x, ndim=2)
    n, d_model = x.shape
    n_heads = _positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
    ws = {}
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        ws[name] = _float(name, w)
        _check_shape(name, ws[name], (d_model, d_model))
    bs = {
        name: _bias(name, b, d_model, x.dtype) for name, b in (("b_q", b_q), ("b_k", b_k), ("b_v", b_v), ("b_o", b_o))
    }
    if qkv is None:
        q, k, v = (split_heads(_matmul(x, ws[f"w_{c}"]) + bs[f"b_{c}"], n_heads) for c in "qkv")  # [n_heads, n, d_head]
    else:
        q, k, v = (_float(name, a, ndim=3) for name, a in zip("qkv", qkv))
        for name, a in zip("qkv", (q, k, v)):
            _check_shape(name, a, (n_heads, n, d_model // n_heads))
    scores, scaled, weights, heads, scale = _attention(q, k, v, temperature, scale, mask, attention_fn)
    if head_mask is not None:
        on = _head_mask(head_mask, n_heads)
        if not on.all():
            heads = heads * on[:, None, None].astype(heads.dtype)  # [n_heads, n, d_head], off heads all 0
    concat = merge_heads(heads)  # [n, d_model]
    attn_out = _matmul(concat, ws["w_o"]) + bs["b_o"]
    return dict(
        q=q,
        k=k,
        v=v,
        scores=scores,
        scaled_scores=scaled,
        weights=weights,
        head_outputs=heads,
        concat=concat,
        attn_out=attn_out,
        scale=scale,
        d_head=d_model // n_heads,
    )


def _head_mask(head_mask, n_heads):  # -> bool [n_heads], True = the head is on
    m = np.asarray(head_mask)
    if m.dtype != np.bool_:
        raise ValueError(f"head_mask must be boolean (True = head on), got dtype {m.dtype}")
    _check_shape("head_mask", m, (n_heads,))
    return m


def head_mean(weights):  # [n_heads, n_q, n_k] -> [n_q, n_k]: the mean attention over a layer's heads
    w = _float("weights", weights, ndim=3)
    if w.shape[0] == 0:
        raise ValueError("weights must hold at least one head, got shape " + str(w.shape))
    return w.mean(axis=0)


def attention_rollout(layer_weights, upto=None):  # [[n_heads, n, n] per layer], int -> [n, n]
    # Abnar & Zuidema (2020): per layer Ã_l = ½·mean_h A_l + ½·I (the residual connection as an even
    # share of "attention to itself"), rows renormalised; rollout = Ã_upto ⋯ Ã_1 Ã_0 (0-based layers,
    # upto included; None = the last). Row i: how much of token i's output traces back to each input
    # token, if attention were the only mixing and the residual carried exactly half.
    if layer_weights is None or isinstance(layer_weights, (str, bytes)):
        raise ValueError(f"layer_weights must be a sequence of [n_heads, n, n] arrays, got {layer_weights!r:.40}")
    mats = [_float(f"layer_weights[{l}]", w, ndim=3) for l, w in enumerate(layer_weights)]
    if not mats:
        raise ValueError("layer_weights must hold at least one layer")
    n = mats[0].shape[-1]
    for l, w in enumerate(mats):
        _check_shape(f"layer_weights[{l}]", w, (w.shape[0], n, n))
        if w.shape[0] == 0:
            raise ValueError(f"layer_weights[{l}] must hold at least one head")
    if upto is None:
        last = len(mats) - 1
    elif isinstance(upto, (bool, np.bool_)) or not isinstance(upto, (int, np.integer)):
        raise ValueError(f"upto must be a whole number (a 0-based layer) or None, got {upto!r}")
    else:
        last = int(upto)
    if not 0 <= last < len(mats):
        raise ValueError(f"upto must be in 0..{len(mats) - 1}, got {upto}")
    dtype = np.result_type(*mats)  # float32 stays float32 (the module's contract)
    eye = np.eye(n, dtype=dtype)
    rollout = eye
    for w in mats[: last + 1]:
        a = 0.5 * w.mean(axis=0) + 0.5 * eye  # [n, n]
        a = a / a.sum(axis=-1, keepdims=True)  # a fully masked row still has its ½ on the diagonal
        rollout = a @ rollout  # later layers on the left: Ã_l ⋯ Ã_0
    return rollout


def layer_norm(x, gamma, beta, eps=1e-5):  # x [..., d], gamma [d], beta [d] -> [..., d]
    return _layer_norm(x, gamma, beta, eps)[0]


def _layer_norm(x, gamma, beta, eps, names=("gamma", "beta")):
    # -> (out [..., d], mean [...], std [...]) with std = sqrt(biased var + eps), as nn.LayerNorm
    x = _float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dimension, got shape {x.shape}")
    return _normalize(x, *_ln_params(x.shape[-1], gamma, beta, eps, names))


def _ln_params(d, gamma, beta, eps, names):  # -> (gamma [d], beta [d], eps), checked
    gamma, beta = _float(names[0], gamma), _float(names[1], beta)
    _check_shape(names[0], gamma, (d,))
    _check_shape(names[1], beta, (d,))
    return gamma, beta, _positive_finite("eps", eps)


def _normalize(x, gamma, beta, eps):  # x [..., d] -> (out [..., d], mean [...], std [...]); arguments checked
    mean = np.mean(x, axis=-1)
    centered = x - mean[..., None]  # two-pass variance: no E[x^2]-E[x]^2 cancellation
    std = np.sqrt(np.mean(centered * centered, axis=-1) + eps)
    return centered / std[..., None] * gamma + beta, mean, std


# NumPy has no erf and SciPy is not loaded in the browser.
# float64: math.erf (correctly rounded to ~1 ulp) through frompyfunc, a Python call per value (~0.3 us in
# Pyodide): fine for the designed model, whose GELU acts on its few wired units.
# float32: those calls were a sixth of the trained model's forward pass, so it is Abramowitz & Stegun
# 7.1.26 (Hastings' fit, |error| <= 1.5e-7, also what PyTorch's vectorised CPU erf uses) as array
# operations. Evaluated in float32 it stays within 5.4e-7 of math.erf (GELU within 4.7e-7) on every
# float32 in [-10, 10]: a few float32 steps (6e-8 just below 1), and 20x under the trained model's 1e-5
# accuracy bound (tests/test_core.py checks both).
_erf_ufunc = np.frompyfunc(math.erf, 1, 1)
_AS_P = 0.3275911
_AS_A = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)  # a5 .. a1


def erf(x):  # [...] -> [...]
    x = _float("x", x)
    if x.dtype == np.float64:
        return np.asarray(_erf_ufunc(x), dtype=np.float64)
    a = np.minimum(np.abs(x), 6.0)  # erf(6) = 1 - 2e-17, 1 in float32; and a * a cannot overflow
    t = 1.0 / (1.0 + _AS_P * a)
    y = _AS_A[0] * t
    for c in _AS_A[1:]:
        y += c
        y *= t  # y = (a1 t + a2 t^2 + ... + a5 t^5), by Horner
    return np.copysign(1.0 - y * np.exp(-a * a), x)  # erf(x) = 1 - y exp(-x^2) for x >= 0, and erf is odd


def gelu(x):  # [...] -> [...]
    x = _float("x", x)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))  # exact GELU, = F.gelu(approximate="none")


def relu(x):  # [...] -> [...]
    return np.maximum(_float("x", x), 0.0)


def sigmoid(x):  # [...] -> [...]
    x = _float("x", x)
    e = np.exp(-np.abs(x))  # never overflows, unlike exp(-x) for x << 0
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def silu(x):  # [...] -> [...]
    x = _float("x", x)
    return x * sigmoid(x)  # a.k.a. swish


def _ffn_weights(x, w_1, w_2):  # -> (x [..., d_model], w_1 [d_model, d_ff], w_2 [d_ff, d_model], d_ff)
    x = _float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have a feature axis [..., d_model], got shape {x.shape}")
    d_model = x.shape[-1]
    w_1 = _float("w_1", w_1, ndim=2)
    if w_1.shape[0] != d_model:
        raise ValueError(f"w_1 must have shape [d_model={d_model}, d_ff], got {w_1.shape}")
    d_ff = w_1.shape[1]
    w_2 = _float("w_2", w_2)
    _check_shape("w_2", w_2, (d_ff, d_model))
    return x, w_1, w_2, d_ff


def feed_forward(
    x, w_1, b_1, w_2, b_2, activation="gelu"
):  # [n, d_model], [d_model, d_ff], [d_ff], [d_ff, d_model], [d_model] -> [n, d_model]
    _check_activation(activation, ("relu", "gelu"))
    x, w_1, w_2, d_ff = _ffn_weights(x, w_1, w_2)
    b_1, b_2 = _bias("b_1", b_1, d_ff, x.dtype), _bias("b_2", b_2, x.shape[-1], x.dtype)
    act = relu if activation == "relu" else gelu
    return _matmul(act(_matmul(x, w_1) + b_1), w_2) + b_2


def swiglu(
    x, w_1, w_gate, w_2
):  # [n, d_model], up [d_model, d_ff], gate [d_model, d_ff], down [d_ff, d_model] -> [n, d_model]
    x, w_1, w_2, d_ff = _ffn_weights(x, w_1, w_2)
    w_gate = _float("w_gate", w_gate)
    _check_shape("w_gate", w_gate, w_1.shape)
    return _matmul(silu(_matmul(x, w_gate)) * _matmul(x, w_1), w_2)  # LLaMA: w2(silu(w1 x) * w3 x), our w_gate = its w1


def sinusoidal_positional_encoding(n, d_model):  # int, int -> [n, d_model]
    n = _positive_int("n", n, minimum=0)
    d_model = _positive_int("d_model", d_model)
    pos = np.arange(n, dtype=np.float64)[:, None]  # [n, 1]
    two_i = 2 * (np.arange(d_model) // 2)  # columns 2i and 2i+1 share an angle; odd d_model just ends on a sin
    angle = pos / np.power(10000.0, two_i / d_model)  # [n, d_model]
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))


# --------------------------------------------------------------------------
# the transformer block and its trace
# --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BlockParams:
    """One transformer block's weights (x @ W convention), checked and frozen."""

    w_q: np.ndarray  # [d_model, d_model]
    w_k: np.ndarray  # [d_model, d_model]
    w_v: np.ndarray  # [d_model, d_model]
    w_o: np.ndarray  # [d_model, d_model]
    b_q: np.ndarray  # [d_model]
    b_k: np.ndarray  # [d_model]
    b_v: np.ndarray  # [d_model]
    b_o: np.ndarray  # [d_model]
    ln1_gamma: np.ndarray  # [d_model]
    ln1_beta: np.ndarray  # [d_model]
    w_1: np.ndarray  # [d_model, d_ff] (the "up" projection for swiglu)
    b_1: np.ndarray  # [d_ff] (unused, may be None, for swiglu)
    w_2: np.ndarray  # [d_ff, d_model]
    b_2: np.ndarray  # [d_model]
    ln2_gamma: np.ndarray  # [d_model]
    ln2_beta: np.ndarray  # [d_model]
    w_gate: Optional[np.ndarray] = None  # [d_model, d_ff], swiglu only

    @property
    def d_model(self):
        return np.shape(self.w_q)[0]

    @property
    def d_ff(self):
        return np.shape(self.w_1)[1]


def freeze_arrays(record):  # a frozen dataclass instance -> None
    # own a private, read-only copy of every array field, so neither the caller nor a view can
    # mutate the record (nor the record the caller's arrays); for __post_init__ of trace records
    for f in fields(record):
        value = record.__dict__.get(f.name)  # a field not computed yet (BlockTrace's lazy part) stays unset
        if isinstance(value, np.ndarray):
            a = np.array(value, copy=True)
            a.setflags(write=False)
            object.__setattr__(record, f.name, a)


@dataclass(frozen=True, eq=False)
class BlockTrace:
    """Every intermediate of one block's forward pass, for the views to draw (arrays frozen)."""

    x: np.ndarray  # [n, d_model] input
    mask: np.ndarray  # [n, n] bool, True = may attend (all True when none given)
    temperature: float
    scale: float  # the sqrt(d_k) (or override) actually used
    activation: str
    n_heads: int
    d_head: int
    q: np.ndarray  # [n_heads, n, d_head]
    k: np.ndarray  # [n_heads, n, d_head]
    v: np.ndarray  # [n_heads, n, d_head]
    scores: np.ndarray  # [n_heads, n, n] raw q @ k.T
    scaled_scores: np.ndarray  # [n_heads, n, n] scores / (scale * temperature), masked cells NOT replaced
    weights: np.ndarray  # [n_heads, n, n]
    head_outputs: np.ndarray  # [n_heads, n, d_head]
    concat: np.ndarray  # [n, d_model]
    attn_out: np.ndarray  # [n, d_model] concat @ w_o + b_o
    eps: float = 1e-5  # the ε both LayerNorms add to the variance
    head_on: Optional[np.ndarray] = None  # [n_heads] bool: False = switched off (its z is 0 before W_O)
    custom: bool = False  # True: weights and head_outputs came from an attention_fn, not the built-in softmax
    # After attention: computed on first read (AFTER_ATTENTION). A slider drags T while the first screen
    # (heatmap, affinity bars) reads only the attention part, and the rest, two LayerNorms and the FFN,
    # was ~2.4 ms of each move's ~7 ms in Pyodide. transformer_block checks every argument before it
    # returns, so reading these raises nothing.
    resid1: np.ndarray = field(init=False)  # [n, d_model] x + attn_out
    ln1_mean: np.ndarray = field(init=False)  # [n]
    ln1_std: np.ndarray = field(init=False)  # [n] sqrt(var + eps)
    ln1: np.ndarray = field(init=False)  # [n, d_model] = h
    ffn_pre: np.ndarray = field(init=False)  # [n, d_ff] h @ w_1 + b_1 (swiglu: h @ w_1)
    ffn_gate: Optional[np.ndarray] = field(init=False)  # [n, d_ff] h @ w_gate (swiglu only, else None)
    ffn_act: np.ndarray = field(init=False)  # [n, d_ff] activation(ffn_pre) (swiglu: silu(ffn_gate) * ffn_pre)
    ffn_out: np.ndarray = field(init=False)  # [n, d_model]
    resid2: np.ndarray = field(init=False)  # [n, d_model] h + ffn_out
    ln2_mean: np.ndarray = field(init=False)  # [n]
    ln2_std: np.ndarray = field(init=False)  # [n]
    out: np.ndarray = field(init=False)  # [n, d_model] block output

    def __post_init__(self):
        freeze_arrays(self)

    def __getattr__(self, name):  # only for attributes not set: the fields after attention, on first read
        finish = self.__dict__.get("_finish")
        if name not in AFTER_ATTENTION or finish is None:
            raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")
        for key, value in finish().items():
            if isinstance(value, np.ndarray):
                value = np.array(value, copy=True)
                value.setflags(write=False)
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_finish", None)  # the closure's arrays can go
        return self.__dict__[name]

    @property
    def n_tokens(self):
        return self.x.shape[0]

    @property
    def d_model(self):
        return self.x.shape[1]

    @property
    def d_ff(self):
        return self.ffn_pre.shape[1]


# BlockTrace's fields computed on first read (after the attention sublayer): those it is not built with
AFTER_ATTENTION = frozenset(f.name for f in fields(BlockTrace) if not f.init)


def _wired_units(w_1, w_gate):  # [d_model, d_ff], None | [d_model, d_ff] -> bool [d_ff]
    # The units with any nonzero input weight; kept for read-only weights (_kept: scanning w_1 took
    # ~1 ms of each move in Pyodide).
    arrays = (w_1,) if w_gate is None else (w_1, w_gate)
    return _kept(
        "wired",
        arrays,
        lambda: np.any(w_1 != 0, axis=0) | (np.any(w_gate != 0, axis=0) if w_gate is not None else False),
    )


def _ffn_sublayer(h, w_1, b_1, w_gate, w_2, b_2, activation):  # [n, d_model], ... -> (pre, gate, act, out)
    # pre/gate/act [n, d_ff], out [n, d_model]. swiglu: b_1 is unused (gated FFNs, as LLaMA, have no hidden
    # bias); b_2 is kept so the three activations differ only inside the hidden layer.
    # A unit whose input weights are all 0 has the same pre-activation (b_1, or 0) for every token. The
    # designed model wires 14 of its 1,024 units, so the products run over the wired units only and the
    # rest are filled in from that constant: the same numbers, without ~70x the work (a slider drags this).
    n, d_ff = h.shape[0], w_1.shape[1]
    swiglu = activation == "swiglu"
    # more than half the units wired: dense (a trained model), the plain products, no copies of the weights.
    # One row of w_1 with that many nonzeros settles it without scanning all of w_1 (~1 ms a layer in Pyodide).
    dense = np.count_nonzero(w_1[:1]) > d_ff // 2
    if not dense:
        wired_mask = _wired_units(w_1, w_gate if swiglu else None)  # [d_ff] bool
        wired = np.flatnonzero(wired_mask)
        dense = len(wired) > d_ff // 2
    if dense:
        pre = _matmul(h, w_1) if swiglu else _matmul(h, w_1) + b_1
        gate = _matmul(h, w_gate) if swiglu else None
        act = silu(gate) * pre if swiglu else (relu(pre) if activation == "relu" else gelu(pre))
        return pre, gate, act, _matmul(act, w_2) + b_2
    idle = np.flatnonzero(~wired_mask)
    if swiglu:
        pre = np.zeros((n, d_ff), h.dtype)
        gate = np.zeros((n, d_ff), h.dtype)
        pre[:, wired] = _matmul(h, w_1[:, wired])
        gate[:, wired] = _matmul(h, w_gate[:, wired])
        act = silu(gate) * pre
    else:
        pre = np.broadcast_to(b_1, (n, d_ff)).copy()
        pre[:, wired] += _matmul(h, w_1[:, wired])
        gate = None
        fn = relu if activation == "relu" else gelu
        act = np.empty((n, d_ff), pre.dtype)
        act[:, wired] = fn(pre[:, wired])
        act[:, idle] = fn(b_1[idle])  # the same for every token
    out = _matmul(act[:, wired], w_2[wired]) + b_2
    if len(idle) and np.any(act[0, idle]):  # idle units: one constant row, added to every token (none
        out = out + _matmul(act[0, idle], w_2[idle])  # when their activation is 0: no copy of w_2's rows)
    return pre, gate, act, out


def project_qkv(x, params, n_heads):  # [n, d_model], BlockParams, int -> ([n_heads, n, d_head] x 3)
    # Q, K, V of a block: they depend on x and the weights only, not on temperature or scale, so a
    # caller that moves a slider can compute them once and hand them to transformer_block(qkv=...)
    x = _float("x", x, ndim=2)
    n_heads = _positive_int("n_heads", n_heads)
    d_model = x.shape[1]
    p = params
    return tuple(
        split_heads(_matmul(x, _float(f"w_{c}", w)) + _bias(f"b_{c}", b, d_model, x.dtype), n_heads)
        for c, w, b in (("q", p.w_q, p.b_q), ("k", p.w_k, p.b_k), ("v", p.w_v, p.b_v))
    )


def transformer_block(
    x,
    params,
    n_heads,
    *,
    temperature=1.0,
    scale=None,
    mask=None,
    activation="gelu",
    eps=1e-5,
    qkv=None,
    head_mask=None,
    attention_fn=None,
):  # [n, d_model] -> BlockTrace
    # params: BlockParams; mask: bool broadcastable to [n, n], shared by all heads;
    # qkv: project_qkv(x, params, n_heads) when the caller has it already (it must be of this x);
    # head_mask: bool [n_heads], False switches a head off (its z is 0 before W_O; None = all on);
    # attention_fn(q_h, k_h, v_h, mask, temperature, scale, head) -> (z_h, weights_h): replaces the softmax
    # head by head (module docstring); the trace's scores are still q k^T, and trace.custom is True
    _check_activation(activation, ACTIVATIONS)
    x = _float("x", x, ndim=2)
    n, d_model = x.shape
    p = params
    if activation == "swiglu" and p.w_gate is None:
        raise ValueError("w_gate is required for activation='swiglu'")
    mask = _bool_mask(mask, (n, n))  # one mask shared by all heads, stored in the trace

    # attention sublayer, post-LN (Vaswani et al. 2017): h = LayerNorm(x + MHA(x))
    a = _mha(
        x,
        p.w_q,
        p.w_k,
        p.w_v,
        p.w_o,
        n_heads,
        p.b_q,
        p.b_k,
        p.b_v,
        p.b_o,
        temperature,
        scale,
        mask,
        qkv,
        head_mask,
        attention_fn,
    )
    # every weight of the rest is checked now, so that reading the lazy fields can raise nothing
    ln1 = _ln_params(d_model, p.ln1_gamma, p.ln1_beta, eps, ("ln1_gamma", "ln1_beta"))
    ln2 = _ln_params(d_model, p.ln2_gamma, p.ln2_beta, eps, ("ln2_gamma", "ln2_beta"))
    dtype = np.result_type(x, a["attn_out"], ln1[0], ln1[1])  # h's: what the FFN's missing biases are zeros of
    _, w_1, w_2, d_ff = _ffn_weights(x, p.w_1, p.w_2)
    b_2 = _bias("b_2", p.b_2, d_model, dtype)
    w_gate = None
    if activation == "swiglu":
        w_gate = _float("w_gate", p.w_gate)
        _check_shape("w_gate", w_gate, (d_model, d_ff))
    b_1 = _bias("b_1", p.b_1, d_ff, dtype)

    def finish():  # the feed-forward sublayer and both LayerNorms: out = LayerNorm(h + FFN(h))
        resid1 = x + a["attn_out"]
        h, ln1_mean, ln1_std = _normalize(resid1, *ln1)
        ffn_pre, ffn_gate, ffn_act, ffn_out = _ffn_sublayer(h, w_1, b_1, w_gate, w_2, b_2, activation)
        resid2 = h + ffn_out
        out, ln2_mean, ln2_std = _normalize(resid2, *ln2)
        return dict(
            resid1=resid1,
            ln1_mean=ln1_mean,
            ln1_std=ln1_std,
            ln1=h,
            ffn_pre=ffn_pre,
            ffn_gate=ffn_gate,
            ffn_act=ffn_act,
            ffn_out=ffn_out,
            resid2=resid2,
            ln2_mean=ln2_mean,
            ln2_std=ln2_std,
            out=out,
        )

    trace = BlockTrace(
        x=x,
        mask=mask,
        temperature=float(temperature),
        scale=float(a["scale"]),
        activation=activation,
        n_heads=int(n_heads),
        d_head=a["d_head"],
        q=a["q"],
        k=a["k"],
        v=a["v"],
        scores=a["scores"],
        scaled_scores=a["scaled_scores"],
        weights=a["weights"],
        head_outputs=a["head_outputs"],
        concat=a["concat"],
        attn_out=a["attn_out"],
        eps=float(eps),
        head_on=np.ones(int(n_heads), bool) if head_mask is None else _head_mask(head_mask, int(n_heads)),
        custom=attention_fn is not None,
    )
    object.__setattr__(trace, "_finish", finish)
    return trace


@dataclass(frozen=True)
class Settings:
    """What a forward pass reads besides the tokens: the same for every layer of every model.

    Hashable (state.py memoises runs on it); attention_fn is None there and set only for the run.
    """

    temperature: float = 1.0  # T > 0: the softmax's temperature
    dk_scale: Optional[float] = None  # the scores' divisor; None: sqrt(d_k) of the block
    causal: bool = False  # a decoder's mask: each token sees only itself and the tokens before
    activation: str = "gelu"  # the FFN's nonlinearity (ACTIVATIONS)
    ablated: tuple = ()  # (layer, head) pairs (0-based) whose output z is 0 before W_O
    attention_fn: Optional[Callable] = None  # replaces every head's softmax (transformer_block); None: softmax


def head_mask_for(ablated, layer, n_heads):  # ((layer, head), ...), int, int -> None | bool [n_heads]
    # transformer_block's head_mask for one layer: False where (layer, h) is in ablated; None when no
    # head of this layer is off (the plain, unmasked path)
    off = [h for (l, h) in ablated if l == layer]
    if not off:
        return None
    on = np.ones(n_heads, dtype=bool)
    on[off] = False
    return on


def run_block(x, params, n_heads, settings, *, layer=0, eps=1e-5, qkv=None):  # [n, d_model] -> BlockTrace
    # transformer_block of layer `layer` (0-based) under the settings of a forward pass (it checks x)
    return transformer_block(
        x,
        params,
        n_heads,
        temperature=settings.temperature,
        scale=settings.dk_scale,
        mask=causal_mask(len(x)) if settings.causal else None,
        activation=settings.activation,
        eps=eps,
        qkv=qkv,
        head_mask=head_mask_for(settings.ablated, layer, n_heads),
        attention_fn=settings.attention_fn,
    )
