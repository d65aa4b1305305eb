"""The "Aggregates" view (views/aggregates.py): mean attention over a layer's heads, and attention rollout.

What the product promises: two heatmaps, svg[data-view="attention-mean"] and
svg[data-view="attention-rollout"], whose cells carry the numbers drawn (data-i, data-j,
data-weight) and whose svg names the layer (data-layer, 0-based: the averaged layer / the last layer
rolled out); every row sums to 100 %; the selected queries' rows are outlined and, with more than one,
a row under each map holds their mean (data-mean-j, never data-i); a sentence in words says where
the query traces most; switched-off heads are said to be still averaged in; token text is escaped;
each picture has role="img", an aria-label and a screen-reader table. Expected numbers come from
plain-Python loops over the run's traced weights (test_aggregates_core's references), never from
the view or core.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

import toy_model
from attention_explorer import state as st
from attention_explorer.views import aggregates
from markup_tree import by_class, inside, parse
from test_aggregates_core import ref_head_mean, ref_rollout

VIEWS = ("attention-mean", "attention-rollout")
TOL = 1e-9  # data-weight is written with 12 decimals


@pytest.fixture
def toy():
    with toy_model.registered():
        yield dataclasses.replace(st.State(), model="toy", text="the toy sees the toy and the dog", query=5)


def draw(s):
    c = st.compute(s)
    markup = aggregates.render(s, c)
    return c, markup, parse(markup)


def svg_of(root, view):
    (svg,) = root.find_all("svg", data_view=view)
    return svg


def matrix_of(svg):
    """{(i, j): weight} of the map's cells, from the markup."""
    cells = svg.find_all("rect", data_i=True)
    out = {(int(r.attrs["data-i"]), int(r.attrs["data-j"])): float(r.attrs["data-weight"]) for r in cells}
    assert len(out) == len(cells), "one rect per cell"
    return out


def expected(c, layer):
    """(mean [n][n], rollout [n][n]) by loops over the traced weights of every layer up to `layer`."""
    layers = [t.weights.tolist() for t in c.run.layers]
    return ref_head_mean(layers[layer]), ref_rollout(layers, layer)


def assert_cells_equal(svg, want, n, tol=TOL):
    got = matrix_of(svg)
    assert set(got) == {(i, j) for i in range(n) for j in range(n)}
    for (i, j), w in got.items():
        assert w == pytest.approx(want[i][j], abs=tol), (svg.attrs["data-view"], i, j)


def text(node) -> str:
    return " ".join(node.all_text().split())


# --------------------------------------------------------------------------
# the numbers
# --------------------------------------------------------------------------


def test_designed_model_cells_are_the_head_mean_and_the_one_layer_rollout():
    s = st.State()
    c, _, root = draw(s)
    n = len(c.tokens)
    mean, rollout = expected(c, 0)
    assert_cells_equal(svg_of(root, "attention-mean"), mean, n)
    assert_cells_equal(svg_of(root, "attention-rollout"), rollout, n)
    # one layer: rollout is ½·mean + ½·I, and the panel says so
    half = [[0.5 * mean[i][j] + (0.5 if i == j else 0.0) for j in range(n)] for i in range(n)]
    assert_cells_equal(svg_of(root, "attention-rollout"), half, n)
    assert "one layer" in text(root) and "½·mean + ½·I" in text(root)
    for view in VIEWS:
        assert svg_of(root, view).attrs["data-layer"] == "0"


@pytest.mark.parametrize("layer", [0, 1])
@pytest.mark.parametrize("causal", [False, True])
def test_toy_model_cells_match_the_loop_references_at_every_layer(toy, layer, causal):
    s = dataclasses.replace(toy, layer=layer, causal=causal)
    c, _, root = draw(s)
    n = len(c.tokens)
    mean, rollout = expected(c, layer)
    assert_cells_equal(svg_of(root, "attention-mean"), mean, n)
    assert_cells_equal(svg_of(root, "attention-rollout"), rollout, n)
    for view in VIEWS:
        svg = svg_of(root, view)
        assert svg.attrs["data-layer"] == str(layer)
        if causal:  # future keys: weight 0, drawn hatched as masked
            future = [r for r in svg.find_all("rect", data_i=True) if int(r.attrs["data-j"]) > int(r.attrs["data-i"])]
            assert future and all(
                r.attrs.get("data-masked") == "true" and float(r.attrs["data-weight"]) == 0.0 for r in future
            )


def test_rollout_up_to_a_later_layer_differs_from_the_first(toy):
    """The rollout really multiplies the layers: layer 2's map is not layer 1's."""
    _, _, first = draw(dataclasses.replace(toy, layer=0))
    _, _, second = draw(dataclasses.replace(toy, layer=1))
    a, b = matrix_of(svg_of(first, "attention-rollout")), matrix_of(svg_of(second, "attention-rollout"))
    assert max(abs(a[k] - b[k]) for k in a) > 1e-3


@pytest.mark.parametrize("layer", [0, 1])
def test_every_row_of_both_maps_sums_to_one(toy, layer):
    c, _, root = draw(dataclasses.replace(toy, layer=layer, causal=True))
    n = len(c.tokens)
    for view in VIEWS:
        m = matrix_of(svg_of(root, view))
        for i in range(n):
            assert sum(m[i, j] for j in range(n)) == pytest.approx(1.0, abs=1e-9), (view, i)


def test_the_maths_comes_from_core(toy, monkeypatch):
    """The view draws core.head_mean and core.attention_rollout; it does not compute its own."""
    c = st.compute(toy)
    n = len(c.tokens)
    monkeypatch.setattr(aggregates.core, "head_mean", lambda w: [[0.25] * n for _ in range(n)])
    monkeypatch.setattr(aggregates.core, "attention_rollout", lambda ws, upto=None: [[0.75] * n for _ in range(n)])
    root = parse(aggregates.render(toy, c))
    assert set(matrix_of(svg_of(root, "attention-mean")).values()) == {0.25}
    assert set(matrix_of(svg_of(root, "attention-rollout")).values()) == {0.75}


def test_trained_model_rollout_up_to_the_selected_layer():
    """MiniLM (6 layers × 12 heads, float32): the rollout up to layer 4 (0-based 3) and that layer's mean."""
    from test_view_minilm import minilm_state

    s = minilm_state(layer=3)
    c, markup, root = draw(s)
    n = len(c.tokens)
    mean, rollout = expected(c, 3)
    assert_cells_equal(svg_of(root, "attention-mean"), mean, n, tol=1e-6)
    assert_cells_equal(svg_of(root, "attention-rollout"), rollout, n, tol=1e-6)
    assert svg_of(root, "attention-rollout").attrs["data-layer"] == "3"
    assert "up to layer 4 of 6" in svg_of(root, "attention-rollout").attrs["aria-label"]
    assert "12 heads of layer 4 of 6" in svg_of(root, "attention-mean").attrs["aria-label"]
    assert json.loads(svg_of(root, "attention-mean").attrs["data-special"]) == [0, n - 1]
    assert len(by_class(root, "cell", "rect")) == 2 * n * n  # nothing else is drawn per cell


# --------------------------------------------------------------------------
# selected queries: outlines and the mean row
# --------------------------------------------------------------------------


def test_without_pinned_queries_there_is_no_mean_row(toy):
    c, markup, root = draw(toy)
    assert not root.find_all("rect", class_="mean-cell") and "data-mean-j" not in markup
    for view in VIEWS:
        svg = svg_of(root, view)
        (outline,) = svg.find_all("rect", class_="query-outline")
        assert outline.attrs["data-query-row"] == str(toy.query)
        assert not svg.find_all("rect", class_="pinned-outline")


@pytest.mark.parametrize("layer", [0, 1])
def test_pinned_queries_add_their_mean_row_labelled_as_such(toy, layer):
    s = dataclasses.replace(toy, layer=layer, pinned=(1, 3))
    c, _, root = draw(s)
    n, rows = len(c.tokens), [1, 3, 5]  # pinned + the query, sorted
    mean, rollout = expected(c, layer)
    for view, matrix in (("attention-mean", mean), ("attention-rollout", rollout)):
        svg = svg_of(root, view)
        cells = svg.find_all("rect", data_mean_j=True)
        assert len(cells) == n
        for cell in cells:
            assert "data-i" not in cell.attrs, "a mean cell is not a matrix cell"
            j = int(cell.attrs["data-mean-j"])
            want = sum(matrix[i][j] for i in rows) / len(rows)
            assert float(cell.attrs["data-weight"]) == pytest.approx(want, abs=TOL)
        assert "mean of the 3 selected queries" in text(svg)
        assert {int(r.attrs["data-pinned-row"]) for r in svg.find_all("rect", class_="pinned-outline")} == {1, 3}
        assert [r.attrs["data-query-row"] for r in svg.find_all("rect", class_="query-outline")] == ["5"]
        assert svg.attrs["data-selected"] == "1_3_5"
        assert "mean of the 3 selected queries" in svg.attrs["aria-label"]
    assert len(matrix_of(svg_of(root, "attention-mean"))) == n * n, "the mean row adds no data-i cells"


def test_a_pinned_query_equal_to_the_query_adds_no_mean_row(toy):
    _, _, root = draw(dataclasses.replace(toy, pinned=(toy.query,)))
    assert not root.find_all("rect", class_="mean-cell")


@pytest.mark.parametrize("pinned", [(), (1,), (5, 2), (0, 1, 7)])
def test_the_outlined_rows_are_the_states_selected_queries(toy, pinned):
    """The view's rows are exactly state.selected_queries (query + pinned, sorted)."""
    s = dataclasses.replace(toy, pinned=pinned)
    _, _, root = draw(s)
    assert svg_of(root, "attention-mean").attrs["data-selected"] == "_".join(map(str, st.selected_queries(s)))


# --------------------------------------------------------------------------
# words
# --------------------------------------------------------------------------


def test_the_sentence_names_where_the_query_traces_most(toy):
    s = dataclasses.replace(toy, layer=1)
    c, _, root = draw(s)
    _, rollout = expected(c, 1)
    row = rollout[s.query]
    top = max(range(len(row)), key=lambda k: row[k])
    (p,) = [n for n in by_class(root, "aggregates-says") if n.attrs.get("data-says") == "rollout"]
    said = text(p)
    assert said.startswith(f"In the rollout up to layer 2, “{c.tokens[s.query]}” traces most to ")
    first = "itself" if top == s.query else f"“{c.tokens[top]}”"
    assert said[len("In the rollout up to layer 2, “and” traces most to ") :].startswith(first)
    assert f"{100 * row[top]:.0f} %" in said


def test_the_mean_sentence_flags_a_special_token_as_not_a_word():
    """Designed model: the heads' mean for “it” is largest on <s>, where idle heads rest; the sentence says
    it is a special token and goes on to the word after it."""
    s = st.State()
    c, _, root = draw(s)
    mean, _ = expected(c, 0)
    row = mean[s.query]
    order = sorted(range(len(row)), key=lambda k: -row[k])
    assert order[0] in c.run.special  # the premise, from the loops
    (p,) = [n for n in by_class(root, "aggregates-says") if n.attrs.get("data-says") == "mean"]
    said = text(p)
    word = next(k for k in order if k not in c.run.special and k != s.query)
    assert f"“{c.tokens[order[0]]}” (a special token, {100 * row[order[0]]:.0f} %)" in said
    assert f"then “{c.tokens[word]}” ({100 * row[word]:.0f} %)" in said


def test_the_explanation_says_what_rollout_assumes_and_cites_its_sources():
    _, markup, root = draw(st.State())
    notes = text(by_class(root, "aggregates-notes")[0])
    for phrase in (
        "heads that disagree cancel out",
        "exactly half",
        "value vector",
        "feed-forward",
        "Abnar & Zuidema 2020",
        "Jain & Wallace (2019",
        "Attention is not Explanation",
    ):
        assert phrase in notes, phrase
    assert not root.find_all("h1") and not root.find_all("h2") and not root.find_all("h3") and not root.find_all("h4")


def test_switched_off_heads_are_said_to_be_still_averaged_in(toy):
    """Heads off: their weights are still computed, and the mean keeps all 3 heads of the layer."""
    s = dataclasses.replace(toy, layer=1, ablated=(st.flat_head("toy", 1, 2),))
    c, _, root = draw(s)
    assert list(c.run.layers[1].head_on) == [True, True, False]
    w = c.run.layers[1].weights.tolist()
    n = len(c.tokens)
    all_three = [[(w[0][i][j] + w[1][i][j] + w[2][i][j]) / 3 for j in range(n)] for i in range(n)]
    assert_cells_equal(svg_of(root, "attention-mean"), all_three, n)
    (note,) = by_class(root, "aggregates-ablated")
    assert "layer 2 head 3" in text(note) and "switched-off ones included" in text(note)
    _, _, plain = draw(dataclasses.replace(toy, layer=1))
    assert not by_class(plain, "aggregates-ablated")


def test_a_head_switched_off_after_the_selected_layer_is_not_mentioned(toy):
    _, _, root = draw(dataclasses.replace(toy, layer=0, ablated=(st.flat_head("toy", 1, 0),)))
    assert not by_class(root, "aggregates-ablated")


# --------------------------------------------------------------------------
# markup: escaping, accessibility
# --------------------------------------------------------------------------


def test_hostile_token_text_is_escaped():
    with toy_model.registered():
        hostile = "<b>&\"' <img src=x onerror=alert(1)> averyveryverylongtokenhere"
        s = dataclasses.replace(st.State(), model="toy", text=hostile, query=1)
        c = st.compute(s)
        markup = aggregates.render(s, c)
    assert "<b>" not in markup and "<img" not in markup
    root = parse(markup)
    assert not root.find_all("b") and not root.find_all("img")
    for view in VIEWS:
        svg = svg_of(root, view)
        assert json.loads(svg.attrs["data-tokens"]) == list(c.tokens)
        labels = [n for n in svg.find_all("text", data_token_index=True) if n.has_class("row-label")]
        assert text(labels[1]) == "<b>&\"'"
        long = labels[-1]  # clipped on the axis, the full text in its <title>
        assert text(long.find_all("title")[0]) == "averyveryverylongtokenhere"
        assert "averyveryverylongtokenhere" not in "".join(c.text for c in long.children if c.tag == "#text")
    assert "&lt;b&gt;&amp;&quot;&#x27;" in markup


def test_each_map_is_an_image_with_a_label_and_a_screen_reader_table(toy):
    s = dataclasses.replace(toy, layer=1, pinned=(2,))
    c, _, root = draw(s)
    mean, rollout = expected(c, 1)
    words = ("mean attention", "rollout")
    for figure, view, matrix, word in zip(root.find_all("figure"), VIEWS, (mean, rollout), words):
        (svg,) = figure.find_all("svg")
        assert svg.attrs["data-view"] == view and svg.attrs["role"] == "img"
        assert word in svg.attrs["aria-label"] and "layer 2" in svg.attrs["aria-label"]
        (table,) = figure.find_all("table")
        assert table.has_class("sr-only") and table.find_all("caption")
        body = table.find_all("tbody")[0].find_all("tr")
        assert len(body) == 3  # the two selected rows and their mean
        for tr, i in zip(body, (2, 5)):
            cells = [text(td) for td in tr.find_all("td")]
            assert cells == [f"{100 * matrix[i][j]:.1f} %" for j in range(len(c.tokens))]
        assert text(body[2].find_all("th")[0]) == "mean of the 2 selected queries"
    # one tab stop per map (a roving grid), on the query's row
    for view in VIEWS:
        stops = [r for r in svg_of(root, view).find_all("rect") if r.attrs.get("tabindex") == "0"]
        assert len(stops) == 1 and stops[0].attrs["data-i"] == str(s.query)
    ids = [n.attrs["id"] for n in root.iter() if "id" in n.attrs]
    assert len(ids) == len(set(ids)), "no duplicate ids"


# --------------------------------------------------------------------------
# the printed percentages: honest, equal for equal weights, and said to be rounded
# --------------------------------------------------------------------------


def cell_labels(svg) -> list[str]:
    return [text(e) for e in svg.iter() if e.has_class("cell-value")]


def test_equal_weights_read_equal_labels_and_the_maps_say_a_row_may_not_add_up_to_100(toy, monkeypatch):
    """Handmade maps (9 tokens): every mean weight 1/9 = 11.1 %, each rollout row eight times 12.5 % and a 0.
    Each label is its own weight rounded half up, so equal weights read the same ("11" x 9 = 99; "13" x 8 =
    104), not a largest-remainder share that would make some 12 and others 13 to add up to 100; and one
    note under both maps says so."""
    c = st.compute(toy)
    n = len(c.tokens)
    assert n == 9
    monkeypatch.setattr(aggregates.core, "head_mean", lambda w: [[1 / 9] * n for _ in range(n)])
    monkeypatch.setattr(aggregates.core, "attention_rollout", lambda ws, upto=None: [[0.125] * 8 + [0.0]] * n)
    root = parse(aggregates.render(toy, c))
    assert cell_labels(svg_of(root, "attention-mean")) == ["11"] * (n * n)
    assert cell_labels(svg_of(root, "attention-rollout")) == (["13"] * 8 + ["0"]) * n
    (note,) = by_class(root, "rounding-note")
    words = text(note)
    assert "rounded on its own" in words and "not add up to exactly 100" in words and "<1" in words


def test_the_rounding_note_sits_outside_the_maps_that_scroll_sideways():
    """The designed model's default sentence: both maps print numbers; the note is a paragraph after them,
    in no svg and no .figure (on a phone it wraps to the screen instead of scrolling off with a map)."""
    c, markup, root = draw(st.State())
    for view in VIEWS:
        assert cell_labels(svg_of(root, view)), f"premise: {view} prints its cells' percentages"
    (note,) = by_class(root, "rounding-note")
    assert note.tag == "p" and not inside(note, tag="svg") and not inside(note, cls="figure")


def test_no_rounding_note_when_the_cells_print_no_numbers():
    """20 tokens: the cells are too small for numbers, so there is nothing rounded to explain."""
    s = st.apply_event(st.State(), {"type": "set_text", "value": " ".join(["word"] * 20)})
    _, _, root = draw(s)
    assert not any(cell_labels(svg_of(root, view)) for view in VIEWS)
    assert not by_class(root, "rounding-note")
