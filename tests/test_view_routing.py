"""The routing/synthesis panel (views/routing.py) and the multi-head output panel (views/multihead.py).

What the product promises: every line, strip and label in these two panels shows
the trace's own numbers (A_ij, V_j, Z_i = head_outputs, concat, attn_out), the
pictures follow the state (query, head, all heads, causal mask), the shapes are
labelled truthfully, and reader text never becomes markup.
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest

from attention_explorer import state as st
from attention_explorer.models import designed as model
from attention_explorer.views import colors, multihead, routing
from attention_explorer.views.markup import pct

HEADS = model.HEADS
HOSTILE = '<img src=x onerror=alert(1)> "quotes" & 😀 שלום'
LONG = "The old farmer who had chased the quick brown fox across the wide field finally sat down near the barn ."


class _TreeBuilder(HTMLParser):
    """HTML (with inline SVG/MathML) -> ElementTree; a stray or mismatched end tag fails the test."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = [ET.Element("root")]

    def handle_starttag(self, tag, attrs):
        el = ET.SubElement(self.stack[-1], tag, {k: ("" if v is None else v) for k, v in attrs})
        self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.stack.pop()

    def handle_endtag(self, tag):
        assert len(self.stack) > 1 and self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data):
        top = self.stack[-1]
        if len(top):
            top[-1].tail = (top[-1].tail or "") + data
        else:
            top.text = (top.text or "") + data


def parse(markup: str) -> ET.Element:
    """The markup as an element tree; unclosed or mismatched tags fail the test."""
    builder = _TreeBuilder()
    builder.feed(markup)
    builder.close()
    assert len(builder.stack) == 1, f"unclosed <{builder.stack[-1].tag}>"
    return builder.stack[0]


def find(root, tag=None, **attrs):
    """All elements with the given tag (any if None) whose attributes (data_x -> data-x) match."""
    want = {k.rstrip("_").replace("_", "-"): str(v) for k, v in attrs.items()}
    return [el for el in root.iter() if (tag is None or el.tag == tag) and all(el.get(k) == v for k, v in want.items())]


def classes(el) -> set[str]:
    return set((el.get("class") or "").split())


def values_of(el) -> np.ndarray:
    return np.array([float(x) for x in el.get("data-values").split()])


def text_of(el) -> str:
    return "".join(el.itertext())


def run(**changes):
    s = dataclasses.replace(st.State(), **changes)
    return s, st.compute(s)


# --- routing: the lines --------------------------------------------------------------------------


def test_routing_draws_one_line_per_key_for_the_selected_head_with_the_traces_weights():
    s, c = run(query=2, head=1)
    root = parse(routing.render(s, c, HEADS))
    n = len(c.tokens)
    (svg,) = find(root, "svg", data_view="routing")
    assert svg.get("role") == "img" and svg.get("aria-label")
    lines = find(svg, "path", class_="route")
    assert len(lines) == n
    assert {int(p.get("data-h")) for p in lines} == {1}
    for p in lines:
        i, j = int(p.get("data-i")), int(p.get("data-j"))
        assert i == 2
        assert float(p.get("data-weight")) == pytest.approx(c.trace.weights[1, 2, j], abs=1e-12)
        assert p.get("stroke") == colors.HEAD_COLORS[1]


def test_heavier_weights_draw_thicker_and_more_opaque_lines():
    s, c = run()
    lines = find(parse(routing.render(s, c, HEADS)), "path", class_="route")
    by_weight = sorted(lines, key=lambda p: float(p.get("data-weight")))
    widths = [float(p.get("stroke-width")) for p in by_weight]
    opacities = [float(p.get("stroke-opacity")) for p in by_weight]
    assert widths == sorted(widths) and opacities == sorted(opacities)
    assert widths[-1] > widths[0]  # the default sentence's query does prefer one key


def test_key_groups_carry_index_weight_and_a_keyboard_reachable_tooltip():
    """Keys are cells (i = query, j) of a roving-tabindex grid: one tab stop, arrows move, each has a tip."""
    s, c = run(query=3, head=2)
    root = parse(routing.render(s, c, HEADS))
    (svg,) = find(root, "svg", data_view="routing")
    assert svg.get("data-grid") is not None
    keys = [g for g in find(root, "g") if "key" in classes(g)]
    assert [int(g.get("data-j")) for g in keys] == list(range(len(c.tokens)))
    assert [g.get("tabindex") for g in keys].count("0") == 1
    for g in keys:
        j = int(g.get("data-j"))
        w = c.trace.weights[2, 3, j]
        assert float(g.get("data-weight")) == pytest.approx(w, abs=1e-12)
        assert g.get("data-grid-cell") is not None and g.get("data-i") == "3"
        assert g.get("tabindex") in ("0", "-1")
        assert c.tokens[j] in g.get("data-tip") and pct(w) in g.get("data-tip")


def test_query_label_is_highlighted_and_every_query_label_sets_the_query():
    s, c = run(query=4)
    root = parse(routing.render(s, c, HEADS))
    labels = [t for t in find(root, "text") if "q-label" in classes(t)]
    assert len(labels) == len(c.tokens)
    assert [int(t.get("data-token-index")) for t in labels] == list(range(len(c.tokens)))
    assert all(t.get("data-event") == "set_query" for t in labels)
    assert [int(t.get("data-token-index")) for t in labels if "is-query" in classes(t)] == [4]


def test_all_heads_mode_draws_every_head_to_every_key_in_its_colour_with_a_legend():
    s, c = run(routing_all_heads=True, query=5)
    root = parse(routing.render(s, c, HEADS))
    n, H = len(c.tokens), c.trace.n_heads
    lines = find(root, "path", class_="route")
    assert len(lines) == H * n
    assert {(int(p.get("data-h")), int(p.get("data-j"))) for p in lines} == {(h, j) for h in range(H) for j in range(n)}
    for p in lines:
        h, j = int(p.get("data-h")), int(p.get("data-j"))
        assert p.get("stroke") == colors.HEAD_COLORS[h]
        assert float(p.get("data-weight")) == pytest.approx(c.trace.weights[h, 5, j], abs=1e-12)
    (legend,) = find(root, "ul", class_="head-legend")
    legend_text = text_of(legend)
    for h in range(H):
        assert HEADS[h].name in legend_text
    buttons = find(legend, "button")
    assert [b.get("data-value") for b in buttons] == [str(h) for h in range(H)]
    assert all(b.get("data-event") == "set_head" for b in buttons)
    # a key's tooltip lists every head's weight
    key0 = next(g for g in find(root, "g") if g.get("data-j") == "0")
    for h in range(H):
        assert pct(c.trace.weights[h, 5, 0]) in key0.get("data-tip")


def test_single_head_mode_has_no_head_legend():
    s, c = run(routing_all_heads=False)
    assert not find(parse(routing.render(s, c, HEADS)), "ul", class_="head-legend")


def test_causal_mask_hides_future_keys_from_lines_and_from_the_sum():
    q = 3
    s, c = run(causal=True, query=q, head=2)
    n = len(c.tokens)
    assert q < n - 1, "the test needs future tokens"
    root = parse(routing.render(s, c, HEADS))
    assert {int(p.get("data-j")) for p in find(root, "path", class_="route")} == set(range(q + 1))
    for g in (g for g in find(root, "g") if "key" in classes(g)):
        future = int(g.get("data-j")) > q
        assert ("is-masked" in classes(g)) == future
        assert (g.get("data-masked") == "true") == future
    rows = [li for li in find(root, "li") if "value-row" in classes(li) and li.get("data-j") is not None]
    assert [int(li.get("data-j")) for li in rows] == list(range(q + 1))
    (masked,) = find(root, "li", class_="value-row is-masked")
    assert int(masked.get("data-masked-count")) == n - 1 - q
    # all heads + causal: H lines for each visible key only
    s2, c2 = run(causal=True, query=q, routing_all_heads=True)
    assert len(find(parse(routing.render(s2, c2, HEADS)), "path", class_="route")) == c2.trace.n_heads * (q + 1)


# --- routing: the synthesis strips ------------------------------------------------------------------


def test_each_value_strip_is_the_weight_times_the_traces_value_vector():
    s, c = run(query=5, head=0)
    root = parse(routing.render(s, c, HEADS))
    rows = [li for li in find(root, "li") if li.get("data-j") is not None]
    assert len(rows) == len(c.tokens)
    for li in rows:
        j = int(li.get("data-j"))
        w = c.trace.weights[0, 5, j]
        assert float(li.get("data-weight")) == pytest.approx(w, abs=1e-12)
        (strip,) = find(li, "svg")
        assert int(strip.get("data-dims")) == c.trace.d_head
        np.testing.assert_allclose(values_of(strip), w * c.trace.v[0, j], atol=1e-11)
        assert pct(w) in text_of(li)  # the printed percentage is the trace's weight
        assert int(strip.get("data-key")) == j and c.tokens[j] in strip.get("data-tip")


def test_context_vector_strip_is_the_traces_head_output_and_the_sum_of_the_strips_above():
    for head in range(model.CONFIG.n_heads):
        s, c = run(query=1, head=head)
        root = parse(routing.render(s, c, HEADS))
        (z,) = find(root, "svg", data_view="context-vector")
        assert int(z.get("data-head")) == head and int(z.get("data-query")) == 1
        np.testing.assert_allclose(values_of(z), c.trace.head_outputs[head, 1], atol=1e-11)
        drawn = [values_of(sv) for sv in find(root, "svg") if sv.get("data-key") is not None]
        # the "+ … =" picture is truthful: what is stacked above adds up to what is shown below
        np.testing.assert_allclose(np.sum(drawn, axis=0), values_of(z), atol=1e-9)
        assert z.get("data-tip")


def test_strips_form_one_keyboard_column_ending_at_the_context_vector():
    """One tab stop for all strips; ↑/↓ (data-i) walk the rows in order and end on Z_i."""
    s, c = run(causal=True, query=4)
    (synthesis,) = find(parse(routing.render(s, c, HEADS)), "div", class_="synthesis")
    assert synthesis.get("data-grid") is not None
    cells = [sv for sv in synthesis.iter("svg") if sv.get("data-grid-cell") is not None]
    assert [int(sv.get("data-i")) for sv in cells] == list(range(4 + 2))  # keys 0..4, then Z_i
    assert {sv.get("data-j") for sv in cells} == {"0"}
    assert [sv.get("tabindex") for sv in cells].count("0") == 1
    assert cells[-1].get("data-view") == "context-vector"


def test_first_row_has_no_plus_and_the_others_do():
    s, c = run()
    ops = [
        text_of(li.find("span"))
        for li in find(parse(routing.render(s, c, HEADS)), "li")
        if li.get("data-j") is not None
    ]
    assert ops[0] == "" and set(ops[1:]) == {"+"}


def test_routing_has_a_screen_reader_table_of_the_weights():
    s, c = run(routing_all_heads=True)
    table = parse(routing.render(s, c, HEADS)).find(".//table")
    body_rows = table.findall("./tbody/tr")
    assert len(body_rows) == len(c.tokens)
    assert len(table.findall("./thead/tr/th")) == 1 + c.trace.n_heads
    assert text_of(body_rows[0].findall("td")[2]) == pct(c.trace.weights[2, s.query, 0])


# --- the diverging scale and strip drawing --------------------------------------------------------


def test_diverging_scale_is_centred_on_zero_signed_and_clamped():
    assert colors.diverging(0.0, 2.0)[1] == 0
    assert colors.diverging(-1.0, 2.0) == ("dv-neg", 0.5)
    assert colors.diverging(1.0, 2.0) == ("dv-pos", 0.5)
    assert colors.diverging(5.0, 2.0) == ("dv-pos", 1.0)
    assert colors.diverging(-5.0, 2.0) == ("dv-neg", 1.0)
    assert colors.diverging(1.0, 0.0)[1] == 0  # an all-zero picture draws nothing, no division by 0


def _cells(strip: ET.Element) -> list[tuple[str, float]]:
    """Rebuild (hue, opacity) per cell from the strip's paths (transparent cells are ('', 0))."""
    d = int(strip.get("data-dims"))
    cells = [("", 0.0)] * d
    for p in strip.findall("path"):
        for x0, w in re.findall(r"M(\d+) 0h(\d+)", p.get("d")):
            for k in range(int(x0) // routing.STRIP_CELL, (int(x0) + int(w)) // routing.STRIP_CELL):
                assert cells[k] == ("", 0.0), "a cell is painted twice"
                cells[k] = (p.get("class"), float(p.get("fill-opacity")))
    return cells


def test_strip_paints_each_cell_with_its_values_sign_and_magnitude():
    values = [-2.0, -2.0, -1.0, 0.0, 0.0, 0.5, 2.0, 2.0, 1.0]
    strip = parse(routing.value_strip(values, 2.0, label="t", tip="t")).find("svg")
    cells = _cells(strip)
    for (hue, opacity), x in zip(cells, values):
        if x == 0:
            assert opacity == 0
        else:
            assert hue == ("dv-neg" if x < 0 else "dv-pos")
            assert opacity == pytest.approx(abs(x) / 2.0, abs=0.5 / routing.OPACITY_STEPS + 1e-9)
    np.testing.assert_allclose(values_of(strip), values)


# --- multi-head output ------------------------------------------------------------------------------


def test_head_segments_are_the_head_outputs_and_together_the_traces_concat():
    s, c = run(query=4)
    root = parse(multihead.render(s, c, HEADS))
    H, d_head = c.trace.n_heads, c.trace.d_head
    (concat,) = find(root, "div", data_view="concat")
    segs = [sv for sv in concat.iter("svg") if sv.get("data-h") is not None]
    assert [int(sv.get("data-h")) for sv in segs] == list(range(H))
    for h, sv in enumerate(segs):
        assert int(sv.get("data-dims")) == d_head
        np.testing.assert_allclose(values_of(sv), c.trace.head_outputs[h, 4], atol=1e-11)
    # laid side by side they are the concatenation (no arithmetic, only placement)
    np.testing.assert_allclose(np.concatenate([values_of(sv) for sv in segs]), c.trace.concat[4], atol=1e-11)
    np.testing.assert_array_equal(c.trace.concat[4], np.concatenate(list(c.trace.head_outputs[:, 4])))
    assert int(concat.get("data-d-model")) == c.trace.concat.shape[1] == H * d_head


def test_projection_output_strip_is_the_traces_attention_output():
    for q in (0, 2):
        s, c = run(query=q)
        (out,) = find(parse(multihead.render(s, c, HEADS)), "svg", data_view="attn-out")
        assert int(out.get("data-dims")) == c.trace.attn_out.shape[1]
        np.testing.assert_allclose(values_of(out), c.trace.attn_out[q], atol=1e-11)
        assert out.get("tabindex") == "0" and out.get("data-tip")


def test_shapes_and_dimensions_are_labelled_from_the_model():
    s, c = run()
    markup = multihead.render(s, c, HEADS)
    root = parse(markup)
    d_model, d_head, H = model.CONFIG.d_model, model.CONFIG.d_head, model.CONFIG.n_heads
    rows, cols = c.params.w_o.shape
    shape_labels = [mt.get("aria-label") for mt in root.iter("math")]
    assert f"{rows} by {cols}" in shape_labels  # W^O [d_model × d_model]
    assert f"1 by {d_model}" in shape_labels  # the concat and the output rows
    text = text_of(root)
    assert f"d_model = {d_model}" in text
    assert text.count(f"d_head = {d_head}") >= H  # every head segment says its width
    for h in range(H):
        assert f"{h * d_head}–{(h + 1) * d_head - 1}" in text  # which concat dims each head fills
        assert HEADS[h].name in text


def test_multihead_formula_is_mathml_not_latex():
    s, c = run()
    markup = multihead.render(s, c, HEADS)
    root = parse(markup)
    (formula,) = find(root, "p", class_="mh-formula")
    maths = list(formula.iter("math"))
    assert maths
    mi = [el.text for mt in maths for el in mt.iter("mi")]
    assert {"MultiHead", "Concat", "Q", "K", "V", "W", "O"} <= set(mi)
    assert any(el.tag == "msup" for mt in maths for el in mt.iter())  # W^O is a superscript
    assert "\\" not in markup and "$" not in markup


def test_head_segment_tooltips_name_the_head_and_its_dims():
    s, c = run()
    root = parse(multihead.render(s, c, HEADS))
    for h in range(c.trace.n_heads):
        (sv,) = [el for el in find(root, "svg") if el.get("data-h") == str(h)]
        tip = sv.get("data-tip")
        assert HEADS[h].name in tip and f"d_head = {c.trace.d_head}" in tip
        assert sv.get("tabindex") == "0" and sv.get("role") == "img"


# --- hostile text and well-formedness ---------------------------------------------------------------


@pytest.mark.parametrize("view", [routing, multihead], ids=["routing", "multihead"])
@pytest.mark.parametrize(
    "changes", [dict(), dict(routing_all_heads=True), dict(causal=True)], ids=["one-head", "all-heads", "causal"]
)
def test_reader_text_is_escaped_and_markup_is_well_formed(view, changes):
    """Tokens such as '<', '"' and '&' reach the markup only as entities; the markup stays well-formed."""
    s, c = run(text=HOSTILE, **changes)
    q = next(i for i, t in enumerate(c.tokens) if "<" in t)
    s, c = run(text=HOSTILE, query=q, **changes)  # the query token is named in both panels
    markup = view.render(s, c, HEADS)
    assert "<img" not in markup
    assert "&lt;" in markup
    if view is routing:  # every token is drawn here, the quote and ampersand too
        assert "&quot;" in markup and "&amp;" in markup
    root = parse(markup)  # raises if a token broke the structure
    assert not any(el.tag in {"img", "script"} for el in root.iter())


@pytest.mark.parametrize("view", [routing, multihead], ids=["routing", "multihead"])
def test_long_sentences_render_with_one_row_per_token(view):
    """A long sentence: a key and H lines per token in routing; still H segments of d_head in multihead."""
    s, c = run(text=LONG, query=7, routing_all_heads=True)
    root = parse(view.render(s, c, HEADS))
    if view is routing:
        assert len([g for g in find(root, "g") if "key" in classes(g)]) == len(c.tokens)
        assert len(find(root, "path", class_="route")) == c.trace.n_heads * len(c.tokens)
        assert len([li for li in find(root, "li") if li.get("data-j") is not None]) == len(c.tokens)
    else:
        segs = [sv for sv in root.iter("svg") if sv.get("data-h") is not None]
        assert len(segs) == c.trace.n_heads
        assert all(int(sv.get("data-dims")) == c.trace.d_head for sv in segs)


def test_svg_ids_are_prefixed_for_this_panel():
    s, c = run(causal=True, query=1)
    ids = [el.get("id") for el in parse(routing.render(s, c, HEADS)).iter() if el.get("id")]
    ids += [el.get("id") for el in parse(multihead.render(s, c, HEADS)).iter() if el.get("id")]
    assert ids and all(i.startswith("routing-") for i in ids)


def test_output_bias_is_named_in_the_formula_only_when_the_model_has_one():
    s, c = run()
    has_bias = bool(np.any(c.params.b_o != 0))
    labels = [mt.get("aria-label") or "" for mt in parse(multihead.render(s, c, HEADS)).iter("math")]
    assert any("b^O" in lb for lb in labels) == has_bias
    biased_params = dataclasses.replace(c.params, b_o=np.full(c.params.w_o.shape[1], 0.5))
    biased = dataclasses.replace(c, run=dataclasses.replace(c.run, params=(biased_params,)))
    root = parse(multihead.render(s, biased, HEADS))
    labels = [mt.get("aria-label") or "" for mt in root.iter("math")]
    assert any(lb.endswith("W^O + b^O") for lb in labels)
    assert str(c.params.w_o.shape[1]) in labels  # b^O's shape [d_model] is labelled too
