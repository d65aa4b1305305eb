"""Your own attention (issue 12): custom_attention and the attention_fn hook of core and the models.

What the product promises:
* SOURCE, the page's attention function, run through compile_attention and a model's
  forward(attention_fn=...), gives the built-in block: to ~1e-12 in float64 (the designed and the toy
  model, with and without a causal mask), to float32 precision in float32 (a float32 block, the
  trained model);
* each ready-made edit runs on the designed model's default sentence and does what its title says,
  checked against references written here with plain Python loops over the trace's q, k and scores;
* a reader's mistake comes back as a CodeError with a sentence and the line of their code: a syntax
  error, an exception, a wrong shape, NaN, a row that does not sum to 1, no function, code too long;
* ablation (head_mask) still applies after a custom function; core refuses wrong shapes naming
  attention_fn; without attention_fn nothing changes (tests/test_core.py, unchanged, holds that).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import toy_model
from attention_explorer import core, custom_attention as ca, models

DESIGNED = models.get("designed")
TOKENS = DESIGNED.tokenize(DESIGNED.description.default_text)
KNOBS = dict(temperature=1.0, dk_scale=DESIGNED.description.true_dk_scale, causal=False, activation="gelu")
EDITS = {e.id: e for e in ca.EDITS}


def designed_trace(attention_fn=None, **knobs):
    return DESIGNED.forward(TOKENS, core.Settings(attention_fn=attention_fn, **{**KNOBS, **knobs})).layers[0]


def edit_fn(edit_id):
    return ca.compile_attention(EDITS[edit_id].source)


# --------------------------------------------------------------------------- loop references


def ref_dot_rows(q, k):  # [n][d], [n][d] -> [n][n]: q_i · k_j
    return [[sum(a * b for a, b in zip(qi, kj)) for kj in k] for qi in q]


def ref_softmax(row, allowed):  # [n] floats, [n] bools -> [n], 0 where not allowed
    m = max(r for r, ok in zip(row, allowed) if ok)
    e = [math.exp(r - m) if ok else 0.0 for r, ok in zip(row, allowed)]
    s = sum(e)
    return [x / s for x in e]


def ref_weights(scores, mask, divide_by=1.0, bias=None):  # [n][n] raw scores -> [n][n] softmax weights
    n = len(scores)
    out = []
    for i in range(n):
        row = [scores[i][j] / divide_by - (bias(i, j) if bias else 0.0) for j in range(n)]
        out.append(ref_softmax(row, [bool(mask[i][j]) for j in range(n)]))
    return out


def assert_rows(actual, expected, atol):  # actual ndarray [n, n], expected lists
    assert np.asarray(actual).shape == (len(expected), len(expected[0]))
    for i, row in enumerate(expected):
        for j, value in enumerate(row):
            assert abs(float(actual[i][j]) - value) <= atol, (i, j, float(actual[i][j]), value)


# --------------------------------------------------------------------------- SOURCE is the built-in block


@pytest.mark.parametrize("temperature, dk_scale, causal", [(1.0, 8.0, False), (0.4, 8.0, True), (2.5, 3.0, False)])
def test_source_reproduces_the_designed_block(temperature, dk_scale, causal):
    fn = ca.compile_attention(ca.SOURCE)
    knobs = dict(temperature=temperature, dk_scale=dk_scale, causal=causal)
    built_in, custom = designed_trace(**knobs), designed_trace(fn, **knobs)
    assert not built_in.custom and custom.custom
    assert np.array_equal(custom.scores, built_in.scores)  # the views' scores are untouched
    assert np.array_equal(custom.scaled_scores, built_in.scaled_scores)
    for name in ("weights", "head_outputs", "attn_out", "out"):
        a, b = getattr(custom, name), getattr(built_in, name)
        assert a.dtype == b.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=name)
    if causal:
        above = np.triu(np.ones((len(TOKENS), len(TOKENS)), bool), 1)  # key after the query
        assert not custom.weights[:, above].any()


@pytest.mark.parametrize("causal", [False, True])
def test_source_reproduces_every_layer_of_the_toy_model(causal):
    toks = toy_model.MODEL.tokenize("the toy sees the other toy again")
    knobs = dict(temperature=0.8, dk_scale=math.sqrt(toy_model.D_K), causal=causal, activation="gelu")
    built_in = toy_model.MODEL.forward(toks, core.Settings(**knobs))
    custom = toy_model.MODEL.forward(toks, core.Settings(attention_fn=ca.compile_attention(ca.SOURCE), **knobs))
    assert len(custom.layers) == toy_model.N_LAYERS >= 2
    for a, b in zip(custom.layers, built_in.layers):
        assert a.custom and not b.custom
        for name in ("weights", "head_outputs", "out"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=1e-12, err_msg=name)


def test_source_reproduces_a_float32_block_to_float32_precision():
    p64 = toy_model.MODEL._params[0]
    p32 = core.BlockParams(
        **{
            f.name: None if getattr(p64, f.name) is None else np.asarray(getattr(p64, f.name), np.float32)
            for f in dataclasses.fields(p64)
        }
    )
    x = np.random.default_rng(3).normal(0.0, 1.0, (7, toy_model.D_MODEL)).astype(np.float32)
    kw = dict(temperature=0.7, mask=core.causal_mask(7))
    built_in = core.transformer_block(x, p32, toy_model.N_HEADS, **kw)
    custom = core.transformer_block(x, p32, toy_model.N_HEADS, attention_fn=ca.compile_attention(ca.SOURCE), **kw)
    for name in ("weights", "head_outputs", "out"):
        a, b = getattr(custom, name), getattr(built_in, name)
        assert a.dtype == b.dtype == np.float32, name  # the module's dtype policy holds
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6, err_msg=name)


def test_source_and_every_edit_run_on_the_trained_model(trained_model_installed):
    m = trained_model_installed
    toks = m.tokenize("The cat sat down because it was tired.")
    knobs = dict(temperature=1.0, dk_scale=math.sqrt(m.description.d_k), causal=False, activation="gelu")
    built_in = m.forward(toks, core.Settings(**knobs))
    custom = m.forward(toks, core.Settings(attention_fn=ca.compile_attention(ca.SOURCE), **knobs))
    for a, b in zip(custom.layers, built_in.layers):
        assert a.weights.dtype == np.float32
        np.testing.assert_allclose(a.weights, b.weights, rtol=0, atol=1e-5)
        np.testing.assert_allclose(a.out, b.out, rtol=0, atol=1e-4)
        assert ca.z_matches_weights(a).all() and ca.z_matches_weights(b).all()
    for edit in ca.EDITS:
        run = m.forward(toks, core.Settings(attention_fn=ca.compile_attention(edit.source), **knobs))  # no CodeError
        assert all(t.custom for t in run.layers), edit.id


# --------------------------------------------------------------------------- the edits


@pytest.mark.parametrize("edit", ca.EDITS, ids=lambda e: e.id)
@pytest.mark.parametrize("causal", [False, True])
def test_every_edit_passes_the_checks_on_the_designed_default_sentence(edit, causal):
    assert ca.check_source(edit.source) is None
    trace = designed_trace(ca.compile_attention(edit.source), causal=causal)
    assert trace.custom and np.isfinite(trace.out).all()
    assert ca.z_matches_weights(trace).all()  # every edit still mixes the values by its weights
    assert len(edit.source) <= ca.MAX_CHARS
    assert edit.title and edit.look_for and "\n" not in edit.look_for


def test_the_edits_are_the_ones_the_page_offers():
    assert [e.id for e in ca.EDITS] == ["no-scaling", "argmax", "relu", "causal", "alibi", "per-head-temperature"]
    assert len({e.title for e in ca.EDITS}) == len(ca.EDITS)
    for e in ca.EDITS:  # each is SOURCE with a few lines changed, nothing more
        changed = set(e.source.splitlines()) ^ set(ca.SOURCE.splitlines())
        assert 1 <= len(changed) <= 12, e.id


def test_no_scaling_divides_by_the_temperature_only():
    trace = designed_trace(edit_fn("no-scaling"), temperature=3.0, dk_scale=8.0)
    for h in range(trace.n_heads):
        scores = ref_dot_rows(trace.q[h].tolist(), trace.k[h].tolist())
        assert_rows(trace.weights[h], ref_weights(scores, trace.mask.tolist(), divide_by=3.0), atol=1e-12)
    # and it saturates: rows put more on their top key than the scaled built-in does
    built_in = designed_trace(temperature=3.0, dk_scale=8.0)
    assert trace.weights.max(axis=-1).mean() > built_in.weights.max(axis=-1).mean()


@pytest.mark.parametrize("causal", [False, True])
def test_argmax_puts_each_rows_whole_weight_on_its_top_allowed_key(causal):
    for temperature in (0.5, 2.0):  # the temperature changes nothing
        trace = designed_trace(edit_fn("argmax"), temperature=temperature, causal=causal)
        n = trace.n_tokens
        for h in range(trace.n_heads):
            for i in range(n):
                allowed = [j for j in range(n) if trace.mask[i][j]]
                top = max(float(trace.scores[h, i, j]) for j in allowed)
                row = trace.weights[h, i].tolist()
                ones = [j for j in range(n) if row[j] == 1.0]
                assert len(ones) == 1 and sum(row) == 1.0, (h, i, row)
                assert ones[0] in allowed and float(trace.scores[h, i, ones[0]]) == top


def test_relu_weights_are_the_positive_scores_normalised_and_ignore_the_temperature():
    traces = [designed_trace(edit_fn("relu"), temperature=t, dk_scale=8.0) for t in (0.5, 3.0)]
    for h in range(traces[0].n_heads):
        scores = ref_dot_rows(traces[0].q[h].tolist(), traces[0].k[h].tolist())
        for i, row in enumerate(scores):
            pos = [max(s, 0.0) for s in row]
            total = sum(pos)
            expected = [p / total for p in pos] if total > 0 else [1.0 / len(row)] * len(row)
            for t in traces:
                for j in range(len(row)):
                    assert abs(float(t.weights[h, i, j]) - expected[j]) <= 1e-12
    assert any((traces[0].weights == 0).any(axis=-1).ravel())  # negative scores: exactly 0


def test_relu_spreads_a_row_without_any_positive_score_evenly_over_its_allowed_keys():
    fn = edit_fn("relu")
    q = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])  # row 1 scores -1, 0, 0: nothing positive
    k = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, -1.0]])
    v = np.arange(6.0).reshape(3, 2)
    mask = np.array([[True, True, True], [True, True, False], [True, True, True]])
    z, w = fn(q, k, v, mask, 1.0, 1.0, 0)
    assert w[1].tolist() == [0.5, 0.5, 0.0]  # the allowed keys 0 and 1, equally
    assert w[0].tolist() == [1.0, 0.0, 0.0]
    np.testing.assert_allclose(z, w @ v, atol=1e-15)


def test_causal_edit_zeroes_everything_above_the_diagonal_and_renormalises():
    trace = designed_trace(edit_fn("causal"), causal=False)  # the model's own mask is off
    n = trace.n_tokens
    lower = [[j <= i for j in range(n)] for i in range(n)]
    for h in range(trace.n_heads):
        for i in range(n):
            for j in range(i + 1, n):
                assert trace.weights[h, i, j] == 0.0
        scores = ref_dot_rows(trace.q[h].tolist(), trace.k[h].tolist())
        assert_rows(trace.weights[h], ref_weights(scores, lower, divide_by=8.0), atol=1e-12)
    assert trace.weights[:, 0, 0].tolist() == [1.0] * trace.n_heads  # the first token sees only itself


def test_alibi_subtracts_the_slope_times_the_distance():
    trace = designed_trace(edit_fn("alibi"), temperature=1.5, causal=True)
    for h in range(trace.n_heads):
        scores = ref_dot_rows(trace.q[h].tolist(), trace.k[h].tolist())
        expected = ref_weights(scores, trace.mask.tolist(), divide_by=8.0 * 1.5, bias=lambda i, j: 1.0 * abs(i - j))
        assert_rows(trace.weights[h], expected, atol=1e-12)


def test_per_head_temperature_gives_heads_0_to_3_the_factors_half_one_two_four():
    fn = edit_fn("per-head-temperature")
    assert fn.declares_head
    trace, built_in = designed_trace(fn, temperature=1.2), designed_trace(temperature=1.2)
    factors = [0.5, 1.0, 2.0, 4.0]
    for h in range(trace.n_heads):
        scores = ref_dot_rows(trace.q[h].tolist(), trace.k[h].tolist())
        expected = ref_weights(scores, trace.mask.tolist(), divide_by=8.0 * 1.2 * factors[h % 4])
        assert_rows(trace.weights[h], expected, atol=1e-12)
    np.testing.assert_allclose(trace.weights[1], built_in.weights[1], atol=1e-12)  # ×1: as before
    assert not np.allclose(trace.weights[0], built_in.weights[0], atol=1e-6)
    assert trace.weights[0].max(axis=-1).mean() >= built_in.weights[0].max(axis=-1).mean()  # sharper
    assert trace.weights[3].max(axis=-1).mean() < built_in.weights[3].max(axis=-1).mean()  # flatter


# --------------------------------------------------------------------------- what the function is given


def test_head_is_passed_only_to_a_function_that_declares_it_and_each_layer_counts_from_0():
    # each head attends to the key whose index is its own head index: the weights show what it was told
    by_head = """\
import numpy as np


def attention(q, k, v, mask, temperature, scale, head):
    weights = np.zeros((len(q), len(k)))
    weights[:, head] = 1.0
    return weights @ v, weights
"""
    fn = ca.compile_attention(by_head)
    assert fn.declares_head
    toks = toy_model.MODEL.tokenize("one toy two toys")
    run = toy_model.MODEL.forward(
        toks, core.Settings(temperature=1.0, dk_scale=2.0, causal=False, activation="gelu", attention_fn=fn)
    )
    assert len(run.layers) == toy_model.N_LAYERS
    for trace in run.layers:
        for h in range(toy_model.N_HEADS):
            assert [[float(w) for w in row] for row in trace.weights[h]] == [
                [1.0 if j == h else 0.0 for j in range(len(toks))] for _ in range(len(toks))
            ]
    six_only = """\
def attention(*args, **kwargs):
    if len(args) != 6 or kwargs:
        raise TypeError(f"{len(args)} arguments and {sorted(kwargs)}")
    q, k, v, mask, temperature, scale = args
    weights = mask / mask.sum(axis=-1, keepdims=True)
    return weights @ v, weights
"""
    fn = ca.compile_attention(six_only)
    assert not fn.declares_head
    assert designed_trace(fn).custom  # no TypeError: six positional arguments, no head


def test_the_function_gets_copies_it_may_change_without_harming_the_trace_or_the_cache():
    src = ca.SOURCE.replace(
        "    return z, weights", "    q *= 0\n    k[:] = 5\n    v += 1\n    mask[:] = False\n    return z, weights"
    )
    first = designed_trace(ca.compile_attention(src))
    again = designed_trace()
    plain = designed_trace(ca.compile_attention(ca.SOURCE))
    assert np.array_equal(first.q, again.q) and np.array_equal(first.k, again.k)
    assert np.array_equal(first.v, again.v) and first.mask.all()
    np.testing.assert_allclose(first.weights, plain.weights, atol=1e-12)


def test_the_function_sees_the_temperature_and_the_scale_actually_used():
    src = ca.SOURCE.replace(
        "    scores = q @ k.T",
        "    raise ValueError(f'{temperature} {scale} {mask.shape} {mask.dtype}')\n    scores = q @ k.T",
    )
    n = len(TOKENS)
    with pytest.raises(ca.CodeError) as info:
        designed_trace(ca.compile_attention(src), temperature=0.7, dk_scale=5.0)
    assert info.value.message.endswith(f"ValueError: 0.7 5.0 ({n}, {n}) bool")


def test_head_mask_still_switches_a_head_off_after_a_custom_function():
    fn = ca.compile_attention(ca.SOURCE)
    run = DESIGNED.forward(TOKENS, core.Settings(attention_fn=fn, ablated=((0, 1),), **KNOBS)).layers[0]
    built_in = DESIGNED.forward(TOKENS, core.Settings(ablated=((0, 1),), **KNOBS)).layers[0]
    assert run.custom and run.head_on.tolist() == [True, False, True, True]
    assert not run.head_outputs[1].any()  # its z is 0 before W_O
    assert run.weights[1].sum(axis=-1).tolist() == pytest.approx([1.0] * len(TOKENS))  # weights still traced
    np.testing.assert_allclose(run.out, built_in.out, atol=1e-12)
    # with an edit: the ablated head's output is 0, the others carry the edit's z
    argmax = DESIGNED.forward(TOKENS, core.Settings(attention_fn=edit_fn("argmax"), ablated=((0, 2),), **KNOBS)).layers[
        0
    ]
    assert not argmax.head_outputs[2].any()
    np.testing.assert_allclose(argmax.head_outputs[0], argmax.weights[0] @ argmax.v[0], atol=1e-12)


# --------------------------------------------------------------------------- core's own checks


@pytest.mark.parametrize(
    "returns, words",
    [
        (lambda q, v, n: (np.zeros((n, v.shape[1] + 1)), np.eye(n)), "z for head 0 must have shape"),
        (lambda q, v, n: (np.zeros((n, v.shape[1])), np.eye(n)[:, :-1]), "weights for head 0 must have shape"),
        (lambda q, v, n: np.eye(n), "must return a pair (z, weights)"),
        (lambda q, v, n: (np.zeros((n, v.shape[1])), "not numbers"), "weights for head 0 must be a real-valued array"),
    ],
)
def test_core_refuses_results_of_the_wrong_shape_naming_attention_fn(returns, words):
    def attention_fn(q, k, v, mask, temperature, scale, head):
        return returns(q, v, len(q))

    x = np.random.default_rng(0).normal(size=(5, toy_model.D_MODEL))
    with pytest.raises(ValueError, match="attention_fn") as info:
        core.transformer_block(x, toy_model.MODEL._params[0], toy_model.N_HEADS, attention_fn=attention_fn)
    assert words in str(info.value)


def test_core_calls_the_function_once_per_head_with_the_documented_arguments():
    calls = []

    def attention_fn(q, k, v, mask, temperature, scale, head):
        calls.append((q.shape, k.shape, v.shape, mask.shape, mask.dtype, type(temperature), scale, head))
        w = np.full((len(q), len(k)), 1.0 / len(k))
        return w @ v, w

    x = np.random.default_rng(1).normal(size=(4, toy_model.D_MODEL))
    t = core.transformer_block(
        x, toy_model.MODEL._params[0], toy_model.N_HEADS, temperature=2.0, scale=3.0, attention_fn=attention_fn
    )
    d = toy_model.D_K
    assert calls == [((4, d), (4, d), (4, d), (4, 4), np.dtype(bool), float, 3.0, h) for h in range(toy_model.N_HEADS)]
    assert t.custom and np.allclose(t.weights, 0.25)
    np.testing.assert_allclose(t.scaled_scores, t.scores / 6.0, atol=1e-12)  # still the built-in scores


# --------------------------------------------------------------------------- the reader's mistakes


def _error(source, run=True):  # -> CodeError from compiling (and running on the designed model)
    with pytest.raises(ca.CodeError) as info:
        fn = ca.compile_attention(source)
        if run:
            designed_trace(fn)
    return info.value


def _line_of(source, text):  # 1-based line of the first line containing text
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_syntax_error_names_its_line():
    src = ca.SOURCE.replace("    weights = np.exp(scores)", "    weights = np.exp(scores")
    err = _error(src, run=False)
    assert err.line == _line_of(src, "np.exp(scores") and err.message.startswith(f"line {err.line}: ")
    assert "never closed" in err.message or "syntax" in err.message
    src = ca.SOURCE.replace("temperature, scale):", "temperature, scale)")  # the missing ':'
    err = _error(src, run=False)
    assert err.line == _line_of(src, "def attention") and ":" in err.message[len(f"line {err.line}: ") :]
    check = ca.check_source(src)
    assert isinstance(check, ca.CodeError) and (check.line, check.message) == (err.line, err.message)


def test_bare_invalid_syntax_gets_a_hint():
    src = ca.SOURCE.replace("z = weights @ v", "z = weights @@ v")
    err = _error(src, run=False)
    assert err.line == _line_of(src, "@@") and "invalid syntax" in err.message and "comma" in err.message


def test_an_exception_in_the_readers_code_names_the_innermost_line_type_and_message():
    src = ca.SOURCE.replace("    z = weights @ v", "    bad = helper(1)\n    z = weights @ v").replace(
        "def attention", "def helper(x):\n    return x / 0\n\n\ndef attention"
    )
    err = _error(src)
    assert err.line == _line_of(src, "x / 0") == 5
    assert err.message == "line 5: ZeroDivisionError: division by zero"
    assert err.head == 0


def test_an_exception_while_defining_the_function_names_its_line():
    err = _error("import numpy as np\nimport no_such_module_here\n" + ca.SOURCE, run=False)
    assert err.line == 2 and err.message.startswith("line 2: ModuleNotFoundError: ")


def test_a_numpy_error_in_the_readers_line_points_at_that_line():
    src = ca.SOURCE.replace("q @ k.T", "q @ k")
    err = _error(src)
    assert err.line == _line_of(src, "q @ k /") and "ValueError" in err.message


def test_wrong_shapes_are_explained():
    n, d = len(TOKENS), DESIGNED.description.d_k
    err = _error(ca.SOURCE.replace("return z, weights", "return z, weights[0]"))
    assert err.message == f"weights has shape ({n},): expected ({n}, {n}), one row per query and one column per key"
    assert err.line is None and err.head == 0
    err = _error(ca.SOURCE.replace("return z, weights", "return z.T, weights"))
    assert err.message.startswith(f"z has shape ({d}, {n}): expected ({n}, {d})")
    err = _error(ca.SOURCE.replace("return z, weights", "return weights"))
    assert err.message.startswith("attention must return two things, (z, weights)")
    err = _error(ca.SOURCE.replace("    return z, weights", "    pass"))
    assert "None" in err.message and "return" in err.message


def test_nan_and_infinity_are_reported_with_their_row():
    src = ca.SOURCE.replace(
        "    weights = weights / weights.sum", "    weights[4, 2] = np.nan\n    weights = weights / weights.sum"
    )
    err = _error(src)
    assert err.message == "weights row 4 has NaN (not a number): did exp overflow, or a 0/0?"
    src = ca.SOURCE.replace("    return z, weights", "    z[3, 0] = np.inf\n    return z, weights")
    assert _error(src).message.startswith("z row 3 has an infinite value")
    overflow = ca.SOURCE.replace(
        "    scores = scores - scores.max(axis=-1, keepdims=True)  # exp can't overflow\n", ""
    ).replace("(scale * temperature)", "(scale * temperature) * 100")
    assert "NaN" in _error(overflow).message or "infinite" in _error(overflow).message


def test_a_row_that_does_not_sum_to_1_is_reported():
    src = ca.SOURCE.replace("    return z, weights", "    weights[3] *= 1.7\n    return z, weights")
    err = _error(src)
    assert err.message == "weights row 3 sums to 1.7: did you forget to normalise?"
    src = ca.SOURCE.replace("    return z, weights", "    weights[2] = 0\n    return z, weights")
    assert _error(src).message.startswith("weights row 2 is all zeros")
    src = ca.SOURCE.replace("    return z, weights", "    weights[1] *= 1 + 1e-5\n    return z, weights")
    err = _error(src)
    assert err.message.startswith("weights row 1 sums to 1.00001") and "normalise" in err.message  # not "1"


def test_negative_weights_are_refused_even_when_rows_sum_to_1():
    src = ca.SOURCE.replace(
        "    return z, weights",
        "    weights[2] = weights[2] - 0.5 / len(q)\n"
        "    weights[2] = weights[2] / weights[2].sum()\n    return z, weights",
    )
    err = _error(src)
    assert err.message.startswith("weights row 2 has a negative weight")


def test_a_fully_masked_row_may_sum_to_0_and_no_other_row_may():
    keep_zeros = ca.SOURCE.replace(
        "    return z, weights", "    weights = np.nan_to_num(weights)\n    z = weights @ v\n    return z, weights"
    )
    fn = ca.compile_attention(keep_zeros)
    q = k = v = np.eye(3)
    mask = np.array([[True, True, True], [False, False, False], [True, False, True]])
    z, w = fn(q, k, v, mask, 1.0, 1.0, 0)
    assert w[1].tolist() == [0.0, 0.0, 0.0] and w.sum(axis=-1)[[0, 2]].tolist() == pytest.approx([1.0, 1.0])
    zero_row = ca.compile_attention(
        ca.SOURCE.replace("    return z, weights", "    weights[1] = 0\n    return z, weights")
    )
    with pytest.raises(ca.CodeError, match="row 1 is all zeros"):
        zero_row(q, k, v, np.ones((3, 3), bool), 1.0, 1.0, 0)


def test_a_missing_function_is_explained():
    for src in (
        "import numpy as np\n",
        "attention = 3\n",
        "def attend(q, k, v, mask, temperature, scale):\n    pass\n",
    ):
        err = _error(src, run=False)
        assert err.message == "define a function attention(q, k, v, mask, temperature, scale) that returns (z, weights)"
        assert err.line is None
    assert ca.check_source("def attend(q):\n    pass\n").message == err.message


def test_a_function_with_the_wrong_parameters_is_explained_before_it_runs():
    src = ca.SOURCE.replace("def attention(q, k, v, mask, temperature, scale):", "def attention(q, k, v):")
    err = _error(src, run=False)
    assert err.line == _line_of(src, "def attention")
    assert "attention must take (q, k, v, mask, temperature, scale)" in err.message


def test_code_longer_than_the_limit_is_refused_before_it_is_compiled():
    filler = "#" * (ca.MAX_CHARS - len(ca.SOURCE) - 1) + "\n"
    exact = ca.SOURCE + filler
    assert len(exact) == ca.MAX_CHARS == 4000
    assert ca.check_source(exact) is None
    too_long = ca.SOURCE + "x = (" + "1" * 5000 + "\n"  # a syntax error too: the length is said first
    err = _error(too_long, run=False)
    assert err.message.startswith(f"Your code is {len(too_long):,} characters; the limit is 4,000")
    assert err.line is None
    assert ca.check_source(exact + "#").message.startswith("Your code is 4,001 characters")


def test_check_source_compiles_but_runs_nothing():
    assert ca.check_source(ca.SOURCE) is None
    assert ca.check_source("raise SystemExit\n" + ca.SOURCE) is None  # would fail if it ran
    err = ca.check_source("def attention(q, k, v, mask, temperature, scale):\nreturn 1\n")
    assert err.line == 2 and "indent" in err.message


def test_our_messages_carry_no_markup_characters():
    sources = [
        ca.SOURCE.replace("return z, weights", "return z, weights[0]"),
        ca.SOURCE.replace("return z, weights", "return z.T, weights"),
        ca.SOURCE.replace("return z, weights", "return weights"),
        ca.SOURCE.replace("    return z, weights", "    weights[3] *= 2\n    return z, weights"),
        ca.SOURCE.replace("    return z, weights", "    weights[3, 1] = np.nan\n    return z, weights"),
        ca.SOURCE.replace("    return z, weights", "    z[0, 0] = np.inf\n    return z, weights"),
        ca.SOURCE.replace("    return z, weights", "    weights[0] = -weights[0]\n    return z, weights"),
        ca.SOURCE.replace("return z, weights", "return z, 'ab'"),
        ca.SOURCE.replace("return z, weights", "return z, weights + 0j"),
        ca.SOURCE.replace("z = weights @ v", "z = weights @@ v"),
        ca.SOURCE.replace("def attention(q, k, v, mask, temperature, scale):", "def attention(q):"),
        "import numpy as np\n",
        ca.SOURCE + "#" * 5000,
    ]
    for src in sources:
        message = _error(src).message
        assert not set(message) & set("<>&\"'"), message


def test_the_readers_exception_text_is_quoted_as_it_was_and_cut_when_huge():
    src = ca.SOURCE.replace("    return z, weights", "    raise ValueError('<b>&\"\\'')\n    return z, weights")
    err = _error(src)
    assert err.message == "line 14: ValueError: <b>&\"'"  # verbatim: the page escapes it as any text
    huge = ca.SOURCE.replace("    return z, weights", "    raise ValueError('x' * 100000)\n    return z, weights")
    err = _error(huge)
    assert err.message.startswith("line 14: ValueError: xxx") and len(err.message) < 400


def test_z_matches_weights_tells_views_whether_z_is_still_the_weighted_values():
    assert ca.z_matches_weights(designed_trace(ca.compile_attention(ca.SOURCE))).all()
    assert ca.z_matches_weights(designed_trace()).all()
    own_z = ca.SOURCE.replace("scale):", "scale, head):").replace(
        "    return z, weights", "    if head == 2:\n        z = v\n    return z, weights"
    )
    trace = designed_trace(ca.compile_attention(own_z))  # z = v is allowed: the reader may mix values their way
    assert ca.z_matches_weights(trace).tolist() == [True, True, False, True]
