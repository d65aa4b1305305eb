"""Tests for stage 2, the projections panel (views/projections.py): W_Q, W_K, W_V and every q, k, v.

What the product promises: the weight pictures show exactly the input dims that feed the head
(checked against the params with NumPy, not against the view's own helpers), every number a
tooltip or the hidden table prints is the trace's own, the query's row is marked and every token
row picks the query, it renders for any model behind the seam (the toy model's two layers), each
picture is one image rather than one element per number, and reader text is escaped.
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
import zlib
from base64 import b64decode

import numpy as np
import pytest

import toy_model
from attention_explorer import state as st
from attention_explorer.views import projections
from attention_explorer.views.markup import num
from markup_tree import parse

LETTERS = ("q", "k", "v")
WEIGHT = {"q": "w_q", "k": "w_k", "v": "w_v"}
BIAS = {"q": "b_q", "k": "b_k", "v": "b_v"}


def rendered(state):
    c = st.compute(state)
    markup = projections.render(state, c)
    return c, markup, parse(markup)


def head_slice(c, h, letter):  # -> [d_model, d_k], the head's columns, taken here independently
    d_k = c.trace.q.shape[-1]
    return np.asarray(getattr(c.params, WEIGHT[letter]))[:, h * d_k : (h + 1) * d_k]


def elements(root):
    return [n for n in root.iter() if not n.tag.startswith("#")]


def designed_states():
    return [dataclasses.replace(st.State(), head=h) for h in range(len(st.description("designed").heads[0]))]


def toy_states():
    base = dataclasses.replace(st.State(), model="toy", text="the toy sees the toy", query=2)
    return [
        dataclasses.replace(base, layer=l, head=h) for l in range(toy_model.N_LAYERS) for h in range(toy_model.N_HEADS)
    ]


@pytest.fixture
def toy():
    with toy_model.registered():
        yield


def expected_alpha(values) -> tuple[np.ndarray, np.ndarray]:
    """The panel's colour rule, restated: opacity √(|v| / max|v|) in 0..255, blue mask for v > 0, orange for v < 0."""
    v = np.asarray(values, dtype=np.float64)
    level = np.round(255 * np.sqrt(np.abs(v) / np.abs(v).max()))
    return np.where(v > 0, level, 0), np.where(v < 0, level, 0)


def assert_picture(svg, values):
    pos = decode_png_alpha(svg.find_all("image", data_sign="pos")[0].attrs["href"])
    neg = decode_png_alpha(svg.find_all("image", data_sign="neg")[0].attrs["href"])
    want_pos, want_neg = expected_alpha(values)
    assert pos.shape == neg.shape == want_pos.shape
    assert np.abs(pos - want_pos).max() <= 1 and np.abs(neg - want_neg).max() <= 1


def decode_png_alpha(uri: str) -> np.ndarray:  # data URI -> [h, w] alpha (8-bit grey + alpha, filter 0)
    data = b64decode(uri.split(",", 1)[1])
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = 1 + 2 * width
    px = np.array([list(raw[r * stride + 1 : (r + 1) * stride]) for r in range(height)], dtype=np.uint8)
    return px.reshape(height, width, 2)[..., 1]


# --------------------------------------------------------------------------
# the weight pictures show exactly the rows that matter
# --------------------------------------------------------------------------


def check_matrices(state):
    c, markup, root = rendered(state)
    h, d_model = state.head, c.model.d_model
    for letter in LETTERS:
        w = head_slice(c, h, letter)
        nonzero = [int(d) for d in range(d_model) if np.any(w[d] != 0)]
        (svg,) = root.find_all("svg", data_matrix=f"w_{letter}")
        assert json.loads(svg.attrs["data-rows"]) == nonzero, f"W_{letter} must show exactly its non-zero rows"
        assert int(svg.attrs["data-cols"]) == w.shape[1] == c.model.d_k
        # the labels beside it name those rows, in order: one per row, or one per band of rows
        labels = [n for n in svg.parent.iter() if n.has_class("proj-rl")]
        covered = []
        for lab in labels:
            if "data-dim" in lab.attrs:
                covered.append(int(lab.attrs["data-dim"]))
            else:
                a, b = map(int, lab.attrs["data-dims"].split("-"))
                covered += list(range(a, b + 1))
        assert covered == nonzero, f"W_{letter}'s row labels must cover its shown rows, in order"
        # each shown row's pixels: blue where the weight is positive, orange where negative, nothing at 0
        # (a labelled row is `rep` pixel rows tall, a row inside a band one)
        height = int(svg.attrs["viewbox"].split()[3])
        singles = [lab for lab in labels if "data-dim" in lab.attrs]
        banded = len(nonzero) - len(singles)
        rep = (height - banded) // max(1, len(singles))
        reps = [rep if d in {int(lab.attrs["data-dim"]) for lab in singles} else 1 for d in nonzero]
        assert_picture(svg, np.repeat(w[nonzero], reps, axis=0))
        # and the words say how many rows were left out
        left_out = d_model - len(nonzero)
        (fig,) = root.find_all("figure", data_proj=letter)
        if left_out:
            assert f"{left_out} all-zero rows left out" in fig.all_text()
    return c, root


@pytest.mark.parametrize("head", range(4))
def test_designed_heads_show_exactly_the_nonzero_rows_of_their_weights(head):
    """For every head of the designed model, W_Q/W_K/W_V show the rows NumPy finds non-zero, nothing else."""
    check_matrices(dataclasses.replace(st.State(), head=head))


def test_designed_explanation_counts_the_input_dims_feeding_each_matrix():
    """'5 of 256 input dimensions feed W_Q': the counts in the lede are those of the params."""
    for state in designed_states():
        c, _, root = rendered(state)
        lede = root.find_all("p", class_="proj-lede")[0].all_text()
        counts = [int(np.count_nonzero(np.any(head_slice(c, state.head, x) != 0, axis=1))) for x in LETTERS]
        assert f"{counts[0]} of {c.model.d_model} input dimensions feed WQ" in lede
        assert f"{counts[1]} feed WK and {counts[2]} feed WV" in lede
        assert c.heads[state.head].name.split()[0] in lede


def test_a_matrix_is_called_a_copy_only_when_its_weights_are_one_per_row_and_column():
    """The 'plain copy' sentence is checked against W itself: single 1s, no shared column.
    (The designed model's W_V copies the features; its previous-token head's W_K copies the position code.)"""
    called = set()
    with toy_model.registered():
        for state in designed_states() + toy_states():
            c, _, root = rendered(state)
            for letter in LETTERS:
                w = head_slice(c, state.head, letter)
                nz = w != 0
                copy = bool(nz.any() and (w[nz] == 1).all() and (nz.sum(1) <= 1).all() and (nz.sum(0) <= 1).all())
                note = root.find_all("figure", data_proj=letter)[0].all_text()
                assert ("plain copy" in note) == copy
                if copy:
                    called.add((state.model, letter))
    assert ("designed", "v") in called, "the designed model's W_V is a copy, and the panel says so"


def test_score_sentence_counts_the_columns_both_wq_and_wk_use():
    for state in designed_states():
        c, _, root = rendered(state)
        both = np.any(head_slice(c, state.head, "q") != 0, axis=0) & np.any(head_slice(c, state.head, "k") != 0, axis=0)
        text = root.find_all("figure", data_proj="k")[0].all_text()
        if both.sum() < c.model.d_k:
            assert f"only the {int(both.sum())} of {c.model.d_k} columns" in text
        else:
            assert f"over all {c.model.d_k} columns" in text


def test_bold_rows_are_the_querys_nonzero_input_dims():
    """A row label is marked exactly when the query's x_i is non-zero there (those rows make its q, k, v)."""
    for state in designed_states():
        c, _, root = rendered(state)
        x = c.trace.x[state.query]
        for lab in [n for n in root.iter() if n.has_class("proj-rl") and "data-dim" in n.attrs]:
            assert lab.has_class("is-on") == bool(x[int(lab.attrs["data-dim"])] != 0)


# --------------------------------------------------------------------------
# the vectors: every number is the trace's
# --------------------------------------------------------------------------


def check_vectors(state):
    c, markup, root = rendered(state)
    h, i, tr = state.head, state.query, c.trace
    n = len(c.tokens)
    for letter in LETTERS:
        vec = getattr(tr, letter)[h]  # [n, d_k]
        (svg,) = root.find_all("svg", data_vectors=letter)
        assert (int(svg.attrs["data-rows"]), int(svg.attrs["data-cols"])) == vec.shape
        (outline,) = svg.find_all("rect", class_="proj-query-row")
        assert outline.attrs["data-query-row"] == str(i) and outline.attrs["y"] == str(i)
        assert_picture(svg, vec)
        # the token rows: one button per token, only the query pressed; a click sets the query
        (fig,) = root.find_all("figure", data_proj=letter)
        buttons = fig.find_all("button", data_event="set_query")
        assert [b.attrs["data-token-index"] for b in buttons] == [str(j) for j in range(n)]
        assert [b.all_text() for b in buttons] == list(c.tokens)
        assert [b.attrs["aria-pressed"] for b in buttons] == ["true" if j == i else "false" for j in range(n)]
        assert [j for j, b in enumerate(buttons) if b.has_class("is-query")] == [i]
        # the query's strip: every column once; each cell's number is the trace's
        (strip,) = root.find_all("svg", data_strip=letter)
        cells = strip.find_all("rect", data_grid_cell=True)
        seen = []
        for cell in cells:
            tip = cell.attrs["data-tip"]
            if "data-dims" in cell.attrs:  # a run of exact zeros
                a, b = map(int, cell.attrs["data-dims"].split("-"))
                assert np.all(vec[i, a : b + 1] == 0)
                assert tip.startswith(f"{letter}_{i}[{a}] … {letter}_{i}[{b}] = 0")
                seen += list(range(a, b + 1))
            else:
                col = int(cell.attrs["x"])
                assert float(cell.attrs["data-value"]) == pytest.approx(vec[i, col], abs=1e-9)
                assert tip.startswith(f"{letter}_{i}[{col}] = {num(vec[i, col], 3)}:")
                seen.append(col)
        assert seen == list(range(vec.shape[1])), "the strip covers every column once, in order"
        assert [cell.attrs["tabindex"] for cell in cells].count("0") == 1, "one Tab stop per strip"
    return c, root


@pytest.mark.parametrize("head", range(4))
def test_designed_vectors_are_the_trace(head):
    check_vectors(dataclasses.replace(st.State(), head=head))


def test_strip_tooltips_derive_each_number_from_x_and_w():
    """A cell's tooltip lists its largest terms x_i[d]·W[d, c]: the first is the largest by NumPy."""
    with toy_model.registered():
        for state in designed_states() + toy_states():
            c, _, root = rendered(state)
            x = c.trace.x[state.query]
            for letter in LETTERS:
                w = head_slice(c, state.head, letter)
                (strip,) = root.find_all("svg", data_strip=letter)
                for cell in strip.find_all("rect", data_grid_cell=True):
                    if "data-dims" in cell.attrs:
                        continue
                    col = int(cell.attrs["x"])
                    terms = x * w[:, col]
                    lines = cell.attrs["data-tip"].split("\n")
                    if not terms.any():
                        continue
                    d = int(np.argmax(np.abs(terms)))
                    assert lines[2].strip().endswith(f"{num(x[d], 2)} × {num(w[d, col], 2)} = {num(terms[d], 2)}")


def test_hidden_table_holds_the_querys_q_k_v():
    """Screen readers get q, k and v of the query: each non-zero column's value as in the trace."""
    for state in designed_states():
        c, _, root = rendered(state)
        (table,) = root.find_all("table")
        assert table.parent.has_class("sr-only")
        rows = table.find_all("tr")[1:]
        for letter, row in zip(LETTERS, rows):
            vec = getattr(c.trace, letter)[state.head, state.query]
            text = row.find_all("td")[0].all_text()
            seen = []
            for entry in text.split("; "):
                if m := re.fullmatch(r"columns (\d+)–(\d+): 0", entry):
                    a, b = int(m[1]), int(m[2])
                    assert np.all(vec[a : b + 1] == 0)
                    seen += list(range(a, b + 1))
                else:
                    col, value = re.fullmatch(r"column (\d+): (\S+)", entry).groups()
                    assert value == num(vec[int(col)], 3)
                    seen.append(int(col))
            assert seen == list(range(len(vec))), f"{letter}: every column once, in order"


def test_root_hooks_name_head_layer_and_query():
    state = dataclasses.replace(st.State(), head=2, query=3)
    _, _, root = rendered(state)
    (view,) = root.find_all(data_view="projections")
    assert (view.attrs["data-head"], view.attrs["data-layer"], view.attrs["data-query"]) == ("2", "0", "3")


# --------------------------------------------------------------------------
# any model: the toy model's two layers, unnamed dims, biases
# --------------------------------------------------------------------------


def test_renders_every_layer_and_head_of_the_toy_model(toy):
    """The seam: a 2-layer random model with biases and unnamed dims draws as well, every row shown."""
    for state in toy_states():
        c, root = check_matrices(state)
        check_vectors(state)
        (view,) = root.find_all(data_view="projections")
        assert view.attrs["data-layer"] == str(state.layer)
        labels = [n for n in root.iter() if n.has_class("proj-rl")]
        texts = [lab.all_text() for lab in labels]
        assert "dim 12" in texts and "toy 0" in texts, "unnamed dims are labelled by number"
        lede = root.find_all("p", class_="proj-lede")[0].all_text()
        assert "plus a bias" in lede
        assert ("output of layer 1" in lede) == (state.layer == 1)


def test_reader_text_is_escaped(toy):
    """A token that looks like markup stays text: in labels, tooltips and the hidden table."""
    state = dataclasses.replace(st.State(), model="toy", text='<b>x</b> & "q" <img src=x onerror=alert(1)>', query=1)
    c, markup, root = rendered(state)
    assert c.tokens[1] == "<b>x</b>"
    assert not root.find_all("b") and not root.find_all("img")
    assert not any("onerror" in n.attrs for n in root.iter())
    assert "&lt;b&gt;x&lt;/b&gt;" in markup
    buttons = root.find_all("button", data_token_index="1")
    assert buttons and all(b.all_text() == "<b>x</b>" for b in buttons)
    (strip,) = root.find_all("svg", data_strip="q")
    assert "“<b>x</b>”" in strip.find_all("rect", data_grid_cell=True)[0].attrs["data-tip"]


# --------------------------------------------------------------------------
# small: pictures, not one element per number
# --------------------------------------------------------------------------


def test_each_picture_is_a_fixed_handful_of_elements():
    """Each W and each Q/K/V picture is one PNG pair (blue and orange masks), whatever its size."""
    for state in designed_states():
        _, _, root = rendered(state)
        for svg in root.find_all("svg", data_matrix=True) + root.find_all("svg", data_vectors=True):
            assert len(svg.find_all("image")) == 2
            assert len(elements(svg)) <= 9  # svg, frame, 2 × (mask, image, rect), query outline


def test_element_count_is_small():
    """The page's first paint has a budget of 1,500 elements for ~17 panels; numbers drawn one element
    each would need 3·256·64 + 3·n·64 ≈ 50,000 here. The panel's elements are: ~150 of text and
    structure, one label per shown row or band (≤ 3 × 48), 3 buttons per token, ≤ 3·d_k strip cells.
    The default view must stay under 400 and the densest designed head under 500 (at most 32 tokens:
    +3 buttons per extra token)."""
    counts = {}
    for state in designed_states():
        _, _, root = rendered(state)
        counts[state.head] = len(elements(root))
    assert counts[st.State().head] <= 400, counts
    assert max(counts.values()) <= 500, counts
    longer = dataclasses.replace(
        st.State(), text="The old farmer said that the big brown dog chased the cat because it was hungry"
    )
    _, _, short_root = rendered(st.State())
    _, _, long_root = rendered(longer)
    extra = len(longer.tokens) - len(st.State().tokens)
    grid_diff = abs(len(elements(long_root)) - len(elements(short_root)))
    assert grid_diff <= 3 * extra + 3 * 64, (
        "only the token buttons grow with the sentence (and the strips with the query)"
    )


def test_every_grid_has_one_tab_stop():
    """Row labels, token buttons and strips are roving-tabindex grids: one Tab stop each, arrows inside."""
    for state in designed_states():
        _, _, root = rendered(state)
        grids = [n for n in root.iter() if "data-grid" in n.attrs]
        assert len(grids) == 9  # per projection: W's row labels, the token rows, the query's strip
        for grid in grids:
            stops = [n for n in grid.iter() if n.attrs.get("tabindex") == "0"]
            assert len(stops) == 1
