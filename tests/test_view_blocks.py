"""The residual + LayerNorm panel and the feed-forward panel draw the trace's numbers, and nothing else.

Each test builds a real state, renders the panel, reads the numbers back out of
the markup (data-* attributes, printed text, bar and dot geometry) and compares
them with the trace that state.compute produced.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from attention_explorer import state as st
from attention_explorer.views import colors, ffn, layernorm, markup
from attention_explorer.views.markup import num
from markup_tree import Node, parse

HOSTILE = '<img src=x onerror=alert(1)> "quotes" & 😀 שלום'
ACTIVATIONS = ("relu", "gelu", "swiglu")


# ---------------------------------------------------------------------------
# reading markup back
# ---------------------------------------------------------------------------

Element = Node  # the name this file's tests use


def reader_number(text: str) -> float:
    """A number as printed for readers (real minus sign) back to a float."""
    return float(text.strip().replace("−", "-"))


def build(**changes):
    s = dataclasses.replace(st.State(), **changes)
    return s, st.compute(s)


STATES = [
    {},  # the default sentence and query
    {"query": 0},  # the first token
    {"query": 2, "causal": True, "temperature": 0.5},
    {"text": "The big brown dog chased the ball across the park", "query": 3, "activation": "relu"},
    {"text": "They said that she was tired", "query": 4, "activation": "swiglu"},
]


# ---------------------------------------------------------------------------
# the diverging scale
# ---------------------------------------------------------------------------


def test_diverging_scale_is_blue_below_zero_orange_above_and_clamped():
    """Sign picks the hue, size the opacity; values beyond the scale saturate instead of wrapping."""
    neg, a_neg = colors.diverging_paint(-0.5)
    pos, a_pos = colors.diverging_paint(0.5)
    assert neg != pos
    assert a_neg == pytest.approx(a_pos)
    assert colors.diverging_paint(-1)[0] == neg and colors.diverging_paint(1)[0] == pos
    assert colors.diverging_paint(5) == colors.diverging_paint(1)
    assert colors.diverging_paint(-5) == colors.diverging_paint(-1)
    assert colors.diverging_paint(1)[1] == pytest.approx(1.0)
    assert colors.diverging_paint(0)[1] < colors.diverging_paint(0.2)[1] < colors.diverging_paint(0.9)[1]


# ---------------------------------------------------------------------------
# Residual and LayerNorm
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("changes", STATES)
def test_layernorm_mu_and_sigma_shown_equal_the_trace(changes):
    """μ and σ, as data attributes and as printed numbers, are the trace's ln1/ln2 mean and std of the query."""
    s, c = build(**changes)
    tr, i = c.trace, s.query
    root = parse(layernorm.render(s, c))
    for key, mean, std in (("ln1", tr.ln1_mean[i], tr.ln1_std[i]), ("ln2", tr.ln2_mean[i], tr.ln2_std[i])):
        (block,) = root.find_all("section", data_block=key)
        assert float(block.attrs["data-mu"]) == pytest.approx(mean, abs=1e-11)
        assert float(block.attrs["data-sigma"]) == pytest.approx(std, abs=1e-11)
        (mu_chip,) = block.find_all(class_="stat stat-mu")
        (sigma_chip,) = block.find_all(class_="stat stat-sigma")
        assert reader_number(mu_chip.all_text().split("=")[1]) == pytest.approx(mean, abs=5e-4)
        assert reader_number(sigma_chip.all_text().split("=")[1]) == pytest.approx(std, abs=5e-4)


@pytest.mark.parametrize("changes", STATES[:3])
def test_layernorm_formula_is_live_mathml_with_mu_and_sigma_substituted(changes):
    """The formula is MathML (not LaTeX) and its second half carries this token's μ and σ."""
    s, c = build(**changes)
    tr, i = c.trace, s.query
    markup = layernorm.render(s, c)
    assert "\\frac" not in markup and "$$" not in markup
    root = parse(markup)
    for key, mean, std in (("ln1", tr.ln1_mean[i], tr.ln1_std[i]), ("ln2", tr.ln2_mean[i], tr.ln2_std[i])):
        (block,) = root.find_all("section", data_block=key)
        maths = block.find_all("math")
        assert len(maths) == 2, "symbolic formula and live formula"
        symbolic, live = maths
        assert "LayerNorm" in symbolic.all_text() and "μ" in symbolic.all_text() and "σ" in symbolic.all_text()
        (frac,) = live.find_all("mfrac")
        numerator, denominator = [ch for ch in frac.children if ch.tag != "#text"]
        assert reader_number(denominator.all_text()) == pytest.approx(std, abs=5e-4)
        # numerator: r − μ, with a negative μ in parentheses
        mu_text = numerator.all_text().split("−", 1)[1].strip("()")
        assert reader_number(mu_text) == pytest.approx(mean, abs=5e-4)


def test_layernorm_draws_each_vector_as_a_row_with_one_hover_column_per_dimension():
    """Two blocks of four rows (summand, summand, sum, normalised output); 256 focusable columns each, one tab stop."""
    s, c = build()
    d = c.trace.d_model
    root = parse(layernorm.render(s, c))
    for key in ("ln1", "ln2"):
        (block,) = root.find_all("section", data_block=key)
        rows = [r.attrs["data-row"] for r in block.find_all("div", class_="vec-row")]
        assert rows == [f"{key}-a", f"{key}-b", f"{key}-sum", f"{key}-out"]
        for r in block.find_all("div", class_="vec-row"):
            (svg,) = r.find_all("svg")
            assert svg.attrs["viewbox"] == f"0 0 {d * layernorm.BAR_W} {layernorm.ROW_H}"
        (grid,) = block.find_all(data_grid=True)
        cells = grid.find_all(data_grid_cell=True)
        assert [int(cell.attrs["data-j"]) for cell in cells] == list(range(d))
        assert {cell.attrs["data-i"] for cell in cells} == {"0"}
        assert [cell.attrs["tabindex"] for cell in cells].count("0") == 1
        assert all(cell.attrs.get("data-tip") for cell in cells)


def _bars(row_el, d):
    """{dimension: signed bar height} read back from a row's paths, plus the zero line's y."""
    (svg,) = row_el.find_all("svg")
    (zero,) = svg.find_all("line", class_="zero-line")
    mid = float(zero.attrs["y1"])
    width = float(svg.attrs["viewbox"].split()[2])
    bars = {}
    for path in svg.find_all("path"):
        for x, y, w, h in re.findall(r"M([\d.]+) ([\d.]+)h([\d.]+)v([\d.]+)h-[\d.]+z", path.attrs["d"]):
            j = round(float(x) / (width / d))
            bars[j] = float(h) if float(y) < mid else -float(h)
    return bars, mid


@pytest.mark.parametrize("changes", STATES[:4])
def test_layernorm_bar_heights_are_proportional_to_the_trace_values(changes):
    """Every bar's sign and height encode its trace value; rows of one block share their scale where they should."""
    s, c = build(**changes)
    tr, i = c.trace, s.query
    root = parse(layernorm.render(s, c))
    d = tr.d_model
    expected = {
        "ln1-a": tr.x[i],
        "ln1-b": tr.attn_out[i],
        "ln1-sum": tr.resid1[i],
        "ln1-out": tr.ln1[i],
        "ln2-a": tr.ln1[i],
        "ln2-b": tr.ffn_out[i],
        "ln2-sum": tr.resid2[i],
        "ln2-out": tr.out[i],
    }
    for row_el in root.find_all("div", class_="vec-row"):
        values = np.asarray(expected[row_el.attrs["data-row"]])
        scale = float(row_el.attrs["data-scale"])
        assert scale >= np.max(np.abs(values)) - 1e-12, "the row's scale holds its largest value"
        bars, mid = _bars(row_el, d)
        if not np.any(values):
            assert not bars, "an all-zero vector draws no bars"
            continue
        tallest = max(abs(h) for h in bars.values())
        unit = tallest / (np.max(np.abs(values)) / scale)  # viewBox units per 1.0 of scale
        for j in range(d):
            drawn = bars.get(j, 0.0)
            assert drawn == pytest.approx(values[j] / scale * unit, abs=0.11), (row_el.attrs["data-row"], j)
    # x, MHA(x) and their sum share one scale, so their bars can be compared by eye
    scales = {r.attrs["data-row"]: r.attrs["data-scale"] for r in root.find_all("div", class_="vec-row")}
    assert scales["ln1-a"] == scales["ln1-b"] == scales["ln1-sum"]
    assert scales["ln2-a"] == scales["ln2-b"] == scales["ln2-sum"]


def test_layernorm_mu_and_sigma_lines_sit_at_mu_and_mu_plus_minus_sigma():
    """On the sum's chart the solid line is at μ and the dashed ones at μ ± σ (relative to the zero line)."""
    s, c = build()
    tr, i = c.trace, s.query
    root = parse(layernorm.render(s, c))
    for key, mean, std in (("ln1", tr.ln1_mean[i], tr.ln1_std[i]), ("ln2", tr.ln2_mean[i], tr.ln2_std[i])):
        (row_el,) = root.find_all("div", data_row=f"{key}-sum")
        (svg,) = row_el.find_all("svg")
        mid = float(svg.find_all("line", class_="zero-line")[0].attrs["y1"])
        mu_y = float(svg.find_all("line", class_="ref-mu")[0].attrs["y1"])
        hi_y, lo_y = sorted(float(l.attrs["y1"]) for l in svg.find_all("line", class_="ref-sigma"))
        per_unit = (mid - hi_y) / (mean + std)  # the line at μ + σ fixes the scale
        assert mid - mu_y == pytest.approx(mean * per_unit, abs=0.02)
        assert mid - lo_y == pytest.approx((mean - std) * per_unit, abs=0.02)


@pytest.mark.parametrize("changes", STATES[:3])
def test_layernorm_table_on_request_prints_the_trace_numbers(changes):
    """The table a reader opens lists, per dimension, the two summands, their sum and the LayerNorm output;
    until opened it is an inert template (no elements in the page)."""
    s, c = build(**changes)
    tr, i = c.trace, s.query
    root = parse(layernorm.render(s, c))
    for key, cols in (
        ("ln1", (tr.x[i], tr.attn_out[i], tr.resid1[i], tr.ln1[i])),
        ("ln2", (tr.ln1[i], tr.ffn_out[i], tr.resid2[i], tr.out[i])),
    ):
        (block,) = root.find_all("section", data_block=key)
        (folded,) = block.find_all("details", data_keep=f"{key}-table")
        (waiting,) = folded.find_all("template", data_on_open=True)
        (body,) = waiting.find_all("tbody")
        rows = body.find_all("tr")
        assert len(rows) == tr.d_model
        for j, tr_el in enumerate(rows):
            cells = [reader_number(td.all_text()) for td in tr_el.find_all("td")]
            assert cells == pytest.approx([float(col[j]) for col in cols], abs=5e-4)


def test_layernorm_tooltip_derives_each_dimension_from_trace_numbers():
    """A dimension's tip shows x, MHA(x), their sum, μ, σ and the output, as the trace has them."""
    s, c = build()
    tr, i = c.trace, s.query
    root = parse(layernorm.render(s, c))
    (block,) = root.find_all("section", data_block="ln1")
    cells = block.find_all(data_grid_cell=True)
    j = int(np.argmax(np.abs(tr.attn_out[i])))  # a dimension attention actually wrote to
    tip = cells[j].attrs["data-tip"]
    assert tip.startswith(f"dimension {j}")
    for value in (tr.x[i, j], tr.attn_out[i, j], tr.resid1[i, j], tr.ln1_std[i], tr.ln1[i, j]):
        assert num(value, 3) in tip
    assert num(tr.ln1_mean[i], 3) in tip


@pytest.mark.parametrize("changes", STATES[:3])
def test_a_live_layernorm_leaves_its_tips_to_the_worker_and_the_worker_gives_the_same_text(changes):
    """The worker's redraw carries no per-dimension tip (data-tip-src instead); dimension_tip gives,
    for every dimension of both blocks, exactly the tip the pre-rendered panel writes inline."""
    s, c = build(**changes)
    inline, live = parse(layernorm.render(s, c)), parse(layernorm.render(s, c, tips_on_demand=True))
    for key in ("ln1", "ln2"):
        want = [
            cell.attrs["data-tip"]
            for cell in inline.find_all("section", data_block=key)[0].find_all(data_grid_cell=True)
        ]
        cells = live.find_all("section", data_block=key)[0].find_all(data_grid_cell=True)
        assert len(cells) == len(want) == c.trace.d_model
        assert all("data-tip" not in cell.attrs and "data-tip-src" in cell.attrs for cell in cells)
        assert [layernorm.dimension_tip(c, s.query, key, j) for j in range(len(want))] == want
    assert layernorm.dimension_tip(c, s.query, "ln3", 0) == "" and layernorm.dimension_tip(c, s.query, "ln1", 256) == ""


def test_layernorm_says_gamma_one_beta_zero_when_the_model_has_them():
    """With γ = 1, β = 0 (the designed model) the normalised row is the output, and the panel says so."""
    s, c = build()
    assert np.all(c.params.ln1_gamma == 1) and np.all(c.params.ln1_beta == 0), "premise: the designed model"
    markup = layernorm.render(s, c)
    root = parse(markup)
    assert not root.find_all(data_row="ln1-gamma")
    (out_row,) = root.find_all("div", data_row="ln1-out")
    assert "γ = 1 and β = 0" in out_row.all_text()


def test_layernorm_shows_gamma_and_beta_rows_when_they_are_not_trivial():
    """With a non-trivial γ, β the panel draws them and says the pre-γ vector is not in the trace."""
    s, c = build()
    d = c.trace.d_model
    gamma = np.linspace(0.5, 1.5, d)
    beta = np.linspace(-0.2, 0.2, d)
    params = dataclasses.replace(c.params, ln1_gamma=gamma, ln1_beta=beta)
    root = parse(layernorm.render(s, dataclasses.replace(c, run=dataclasses.replace(c.run, params=(params,)))))
    (block,) = root.find_all("section", data_block="ln1")
    rows = [r.attrs["data-row"] for r in block.find_all("div", class_="vec-row")]
    assert rows == ["ln1-a", "ln1-b", "ln1-sum", "ln1-gamma", "ln1-beta", "ln1-out"]
    assert "not drawn" in block.all_text()
    tip = block.find_all(data_grid_cell=True)[d - 1].attrs["data-tip"]
    assert f"γ = {num(gamma[-1], 3)}" in tip and f"β = {num(beta[-1], 3)}" in tip


# ---------------------------------------------------------------------------
# Feed-forward network
# ---------------------------------------------------------------------------


def _dots(root):
    """The curve and its dots for single units (the stack of all-zero units, if any, is left out)."""
    (curve,) = root.find_all("svg", class_="act-curve")
    return curve, curve.find_all("circle", data_unit=True)


def _silent_units(tr, i: int) -> list[int]:
    """Units whose pre-activation, activation (and gate) are all exactly 0 for token i."""
    zero = (tr.ffn_pre[i] == 0) & (tr.ffn_act[i] == 0)
    if tr.activation == "swiglu":
        zero &= tr.ffn_gate[i] == 0
    return [int(u) for u in np.flatnonzero(zero)]


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_ffn_dots_carry_each_units_trace_numbers(activation):
    """One dot per hidden unit, with data-unit, data-pre, data-act (and data-gate for SwiGLU) equal to the
    trace, except the units whose numbers are all 0: one dot at the origin says how many they are."""
    s, c = build(activation=activation)
    tr, i = c.trace, s.query
    assert tr.activation == activation
    root = parse(ffn.render(s, c))
    curve, dots = _dots(root)
    assert curve.attrs["data-activation"] == activation
    silent = _silent_units(tr, i)
    assert len(silent) > 1000, "premise: the designed model wires only a few units"
    (stack,) = curve.find_all("circle", class_="unit-stack")
    assert int(stack.attrs["data-silent-units"]) == len(silent) and f"{len(silent)} units" in stack.attrs["data-tip"]
    assert f"{len(silent)} units" in curve.all_text()  # the count is printed beside it
    assert sorted(int(d.attrs["data-unit"]) for d in dots) == sorted(set(range(tr.d_ff)) - set(silent))
    for dot in dots:
        u = int(dot.attrs["data-unit"])
        assert float(dot.attrs["data-pre"]) == pytest.approx(tr.ffn_pre[i, u], abs=1e-11)
        assert float(dot.attrs["data-act"]) == pytest.approx(tr.ffn_act[i, u], abs=1e-11)
        if activation == "swiglu":
            assert float(dot.attrs["data-gate"]) == pytest.approx(tr.ffn_gate[i, u], abs=1e-11)
        else:
            assert "data-gate" not in dot.attrs


def _curve_points(curve):
    (path,) = curve.find_all("path", class_="curve")
    return np.array([[float(a), float(b)] for a, b in re.findall(r"([\d.-]+) ([\d.-]+)", path.attrs["d"])])


@pytest.mark.parametrize("changes", [{"activation": a} for a in ACTIVATIONS] + [STATES[3], STATES[4]])
def test_ffn_dots_lie_on_the_drawn_activation_curve(changes):
    """Every dot sits on the curve (within a pixel): the curve is φ, the dots are (pre, φ(pre)) / (gate, SiLU(gate))."""
    s, c = build(**changes)
    curve, dots = _dots(parse(ffn.render(s, c)))
    pts = _curve_points(curve)
    assert np.all(np.diff(pts[:, 0]) > 0), "the curve is drawn left to right"
    for dot in dots:
        cx, cy = float(dot.attrs["cx"]), float(dot.attrs["cy"])
        assert float(np.interp(cx, pts[:, 0], pts[:, 1])) == pytest.approx(cy, abs=1.0)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_ffn_dot_x_positions_follow_the_curve_input(activation):
    """Dots are placed left to right by the pre-activation (ReLU/GELU) or by the gate (SwiGLU), linearly."""
    s, c = build(activation=activation, text="The dog chased the cat because it was hungry", query=6)
    tr, i = c.trace, s.query
    _, dots = _dots(parse(ffn.render(s, c)))
    source = tr.ffn_gate[i] if activation == "swiglu" else tr.ffn_pre[i]
    xs = np.array([source[int(d.attrs["data-unit"])] for d in dots])
    cxs = np.array([float(d.attrs["cx"]) for d in dots])
    assert np.ptp(xs) > 0, "premise: the units differ"
    slope, intercept = np.polyfit(xs, cxs, 1)
    assert slope > 0
    assert np.max(np.abs(slope * xs + intercept - cxs)) < 0.06  # cx is printed to 0.1
    if activation == "swiglu":
        assert not np.allclose(tr.ffn_gate[i], tr.ffn_pre[i]), "premise: gate and up differ"


def test_ffn_swiglu_shows_the_gate_formula_and_silu_curve():
    """SwiGLU: the formula is (SiLU(h W_gate) ⊙ h W₁) W₂ + b₂ and the curve is the SiLU gate."""
    s, c = build(activation="swiglu")
    root = parse(ffn.render(s, c))
    text = " ".join(m.all_text() for m in root.find_all("math"))
    assert "SiLU" in text and "gate" in text and "⊙" in text
    curve, _ = _dots(root)
    assert "SiLU" in curve.all_text()
    (diagram,) = root.find_all("svg", class_="ffn-diagram")
    assert {r.attrs["data-col"] for r in diagram.find_all("rect", class_="vec-box")} == {
        "h",
        "gate",
        "pre",
        "act",
        "out",
    }


@pytest.mark.parametrize("activation,phi", [("relu", "ReLU"), ("gelu", "GELU")])
def test_ffn_relu_and_gelu_show_phi_formula(activation, phi):
    """ReLU/GELU: FFN(h) = φ(h W₁ + b₁) W₂ + b₂ with φ named and defined; the curve is labelled with it."""
    s, c = build(activation=activation)
    root = parse(ffn.render(s, c))
    maths = root.find_all("math")
    assert "φ" in maths[0].all_text() and "FFN" in maths[0].all_text()
    assert phi in maths[1].all_text()
    curve, _ = _dots(root)
    assert phi in curve.all_text()


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_ffn_diagram_labels_the_dimensions(activation):
    """The diagram names d_model → d_ff → d_model (256 → 1024 → 256), with box heights in that ratio."""
    s, c = build(activation=activation)
    tr = c.trace
    root = parse(ffn.render(s, c))
    (diagram,) = root.find_all("svg", class_="ffn-diagram")
    dims = [t.all_text() for t in diagram.find_all("text", class_="dim")]
    assert f"{tr.d_model}×{tr.d_ff}" in dims and f"{tr.d_ff}×{tr.d_model}" in dims
    assert dims.count(str(tr.d_model)) == 2 and dims.count(str(tr.d_ff)) == 2
    boxes = {r.attrs["data-col"]: r for r in diagram.find_all("rect", class_="vec-box")}
    for key, n in (("h", tr.d_model), ("act", tr.d_ff), ("out", tr.d_model)):
        assert int(boxes[key].attrs["data-n"]) == n
    assert float(boxes["act"].attrs["height"]) / float(boxes["h"].attrs["height"]) == pytest.approx(
        tr.d_ff / tr.d_model, rel=1e-3
    )


@pytest.mark.parametrize("changes", [{"activation": a} for a in ACTIVATIONS] + STATES[1:])
def test_ffn_firing_counts_and_top_units_equal_the_trace(changes):
    """Counts of positive/negative/zero units and the top-|activation| list are the trace's."""
    s, c = build(**changes)
    tr, i = c.trace, s.query
    act = tr.ffn_act[i]
    root = parse(ffn.render(s, c))
    (firing,) = root.find_all("div", class_="ffn-firing")
    assert int(firing.attrs["data-positive"]) == int(np.sum(act > 0))
    assert int(firing.attrs["data-negative"]) == int(np.sum(act < 0))
    assert int(firing.attrs["data-zero"]) == int(np.sum(act == 0))
    (count,) = firing.find_all("p", class_="ffn-count")
    assert count.all_text().startswith(f"{int(np.sum(act > 0))} of {tr.d_ff} unit")
    listed = [(int(li.attrs["data-unit"]), float(li.attrs["data-act"])) for li in firing.find_all("li")]
    nonzero = [u for u in np.argsort(-np.abs(act), kind="stable") if act[u] != 0][: ffn.TOP_K]
    assert [u for u, _ in listed] == [int(u) for u in nonzero]
    for u, a in listed:
        assert a == pytest.approx(act[u], abs=1e-11)


def test_ffn_top_units_are_labelled_with_the_models_unit_names():
    """The designed model names its detector units; the list shows each listed unit's name."""
    from attention_explorer.models import designed as model

    s, c = build()
    (firing,) = parse(ffn.render(s, c)).find_all("div", class_="ffn-firing")
    items = firing.find_all("li")
    assert items, "premise: some unit is non-zero for the default query"
    for li in items:
        u = int(li.attrs["data-unit"])
        assert model.UNIT_NAMES[u] and model.UNIT_NAMES[u] in li.all_text()


def test_ffn_unit_tooltips_give_index_pre_activation_and_activation():
    """Hovering a dot shows its unit index, pre-activation and activation value (GELU: z and GELU(z))."""
    s, c = build(activation="gelu")
    tr, i = c.trace, s.query
    _, dots = _dots(parse(ffn.render(s, c)))
    u = int(np.argmax(tr.ffn_act[i]))
    (dot,) = [d for d in dots if int(d.attrs["data-unit"]) == u]
    tip = dot.attrs["data-tip"]
    assert tip.startswith(f"unit {u}")
    assert f"z = {ffn.small_num(tr.ffn_pre[i, u])}" in tip
    assert f"GELU(z) = {ffn.small_num(tr.ffn_act[i, u])}" in tip


def test_ffn_swiglu_tooltips_give_gate_up_and_product():
    """SwiGLU tips show the gate g, the up-projection u and the unit's activation SiLU(g)·u from the trace."""
    s, c = build(activation="swiglu")
    tr, i = c.trace, s.query
    _, dots = _dots(parse(ffn.render(s, c)))
    u = int(np.argmax(np.abs(tr.ffn_act[i])))
    (dot,) = [d for d in dots if int(d.attrs["data-unit"]) == u]
    tip = dot.attrs["data-tip"]
    assert f"gate g = {ffn.small_num(tr.ffn_gate[i, u])}" in tip
    assert f"up u = {ffn.small_num(tr.ffn_pre[i, u])}" in tip
    assert f"SiLU(g)·u = {ffn.small_num(tr.ffn_act[i, u])}" in tip


def test_ffn_dots_form_one_keyboard_grid_ordered_along_the_curve():
    """Arrow keys walk the dots left to right: data-j ranks them by x, one dot is the tab stop."""
    s, c = build()
    curve, dots = _dots(parse(ffn.render(s, c)))
    (grid,) = curve.find_all("g", data_grid=True)
    cells = grid.find_all("circle")
    assert len(cells) == len(dots) + 1  # the units, and one dot for the stack of all-zero units
    ranks = sorted(cells, key=lambda d: int(d.attrs["data-j"]))
    assert [int(d.attrs["data-j"]) for d in ranks] == list(range(len(cells)))
    xs = [float(d.attrs["cx"]) for d in ranks]
    assert xs == sorted(xs)
    assert [d.attrs["tabindex"] for d in cells].count("0") == 1


def test_ffn_curve_samples_call_the_core_activation():
    """The curve helper returns core's own function values (it calls core, it does not re-implement it)."""
    from attention_explorer import core

    for activation, fn in (("relu", core.relu), ("gelu", core.gelu), ("swiglu", core.silu)):
        x, y = ffn.sample_curve(activation, -4.0, 4.0)
        assert 0.0 in x
        np.testing.assert_array_equal(y, fn(x))


# HOSTILE's tokens after the start token <s> (index 0): < img src = x onerror = alert ( 1 ) > " quotes " & 😀 שלום
@pytest.mark.parametrize(
    "view,heading,query,escaped",
    [
        (layernorm, "ln-heading", 1, "&lt;"),
        (layernorm, "ln-heading", 16, "&amp;"),
        (layernorm, "ln-heading", 13, "&quot;"),
        (layernorm, "ln-heading", 17, "😀"),
        (ffn, "ffn-heading", 1, "&lt;"),
        (ffn, "ffn-heading", 12, "&gt;"),
        (ffn, "ffn-heading", 16, "&amp;"),
        (ffn, "ffn-heading", 18, "שלום"),
        (ffn, "ffn-heading", 0, "&lt;s&gt;"),  # the start token's own spelling is escaped too
    ],
)
def test_panel_heading_escapes_hostile_token_text(view, heading, query, escaped):
    """Reader tokens such as '<' and '&' reach the LayerNorm and FFN headings escaped, never as markup."""
    s, c = build(text=HOSTILE, query=query)
    markup = view.render(s, c)
    assert "<img" not in markup
    text = re.search(rf'<h3 class="{heading}">(.*?)</h3>', markup).group(1)
    assert f'<q class="tok">{escaped}</q>' in text


def test_panels_have_accessible_names_and_unique_ids():
    """Every SVG is role=img with an aria-label (or hidden); ids inside the panels are prefixed and unique."""
    s, c = build(activation="swiglu")
    both = layernorm.render(s, c) + ffn.render(s, c)
    root = parse(both)
    for svg in root.find_all("svg"):
        assert svg.attrs.get("aria-hidden") == "true" or (
            svg.attrs.get("role") == "img" and svg.attrs.get("aria-label")
        )
    ids = [e.attrs["id"] for e in root.iter() if "id" in e.attrs]
    assert len(ids) == len(set(ids))
    assert all(x.startswith("ffn-") for x in ids)


@pytest.mark.parametrize(
    "text",
    [
        '<script>alert("x")</script>',
        "Tom & Jerry's <b>",
        "a\"b'c",
        "&amp;",
        "",
        "plain",
        "<<>>&&\"\"''",
        "ünï<cødé> “quotes” ' & \u2028",
    ],
)
def test_esc_escapes_as_the_standard_library_does(text):
    import html

    assert markup.esc(text) == html.escape(text, quote=True)
    assert markup.esc(42) == "42"


@pytest.mark.parametrize("digits", [0, 1, 2, 3, 4])
def test_nums_formats_a_vector_as_num_does_each_value(digits):
    """The LayerNorm tables print 256 rows per column with nums(); each text must be num()'s."""
    values = [
        0.0,
        -0.0,
        -0.0004,
        0.0004,
        -1.5,
        2.675,
        -2.675,
        1e6,
        -123.456789,
        float("inf"),
        float("-inf"),
        float("nan"),
        0.5,
        -0.5,
        1.0005,
        -1.0005,
    ]
    expected = [markup.num(v, digits) for v in values]
    assert markup.nums(values, digits) == expected
    assert markup.nums(np.array(values), digits) == expected
    assert all("-" not in t for t in expected)  # the check itself: a real minus sign, never '-0'
