"""Tests for the attention views: the weight matrix A, all heads side by side, and the
query·key affinity bars (views/attention_matrix.py, views/affinity.py).

The product promises: every number printed equals the trace's (within the printed
precision); every cell and bar explains its own derivation in a tooltip; masked
(future) keys are shown as masked; reader text is never markup; the hooks the
bridge and browser tests use are present. Expected numbers come from the trace or
from independent reasoning (math.exp over the trace's scaled scores), never from
the views' own output.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import re
import sys
from collections import Counter
from fractions import Fraction
from html.parser import HTMLParser

import numpy as np
import pytest

try:
    from attention_explorer import state as st
    from attention_explorer.models import designed as model
except ImportError:  # running without PYTHONPATH=py
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "py"))
    from attention_explorer import state as st
    from attention_explorer.models import designed as model
from attention_explorer.views import affinity, attention_matrix as am

HOSTILE = '<img src=x onerror=alert(1)> "quotes" & 😀 שלום'
LONG = (
    "The quick brown fox jumps over the lazy dog because it was bored , and then the dog , "
    "which had been sleeping all day , woke up"
)


# --------------------------------------------------------------------------
# a small DOM: every element with its attributes and its text (descendants included)
# --------------------------------------------------------------------------


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children, self.text = [], ""

    def has_class(self, name):
        return name in (self.attrs.get("class") or "").split()

    def ancestors(self):
        e = self.parent
        while e is not None:
            yield e
            e = e.parent

    def find(self, pred):
        out = []
        for c in self.children:
            if pred(c):
                out.append(c)
            out += c.find(pred)
        return out


VOID = {"br", "img", "input", "meta", "link", "hr", "col", "area", "base", "wbr", "source"}


class Tree(HTMLParser):
    def __init__(self, markup):
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None)
        self.stack = [self.root]
        self.feed(markup)
        self.close()
        assert self.stack == [self.root], f"unclosed elements: {[e.tag for e in self.stack[1:]]}"

    def handle_starttag(self, tag, attrs):
        e = Element(tag, attrs, self.stack[-1])
        self.stack[-1].children.append(e)
        if tag not in VOID:
            self.stack.append(e)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Element(tag, attrs, self.stack[-1]))

    def handle_endtag(self, tag):
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data):
        for e in self.stack:
            e.text += data

    def all(self, pred=lambda e: True):
        return self.root.find(pred)


def parse(markup) -> Tree:
    return Tree(markup)


def number(text: str) -> float:
    return float(text.replace("−", "-"))


def states():
    """A spread of real states: default, other heads, hot and cold softmax, causal, long, short."""
    s = st.State()
    return [
        s,
        dataclasses.replace(s, head=1),
        dataclasses.replace(s, head=2, temperature=0.05),
        dataclasses.replace(s, head=3, temperature=5.0, dk_scale=0.5),
        dataclasses.replace(s, causal=True, query=3),
        st.State(text=LONG, query=20, head=1, causal=True, temperature=0.5),
        st.State(text="Hello", query=0),
    ]


def heads():
    return model.HEADS


def render_matrix(s):
    return am.render(s, st.compute(s), heads())


def heatmap(s):
    tree = parse(render_matrix(s))
    (svg,) = tree.all(lambda e: e.tag == "svg" and e.attrs.get("data-view") == "attention-matrix")
    return tree, svg


def cells(svg):
    return svg.find(lambda e: e.tag == "rect" and "data-i" in e.attrs)


# --------------------------------------------------------------------------
# the heatmap
# --------------------------------------------------------------------------


@pytest.mark.parametrize("s", states(), ids=lambda s: f"h{s.head}-T{s.temperature}-causal{s.causal}-n{len(s.tokens)}")
def test_heatmap_hooks_and_one_cell_per_query_key_pair(s):
    """The svg carries head, T, the √d_k used and the query; n×n cells; query outline; clickable row labels."""
    c = st.compute(s)
    n = len(c.tokens)
    _, svg = heatmap(s)
    a = svg.attrs
    assert a["role"] == "img" and a["aria-label"]
    assert int(a["data-head"]) == s.head and int(a["data-query"]) == s.query
    assert float(a["data-temperature"]) == pytest.approx(c.trace.temperature)
    assert float(a["data-dk-scale"]) == pytest.approx(c.trace.scale)
    pairs = sorted((int(e.attrs["data-i"]), int(e.attrs["data-j"])) for e in cells(svg))
    assert pairs == [(i, j) for i in range(n) for j in range(n)]
    (outline,) = svg.find(lambda e: e.has_class("query-outline"))
    assert int(outline.attrs["data-query-row"]) == s.query
    labels = svg.find(lambda e: e.attrs.get("data-event") == "set_query")
    assert sorted(int(e.attrs["data-token-index"]) for e in labels) == list(range(n))


@pytest.mark.parametrize("s", states(), ids=lambda s: f"h{s.head}-T{s.temperature}-causal{s.causal}-n{len(s.tokens)}")
def test_heatmap_cell_weights_equal_the_trace(s):
    """data-weight of cell (i, j) is the trace's weights[head, i, j], to 1e-12; rows sum to 100 %."""
    c = st.compute(s)
    _, svg = heatmap(s)
    got = np.zeros_like(c.trace.weights[s.head])
    for e in cells(svg):
        got[int(e.attrs["data-i"]), int(e.attrs["data-j"])] = float(e.attrs["data-weight"])
    np.testing.assert_allclose(got, c.trace.weights[s.head], atol=1e-11)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-9)


def honest_label(w: float) -> str:
    """The label a weight must read, from the weight's exact value (Fraction): 100·w rounded half up,
    "<1" above 0 but under 0.5 %, "0" for exactly 0."""
    q = Fraction(float(w)) * 100
    if q == 0:
        return "0"
    if 0 < q < Fraction(1, 2):
        return "<1"
    return str(math.floor(q + Fraction(1, 2)))


def test_printed_cell_percentages_equal_the_trace():
    """The whole-percent numbers printed inside the cells are the trace's weights, each rounded on its own.

    This test used to assert that each row's printed numbers add up to 100 (largest remainder). That
    was the bug of issue 35: it showed the default view's eight equal 0.64 % weights of the <s> row as
    1 1 1 1 1 0 0 0. Now every label is its own weight rounded, and equal weights read the same."""
    s = st.State()
    c = st.compute(s)
    tree = parse(render_matrix(s))
    values = tree.all(lambda e: e.has_class("cell-value"))
    n = len(c.tokens)
    assert len(values) == n * n  # no mask: every cell is labelled
    # labels are written row by row, as the cells
    printed = [e.text for e in values]
    expected = [honest_label(w) for w in c.trace.weights[s.head].ravel().tolist()]
    assert printed == expected
    for i in range(n):
        row = c.trace.weights[s.head, i]
        for w in set(row.tolist()):  # equal weights, equal labels
            assert len({printed[i * n + j] for j in range(n) if row[j] == w}) == 1
    assert printed[1:n] == ["1"] * (n - 1), "the <s> row's eight equal weights (0.64 %) all read 1"


def derivation(tip: str) -> dict:
    """The numbers of a cell tooltip, by name (the tooltip's format is part of the product)."""
    num = r"(−?\d+\.\d+)"
    pats = {
        "score": rf"Q·K = {num}",
        "scale": rf"÷ \({num} × ",
        "temperature": rf" × {num}\) = ",
        "scaled": rf"\) = {num}\n",
        "exp_arg": rf"exp\({num} − row max",
        "row_max": rf" − row max {num}\) = ",
        "exp": rf" − row max −?\d+\.\d+\) = {num}\n",
        "row_sum": rf"row sum {num} = ",
        "weight": rf"row sum −?\d+\.\d+ = {num} = ",
        "percent": r"= (\d+\.\d) %",
    }
    out = {}
    for name, pat in pats.items():
        m = re.search(pat, tip)
        assert m, f"tooltip lacks {name}: {tip!r}"
        out[name] = number(m.group(1))
    return out


@pytest.mark.parametrize("s", states()[:6], ids=lambda s: f"h{s.head}-T{s.temperature}-causal{s.causal}")
def test_cell_tooltips_show_the_derivation_with_the_trace_numbers(s):
    """Each unmasked cell's data-tip walks Q·K → ÷ √d_k·T → exp(s − max) → ÷ row sum = weight.

    Expected exp and row sums are computed here independently with math.exp over the
    trace's scaled scores of the allowed keys.
    """
    c = st.compute(s)
    t, h = c.trace, s.head
    _, svg = heatmap(s)
    checked = 0
    for e in cells(svg):
        i, j = int(e.attrs["data-i"]), int(e.attrs["data-j"])
        tip = e.attrs["data-tip"]
        assert tip.startswith(f"A[{i},{j}]")
        if not t.mask[i, j]:
            continue
        d = derivation(tip)
        live = [float(t.scaled_scores[h, i, k]) for k in range(len(c.tokens)) if t.mask[i, k]]
        m = max(live)
        ref_sum = sum(math.exp(v - m) for v in live)
        ref_exp = math.exp(float(t.scaled_scores[h, i, j]) - m)
        assert d["score"] == pytest.approx(t.scores[h, i, j], abs=0.005 + 1e-9)
        assert d["scale"] == pytest.approx(t.scale, abs=0.005)
        assert d["temperature"] == pytest.approx(t.temperature, abs=0.005)
        assert d["scaled"] == pytest.approx(t.scaled_scores[h, i, j], abs=0.0005 + 1e-9)
        assert d["exp_arg"] == d["scaled"]
        assert d["row_max"] == pytest.approx(m, abs=0.0005 + 1e-9)
        assert d["exp"] == pytest.approx(ref_exp, abs=0.00005 + 1e-12)
        assert d["row_sum"] == pytest.approx(ref_sum, abs=0.00005 + 1e-12)
        assert d["weight"] == pytest.approx(t.weights[h, i, j], abs=0.00005 + 1e-12)
        assert d["percent"] == pytest.approx(100 * t.weights[h, i, j], abs=0.05 + 1e-9)
        checked += 1
    assert checked >= len(c.tokens)


def test_softmax_pieces_reproduce_the_trace_weights_and_refuse_a_mismatch():
    """The display helper's exp(s − max) / sum equals trace.weights (cold, hot, causal), and it
    raises rather than display pieces that disagree with the weights drawn."""
    for s in states():
        t = st.compute(s).trace
        for h in range(t.n_heads):
            for i in range(t.n_tokens):
                row_max, exps, row_sum = am.softmax_pieces(t.scaled_scores[h, i], t.mask[i], t.weights[h, i])
                assert np.all(np.isfinite(exps)) and row_sum >= 1.0  # the max's own exp is 1
                np.testing.assert_allclose(exps / row_sum, t.weights[h, i], atol=1e-12)
                assert np.all(exps[~t.mask[i]] == 0)
    t = st.compute(st.State()).trace
    wrong = np.roll(t.weights[0, 0], 1)
    with pytest.raises(AssertionError):
        am.softmax_pieces(t.scaled_scores[0, 0], t.mask[0], wrong)


def test_causal_mask_shows_future_cells_as_masked():
    """With the causal mask, every cell right of the diagonal is hatched, weighs 0 and says why."""
    s = dataclasses.replace(st.State(), causal=True)
    c = st.compute(s)
    tree, svg = heatmap(s)
    masked_ids = {d.attrs["id"] for d in svg.find(lambda e: e.tag == "pattern")}
    for e in cells(svg):
        i, j = int(e.attrs["data-i"]), int(e.attrs["data-j"])
        if j > i:
            assert e.attrs.get("data-masked") == "true"
            assert float(e.attrs["data-weight"]) == 0.0
            assert "masked (future token)" in e.attrs["data-tip"]
            assert e.attrs["fill"] in {f"url(#{x})" for x in masked_ids}
        else:
            assert "data-masked" not in e.attrs
            assert "masked" not in e.attrs["data-tip"]
    n = len(c.tokens)
    (table,) = tree.all(lambda e: e.tag == "table")
    assert sum(td.text == "masked" for td in table.find(lambda e: e.tag == "td")) == n * (n - 1) // 2
    assert "masked" in " ".join(e.text for e in svg.find(lambda e: e.has_class("legend-label")))


@pytest.mark.parametrize("s", states(), ids=lambda s: f"h{s.head}-causal{s.causal}-n{len(s.tokens)}")
def test_cells_form_one_roving_tabindex_grid_entered_at_the_query_rows_strongest_key(s):
    """Arrow keys move within [data-grid]; Tab reaches exactly one cell: the query row's largest weight
    (the only cell with a tabindex; the bridge gives one to the cell the arrow keys move to)."""
    c = st.compute(s)
    _, svg = heatmap(s)
    cs = cells(svg)
    assert all("data-grid-cell" in e.attrs and "data-tip" in e.attrs for e in cs)
    assert all(any("data-grid" in a.attrs for a in e.ancestors()) for e in cs)
    entry = [e for e in cs if e.attrs.get("tabindex") == "0"]
    assert len(entry) == 1 and all("tabindex" not in e.attrs for e in cs if e is not entry[0])
    row = np.where(c.trace.mask[s.query], c.trace.weights[s.head, s.query], -1)
    assert (int(entry[0].attrs["data-i"]), int(entry[0].attrs["data-j"])) == (s.query, int(np.argmax(row)))


def test_screen_reader_table_lists_every_weight():
    """A table on request has the tokens as column and row headers and each weight as a percentage."""
    s = dataclasses.replace(st.State(), head=2)
    c = st.compute(s)
    tree = parse(render_matrix(s))
    (table,) = tree.all(lambda e: e.tag == "table")
    waiting = table.parent.parent  # on request: a closed <details> under the heatmap, the table in its template
    assert waiting.tag == "template" and "data-on-open" in waiting.attrs and waiting.parent.tag == "details"
    cols = [th.text for th in table.find(lambda e: e.tag == "th" and e.attrs.get("scope") == "col")]
    assert cols[1:] == list(c.tokens)
    rows = table.find(lambda e: e.tag == "tr")[1:]
    assert len(rows) == len(c.tokens)
    for i, tr in enumerate(rows):
        got = [number(td.text.rstrip(" %")) for td in tr.find(lambda e: e.tag == "td")]
        np.testing.assert_allclose(got, 100 * c.trace.weights[s.head, i], atol=0.05 + 1e-9)
    (query_header,) = [th for th in table.find(lambda e: e.tag == "th") if "selected query" in th.text]
    assert query_header.text.startswith(c.tokens[s.query])


def test_old_call_signature_still_draws_a_plain_heatmap():
    """attention_matrix_svg(tokens, weights, mask, query, head_name) keeps working without tips."""
    t = st.compute(st.State()).trace
    toks = st.State().tokens
    svg = am.attention_matrix_svg(
        toks, t.weights[0], t.mask, 2, "Coreference", cell=40, legend=False, interactive=False
    )
    tree = parse(svg)
    rects = tree.all(lambda e: e.tag == "rect" and "data-i" in e.attrs)
    assert len(rects) == len(toks) ** 2
    assert all("%" in r.attrs["data-tip"] and "data-grid-cell" not in r.attrs for r in rects)
    assert not tree.all(lambda e: e.attrs.get("data-event"))


# --------------------------------------------------------------------------
# all heads side by side
# --------------------------------------------------------------------------


@pytest.mark.parametrize("head", range(4))
def test_small_multiples_one_pressed_button_and_one_svg_per_head(head):
    """Every head gets a button (set_head, its index) holding one small matrix and its name;
    only the selected head is pressed; no numbers are printed in the cells."""
    s = dataclasses.replace(st.State(), head=head, causal=True)
    c = st.compute(s)
    tree = parse(am.render_small_multiples(s, c, heads()))
    buttons = tree.all(lambda e: e.tag == "button")
    assert len(buttons) == len(heads()) == c.trace.n_heads
    for h, b in enumerate(buttons):
        assert b.attrs["data-event"] == "set_head" and b.attrs["data-value"] == str(h)
        assert b.attrs["aria-pressed"] == ("true" if h == head else "false")
        assert heads()[h].name in b.text
        (svg,) = b.find(lambda e: e.tag == "svg")
        assert svg.attrs["role"] == "img" and svg.attrs["aria-label"]
        assert not svg.find(lambda e: e.tag == "text")
        # each cell (i, j) is the unit square "M j i ..." in the path of its colour step
        n = len(c.tokens)
        drawn = {}
        for path in svg.find(lambda e: e.has_class("thumb-cells")):
            level = None if path.has_class("is-masked") else float(path.attrs["data-level"])
            for j, i in re.findall(r"M(\d+) (\d+)h1v1h-1z", path.attrs["d"]):
                assert (int(i), int(j)) not in drawn, "a cell drawn twice"
                drawn[int(i), int(j)] = level
        assert sorted(drawn) == [(i, j) for i in range(n) for j in range(n)]
        for (i, j), level in drawn.items():
            if j > i:
                assert level is None  # causal: the future is masked
            else:
                assert level == pytest.approx(c.trace.weights[h, i, j], abs=0.5 / am.THUMB_LEVELS + 1e-12)


def test_small_multiples_say_where_the_query_looks_most_in_each_head():
    """Each button names the key with the largest weight for the current query, with its percentage."""
    s = st.State()
    c = st.compute(s)
    tree = parse(am.render_small_multiples(s, c, heads()))
    for h, b in enumerate(tree.all(lambda e: e.tag == "button")):
        j = int(np.argmax(c.trace.weights[h, s.query]))
        (looks,) = b.find(lambda e: e.has_class("head-thumb-looks"))
        assert f"“{c.tokens[j]}”" in looks.text
        pct_printed = number(re.search(r"\((\d+) %\)", looks.text).group(1))
        assert pct_printed == pytest.approx(100 * c.trace.weights[h, s.query, j], abs=0.5 + 1e-9)


# --------------------------------------------------------------------------
# query·key affinity
# --------------------------------------------------------------------------


def render_affinity(s):
    return affinity.render(s, st.compute(s), heads())


def bars(tree, measure=None):
    return tree.all(lambda e: e.has_class("bar") and (measure is None or e.attrs["data-measure"] == measure))


@pytest.mark.parametrize("s", states(), ids=lambda s: f"h{s.head}-T{s.temperature}-causal{s.causal}-n{len(s.tokens)}")
def test_affinity_bars_carry_the_trace_row_of_the_selected_query(s):
    """Three bands (score, scaled, weight) of one bar per key; data-* are the trace's numbers."""
    c = st.compute(s)
    t, h, i, n = c.trace, s.head, s.query, len(c.tokens)
    tree = parse(render_affinity(s))
    (svg,) = tree.all(lambda e: e.tag == "svg")
    assert svg.attrs["data-view"] == "affinity" and svg.attrs["role"] == "img" and svg.attrs["aria-label"]
    for measure in affinity.MEASURES:
        bs = bars(tree, measure)
        assert [int(b.attrs["data-j"]) for b in bs] == list(range(n))
        for b in bs:
            j = int(b.attrs["data-j"])
            assert int(b.attrs["data-i"]) == i
            assert float(b.attrs["data-score"]) == pytest.approx(t.scores[h, i, j], abs=1e-9)
            assert float(b.attrs["data-scaled"]) == pytest.approx(t.scaled_scores[h, i, j], abs=1e-9)
            assert float(b.attrs["data-weight"]) == pytest.approx(t.weights[h, i, j], abs=1e-11)
            assert b.attrs["data-tip"].startswith(f"A[{i},{j}]")
            assert b.attrs["tabindex"] in ("0", "-1") and "data-grid-cell" in b.attrs
        # Tab enters each band at the strongest key; arrow keys move within the band
        entry = [int(b.attrs["data-j"]) for b in bs if b.attrs["tabindex"] == "0"]
        assert entry == [int(np.argmax(np.where(t.mask[i], t.weights[h, i], -1)))]
        assert all("data-grid" in b.parent.attrs for b in bs)


@pytest.mark.parametrize("s", states(), ids=lambda s: f"h{s.head}-T{s.temperature}-causal{s.causal}-n{len(s.tokens)}")
def test_affinity_printed_bar_labels_equal_the_trace(s):
    """The numbers written on the bars: Q·K to 0.1, the scaled score to 0.01, the weight as its whole
    percentage rounded on its own (as the heatmap's cells).

    This test used to assert that the weights' labels add up to 100 over the visible keys: that was the
    bug of issue 35 (labels adjusted to make the total look right), so it checks each label instead."""
    c = st.compute(s)
    t, h, i = c.trace, s.head, s.query
    tree = parse(render_affinity(s))
    for measure, ref, tol in (("score", t.scores[h, i], 0.05), ("scaled", t.scaled_scores[h, i], 0.005)):
        for b in bars(tree, measure):
            j = int(b.attrs["data-j"])
            (label,) = b.find(lambda e: e.has_class("bar-value"))
            assert number(label.text.rstrip(" %")) == pytest.approx(float(ref[j]), abs=tol + 1e-9)
    for b in bars(tree, "weight"):
        j = int(b.attrs["data-j"])
        (label,) = b.find(lambda e: e.has_class("bar-value"))
        if not t.mask[i, j]:
            assert label.text == "masked"
            continue
        assert label.text == honest_label(t.weights[h, i, j]) + " %"


def test_affinity_marks_masked_keys():
    """Causal mask: keys after the query are flagged masked in every band, hatched with weight 0."""
    s = dataclasses.replace(st.State(), causal=True, query=3)
    c = st.compute(s)
    tree = parse(render_affinity(s))
    for b in bars(tree):
        j = int(b.attrs["data-j"])
        if j > s.query:
            assert b.has_class("is-masked") and b.attrs["data-masked"] == "true"
            assert float(b.attrs["data-weight"]) == 0.0
            assert "masked (future token)" in b.attrs["data-tip"]
        else:
            assert "data-masked" not in b.attrs
    hatched = tree.all(lambda e: e.has_class("bar-masked"))
    assert len(hatched) == len(c.tokens) - 1 - s.query
    assert "left out of the sum" in tree.all(lambda e: e.has_class("formula-steps"))[0].text


@pytest.mark.parametrize("s", states(), ids=lambda s: f"h{s.head}-T{s.temperature}-causal{s.causal}-n{len(s.tokens)}")
def test_affinity_formula_substitutes_the_trace_numbers_for_the_strongest_key(s):
    """The MathML formula shows A_{i,j*} = exp(Q·K / (√d_k·T)) / Σ exp(...) = weight for the
    selected query i and its largest-weight key j*, with the trace's numbers."""
    c = st.compute(s)
    t, h, i = c.trace, s.head, s.query
    j = int(np.argmax(np.where(t.mask[i], t.weights[h, i], -1)))
    tree = parse(render_affinity(s))
    (box,) = tree.all(lambda e: e.has_class("formula-numbers"))
    assert (int(box.attrs["data-formula-i"]), int(box.attrs["data-formula-j"])) == (i, j)
    maths = tree.all(lambda e: e.tag == "math")
    assert len(maths) >= 2 and "\\frac" not in render_affinity(s) and "$" not in render_affinity(s)
    mns = [number(e.text) for e in box.find(lambda e: e.tag == "mn" and re.fullmatch(r"\d+\.\d+", e.text))]
    # the minus of a negative number is its own <mo>: compare magnitudes
    assert any(abs(v - abs(t.scores[h, i, j])) <= 0.005 + 1e-9 for v in mns)
    assert any(abs(v - t.scale) <= 0.005 for v in mns)
    assert any(abs(v - t.temperature) <= 0.005 for v in mns)
    assert any(abs(v - abs(t.scaled_scores[h, i, j])) <= 0.0005 + 1e-9 for v in mns)
    assert mns[-1] == pytest.approx(t.weights[h, i, j], abs=0.0005 + 1e-9)
    (sub,) = box.find(lambda e: e.tag == "msub")[:1]
    assert [x.text for x in sub.find(lambda e: e.tag == "mn")] == [str(i), str(j)]
    steps = tree.all(lambda e: e.has_class("formula-steps"))[0].text
    live = [float(t.scaled_scores[h, i, k]) for k in range(len(c.tokens)) if t.mask[i, k]]
    ref_sum = sum(math.exp(v - max(live)) for v in live)
    assert f"= {ref_sum:.4f}".replace("-", "−") in steps
    assert f"{100 * t.weights[h, i, j]:.1f} %" in steps


def test_affinity_screen_reader_table():
    """A hidden table gives each key's Q·K, scaled score and weight (or 'masked')."""
    s = dataclasses.replace(st.State(), causal=True, query=4, head=3)
    c = st.compute(s)
    t = c.trace
    tree = parse(render_affinity(s))
    (table,) = tree.all(lambda e: e.tag == "table")
    assert table.has_class("sr-only")
    rows = table.find(lambda e: e.tag == "tr")[1:]
    assert len(rows) == len(c.tokens)
    for j, tr in enumerate(rows):
        tds = [td.text for td in tr.find(lambda e: e.tag == "td")]
        if j > s.query:
            assert tds == ["masked (future token)"]
        else:
            assert number(tds[0]) == pytest.approx(t.scores[3, 4, j], abs=0.005 + 1e-9)
            assert number(tds[1]) == pytest.approx(t.scaled_scores[3, 4, j], abs=0.0005 + 1e-9)
            assert number(tds[2].rstrip(" %")) == pytest.approx(100 * t.weights[3, 4, j], abs=0.05 + 1e-9)


# --------------------------------------------------------------------------
# escaping, ids, well-formedness across all three views
# --------------------------------------------------------------------------


def all_views(s):
    c = st.compute(s)
    return {
        "matrix": am.render(s, c, heads()),
        "multiples": am.render_small_multiples(s, c, heads()),
        "affinity": affinity.render(s, c, heads()),
    }


@pytest.mark.parametrize("query", [0, 3, 16])
def test_hostile_tokens_are_escaped_everywhere(query):
    """'<img src=x onerror=alert(1)> "quotes" & 😀 שלום' is shown as text in every view, never as markup."""
    s = st.State(text=HOSTILE, query=query)
    for name, markup in all_views(s).items():
        assert "<img" not in markup, name
        assert "&lt;" in markup, name
        tree = parse(markup)  # balanced, so no token broke out of an attribute or element
        assert not tree.all(lambda e: e.tag == "img"), name
        assert not tree.all(lambda e: any(a.startswith("on") for a in e.attrs)), name
        if name != "multiples":  # the thumbnails name only the query and its strongest key
            assert "😀" in tree.root.text and "שלום" in tree.root.text, name
    tree = parse(all_views(s)["matrix"])
    labels = tree.all(lambda e: e.has_class("row-label"))
    shown = [e.text.split(": ", 1)[1].split(" (click")[0] for e in labels]
    special = ", a special token"  # the start token <s> is labelled as no word of the sentence
    assert [t.removesuffix(special) for t in shown] == list(s.tokens)
    assert [i for i, t in enumerate(shown) if t.endswith(special)] == [0]


def test_svg_ids_are_prefixed_by_view_and_unique_on_one_page():
    """Defs ids (hatch pattern, legend gradient) start with their view's name and never collide."""
    s = dataclasses.replace(st.State(), causal=True)
    views = all_views(s)
    page = "".join(views.values())
    ids = [e.attrs["id"] for e in parse(page).all(lambda e: "id" in e.attrs)]
    assert ids and not [k for k, v in Counter(ids).items() if v > 1]
    assert all(
        i.startswith("attention-matrix-")
        for i in (e.attrs["id"] for e in parse(views["matrix"]).all(lambda e: "id" in e.attrs))
    )
    assert all(
        i.startswith("affinity-")
        for i in (e.attrs["id"] for e in parse(views["affinity"]).all(lambda e: "id" in e.attrs))
    )
    for ref in re.findall(r"url\(#([^)]+)\)", page):
        assert ref in ids


def test_every_svg_has_role_img_and_a_label_and_a_viewbox():
    """Accessibility and fit-to-width basics for every SVG the three views draw."""
    s = st.State(text=LONG, query=5)
    for name, markup in all_views(s).items():
        for svg in parse(markup).all(lambda e: e.tag == "svg"):
            assert svg.attrs.get("role") == "img" and svg.attrs.get("aria-label"), name
            assert re.fullmatch(r"-?\d+(\.\d+)? -?\d+(\.\d+)? \d+(\.\d+)? \d+(\.\d+)?", svg.attrs["viewbox"]), (
                name
            )  # the parser lower-cases names
