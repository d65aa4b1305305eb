"""core.head_mean and core.attention_rollout against plain-Python loop references.

The product promises (core's contract): head_mean is the mean attention over a layer's heads;
attention_rollout is Abnar & Zuidema's (2020) rollout: per layer Ã_l = ½·mean_h A_l + ½·I with
rows renormalised, multiplied as Ã_upto ⋯ Ã_0 (0-based, upto included, None = the last layer);
invalid arguments raise ValueError naming the argument. The references below are written from that
definition with lists and explicit loops, never from core's numbers.
"""

from __future__ import annotations

import math
import pathlib
import sys

import numpy as np
import pytest

try:
    from attention_explorer import core
except ImportError:  # without conftest's path set-up
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "py"))
    from attention_explorer import core

TOL = 1e-12


# --------------------------------------------------------------------------
# loop references: lists of lists of floats in, lists out
# --------------------------------------------------------------------------


def ref_head_mean(weights):  # [n_heads][n_q][n_k] -> [n_q][n_k]
    n_heads, n_q, n_k = len(weights), len(weights[0]), len(weights[0][0])
    out = []
    for i in range(n_q):
        row = []
        for j in range(n_k):
            total = 0.0
            for h in range(n_heads):
                total += weights[h][i][j]
            row.append(total / n_heads)
        out.append(row)
    return out


def ref_rollout(layers, upto):  # [n_layers][n_heads][n][n], int -> [n][n]
    n = len(layers[0][0])
    rollout = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    for l in range(upto + 1):
        mean = ref_head_mean(layers[l])
        mixed = []
        for i in range(n):
            row = [0.5 * mean[i][j] + (0.5 if i == j else 0.0) for j in range(n)]
            s = sum(row)
            mixed.append([x / s for x in row])
        product = []
        for i in range(n):  # mixed @ rollout: the later layer on the left
            product.append([sum(mixed[i][t] * rollout[t][j] for t in range(n)) for j in range(n)])
        rollout = product
    return rollout


def close(a, b, tol=TOL):
    a, b = np.asarray(a, dtype=np.float64).tolist(), b
    return len(a) == len(b) and all(
        len(ra) == len(rb) and all(abs(x - y) <= tol for x, y in zip(ra, rb)) for ra, rb in zip(a, b)
    )


# --------------------------------------------------------------------------
# inputs: attention-like weights (rows on the simplex), some masked
# --------------------------------------------------------------------------


def random_layers(seed, n, heads_per_layer, *, causal=False, dead_rows=()):
    """[n_layers] of [n_heads, n, n] weights: softmax rows of random logits; causal: zero right of the
    diagonal; dead_rows: (layer, head, row) whose row is all zeros (a fully masked row, as core gives it)."""
    rng = np.random.default_rng(seed)
    layers = []
    for l, n_heads in enumerate(heads_per_layer):
        w = []
        for h in range(n_heads):
            m = []
            for i in range(n):
                logits = (rng.normal(0.0, 2.0, n)).tolist()
                allowed = [(j <= i) if causal else True for j in range(n)]
                if (l, h, i) in dead_rows:
                    allowed = [False] * n
                e = [math.exp(x) if ok else 0.0 for x, ok in zip(logits, allowed)]
                s = sum(e)
                m.append([x / s if s else 0.0 for x in e])
            w.append(m)
        layers.append(np.array(w))
    return layers


CASES = [  # (seed, n, heads per layer, causal, fully masked rows)
    (0, 5, (4, 4, 4), False, ()),
    (1, 7, (3, 3, 3, 3, 3, 3), True, ()),
    (2, 4, (2, 5), False, ((0, 1, 2),)),  # one head has a dead row: the mean row sums to < 1
    (3, 6, (3, 3, 3), True, ((1, 0, 3), (1, 1, 3), (1, 2, 3))),  # a row dead in every head of a layer
    (4, 1, (2, 2), False, ()),  # a single token
]


@pytest.mark.parametrize("seed,n,heads,causal,dead", CASES)
def test_head_mean_is_the_mean_over_heads(seed, n, heads, causal, dead):
    layers = random_layers(seed, n, heads, causal=causal, dead_rows=dead)
    for w in layers:
        assert close(core.head_mean(w), ref_head_mean(w.tolist()))


@pytest.mark.parametrize("seed,n,heads,causal,dead", CASES)
def test_rollout_matches_the_loop_reference_in_the_middle_and_at_the_end(seed, n, heads, causal, dead):
    layers = random_layers(seed, n, heads, causal=causal, dead_rows=dead)
    as_lists = [w.tolist() for w in layers]
    last = len(layers) - 1
    for upto in sorted({0, last // 2, last}):
        assert close(core.attention_rollout(layers, upto), ref_rollout(as_lists, upto)), f"upto={upto}"
    assert close(core.attention_rollout(layers), ref_rollout(as_lists, last)), "upto=None is the last layer"
    assert close(core.attention_rollout(tuple(layers), last), ref_rollout(as_lists, last)), "any sequence"


@pytest.mark.parametrize("seed,n,heads,causal,dead", CASES)
def test_rollout_rows_sum_to_one(seed, n, heads, causal, dead):
    """Each Ã_l is row-stochastic (a dead row keeps its ½ on the diagonal, renormalised to 1), so is their product."""
    layers = random_layers(seed, n, heads, causal=causal, dead_rows=dead)
    for upto in range(len(layers)):
        r = core.attention_rollout(layers, upto).tolist()
        for row in r:
            assert abs(sum(row) - 1.0) <= 1e-12 and min(row) >= 0.0


def test_a_row_dead_in_every_head_rolls_out_to_itself():
    """Fully masked in every head of a one-layer model: ½·0 + ½·I renormalised is the unit row."""
    (layer,) = random_layers(5, 4, (3,), dead_rows=((0, 0, 1), (0, 1, 1), (0, 2, 1)))
    row = core.attention_rollout([layer], 0)[1].tolist()
    assert row == [0.0, 1.0, 0.0, 0.0]


def test_one_layer_rollout_is_half_the_mean_plus_half_the_identity():
    """With rows summing to 1 nothing needs renormalising: Ã = ½·mean + ½·I exactly (the designed model's case)."""
    (layer,) = random_layers(6, 6, (4,))
    mean = ref_head_mean(layer.tolist())
    want = [[0.5 * mean[i][j] + (0.5 if i == j else 0.0) for j in range(6)] for i in range(6)]
    assert close(core.attention_rollout([layer], 0), want)


def test_causal_rollout_never_traces_to_the_future():
    """A product of lower-triangular matrices is lower-triangular: token i traces only to tokens 0..i."""
    layers = random_layers(7, 6, (3, 3, 3, 3), causal=True)
    r = core.attention_rollout(layers).tolist()
    assert all(r[i][j] == 0.0 for i in range(6) for j in range(i + 1, 6))


def test_the_order_of_layers_matters_later_layers_on_the_left():
    """Ã_1 Ã_0 differs from Ã_0 Ã_1 for these weights: the reference fixes which one core computes."""
    layers = random_layers(8, 5, (2, 2))
    swapped = ref_rollout([layers[1].tolist(), layers[0].tolist()], 1)
    assert not close(core.attention_rollout(layers, 1), swapped, tol=1e-6)


def test_inputs_are_not_modified():
    layers = random_layers(9, 4, (2, 2))
    before = [w.copy() for w in layers]
    core.attention_rollout(layers, 1)
    core.head_mean(layers[0])
    assert all(np.array_equal(a, b) for a, b in zip(layers, before))


# --------------------------------------------------------------------------
# invalid arguments: ValueError naming the argument
# --------------------------------------------------------------------------


def test_head_mean_rejects_a_matrix_that_is_not_per_head():
    with pytest.raises(ValueError, match="weights"):
        core.head_mean(np.full((3, 3), 1 / 3))
    with pytest.raises(ValueError, match="weights"):
        core.head_mean([["a", "b"]])


def test_rollout_rejects_no_layers():
    with pytest.raises(ValueError, match="layer_weights"):
        core.attention_rollout([])


def test_rollout_rejects_a_layer_of_the_wrong_shape():
    a, b = random_layers(10, 4, (2, 2))
    with pytest.raises(ValueError, match=r"layer_weights\[1\]"):
        core.attention_rollout([a, b[0]])  # 2-D: heads missing
    with pytest.raises(ValueError, match=r"layer_weights\[1\]"):
        core.attention_rollout([a, b[:, :3, :3]])  # another sentence length
    with pytest.raises(ValueError, match=r"layer_weights\[0\]"):
        core.attention_rollout([a[:, :3, :], b])  # not square


@pytest.mark.parametrize("upto", [2, 5, -1])
def test_rollout_rejects_a_layer_out_of_range(upto):
    layers = random_layers(11, 3, (2, 2))
    with pytest.raises(ValueError, match="upto"):
        core.attention_rollout(layers, upto)


@pytest.mark.parametrize("upto", ["a", 1.5, True, "1"])
def test_rollout_rejects_an_upto_that_is_not_a_whole_number(upto):
    layers = random_layers(12, 3, (2, 2))
    with pytest.raises(ValueError, match="upto"):
        core.attention_rollout(layers, upto)


def test_a_layer_without_heads_is_rejected():
    with pytest.raises(ValueError, match="weights"):
        core.head_mean(np.zeros((0, 3, 3)))
