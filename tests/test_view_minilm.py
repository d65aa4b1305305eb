"""The views draw the trained model (all-MiniLM-L6-v2) light, and say true things about it.

What the product promises: every panel of the page's stages renders MiniLM at 16 word pieces on two
layers within the budget of a panel (about 60 kB of markup, well under 1,500 elements: dense things
are pictures, not one element per number); special tokens are marked as such; the numbers a panel
shows are the model's, checked here against values recomputed with plain NumPy from the run's parts
(or from the pinned fp32 weights), not against the views' own helpers.

conftest installs the trained model from the bundle build.py ships, as the page's worker does.
"""

from __future__ import annotations

import dataclasses
import re
import struct
import zlib
from base64 import b64decode

import numpy as np
import pytest

from attention_explorer import page, state as st
from attention_explorer.views import explain, ffn, layernorm, projections
from attention_explorer.views.markup import num
from markup_tree import by_class, parse
from test_view_projections import decode_png_alpha

SENTENCE = "The cat sat down on the warm mat because it was very tired."  # 14 word pieces + [CLS], [SEP]
QUERY = 10  # "it"
LAYERS = (0, 3)
MY_PANELS = (
    "query-why",
    "preset-info",
    "stepper",
    "stage-detail",
    "embedding",
    "projections",
    "why-qkv",
    "head-info",
    "qk-dot",
    "routing",
    "why-scale",
    "multihead",
    "layernorm",
    "ffn",
)
MAX_BYTES = 62_000  # "about 60 kB" a panel
MAX_ELEMENTS = 1_000  # the whole first paint has 1,500


def minilm_state(layer: int = 3, **changes):
    s = st.apply_event(st.State(), {"type": "set_model", "value": "minilm"})
    s = st.apply_event(s, {"type": "set_text", "value": SENTENCE})
    s = dataclasses.replace(s, layer=layer, query=QUERY, **{"head": 0, **changes})
    assert len(s.tokens) == 16 and s.tokens[0] == "[CLS]" and s.tokens[-1] == "[SEP]" and s.tokens[QUERY] == "it"
    return s


def rendered(panel: str, s):
    c = st.compute(s)
    markup = page.PANELS[panel].render(s, c)
    return c, markup, parse(markup)


def elements(root):
    return [n for n in root.iter() if not n.tag.startswith("#")]


def text_of(root) -> str:
    return " ".join(root.all_text().split())


def layer_norm64(x, gamma, beta, eps):  # [d] -> ([d], mean, std), in float64, from the definition
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean()
    std = np.sqrt(((x - mean) ** 2).mean() + eps)
    return (x - mean) / std * np.asarray(gamma, np.float64) + np.asarray(beta, np.float64), mean, std


def decode_png_palette_alpha(uri: str) -> np.ndarray:
    """An independent reader for the 4-bit palette PNGs (colour type 3, tRNS alpha): [h, w] alpha 0..255."""
    data = b64decode(uri.split(",", 1)[1])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, trns = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (4, 3), "4-bit palette"
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = 1 + (width + 1) // 2
    out = np.zeros((height, width), np.uint8)
    for r in range(height):
        line = raw[r * stride : (r + 1) * stride]
        assert line[0] == 0, "filter type 0"
        nibbles = [n for byte in line[1:] for n in (byte >> 4, byte & 15)][:width]
        out[r] = [trns[k] for k in nibbles]
    return out


def masks(svg, decode=decode_png_alpha):
    return {img.attrs["data-sign"]: decode(img.attrs["href"]) for img in svg.find_all("image")}


# --------------------------------------------------------------------------- every panel, light


@pytest.mark.parametrize("layer", LAYERS)
def test_every_panel_renders_the_trained_model_within_the_budget(layer):
    """Each of these panels draws MiniLM's 384 dims, 12 heads and 1,536 units at 16 pieces as a few
    pictures: at most ~60 kB of well-formed markup and a few hundred elements, on an early and a middle layer."""
    s = minilm_state(layer)
    for panel in MY_PANELS:
        _, markup, root = rendered(panel, s)
        assert len(markup) <= MAX_BYTES, f"{panel}: {len(markup)} bytes of markup"
        assert len(elements(root)) <= MAX_ELEMENTS, f"{panel}: {len(elements(root))} elements"


def test_no_panel_claims_the_designed_models_features_or_sizes():
    s = minilm_state(2)
    for panel in MY_PANELS:
        _, _, root = rendered(panel, s)
        words = text_of(root)
        for claim in (
            "yes/no features",
            "from the lexicon",
            "64-dimensional",
            "all four",
            "All four",
            "sinusoidal",
            "<s>",
            "γ = 1 and β = 0",
        ):
            assert claim not in words, f"{panel} says {claim!r} about the trained model"


# --------------------------------------------------------------------------- embedding


def test_embedding_shows_word_position_and_type_rows_their_sum_and_the_layernorm():
    """s = word + position + token type, x = LayerNorm(s): both recomputed here from the run's parts; the
    panel's μ, σ, listed entries and pictures are those numbers."""
    s = minilm_state()
    c, _, root = rendered("embedding", s)
    emb, q = c.embedding, QUERY
    (view,) = root.find_all(data_view="embedding")
    assert view.attrs["data-learned"] == "true"
    summed = np.asarray(emb.token[q], np.float64) + emb.position[q] + emb.token_type[q]
    np.testing.assert_allclose(emb.summed[q], summed, atol=1e-6)
    x, mean, std = layer_norm64(summed, emb.ln_gamma, emb.ln_beta, 1e-12)
    np.testing.assert_allclose(emb.x[q], x, atol=2e-4)
    (ln,) = root.find_all("section", data_ln="embedding")
    assert float(ln.attrs["data-mu"]) == pytest.approx(mean, abs=1e-6)
    assert float(ln.attrs["data-sigma"]) == pytest.approx(std, rel=1e-5)
    assert f"σ = {num(std, 4)}" in text_of(ln)
    listed = [
        (int(li.attrs["data-dim"]), float(li.attrs["data-value"])) for li in by_class(ln, "emb-top")[0].find_all("li")
    ]
    assert [d for d, _ in listed] == [int(d) for d in np.argsort(-np.abs(x), kind="stable")[: len(listed)]]
    assert [v for _, v in listed] == pytest.approx([x[d] for d, _ in listed], abs=2e-4)
    d0 = listed[0][0]
    tip = ln.find_all("li", data_dim=str(d0))[0].attrs["data-tip"]
    assert num(summed[d0], 3) in tip and num(x[d0], 3) in tip and "(s − μ) / σ" in tip
    # the pictures: one pixel per dimension, colour strength √(|v| / max) on a scale shared by the summed rows
    strips = {svg.attrs["data-strip"]: svg for svg in root.find_all("svg", data_strip=True)}
    assert set(strips) == {"token", "position", "token-type", "sum", "gamma", "beta", "x"}
    rows = {"token": emb.token[q], "position": emb.position[q], "token-type": emb.token_type[q], "sum": summed}
    shared = max(np.abs(v).max() for v in rows.values())
    for key, values in rows.items():
        svg = strips[key]
        assert float(svg.attrs["data-vmax"]) == pytest.approx(shared, rel=1e-5)
        got = masks(svg)
        want = np.round(255 * np.sqrt(np.abs(values) / shared))
        assert np.abs(got["pos"][0] - np.where(values > 0, want, 0)).max() <= 1, key
        assert np.abs(got["neg"][0] - np.where(values < 0, want, 0)).max() <= 1, key
    assert len(elements(strips["x"])) <= 8, "a 384-number vector is one picture"


def test_embedding_rows_are_the_pinned_tables_rows():
    """The word-piece, position and token-type rows are rows of the model's own tables (the pinned fp32
    weights, looked up here by token id; the page's int8 copy is within its quantisation step)."""
    from minilm_files import fp32_tensors, token_ids

    t = fp32_tensors()
    ids = token_ids(SENTENCE)
    c = st.compute(minilm_state())
    emb = c.embedding
    for i, tok_id in enumerate(ids):
        np.testing.assert_allclose(emb.token[i], t["embeddings.word_embeddings.weight"][tok_id], atol=0.01)
        np.testing.assert_allclose(emb.position[i], t["embeddings.position_embeddings.weight"][i], atol=0.01)
        np.testing.assert_allclose(emb.token_type[i], t["embeddings.token_type_embeddings.weight"][0], atol=0.01)


def test_embedding_marks_the_special_tokens_and_explains_them():
    s = minilm_state()
    _, _, root = rendered("embedding", s)
    labels = by_class(root, "emb-row-label", "button")
    assert [b.has_class("is-special") for b in labels] == [True] + [False] * 14 + [True]
    assert not by_class(root, "emb-special"), "a word is not called special"
    for q in (0, 15):
        _, _, root = rendered("embedding", dataclasses.replace(s, query=q))
        (note,) = by_class(root, "emb-special")
        assert "special token, not a word" in text_of(note) and "sink" in text_of(note)
    words = text_of(root)
    assert "have no names" in words and "not sine waves" in words


def test_the_designed_embedding_is_unchanged_in_kind():
    """The designed model keeps its named features and sin/cos code (its own tests check the numbers)."""
    c, _, root = rendered("embedding", st.State())
    (view,) = root.find_all(data_view="embedding")
    assert "data-learned" not in view.attrs
    assert root.find_all("svg", data_strip="token") and "sin" in text_of(root)


# --------------------------------------------------------------------------- residual + LayerNorm


def test_layernorm_of_a_wide_model_draws_bars_as_images_and_lists_the_dims_that_stand_out():
    s = minilm_state()
    c, _, root = rendered("layernorm", s)
    tr, p, i = c.trace, c.params, QUERY
    r = np.asarray(tr.x[i], np.float64) + tr.attn_out[i]
    h, mean, std = layer_norm64(r, p.ln1_gamma, p.ln1_beta, tr.eps)
    np.testing.assert_allclose(tr.ln1[i], h, atol=5e-4)
    (block,) = root.find_all("section", data_block="ln1")
    assert float(block.attrs["data-mu"]) == pytest.approx(mean, abs=1e-5)
    assert float(block.attrs["data-sigma"]) == pytest.approx(std, rel=1e-5)
    far = [int(li.attrs["data-dim"]) for li in by_class(block, "ln-top")[0].find_all("li")]
    assert far == [int(d) for d in np.argsort(-np.abs(r - mean), kind="stable")[: layernorm.TOP_DIMS]]
    tip = block.find_all("li", data_dim=str(far[0]))[0].attrs["data-tip"]
    assert num(r[far[0]], 3) in tip and num(h[far[0]], 3) in tip
    # the sum's bars: one pixel column per dimension, bar height |r| / scale of the half-row, in whole pixels
    (row,) = block.find_all("div", data_row="ln1-sum")
    scale = float(row.attrs["data-scale"])
    assert scale >= np.abs(r).max() - 1e-9
    got = masks(row.find_all("svg")[0], decode_png_palette_alpha)
    half = layernorm.ROW_H / 2 - layernorm.PAD
    heights = np.round(np.minimum(np.abs(r) / scale, 1) * half)
    assert ((got["pos"] > 0).sum(axis=0) == np.where(r > 0, heights, 0)).all()
    assert ((got["neg"] > 0).sum(axis=0) == np.where(r < 0, heights, 0)).all()
    # no per-dimension hover columns; every number folded away as text instead
    assert not by_class(block, "dim-hits")
    (listing,) = block.find_all("details")
    lines = listing.find_all("p")
    assert [len(p.all_text().split(":", 1)[1].split(",")) for p in lines] == [384] * 4
    assert "layer 3's output" in text_of(block), "x in layer 4 is the output of layer 3, not the embedding"


# --------------------------------------------------------------------------- feed-forward network


def test_ffn_of_a_wide_model_marks_the_units_that_change_the_output_most():
    s = minilm_state()
    c, _, root = rendered("ffn", s)
    tr, i = c.trace, QUERY
    act = np.asarray(tr.ffn_act[i], np.float64)
    contribution = np.abs(act) * np.linalg.norm(np.asarray(c.params.w_2, np.float64), axis=1)
    top = [int(u) for u in np.argsort(-contribution, kind="stable")[: ffn.TOP_K]]
    dots = root.find_all("circle", data_unit=True)
    assert sorted(int(d.attrs["data-unit"]) for d in dots) == sorted(top)
    for d in dots:
        assert float(d.attrs["data-act"]) == pytest.approx(act[int(d.attrs["data-unit"])], abs=1e-9)
    items = by_class(root, "top-units")[0].find_all("li")
    assert [int(li.attrs["data-unit"]) for li in items] == top
    assert [float(li.attrs["data-contribution"]) for li in items] == pytest.approx(contribution[top], rel=1e-6)
    (cloud,) = by_class(root, "unit-cloud", "path")
    assert 0 < cloud.attrs["d"].count("M") <= tr.d_ff
    (firing,) = by_class(root, "ffn-firing")
    assert int(firing.attrs["data-positive"]) == int((act > 0).sum())
    assert int(firing.attrs["data-negative"]) == int((act < 0).sum())
    # every unit's activation as one pixel of the grid, 64 a row
    (grid,) = root.find_all("svg", data_units="1536")
    got = masks(grid)
    cells = act.reshape(-1, ffn.GRID_COLUMNS)
    want = np.round(255 * np.abs(cells) / np.abs(act).max())
    assert np.abs(got["pos"] - np.where(cells > 0, want, 0)).max() <= 1
    assert np.abs(got["neg"] - np.where(cells < 0, want, 0)).max() <= 1


def test_the_designed_ffn_keeps_a_dot_per_unit_it_uses():
    """Not the trained model's cloud: a dot per unit with a non-zero number, one for all the rest."""
    s = st.State()
    c, _, root = rendered("ffn", s)
    used = int(np.count_nonzero(c.trace.ffn_pre[s.query] != 0))
    assert len(root.find_all("circle", data_unit=True)) == used and not by_class(root, "unit-cloud")
    (stack,) = by_class(root, "unit-stack")
    assert int(stack.attrs["data-silent-units"]) == 1024 - used


# --------------------------------------------------------------------------- projections


def test_projections_draw_the_rows_that_add_most_to_the_querys_vector():
    s = minilm_state(head=5)
    c, _, root = rendered("projections", s)
    x = np.asarray(c.trace.x[QUERY], np.float64)
    d_k = c.model.d_k
    for letter, name, bias in (("q", "w_q", "b_q"), ("k", "w_k", "b_k"), ("v", "w_v", "b_v")):
        w = np.asarray(getattr(c.params, name), np.float64)[:, 5 * d_k : 6 * d_k]
        b = np.asarray(getattr(c.params, bias), np.float64)[5 * d_k : 6 * d_k]
        (svg,) = root.find_all("svg", data_matrix=f"w_{letter}")
        share = np.abs(x) * np.linalg.norm(w, axis=1)
        want = sorted(int(d) for d in np.argsort(-share, kind="stable")[: projections.PICKED])
        assert svg.attrs["data-picked"] == "query"
        assert [int(d) for d in re.findall(r"\d+", svg.attrs["data-rows"])] == want
        # each cell of the query's strip: x·W[:, c] + b[c], recomputed here
        (strip,) = root.find_all("svg", data_strip=letter)
        for cell in strip.find_all("rect", data_grid_cell=True):
            col = int(cell.attrs["x"])
            dot = float(x @ w[:, col])
            assert float(cell.attrs["data-value"]) == pytest.approx(dot + b[col], abs=2e-3)
            assert num(dot, 3) in cell.attrs["data-tip"] or abs(dot) < 1e-3
    words = text_of(root)
    assert "none has a name" in words and f"{projections.PICKED} rows" in words


# --------------------------------------------------------------------------- Q·K, why-line, sinks


def test_qk_breakdown_stops_at_the_head_dims_and_says_why():
    s = minilm_state()
    c, _, root = rendered("qk-dot", s)
    (view,) = root.find_all(data_view="qk-dot")
    terms = [float(t.attrs["data-value"]) for t in root.find_all(data_term=True)]
    assert sum(terms) == pytest.approx(float(view.attrs["data-score"]), abs=1e-6)
    i, j = int(view.attrs["data-i"]), int(view.attrs["data-j"])
    q, k = np.asarray(c.trace.q[s.head, i], np.float64), np.asarray(c.trace.k[s.head, j], np.float64)
    assert float(view.attrs["data-score"]) == pytest.approx(float(q @ k), rel=1e-4)
    assert not by_class(root, "qk-src"), "no 'comes from' column of unnamed dims"
    assert "none of them has a name" in text_of(root)


def _sink_state(at_least: float):
    """A layer-3 head whose query “it” puts at least (or, if negative, less than) |at_least| on [CLS] + [SEP]."""
    s = minilm_state()
    w = st.compute(s).trace.weights[:, QUERY]  # [heads, n]
    on = w[:, 0] + w[:, -1]
    heads = np.flatnonzero(on >= at_least) if at_least > 0 else np.flatnonzero(on < -at_least)
    assert len(heads), "premise: such a head exists in layer 4"
    return dataclasses.replace(s, head=int(heads[0]))


def test_the_routing_panel_says_what_attention_on_special_tokens_brings():
    """Weight on [CLS]/[SEP] against their share of what the head gathers, Σ A_ij·‖V_j‖ (recomputed)."""
    s = _sink_state(0.5)
    c, _, root = rendered("routing", s)
    w = np.asarray(c.trace.weights[s.head, QUERY], np.float64)
    brought = w * np.linalg.norm(np.asarray(c.trace.v[s.head], np.float64), axis=1)
    (note,) = by_class(root, "sink-note")
    assert float(note.attrs["data-sink-weight"]) == pytest.approx(w[0] + w[-1], abs=1e-9)
    assert float(note.attrs["data-sink-share"]) == pytest.approx((brought[0] + brought[-1]) / brought.sum(), abs=1e-6)
    assert "[CLS] and [SEP]" in text_of(note)
    assert [li.has_class("is-special") for li in by_class(root, "value-row", "li")] == [True] + [False] * 14 + [True]
    _, _, quiet = rendered("routing", _sink_state(-0.3))
    assert not by_class(quiet, "sink-note"), "no note when little attention rests on them"


def test_the_why_line_explains_a_special_strongest_key_with_its_value_length():
    s = minilm_state()
    c = st.compute(s)
    w = c.trace.weights[:, QUERY]
    h = next(h for h in range(12) if int(np.argmax(w[h])) in (0, 15))
    s = dataclasses.replace(s, head=h)
    _, _, root = rendered("query-why", s)
    j = int(np.argmax(w[h]))
    norms = np.linalg.norm(np.asarray(c.trace.v[h], np.float64), axis=1)
    words = text_of(root)
    assert "special token" in words and f"‖v‖ = {num(norms[j], 2)}" in words
    assert num(norms[1:-1].mean(), 2) in words


# --------------------------------------------------------------------------- the smaller panels


def test_stage_lines_and_formulas_follow_the_model():
    trained = st.compute(minilm_state())
    designed = st.compute(st.State())
    s0 = dataclasses.replace(minilm_state(), stage=0)
    line = text_of(parse(page.PANELS["stage-detail"].render(s0, trained)))
    assert "LayerNorm" in line and "no names" in line and "384" in line
    d_line = text_of(parse(page.PANELS["stage-detail"].render(dataclasses.replace(st.State(), stage=0), designed)))
    assert "sinusoidal" in d_line and "LayerNorm" not in d_line
    last = text_of(parse(page.PANELS["stage-detail"].render(dataclasses.replace(s0, stage=5), trained)))
    assert "1536" in last and "6 such layers" in last


def test_every_stage_formula_can_be_scrolled_from_the_keyboard():
    """A formula wider than a phone's screen scrolls sideways in its box (the trained model's embedding
    formula at 360 px did): the box is a named tab stop, so the keyboard reaches what is cut off."""
    for state in (minilm_state(), st.State()):
        computed = st.compute(state)
        for k in range(6):
            root = parse(page.PANELS["stage-detail"].render(dataclasses.replace(state, stage=k), computed))
            [box] = by_class(root, "stage-formula")
            assert box.attrs.get("tabindex") == "0" and box.attrs.get("aria-label") == f"Stage {k + 1} formula"
            assert box.attrs.get("role") == "group"


def test_heads_are_named_once():
    class Info:
        def __init__(self, name):
            self.name = name

    assert explain.head_title(0, Info("Coreference")) == "Head 1: Coreference"
    assert explain.head_title(2, Info("Head 3")) == "Head 3"
    assert explain.head_title(1, Info("Head 2: previous token, 0.93")) == "Head 2: previous token, 0.93"
    assert explain.head_ref(1, Info("previous token, 0.93")) == "head 2 (previous token, 0.93)"
    s = minilm_state(head=4)
    c, _, root = rendered("head-info", s)
    assert text_of(root.find_all("h3")[0]) == explain.head_title(4, c.heads[4])


def test_twelve_heads_wrap_and_the_demo_names_the_models_dk():
    s = minilm_state()
    _, _, root = rendered("multihead", s)
    (view,) = by_class(root, "multihead")
    assert view.has_class("mh-many") and len(by_class(root, "mh-seg")) == 12
    _, _, demo = rendered("why-scale", s)
    assert demo.find_all(data_num="model-dk")[0].all_text() == "32"
    assert "√32 ≈ 5.66" in text_of(demo)


def test_the_lookup_marks_special_keys_and_draws_dense_values_as_paths():
    s = _sink_state(0.5)
    c, _, root = rendered("why-qkv", s)
    rows = [r for r in root.find_all("tr") if r.has_class("qkv-row")]
    assert [r.has_class("is-special") for r in rows] == [True] + [False] * 14 + [True]
    for j, r in enumerate(rows):
        (strip,) = r.find_all("svg")
        values = [float(v) for v in strip.attrs["data-values"].split()]
        assert values == pytest.approx(np.asarray(c.trace.v[s.head, j], np.float64), abs=1e-9)
    assert by_class(root, "sink-note")


def test_a_trained_preset_names_its_query():
    s = st.apply_event(
        st.apply_event(st.State(), {"type": "set_model", "value": "minilm"}), {"type": "preset", "value": "trophy"}
    )
    _, _, root = rendered("preset-info", s)
    assert "query 'it'" in text_of(root)


def test_every_grid_of_the_trained_panels_has_one_tab_stop():
    """Lists and strips that replace per-dimension hover columns are roving grids: one Tab stop, arrows inside."""
    s = minilm_state()
    for panel in MY_PANELS:
        _, _, root = rendered(panel, s)
        for grid in [n for n in root.iter() if "data-grid" in n.attrs]:
            cells = [n for n in grid.iter() if "data-grid-cell" in n.attrs]
            assert [n.attrs.get("tabindex") for n in cells].count("0") == 1, (
                f"{panel}: {grid.tag}.{grid.attrs.get('class')}"
            )
