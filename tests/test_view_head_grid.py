"""Tests for "all heads at a glance" (views/head_grid.py): every layer × every head as a small matrix.

What the product promises: one thumbnail per (layer, head) of the model's run (1 × 4 for the designed
model, every layer of a multi-layer model), each a button that picks that layer and head ("l,h") and is
pressed when it is the selected one; each cell's colour is the trace's weight on the grid's colour
steps (derived here from the trace with plain Python, not from the view's helpers); the query's and
the pinned queries' rows are outlined in every thumbnail; switched-off heads say "off", visibly and in
their accessible name; each button's name says where the query looks most (checked against the
trace); reader text is escaped; and 6 × 12 heads at 16 tokens stay light (elements and bytes).
"""

from __future__ import annotations

import dataclasses
import re

import pytest

import toy_model
from attention_explorer import state as st
from attention_explorer.views import head_grid
from attention_explorer.views.colors import viridis
from markup_tree import by_class, parse

HOSTILE = '<img src=x onerror=alert(1)> "quotes" & 😀 שלום'
QUOTES = "<b>x</b> & \"q\" 't'"
RUN = re.compile(r"M(\d+) (\d+)h(\d+)v1h-(\d+)z")
TRAINED_SENTENCE = "The cat sat down on the warm mat because it was very tired."  # 16 word pieces with specials


def rendered(state):
    c = st.compute(state)
    markup = head_grid.render(state, c)
    return c, markup, parse(markup)


def wrapper(tree):
    (w,) = tree.find_all("div", data_view="head-grid")
    return w


def thumbs(tree):
    return tree.find_all("button", data_event="pick_head")


def drawn_cells(svg, n):
    """{(i, j): fill or "masked"} read off one thumbnail: the paths' squares and runs ("M{j} {i}h{k}v1h-{k}z",
    k = 1 for one cell), and the background rect for every cell no path covers. Fails if a cell is drawn twice."""
    cells = {}
    for path in svg.find_all("path"):
        d = path.attrs["d"]
        assert re.fullmatch(f"(?:{RUN.pattern})+", d), d  # nothing but unit-high runs
        paint = "masked" if path.has_class("is-masked") else path.attrs["fill"]
        for j, i, k, back in RUN.findall(d):
            assert k == back
            for jj in range(int(j), int(j) + int(k)):
                assert (int(i), jj) not in cells, f"cell {(int(i), jj)} drawn twice"
                cells[(int(i), jj)] = paint
    (bg,) = by_class(svg, "hg-bg", "rect")
    assert (bg.attrs["width"], bg.attrs["height"]) == (str(n), str(n))
    for i in range(n):
        for j in range(n):
            cells.setdefault((i, j), bg.attrs["fill"])
    return cells


def strongest(weights_row, allowed_row):
    """Plain Python: the allowed key with the largest weight, first on ties."""
    best, best_w = None, None
    for j, (w, ok) in enumerate(zip(weights_row, allowed_row)):
        if ok and (best_w is None or float(w) > best_w):
            best, best_w = j, float(w)
    return best, best_w


def toy_state(**changes):
    return dataclasses.replace(
        st.State(), **{"model": "toy", "text": "the toy sees the toy again", "query": 3, **changes}
    )


def trained_state(**changes):
    s = st.apply_event(st.State(), {"type": "set_model", "value": "minilm"})
    s = st.apply_event(s, {"type": "set_text", "value": TRAINED_SENTENCE})
    s = dataclasses.replace(s, **changes)
    assert len(s.tokens) == 16
    return s


# --------------------------------------------------------------------------- one button per head


@pytest.mark.parametrize("head", [0, 3])
def test_designed_model_one_pressed_thumbnail_per_head(head):
    """The designed model: one row (layer 1) of four thumbnails; each sends pick_head "0,h"; only the
    selected head is pressed; each names its head visibly and holds one matrix svg."""
    s = dataclasses.replace(st.State(), head=head)
    c, _, tree = rendered(s)
    w = wrapper(tree)
    assert (w.attrs["data-layers"], w.attrs["data-heads"]) == ("1", "4")
    buttons = thumbs(tree)
    assert len(buttons) == 4 == len(c.model.heads[0])
    for h, b in enumerate(buttons):
        assert b.attrs["type"] == "button" and b.attrs["data-value"] == f"0,{h}"
        assert b.attrs["aria-pressed"] == ("true" if h == head else "false")
        name = c.model.heads[0][h].name
        (shown,) = by_class(b, "hg-name")
        assert shown.all_text() == name
        assert name in b.attrs["aria-label"] and "Layer 1, head " + str(h + 1) in b.attrs["aria-label"]
        (svg,) = b.find_all("svg")
        assert (svg.attrs["data-view"], svg.attrs["data-layer"], svg.attrs["data-head"]) == ("head-thumb", "0", str(h))
        assert svg.attrs["role"] == "img" and svg.attrs["aria-label"]
    labels = [e.all_text() for e in by_class(tree, "hg-layer")]
    assert labels == ["Layer 1"]


def test_every_layer_of_a_multi_layer_model_gets_a_row():
    """The toy model (2 layers × 3 heads): a row per layer, "Layer 1", "Layer 2", thumbnails in layer-major
    order with values "l,h"; the selected layer's selected head is the one pressed."""
    with toy_model.registered():
        s = toy_state(layer=1, head=2)
        c, _, tree = rendered(s)
        w = wrapper(tree)
        assert (w.attrs["data-layers"], w.attrs["data-heads"]) == (str(toy_model.N_LAYERS), str(toy_model.N_HEADS))
        values = [b.attrs["data-value"] for b in thumbs(tree)]
        assert values == [f"{l},{h}" for l in range(toy_model.N_LAYERS) for h in range(toy_model.N_HEADS)]
        pressed = [b.attrs["data-value"] for b in thumbs(tree) if b.attrs["aria-pressed"] == "true"]
        assert pressed == ["1,2"]
        assert [e.all_text() for e in by_class(tree, "hg-layer")] == ["Layer 1", "Layer 2"]
        rows = tree.find_all("div", role="group", aria_label="Layer 2")
        assert len(rows) == 1 and len(thumbs(rows[0])) == toy_model.N_HEADS
        for b in thumbs(tree):
            l, h = map(int, b.attrs["data-value"].split(","))
            assert f"Layer {l + 1}, head {h + 1}: L{l + 1} head {h + 1}" in b.attrs["aria-label"]
            assert by_class(b, "hg-name")[0].all_text() == f"L{l + 1} head {h + 1}"


def test_a_thumbnails_value_picks_that_layer_and_head():
    """The event a thumbnail sends, applied to the state, selects exactly its layer and head."""
    with toy_model.registered():
        s = toy_state()
        _, _, tree = rendered(s)
        for b in thumbs(tree):
            new = st.apply_event(s, {"type": b.attrs["data-event"], "value": b.attrs["data-value"]})
            assert f"{new.layer},{new.head}" == b.attrs["data-value"]


# --------------------------------------------------------------------------- colours


@pytest.mark.parametrize("causal", [False, True])
def test_each_cells_colour_is_its_weight_on_the_colour_steps(causal):
    """Every cell of every thumbnail (toy model, both layers; causal: masked cells) is painted
    viridis(round(w · levels) / levels) with w the trace's weight, or as masked where the mask forbids it."""
    with toy_model.registered():
        s = toy_state(causal=causal)
        c, _, tree = rendered(s)
        levels = int(wrapper(tree).attrs["data-levels"])
        assert levels >= 8
        n = len(c.tokens)
        masked_seen = 0
        for svg in tree.find_all("svg", data_view="head-thumb"):
            l, h = int(svg.attrs["data-layer"]), int(svg.attrs["data-head"])
            assert svg.attrs["viewbox"] == f"0 0 {n} {n}"
            weights = c.run.layers[l].weights[h].tolist()
            allowed = c.run.layers[l].mask.tolist()
            cells = drawn_cells(svg, n)
            for i in range(n):
                for j in range(n):
                    if not allowed[i][j]:
                        assert cells[(i, j)] == "masked", (l, h, i, j)
                        masked_seen += 1
                    else:
                        level = round(float(weights[i][j]) * levels) / levels
                        assert cells[(i, j)] == viridis(level), (l, h, i, j, weights[i][j])
        assert (masked_seen > 0) == causal


def test_designed_model_cells_match_the_trace():
    """The same check on the designed model's four heads (a peaked, hand-made pattern)."""
    s = st.State()
    c, _, tree = rendered(s)
    levels = int(wrapper(tree).attrs["data-levels"])
    n = len(c.tokens)
    for svg in tree.find_all("svg", data_view="head-thumb"):
        h = int(svg.attrs["data-head"])
        cells = drawn_cells(svg, n)
        for (i, j), fill in cells.items():
            assert fill == viridis(round(float(c.trace.weights[h][i][j]) * levels) / levels)


# --------------------------------------------------------------------------- where the query looks


def test_each_button_says_where_the_query_looks_most():
    """The accessible name of every head names the query's strongest key and its percentage, and so does
    the sr-only table (one row per layer, one cell per head)."""
    with toy_model.registered():
        s = toy_state(causal=True, query=4)
        c, _, tree = rendered(s)
        q_tok = c.tokens[s.query]
        (table,) = tree.find_all("table")
        assert table.has_class("sr-only") and table.find_all("caption")
        body_rows = table.find_all("tbody")[0].find_all("tr")
        assert len(body_rows) == toy_model.N_LAYERS
        for b in thumbs(tree):
            l, h = map(int, b.attrs["data-value"].split(","))
            j, w = strongest(c.run.layers[l].weights[h][s.query], c.run.layers[l].mask[s.query])
            label = b.attrs["aria-label"]
            assert f"“{q_tok}” looks most at “{c.tokens[j]}”" in label
            printed = float(re.search(r"\((\d+) %\)", label).group(1))
            assert printed == pytest.approx(100 * w, abs=0.5 + 1e-9)
            cell = body_rows[l].find_all("td")[h].all_text()
            assert c.model.heads[l][h].name in cell and f"“{c.tokens[j]}”" in cell
            assert float(re.search(r"(\d+) %", cell).group(1)) == printed


# --------------------------------------------------------------------------- selected rows


def test_query_and_pinned_rows_are_outlined_in_every_thumbnail():
    """With pinned tokens, every thumbnail outlines each selected row: the query as .is-query, the pinned
    ones as .is-pinned, each one unit high at its row."""
    with toy_model.registered():
        s = toy_state(query=3, pinned=(1, 5))
        c, _, tree = rendered(s)
        assert wrapper(tree).attrs["data-rows"] == "1 3 5" and wrapper(tree).attrs["data-query"] == "3"
        svgs = tree.find_all("svg", data_view="head-thumb")
        assert len(svgs) == toy_model.N_LAYERS * toy_model.N_HEADS
        for svg in svgs:
            rows = by_class(svg, "thumb-row", "rect")
            assert sorted(int(r.attrs["data-row"]) for r in rows) == [1, 3, 5]
            for r in rows:
                i = int(r.attrs["data-row"])
                assert r.has_class("is-query") == (i == 3) and r.has_class("is-pinned") == (i != 3)
                assert (r.attrs["y"], r.attrs["height"]) == (str(i), "1")  # exactly row i ...
                x, width = float(r.attrs["x"]), float(r.attrs["width"])
                assert x <= 0 and x + width >= len(c.tokens)  # ... across every key
        caption = by_class(tree, "hg-caption")[0].all_text()
        assert c.tokens[1:6] == ("the", "toy", "sees", "the", "toy")
        assert "query “sees”" in caption and "pinned queries “the”, “toy”" in caption


def test_without_pinned_tokens_only_the_query_row_is_outlined():
    s = dataclasses.replace(st.State(), query=2)
    _, _, tree = rendered(s)
    for svg in tree.find_all("svg", data_view="head-thumb"):
        rows = by_class(svg, "thumb-row", "rect")
        assert [(r.attrs["data-row"], r.has_class("is-query")) for r in rows] == [("2", True)]


# --------------------------------------------------------------------------- switched-off heads


def test_switched_off_heads_are_marked_off():
    """Heads in state.ablated (flat index layer · heads + head) carry a visible "off" and say "switched off"
    in their accessible name; the others do not."""
    with toy_model.registered():
        flat = (1, 3 + 2)  # layer 1 head 2, layer 2 head 3
        off = {(f // toy_model.N_HEADS, f % toy_model.N_HEADS) for f in flat}
        s = toy_state(ablated=flat)
        _, _, tree = rendered(s)
        for b in thumbs(tree):
            l, h = map(int, b.attrs["data-value"].split(","))
            badge = by_class(b, "hg-off")
            if (l, h) in off:
                assert b.has_class("is-off") and [e.all_text() for e in badge] == ["off"]
                assert "switched off" in b.attrs["aria-label"]
            else:
                assert not b.has_class("is-off") and not badge and "off" not in b.attrs["aria-label"]
        assert "off" in by_class(tree, "hg-caption")[0].all_text()
    s = dataclasses.replace(st.State(), ablated=(2,))
    _, _, tree = rendered(s)
    assert [b.has_class("is-off") for b in thumbs(tree)] == [False, False, True, False]


# --------------------------------------------------------------------------- escaping, structure


@pytest.mark.parametrize("text, query", [(HOSTILE, 1), (HOSTILE, 2), (HOSTILE, 17), (QUOTES, 10), (QUOTES, 11)])
def test_reader_text_is_escaped(text, query):
    """A sentence with markup, quotes and ampersands shows as text in labels, caption and table, never as markup."""
    s = st.State(text=text, query=query)
    c, markup, tree = rendered(s)
    assert "<img" not in markup and "<b>" not in markup and "&lt;" in markup
    assert not re.search(r"<(?![a-z/])", markup), "a '<' that starts no tag: reader text left unescaped"
    assert '“"”' not in markup, "a raw quote from the sentence inside markup"
    assert not tree.find_all("img") and not tree.find_all("b")
    assert not [e for e in tree.iter() if any(a.startswith("on") for a in e.attrs)]
    q_tok = c.tokens[query]
    assert f"query “{q_tok}”" in by_class(tree, "hg-caption")[0].all_text()
    assert f"“{q_tok}”" in tree.find_all("caption")[0].all_text()
    for b in thumbs(tree):
        assert f"“{q_tok}” looks most at “" in b.attrs["aria-label"]


def test_markup_is_accessible_and_scrolls_in_its_own_container():
    """Every svg is a labelled image; the grid is a named group inside a .figure (the container that scrolls
    sideways on a phone); a caption says what the squares, rows and columns are; no ids to collide."""
    s = st.State()
    _, _, tree = rendered(s)
    (scroller,) = by_class(tree, "figure")
    assert by_class(scroller, "hg-grid")[0].attrs["role"] == "group"
    assert by_class(scroller, "hg-grid")[0].attrs.get("aria-label")
    for svg in tree.find_all("svg"):
        assert svg.attrs["role"] == "img" and svg.attrs.get("aria-label")
    caption = by_class(tree, "hg-caption")[0].all_text()
    for words in ("one head's attention matrix", "rows are queries", "columns are keys", "Click"):
        assert words in caption
    assert not tree.find_all(id=True)


def test_trained_model_grid_is_light():
    """MiniLM, 6 layers × 12 heads at 16 word pieces, two pinned rows: 72 thumbnails, each a handful of
    paths (not one element per cell), under 2,000 elements and 150 kB in all."""
    s = trained_state(query=10, pinned=(2, 7), layer=3, head=5)
    c, markup, tree = rendered(s)
    assert len(thumbs(tree)) == 72 and len(tree.find_all("svg", data_view="head-thumb")) == 72
    elements = [e for e in tree.iter() if e.tag not in ("#root", "#text")]
    assert len(elements) < 2_000
    assert len(markup.encode("utf-8")) < 150_000
    pressed = [b.attrs["data-value"] for b in thumbs(tree) if b.attrs["aria-pressed"] == "true"]
    assert pressed == ["3,5"]
    # spot-check a few cells of a few heads against the trace
    levels = int(wrapper(tree).attrs["data-levels"])
    for svg in tree.find_all("svg", data_view="head-thumb")[::17]:
        l, h = int(svg.attrs["data-layer"]), int(svg.attrs["data-head"])
        cells = drawn_cells(svg, 16)
        for i, j in ((0, 0), (10, 0), (10, 9), (15, 15), (4, 11)):
            assert cells[(i, j)] == viridis(round(float(c.run.layers[l].weights[h][i][j]) * levels) / levels)
