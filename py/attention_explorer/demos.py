"""The numbers behind "why divide by √d_k": random dot products, their variance, softmax saturation.

If q and k have d_k independent entries of mean 0 and variance 1, then
q·k = Σ_m q_m k_m is a sum of d_k independent products, each of variance
E[q_m²] E[k_m²] = 1, so Var(q·k) = d_k and its spread grows like √d_k.
Dividing by √d_k brings the variance back to 1 for every d_k. Without it, a
softmax over scores that spread by ±√d_k puts almost all weight on the top
score (it saturates), and its gradients vanish.

Everything here is deterministic (np.random.default_rng with a fixed seed) so
the page shows the same picture on every load and in every runtime. The random
vectors are drawn once at the largest d_k; the demo for a smaller d_k uses
their first d_k entries. That is still an honest sample of random d_k-vectors,
and it makes the picture change smoothly as the reader moves the slider (the
same vectors, one dimension more), and gives every d_k from one cumulative sum.

Pure NumPy (plus core.softmax); no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import core

SEED = 20170612  # fixed: the picture must not change between loads (the paper's arXiv date)
N_PAIRS = 2000  # random (q, k) pairs: the empirical variance is within ~±6 % (2σ) of d_k
N_KEYS = 8  # keys in the softmax example: few enough to draw as labelled bars
MAX_DK = 512  # the slider's top; vectors are drawn at this size once
HIST_LIMIT = 48.0  # histogram axis ±48 shared by both rows, so widths compare across d_k
HIST_BIN = 2.0  # histogram bin width (48 bins); values beyond ±48 go to two overflow counts


def _check_dk(d_k, max_dk=MAX_DK) -> int:
    if isinstance(d_k, (bool, np.bool_)) or not isinstance(d_k, (int, np.integer)):
        raise ValueError(f"d_k must be an integer, got {d_k!r}")
    if not 1 <= d_k <= max_dk:
        raise ValueError(f"d_k must be between 1 and {max_dk}, got {d_k}")
    return int(d_k)


@lru_cache(maxsize=4)
def _pair_dot_prefixes(seed: int, n_pairs: int, max_dk: int) -> np.ndarray:  # -> [n_pairs, max_dk]
    # column d-1 holds q·k over the first d entries, for n_pairs random pairs with N(0, 1) entries
    rng = np.random.default_rng([seed, 1])
    q = rng.standard_normal((n_pairs, max_dk))
    k = rng.standard_normal((n_pairs, max_dk))
    out = np.cumsum(q * k, axis=1)
    out.setflags(write=False)  # cached and shared: nobody may change it
    return out


@lru_cache(maxsize=4)
def _key_score_prefixes(seed: int, n_keys: int, max_dk: int) -> np.ndarray:  # -> [max_dk, n_keys]
    # row d-1 holds the scores q·k_j over the first d entries of one query and n_keys keys
    rng = np.random.default_rng([seed, 2])
    q = rng.standard_normal(max_dk)  # [max_dk]
    keys = rng.standard_normal((n_keys, max_dk))  # [n_keys, max_dk]
    out = np.cumsum(q[None, :] * keys, axis=1).T
    out.setflags(write=False)
    return out


def dot_products(d_k: int, *, seed: int = SEED, n_pairs: int = N_PAIRS) -> np.ndarray:  # -> [n_pairs]
    """q·k for n_pairs random pairs q, k ∈ R^{d_k} with independent N(0, 1) entries."""
    d_k = _check_dk(d_k)
    return np.array(_pair_dot_prefixes(seed, n_pairs, MAX_DK)[:, d_k - 1])


def variance_by_dk(
    *, seed: int = SEED, n_pairs: int = N_PAIRS
) -> tuple[np.ndarray, np.ndarray]:  # -> ([MAX_DK], [MAX_DK])
    """Empirical Var(q·k) and Var(q·k/√d_k) for every d_k = 1..MAX_DK (index d_k − 1)."""
    dots = _pair_dot_prefixes(seed, n_pairs, MAX_DK)  # [n_pairs, MAX_DK]
    var = dots.var(axis=0)  # [MAX_DK]; population variance, mean ≈ 0
    return var, var / np.arange(1, MAX_DK + 1)  # Var(X/c) = Var(X)/c²  with c² = d_k


def entropy_bits(w) -> float:  # [n] probabilities -> bits
    """Shannon entropy in bits (0 log 0 = 0): 0 for one-hot, log2(n) for uniform."""
    w = np.asarray(w, dtype=np.float64)
    nz = w[w > 0]
    return float(-(nz * np.log2(nz)).sum())


def histogram(
    values, *, limit: float = HIST_LIMIT, bin_width: float = HIST_BIN
):  # [N] -> (edges [B+1], counts [B], below, above)
    """Counts in equal bins on [−limit, limit]; values outside are counted in `below` / `above`."""
    values = np.asarray(values, dtype=np.float64)
    n_bins = int(round(2 * limit / bin_width))
    edges = np.linspace(-limit, limit, n_bins + 1)
    counts, _ = np.histogram(values, bins=edges)
    return edges, counts, int((values < -limit).sum()), int((values > limit).sum())


@dataclass(frozen=True, eq=False)
class ScaleDemo:
    """Everything the "why divide by √d_k" panel draws for one d_k."""

    d_k: int
    sqrt_dk: float
    dots: np.ndarray  # [N_PAIRS] q·k of random pairs
    scaled_dots: np.ndarray  # [N_PAIRS] q·k / √d_k
    var_dots: float  # empirical Var(q·k); theory d_k
    var_scaled: float  # empirical Var(q·k / √d_k); theory 1
    std_dots: float  # empirical standard deviation of q·k; theory √d_k
    std_scaled: float  # empirical standard deviation of q·k / √d_k; theory 1
    var_curve: np.ndarray  # [MAX_DK] empirical Var(q·k) for d_k = 1..MAX_DK
    var_curve_scaled: np.ndarray  # [MAX_DK] empirical Var(q·k/√d_k)
    hist_edges: np.ndarray  # [B+1] shared bin edges on [−HIST_LIMIT, HIST_LIMIT]
    hist_dots: tuple  # (counts [B], below, above) for dots
    hist_scaled: tuple  # (counts [B], below, above) for scaled_dots
    scores: np.ndarray  # [N_KEYS] one random query against N_KEYS random keys: q·k_j
    scaled_scores: np.ndarray  # [N_KEYS] scores / √d_k
    weights_unscaled: np.ndarray  # [N_KEYS] softmax(scores)
    weights_scaled: np.ndarray  # [N_KEYS] softmax(scores / √d_k)
    max_unscaled: float  # largest weight of each softmax (1 = saturated, 1/N_KEYS = uniform)
    max_scaled: float
    entropy_unscaled: float  # bits; 0 = one-hot, log2(N_KEYS) = uniform
    entropy_scaled: float
    entropy_uniform: float  # log2(N_KEYS): the most an N_KEYS-way softmax can hold

    def __post_init__(self):  # memoised and shared between renders: freeze every array
        for value in vars(self).values():
            for a in value if isinstance(value, tuple) else (value,):
                if isinstance(a, np.ndarray):
                    a.setflags(write=False)


def softmax_example(
    d_k: int, *, seed: int = SEED, n_keys: int = N_KEYS
):  # -> (scores [n_keys], w_unscaled [n_keys], w_scaled [n_keys])
    """One random query against n_keys random keys in R^{d_k}: raw scores and both softmaxes."""
    d_k = _check_dk(d_k)
    scores = np.array(_key_score_prefixes(seed, n_keys, MAX_DK)[d_k - 1])
    return scores, core.softmax(scores), core.softmax(scores / np.sqrt(d_k))


@lru_cache(maxsize=16)
def scale_demo(d_k: int, seed: int = SEED) -> ScaleDemo:
    """The demo's numbers for one d_k (memoised: the slider revisits values)."""
    d_k = _check_dk(d_k)
    root = float(np.sqrt(d_k))
    dots = dot_products(d_k, seed=seed)
    scaled = dots / root
    var_curve, var_curve_scaled = variance_by_dk(seed=seed)
    edges, c_dots, lo_d, hi_d = histogram(dots)
    _, c_scaled, lo_s, hi_s = histogram(scaled)
    scores, w_raw, w_scaled = softmax_example(d_k, seed=seed)
    return ScaleDemo(
        d_k=d_k,
        sqrt_dk=root,
        dots=dots,
        scaled_dots=scaled,
        var_dots=float(dots.var()),
        var_scaled=float(scaled.var()),
        std_dots=float(dots.std()),
        std_scaled=float(scaled.std()),
        var_curve=var_curve,
        var_curve_scaled=var_curve_scaled,
        hist_edges=edges,
        hist_dots=(c_dots, lo_d, hi_d),
        hist_scaled=(c_scaled, lo_s, hi_s),
        scores=scores,
        scaled_scores=scores / root,
        weights_unscaled=w_raw,
        weights_scaled=w_scaled,
        max_unscaled=float(w_raw.max()),
        max_scaled=float(w_scaled.max()),
        entropy_unscaled=entropy_bits(w_raw),
        entropy_scaled=entropy_bits(w_scaled),
        entropy_uniform=float(np.log2(len(scores))),
    )
