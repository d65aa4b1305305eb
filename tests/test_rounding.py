"""Numbers tell the truth (issue 35, item 2): the whole percentages printed on the heatmap's cells.

Each label is an honest rounding of its own weight: 100·w rounded half up, "<1" for a weight above 0
but under 0.5 %, "0" for a weight of exactly 0. Equal weights read the same; nothing is adjusted to
make a row add up to 100, and a note under the heatmap (outside the part that scrolls sideways on a
phone) says a row may therefore not add up to exactly 100; so does every other picture printing them.

Expected labels are derived here from the weight's exact value (decimal.Decimal(w) or
fractions.Fraction(w), both exact for a float), never from the code under test.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from attention_explorer import state as st
from attention_explorer.models import designed as model
from attention_explorer.views import attention_matrix as am
from attention_explorer.views.markup import percent_label, percent_labels
from markup_tree import inside, parse

HALF = Fraction(1, 2)


def by_decimal(w) -> str:
    """The label w must read, by decimal arithmetic on w's exact value."""
    with localcontext() as ctx:
        ctx.prec = 1000  # Decimal(float) is exact; 1,000 digits keep 100 times it exact too (5e-324 has 751)
        d = Decimal(float(w)) * 100
    if d == 0:
        return "0"
    if 0 < d < Decimal("0.5"):
        return "<1"
    return str(int(d.quantize(Decimal(1), rounding=ROUND_HALF_UP)))


def softmax(scores) -> np.ndarray:  # [n] -> [n], the textbook formula (max subtracted)
    e = np.exp(scores - np.max(scores))
    return e / e.sum()


def cell_values(svg_markup: str) -> list[str]:
    return [e.all_text() for e in parse(svg_markup).iter() if e.has_class("cell-value")]


# --------------------------------------------------------------------------
# the labels
# --------------------------------------------------------------------------

# one large score and n equal small ones (score 0): the small weights are 1 / (e^big + n) each
EQUAL_ROWS = [
    (5.0, 8, "1"),  # 1 / (148.4 + 8) = 0.64 %: the default view's <s> row
    (6.0, 8, "<1"),  # 1 / (403.4 + 8) = 0.24 %
    (2.0, 8, "6"),  # 1 / (7.39 + 8) = 6.498 %
    (0.0, 17, "6"),  # 18 equal weights: 1 / 18 = 5.56 %, the "large" one too
    (0.0, 8, "11"),  # 9 equal weights: 11.1 % each; 9 x 11 = 99
]


@pytest.mark.parametrize("big,n,label", EQUAL_ROWS)
def test_equal_weights_get_equal_labels(big, n, label):
    """Equal weights read the same number, whatever the row's labels then add up to."""
    row = softmax(np.array([big] + [0.0] * n))
    labels = percent_labels(row)
    assert labels[1:] == [label] * n, labels
    assert label == by_decimal(row[1])
    if big == 0.0:
        assert labels[0] == label, "the 'large' weight is one of the equal ones"


def test_the_issue_row_reads_one_everywhere_and_adds_up_to_more_than_100():
    """The issue's numbers: 94.88 % and eight times 0.639 %. The labels say 95 and 1 (x 8): 103 in all,
    which is what honest rounding gives, and the legend explains."""
    row = np.array([0.9488534] + [0.0063933] * 8)
    assert percent_labels(row) == ["95"] + ["1"] * 8
    assert percent_labels(row.tolist()) == percent_labels(row), "a list reads as the array"


# value -> label, each worked out by hand from the float's exact value (shown in the comment)
HAND = [
    (0.015, "1"),  # 0.01499999999999999944…: 1.4999… %, although 100 * 0.015 == 1.5 in floats
    (0.125, "13"),  # exactly 12.5 %: half up
    (0.285, "28"),  # 0.28499999999999997557…
    (0.005, "1"),  # 0.005000000000000000104…: just over half a percent
    (math.nextafter(0.005, 0.0), "<1"),  # 0.004999999999999999, the float below: 100 * w + 0.5 == 1.0 in floats
    (0.995, "99"),  # 0.99499999999999999555…
    (1.0, "100"),
    (0.5, "50"),
    (0.00639, "1"),
    (0.9488, "95"),
    (float(np.float32(0.015)), "1"),  # 0.014999999664723873…
    (float(np.float32(0.125)), "13"),  # exactly 0.125
]


@pytest.mark.parametrize("w,label", HAND, ids=[repr(w) for w, _ in HAND])
def test_hand_worked_labels(w, label):
    assert percent_label(w) == label == by_decimal(w)


def test_labels_are_the_weight_rounded_half_up_at_every_half_percent():
    """Around every k + ½ percent (where floating point is most likely to round the wrong way): the float
    nearest (2k + 1) / 200 and its neighbours read what decimal arithmetic on their exact values says."""
    checked = 0
    for k in range(100):
        w0 = (2 * k + 1) / 200
        for w in (
            w0,
            math.nextafter(w0, 0.0),
            math.nextafter(w0, 1.0),
            float(np.float32(w0)),
            float(np.nextafter(np.float32(w0), np.float32(0))),
        ):
            assert percent_label(w) == by_decimal(w), repr(w)
            checked += 1
    for k in range(101):  # whole percentages
        assert percent_label(k / 100) == (by_decimal(k / 100)) == (str(k) if k else "0")
        checked += 1
    assert checked == 601


@pytest.mark.parametrize(
    "w",
    [
        5e-324,
        1e-300,
        1e-12,
        1e-4,
        0.001,
        0.0049,
        0.004999,
        math.nextafter(0.005, 0.0),
        float(np.float32(0.004)),
        np.float32(1e-30),
        np.float64(0.003),
    ],
)
def test_a_weight_above_0_but_under_half_a_percent_reads_less_than_1(w):
    assert 0 < Fraction(float(w)) < Fraction(5, 1000)
    assert percent_label(w) == "<1"


@pytest.mark.parametrize("w", [0.0, -0.0, np.float32(0.0), np.float64(0.0), float(np.exp(-800.0))])
def test_a_weight_of_exactly_0_reads_0(w):
    assert float(w) == 0.0
    assert percent_label(w) == "0"


def test_random_softmax_rows_every_label_is_within_half_a_point_of_its_weight():
    """2,000 random softmax rows (1 to 33 keys, cold to hot, float64 and float32; fixed seed): every
    numeric label is within ½ of 100·w (exactly, with fractions), "<1" only for 0 < w < 0.5 %, "0" only
    for w = 0, equal weights read the same, and no label is wider than 3 characters."""
    rng = np.random.default_rng(35)
    seen = set()
    for _ in range(2000):
        n = int(rng.integers(1, 34))
        spread = float(rng.choice([0.1, 1.0, 3.0, 10.0, 40.0, 800.0]))  # 800: some weights underflow to 0
        row = softmax(rng.normal(0.0, spread, n))
        if rng.random() < 0.3:
            row[rng.integers(0, n, size=n // 3)] = row[0]  # a few exactly equal weights
        if rng.random() < 0.3:
            row = row.astype(np.float32)
        labels = percent_labels(row)
        assert len(labels) == n
        for w, label in zip(row.tolist(), labels):
            q = Fraction(w) * 100
            assert len(label) <= 3, label
            if label == "<1":
                assert 0 < q < HALF
            elif label == "0":
                assert q == 0
            else:
                assert int(label) >= 1 and abs(int(label) - q) <= HALF, (w, label)
                assert int(label) == math.floor(q + HALF)  # half up, not to even
            seen.add("<1" if label == "<1" else "0" if label == "0" else "n")
        for v in set(row.tolist()):
            assert len({lab for w, lab in zip(row.tolist(), labels) if w == v}) == 1
    assert seen == {"<1", "0", "n"}, "the rows reach every kind of label"


# --------------------------------------------------------------------------
# the heatmap: cells, mean row, legend
# --------------------------------------------------------------------------


def test_the_heatmap_cells_read_the_honest_labels():
    """A handmade matrix with an exact 0, a tiny weight, a half and equal weights; the causal mask's
    cells carry no label."""
    weights = np.array([[1.0, 0.0, 0.0], [0.996, 0.004, 0.0], [0.125, 0.125, 0.75]])
    mask = np.tril(np.ones((3, 3), dtype=bool))
    mask[1, 2] = True  # allowed but exactly 0: reads "0"
    svg = am.attention_matrix_svg(["a", "b", "c"], weights, mask, 0, "Test")
    assert cell_values(svg) == ["100", "100", "<1", "0", "13", "13", "75"]
    assert "&lt;1<" in svg and ">&lt;1" in svg, "written as text, escaped"


def test_the_mean_row_reads_honest_labels_too():
    """With pinned queries the mean of the selected rows is drawn under the grid, labelled the same way."""
    s = dataclasses.replace(st.State(), pinned=(0,), query=6)
    c = st.compute(s)
    markup = am.render(s, c, model.HEADS)
    (row,) = [e for e in parse(markup).iter() if e.has_class("mean-row")]
    got = [e.all_text() for e in row.iter() if e.has_class("cell-value")]
    mean = (c.trace.weights[s.head, 0].astype(np.float64) + c.trace.weights[s.head, 6]) / 2
    assert got == [by_decimal(w) for w in mean]


def _rounding_notes(markup: str) -> list:
    return [e for e in parse(markup).iter() if e.has_class("rounding-note")]


@pytest.mark.parametrize("text", [model.DEFAULT_TEXT, "Hello", "cat sat", "a b c d e f g h i j k l m"])
def test_the_note_under_the_heatmap_says_the_numbers_are_rounded_and_may_not_add_up_to_100(text):
    """One paragraph after the picture: outside the .figure that scrolls sideways on a phone (and outside
    the svg), so at 360 px it wraps to the screen instead of scrolling off with the picture's right side."""
    s = st.apply_event(st.State(), {"type": "set_text", "value": text})
    markup = am.render(s, st.compute(s), model.HEADS)
    assert cell_values(markup), "premise: the cells print numbers"
    (note,) = _rounding_notes(markup)
    words = note.all_text()
    assert "rounded" in words and "percentages" in words and "not add up to exactly 100" in words
    assert "<1" in words, "it says what <1 means"
    assert note.tag == "p" and not inside(note, cls="figure") and not inside(note, tag="svg")
    (svg,) = parse(markup).find_all("svg", data_view="attention-matrix")
    assert inside(svg, cls="figure"), "the picture itself still scrolls in its .figure"
    assert "rounded" not in svg.all_text(), "said once, where a phone shows it whole"


def test_no_rounding_note_when_the_cells_carry_no_numbers():
    """A long sentence's cells are too small for numbers: there is nothing rounded to explain."""
    s = st.apply_event(st.State(), {"type": "set_text", "value": " ".join(["word"] * 20)})
    markup = am.render(s, st.compute(s), model.HEADS)
    assert not cell_values(markup) and not _rounding_notes(markup)


def test_the_table_caption_says_its_numbers_are_rounded():
    assert "rounded" in am.table_caption("Coreference") and "exactly 100" in am.table_caption("Coreference")


def test_no_view_writes_a_small_weights_label_as_markup():
    """ "<1" is text: every view escapes it (routing, why, aggregates wrote labels raw once). At T = 0.8 the
    default sentence has many weights under 0.5 %, in every panel that prints percentages."""
    import re

    from attention_explorer import page, state as st

    s = st.apply_event(st.State(), {"type": "set_temperature", "value": "0.8"})
    panels = page.render_panels(s, live=False)
    assert sum(v.count("&lt;1") for v in panels.values()) > 0, "premise: some label reads <1"
    raw = {pid: len(re.findall(r"<1", markup)) for pid, markup in panels.items() if re.search(r"<1", markup)}
    assert raw == {}, f"a '<1' label went into markup unescaped: {raw}"


# --------------------------------------------------------------------------
# every other picture that prints whole percentages of a row says they are rounded
# --------------------------------------------------------------------------

SAYS_ROUNDED = ("rounded on its own", "not add up to exactly 100")


def _says_rounded(words: str) -> bool:
    words = " ".join(words.split())
    return all(phrase in words for phrase in SAYS_ROUNDED)


def _panels(**changes) -> dict:
    from attention_explorer import page

    return page.render_panels(dataclasses.replace(st.State(), **changes), {"affinity", "routing", "why-scale"})


def test_the_affinity_bars_say_their_percentages_are_rounded_and_a_saved_figure_keeps_it():
    root = parse(_panels()["affinity"])
    bars = [e.all_text() for e in root.iter() if e.has_class("bar-value") and not e.has_class("is-masked")]
    assert any(b.endswith(" %") for b in bars), "premise: band 3 prints whole percentages"
    (caption,) = [e for e in root.iter() if e.tag == "p" and e.has_class("caption")]
    assert _says_rounded(caption.all_text()) and not inside(caption, cls="figure")
    assert _says_rounded(caption.attrs["data-export-label"]), "what a saved figure writes in the caption's place"


@pytest.mark.parametrize("all_heads", [False, True])
def test_the_routing_picture_says_its_percentages_are_rounded_when_it_prints_them(all_heads):
    """One head: each key's weight is printed beside it, and the caption says they are rounded; all heads:
    no numbers (the lines only), so nothing to explain."""
    root = parse(_panels(routing_all_heads=all_heads)["routing"])
    printed = [e.all_text() for e in root.iter() if e.has_class("key-pct")]
    (caption,) = root.find_all("figcaption")
    assert bool(printed) != all_heads, "premise: one head prints its weights, all heads do not"
    assert _says_rounded(caption.all_text()) == (not all_heads)


def test_the_why_scale_softmax_bars_say_their_percentages_are_rounded():
    root = parse(_panels()["why-scale"])
    (chart,) = root.find_all("svg", data_chart="softmax")
    assert [e for e in chart.iter() if e.has_class("bar-pct")], "premise: the bars print whole percentages"
    figure = chart.parent
    assert figure.tag == "figure"
    (note,) = [e for e in figure.children if e.has_class("rounding-note")]
    assert _says_rounded(note.all_text())
