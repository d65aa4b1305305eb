"""Tests for the embedding panel, the Q/K/V lookup panel, the √d_k demo and its maths (demos.py).

The demo's numbers are checked against probability, not against themselves: q·k is a sum of
d_k independent products of unit-variance variables, so Var(q·k) = d_k, and the sample
variance of N draws has standard deviation sqrt((2 d_k² + 6 d_k) / N) (from E[(q·k)⁴] =
3 d_k² + 6 d_k for standard normal entries). The views are checked against the trace and the
embedding: every number they print must be the one the model computed.
"""

from __future__ import annotations

import dataclasses
import math
import re
import struct
import zlib
from base64 import b64decode

import numpy as np
import pytest

from attention_explorer import demos, state as st
from attention_explorer.models import designed as model
from attention_explorer.views import embedding, why
from markup_tree import by_class, parse

HOSTILE = '<img src=x onerror=alert(1)> "quotes" & 😀 שלום'
LONG = (
    "When the old farmer came home after a long day in the fields, his tired dogs ran to the gate because they had "
    "missed him all afternoon."
)


# --------------------------------------------------------------------------
# helpers: a tiny DOM from the markup (attribute values come back unescaped)
# --------------------------------------------------------------------------


def computed(**kw):
    s = st.State(**kw)
    return s, st.compute(s)


def assert_escaped(markup):
    """Reader text never becomes markup: no element or attribute from the hostile sentence; '<' and '"' are escaped."""
    root = parse(markup)
    assert not root.find_all("img"), "a reader's <img> became an element"
    assert not any("onerror" in n.attrs for n in root.iter()), "a reader's onerror became an attribute"
    assert "<img" not in markup
    assert "&lt;" in markup and "&quot;" in markup and "&amp;" in markup


def decode_png_alpha(uri: str) -> np.ndarray:
    """An independent PNG reader for 8-bit grey+alpha, filter type 0 (what the view writes)."""
    assert uri.startswith("data:image/png;base64,")
    data = b64decode(uri.split(",", 1)[1])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, f"bad CRC in {kind!r}"
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (8, 4), "expected 8-bit grey + alpha"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = 1 + 2 * width
    rows = [raw[r * stride : (r + 1) * stride] for r in range(height)]
    assert all(row[0] == 0 for row in rows), "filter type 0 on every row"
    px = np.array([list(row[1:]) for row in rows], dtype=np.uint8).reshape(height, width, 2)
    assert (px[..., 0] == 255).all(), "mask pixels are white; only alpha carries the value"
    return px[..., 1]


# ==========================================================================
# demos.py: the maths of the √d_k demonstration
# ==========================================================================


def sample_var_sd(d_k, n):
    """Standard deviation of the sample variance of n draws of q·k (normal entries)."""
    return math.sqrt((2 * d_k**2 + 6 * d_k) / n)


@pytest.mark.parametrize("d_k", [1, 2, 4, 16, 64, 256, 512])
def test_variance_of_random_dot_products_is_dk(d_k):
    """Var(q·k) for unit-variance entries is d_k: the empirical value is within 4 standard errors."""
    dots = demos.dot_products(d_k)
    assert dots.shape == (demos.N_PAIRS,)
    assert abs(np.var(dots) - d_k) < 4 * sample_var_sd(d_k, len(dots))
    assert abs(np.mean(dots)) < 4 * math.sqrt(d_k / len(dots)), "q·k has mean 0"


@pytest.mark.parametrize("d_k", [1, 3, 8, 64, 200, 512])
def test_scaled_dot_products_have_unit_variance(d_k):
    """Dividing by √d_k brings the variance back to ≈ 1 for every d_k."""
    demo = demos.scale_demo(d_k)
    np.testing.assert_allclose(demo.scaled_dots, demos.dot_products(d_k) / math.sqrt(d_k))
    assert abs(np.var(demo.scaled_dots) - 1) < 4 * sample_var_sd(d_k, demos.N_PAIRS) / d_k
    assert demo.var_scaled == pytest.approx(np.var(demo.scaled_dots))
    assert demo.var_dots == pytest.approx(np.var(demo.dots))
    assert demo.std_dots == pytest.approx(np.std(demo.dots))
    assert demo.std_scaled == pytest.approx(np.std(demo.scaled_dots))


def test_variance_grows_with_dk_and_scaled_stays_flat():
    """Over the whole slider range the variance curve follows d_k and the scaled one stays near 1."""
    var, var_scaled = demos.variance_by_dk()
    assert var.shape == var_scaled.shape == (demos.MAX_DK,)
    dks = np.arange(1, demos.MAX_DK + 1)
    tol = 5 * np.sqrt((2 * dks**2 + 6 * dks) / demos.N_PAIRS)
    assert np.all(np.abs(var - dks) < tol)
    assert np.all(np.abs(var_scaled - 1) < tol / dks)
    assert var[511] > 100 * var[1], "at 512 dims the spread is hundreds of times that at 2"
    for d_k in (1, 7, 64, 512):  # the curve is the same statistic as the per-d_k samples
        assert var[d_k - 1] == pytest.approx(np.var(demos.dot_products(d_k)))


def test_softmax_example_is_a_softmax_of_the_scores():
    """Both weight rows are exp(s) / Σ exp(s), of the raw and of the scaled scores, and sum to 1."""
    for d_k in (1, 16, 512):
        scores, w_raw, w_scaled = demos.softmax_example(d_k)
        assert scores.shape == w_raw.shape == w_scaled.shape == (demos.N_KEYS,)
        for w, s in ((w_raw, scores), (w_scaled, scores / math.sqrt(d_k))):
            e = np.exp(s - s.max())
            np.testing.assert_allclose(w, e / e.sum(), rtol=1e-12)
            assert w.sum() == pytest.approx(1.0)


def test_unscaled_softmax_saturates_as_dk_grows_on_average():
    """Unscaled, the top weight grows with d_k (towards a hard argmax); scaled, it does not."""
    seeds = range(40)

    def mean_max(d_k, scaled):
        return np.mean([demos.softmax_example(d_k, seed=s)[2 if scaled else 1].max() for s in seeds])

    raw = [mean_max(d, False) for d in (2, 16, 128, 512)]
    assert raw == sorted(raw) and raw[-1] > 0.85, f"mean max weight unscaled: {raw}"
    scaled = [mean_max(d, True) for d in (2, 16, 128, 512)]
    assert max(scaled) - min(scaled) < 0.1, f"scaled softmax keeps its shape: {scaled}"
    assert scaled[-1] < 0.6 < raw[-1]


def test_entropy_bits_from_definition():
    """0 bits for one-hot, log2(n) bits for uniform, and 1 bit for a fair coin."""
    assert demos.entropy_bits([0, 1, 0, 0]) == 0
    assert demos.entropy_bits(np.full(8, 1 / 8)) == pytest.approx(3.0)
    assert demos.entropy_bits([0.5, 0.5]) == pytest.approx(1.0)
    demo = demos.scale_demo(512)
    assert demo.entropy_uniform == pytest.approx(math.log2(demos.N_KEYS))
    assert demo.entropy_unscaled < demo.entropy_scaled <= demo.entropy_uniform


def test_histogram_counts_every_sample_once():
    """Bins plus the two overflow counts hold all N samples; the bins are equal and symmetric."""
    for d_k in (1, 64, 512):
        demo = demos.scale_demo(d_k)
        for (counts, below, above), values in ((demo.hist_dots, demo.dots), (demo.hist_scaled, demo.scaled_dots)):
            assert counts.sum() + below + above == demos.N_PAIRS
            assert below == int((values < -demos.HIST_LIMIT).sum())
            assert above == int((values > demos.HIST_LIMIT).sum())
        assert np.allclose(np.diff(demo.hist_edges), demos.HIST_BIN)
        assert demo.hist_edges[0] == -demos.HIST_LIMIT and demo.hist_edges[-1] == demos.HIST_LIMIT
    assert sum(demos.scale_demo(512).hist_dots[1:]) > 0, "at d_k = 512 some raw scores leave the ±48 axis"


def test_demo_is_deterministic_and_seeded():
    """Same d_k and seed: the same numbers, even after the caches are cleared; another seed differs."""
    a = demos.scale_demo(64)
    first = (a.dots.copy(), a.scores.copy(), a.var_dots)
    for f in (demos.scale_demo, demos._pair_dot_prefixes, demos._key_score_prefixes):
        f.cache_clear()
    b = demos.scale_demo(64)
    np.testing.assert_array_equal(first[0], b.dots)
    np.testing.assert_array_equal(first[1], b.scores)
    assert first[2] == b.var_dots
    other = demos.scale_demo(64, seed=demos.SEED + 1)
    assert not np.array_equal(other.dots, b.dots)


def test_demo_arrays_are_read_only_and_dk_is_validated():
    """Cached results cannot be changed by a caller; d_k outside 1..512 or not an integer is refused."""
    demo = demos.scale_demo(10)
    with pytest.raises(ValueError):
        demo.dots[0] = 1.0
    with pytest.raises(ValueError):
        demo.hist_dots[0][0] = 1
    for bad in (0, 513, 2.5, True, "8"):
        with pytest.raises(ValueError, match="d_k"):
            demos.scale_demo(bad)


# ==========================================================================
# embedding.py
# ==========================================================================


def cells(strip):
    return [n for n in strip.iter() if n.has_class("strip-cell")]


def test_embedding_token_strip_is_the_token_embedding():
    """The feature strip shows e(token_i) dims 0..41, each cell named by its feature, value equal to the model's."""
    for q in (0, 1, 5):
        s, c = computed(query=q)
        root = parse(embedding.render(s, c))
        (strip,) = root.find_all("svg", data_strip="token")
        cs = cells(strip)
        assert len(cs) == len(model.FEATURE_NAMES)
        for d, cell in enumerate(cs):
            assert float(cell.attrs["data-value"]) == pytest.approx(c.embedding.token[q, d], abs=1e-9)
            assert model.FEATURE_NAMES[d] in cell.attrs["data-tip"]
        tags = [n.all_text() for n in by_class(root, "emb-tag")]  # every feature that is on, by its name
        assert tags == [f for f, v in model.token_features(c.tokens[q], q, list(c.tokens)).items() if v]


def test_embedding_x_strip_equals_trace_input():
    """The sum strip covers all d_model dims once, and every value equals trace.x[i] (= e + PE)."""
    s, c = computed(text=LONG, query=13)
    root = parse(embedding.render(s, c))
    (strip,) = root.find_all("svg", data_strip="x")
    x = c.trace.x[s.query]
    covered = []
    for cell in cells(strip):
        a, w = int(cell.attrs["x"]), int(cell.attrs["width"])
        covered += range(a, a + w)
        if w == 1:
            assert float(cell.attrs["data-value"]) == pytest.approx(x[a], abs=1e-9)
            expect = c.embedding.token[s.query, a] + c.embedding.position[s.query, a]
            assert x[a] == pytest.approx(expect)
        else:  # a merged run is only allowed where all three vectors are zero
            assert not np.any(x[a : a + w]) and not np.any(c.embedding.position[s.query, a : a + w])
            assert cell.attrs["data-dims"] == f"{a}-{a + w - 1}"
    assert covered == list(range(c.trace.x.shape[1]))


def test_embedding_heatmap_pixels_are_the_positional_encoding():
    """The two PNG masks hold |PE| (positive and negative cells) for all n positions × positional dims."""
    s, c = computed(text=LONG, query=3)
    root = parse(embedding.render(s, c))
    (svg,) = by_class(root, "emb-heatmap", "svg")
    start = int(svg.attrs["data-dim-start"])
    pe = c.embedding.position[:, start:]  # [n, 128]
    assert (int(svg.attrs["data-rows"]), int(svg.attrs["data-cols"])) == pe.shape
    masks = {img.attrs["data-sign"]: decode_png_alpha(img.attrs["href"]) for img in svg.find_all("image")}
    assert masks["pos"].shape == masks["neg"].shape == pe.shape
    vmax = 1.0  # sin and cos, and 0/1 features: the panel's scale is [−1, 1]
    expect = np.round(255 * np.abs(pe) / vmax)
    np.testing.assert_array_equal(masks["pos"], np.where(pe > 0, expect, 0))
    np.testing.assert_array_equal(masks["neg"], np.where(pe < 0, expect, 0))
    (outline,) = by_class(svg, "emb-query-row")
    assert outline.attrs["data-query-row"] == "3" and outline.attrs["y"] == "3"


def test_embedding_rows_pick_the_query_and_mark_it():
    """One clickable row label per token sends set_query with its index; the query's is pressed."""
    s, c = computed(query=2)
    root = parse(embedding.render(s, c))
    labels = by_class(root, "emb-row-label", "button")
    assert len(labels) == len(c.tokens)
    for i, b in enumerate(labels):
        assert b.attrs["data-event"] == "set_query" and b.attrs["data-token-index"] == str(i)
        assert b.attrs["aria-pressed"] == ("true" if i == 2 else "false")
    assert [b.has_class("is-query") for b in labels].count(True) == 1


def test_embedding_has_formulas_legend_and_accessible_parts():
    """MathML (not LaTeX) for x_i = e + PE and the sin/cos rules; every SVG is an image with a label."""
    s, c = computed()
    markup = embedding.render(s, c)
    root = parse(markup)
    assert len(root.find_all("math")) >= 3 and "\\frac" not in markup and "$" not in markup
    assert "sin" in markup and "cos" in markup and "10000" in markup
    for svg in root.find_all("svg"):
        assert svg.attrs.get("role") == "img" and svg.attrs.get("aria-label")
    for grid in [n for n in root.iter() if "data-grid" in n.attrs]:  # one Tab stop per strip
        assert [n.attrs.get("tabindex") for n in grid.iter() if "data-grid-cell" in n.attrs].count("0") == 1
    # the numbers as a table, on request (an inert template until the reader opens the <details>)
    (folded,) = root.find_all("details", data_keep="embedding-table")
    rows = folded.find_all("template", data_on_open=True)[0].find_all("tr")[1:]  # after the header row
    emb, q = c.embedding, s.query
    assert [int(r.find_all("td")[0].all_text()) for r in rows] == [
        d for d in range(len(emb.x[q])) if emb.x[q][d] or emb.token[q][d] or emb.position[q][d]
    ]
    ids = [n.attrs["id"] for n in root.iter() if "id" in n.attrs]
    assert len(ids) == len(set(ids)) and all(i.startswith("emb-") for i in ids)


def test_embedding_escapes_hostile_tokens():
    """The hostile sentence shows as text everywhere (labels, tooltips, table), never as markup."""
    for q in (0, 2, 16):
        s, c = computed(text=HOSTILE, query=q)
        markup = embedding.render(s, c)
        assert_escaped(markup)
        root = parse(markup)
        shown = [n.all_text() for n in by_class(root, "emb-row-token")]
        assert shown == list(c.tokens)


# ==========================================================================
# why.py: Q/K/V lookup
# ==========================================================================


def lookup_rows(root):
    return [n for n in root.find_all("tr") if n.has_class("qkv-row")]


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(head=1, query=2),
        dict(head=2, temperature=2.5),
        dict(head=3, query=1, dk_scale=3.0),
        dict(text=LONG, query=20),
    ],
)
def test_lookup_numbers_are_the_traces(kw):
    """Each key's score, scaled score and weight are trace.scores/scaled_scores/weights[h, i, j]."""
    s, c = computed(**kw)
    root = parse(why.render_qkv_lookup(s, c, model.HEADS))
    tr, h, i = c.trace, s.head, s.query
    rows = lookup_rows(root)
    assert len(rows) == len(c.tokens)
    for j, row in enumerate(rows):
        assert row.attrs["data-j"] == str(j)
        assert float(row.attrs["data-score"]) == pytest.approx(tr.scores[h, i, j], abs=1e-9)
        assert float(row.attrs["data-scaled"]) == pytest.approx(tr.scaled_scores[h, i, j], abs=1e-9)
        assert float(row.attrs["data-weight"]) == pytest.approx(tr.weights[h, i, j], abs=1e-9)
        pct_text = by_class(row, "qkv-pct")[0].all_text()
        assert pct_text == f"{100 * tr.weights[h, i, j]:.1f} %"
    weights = np.array([float(r.attrs["data-weight"]) for r in rows])
    assert weights.sum() == pytest.approx(1.0)
    # a scaled score is the raw one over √d_k·T, as the note says
    for j in range(len(rows)):
        assert tr.scaled_scores[h, i, j] == pytest.approx(tr.scores[h, i, j] / (tr.scale * tr.temperature))
    assert model.HEADS[h].name in root.all_text()


def test_lookup_hard_pick_is_the_argmax_and_soft_result_is_the_head_output():
    """Exactly one row is the hard lookup's answer (the highest weight); the soft row draws o_i = head_outputs[h, i]."""
    s, c = computed(head=1, query=2)
    root = parse(why.render_qkv_lookup(s, c, model.HEADS))
    rows = lookup_rows(root)
    hard = [int(r.attrs["data-j"]) for r in rows if r.attrs["data-hard"] == "1"]
    assert hard == [int(np.argmax(c.trace.weights[s.head, s.query]))]
    strips = {svg.attrs.get("data-result"): svg for svg in root.find_all("svg") if svg.attrs.get("data-result")}
    for name, vec in (("soft", c.trace.head_outputs[s.head, s.query]), ("hard", c.trace.v[s.head, hard[0]])):
        drawn = {int(n.attrs["x"]): float(n.attrs["data-value"]) for n in cells(strips[name])}
        assert drawn == pytest.approx({d: float(v) for d, v in enumerate(vec) if v != 0}, abs=1e-9)


def test_lookup_value_strips_are_the_values():
    """Row j's value strip draws v[h, j]: every non-zero entry at its own column (zeros are left blank)."""
    s, c = computed(head=0, query=5)
    root = parse(why.render_qkv_lookup(s, c, model.HEADS))
    for j, row in enumerate(lookup_rows(root)):
        (svg,) = row.find_all("svg")
        drawn = {int(n.attrs["x"]): float(n.attrs["data-value"]) for n in cells(svg)}
        expect = {d: float(v) for d, v in enumerate(c.trace.v[s.head, j]) if v != 0}
        assert drawn == pytest.approx(expect, abs=1e-9)
        assert svg.attrs["viewbox"] == f"0 0 {c.trace.d_head} 1"  # (the parser lower-cases names)


def test_lookup_with_causal_mask_hides_future_keys():
    """With the causal mask, keys after the query are shown as hidden, with weight 0, and are never the hard pick."""
    s, c = computed(causal=True, query=3)
    rows = lookup_rows(parse(why.render_qkv_lookup(s, c, model.HEADS)))
    masked = [int(r.attrs["data-j"]) for r in rows if r.attrs.get("data-masked") == "true"]
    assert masked == list(range(4, len(c.tokens)))
    assert all(not c.trace.mask[3, j] for j in masked)
    assert all(
        float(r.attrs["data-weight"]) == c.trace.weights[s.head, 3, int(r.attrs["data-j"])] == 0
        for r in rows
        if r.attrs.get("data-masked")
    )
    assert all(r.attrs.get("data-hard") != "1" for r in rows if r.attrs.get("data-masked"))


def test_lookup_escapes_hostile_tokens():
    """Hostile tokens appear only as escaped text in the table, tooltips and summary."""
    s, c = computed(text=HOSTILE, query=2, head=0)
    markup = why.render_qkv_lookup(s, c, model.HEADS)
    assert_escaped(markup)
    root = parse(markup)
    assert [n.all_text() for n in by_class(root, "qkv-token")] == list(c.tokens)
    tips = [n.attrs["data-tip"] for n in root.iter() if "data-tip" in n.attrs]
    assert any("“<”" in t for t in tips), "the tooltip names the '<' token as text"


# ==========================================================================
# why.py: the √d_k demo and its control
# ==========================================================================


@pytest.mark.parametrize("d_k", [1, 8, 64, 512])
def test_scale_demo_prints_the_demo_numbers(d_k):
    """The panel's variances, bars and counts are the demo's: checked by recomputing them from the samples."""
    s = st.State(demo_dk=d_k)
    root = parse(why.render_scale_demo(s, None))
    (panel,) = root.find_all("div", data_view="scale-demo")
    assert panel.attrs["data-dk"] == str(d_k)
    dots = demos.dot_products(d_k)
    markers = {n.attrs["data-series"]: float(n.attrs["data-variance"]) for n in by_class(root, "marker")}
    assert markers["raw"] == pytest.approx(np.var(dots))
    assert markers["scaled"] == pytest.approx(np.var(dots / math.sqrt(d_k)))
    assert abs(markers["raw"] - d_k) < 4 * sample_var_sd(d_k, len(dots))  # the printed value is near theory
    text = {n.attrs["data-num"]: n.all_text() for n in root.iter() if "data-num" in n.attrs}
    assert text["dk"] == str(d_k)
    assert float(text["var-dots"].replace("−", "-")) == pytest.approx(np.var(dots), abs=0.051)
    assert float(text["var-scaled"].replace("−", "-")) == pytest.approx(np.var(dots / math.sqrt(d_k)), abs=0.0051)
    # histogram bars count every sample exactly once per row
    for series in ("raw", "scaled"):
        (group,) = [g for g in root.find_all("g") if g.attrs.get("data-series") == series]
        total = sum(int(b.attrs["data-count"]) for b in group.iter() if "data-count" in b.attrs)
        assert total == len(dots)


def test_scale_demo_softmax_bars_are_softmaxes_of_their_scores():
    """Each bar row is exp(score)/Σexp(score) of the scores it prints, and scaled = raw / √d_k."""
    d_k = 256
    root = parse(why.render_scale_demo(st.State(demo_dk=d_k), None))
    (chart,) = root.find_all("svg", data_chart="softmax")
    bars = [n for n in chart.iter() if n.has_class("bar")]
    rows = {r: [b for b in bars if b.attrs["data-i"] == str(r)] for r in (0, 1)}
    assert len(rows[0]) == len(rows[1]) == demos.N_KEYS
    scores = {r: np.array([float(b.attrs["data-score"]) for b in rows[r]]) for r in rows}
    np.testing.assert_allclose(scores[1], scores[0] / math.sqrt(d_k), rtol=1e-9)
    for r in rows:
        w = np.array([float(b.attrs["data-weight"]) for b in rows[r]])
        e = np.exp(scores[r] - scores[r].max())
        np.testing.assert_allclose(w, e / e.sum(), atol=1e-9)
    w_raw = [float(b.attrs["data-weight"]) for b in rows[0]]
    w_scaled = [float(b.attrs["data-weight"]) for b in rows[1]]
    assert max(w_raw) > 0.9 > 0.5 > max(w_scaled), "at d_k = 256 unscaled saturates, scaled spreads"
    # keyboard: the 16 bars are one roving grid with a single Tab stop
    assert "data-grid" in chart.attrs
    assert [b.attrs["tabindex"] for b in bars].count("0") == 1


def test_scale_demo_structure_and_accessibility():
    """Three charts with role=img and labels, MathML formulas, text tables for screen readers."""
    root = parse(why.render_scale_demo(st.State(demo_dk=32), None))
    charts = {svg.attrs["data-chart"]: svg for svg in root.find_all("svg")}
    assert set(charts) == {"variance", "histogram", "softmax"}
    assert all(svg.attrs["role"] == "img" and svg.attrs["aria-label"] for svg in charts.values())
    assert len(root.find_all("math")) >= 3
    (sr,) = by_class(root, "sr-only")
    assert len(sr.find_all("table")) == 2
    for n in root.iter():  # every tooltip-bearing chart element is reachable by hover; markers by keyboard too
        if n.has_class("marker"):
            assert n.attrs["tabindex"] == "0" and n.attrs["data-tip"]


def test_scale_demo_follows_the_state_event():
    """set_demo_dk moves the demo (clamped to 1..512); the markup changes with it."""
    s = st.State()
    s2 = st.apply_event(s, {"type": "set_demo_dk", "value": "300"})
    assert 'data-dk="300"' in why.render_scale_demo(s2, None)
    s3 = st.apply_event(s, {"type": "set_demo_dk", "value": "5000"})
    assert 'data-dk="512"' in why.render_scale_demo(s3, None)


def test_scale_demo_controls_markup():
    """The static slider: id demo-dk, data-event set_demo_dk, range 1..512, labelled, with an <output>."""
    s = dataclasses.replace(st.State(), demo_dk=77)
    root = parse(why.render_scale_demo_controls(s, model.CONFIG.d_head))
    (inp,) = root.find_all("input")
    assert inp.attrs["id"] == "demo-dk" and inp.attrs["type"] == "range"
    assert inp.attrs["data-event"] == "set_demo_dk"
    assert (inp.attrs["min"], inp.attrs["max"], inp.attrs["value"]) == ("1", "512", "77")
    (label,) = root.find_all("label")
    assert label.attrs["for"] == "demo-dk"
    (out,) = root.find_all("output")
    assert out.attrs["id"] == "demo-dk-out" and out.all_text() == "77"
    from attention_explorer import page

    assert {k: page.control_values(s)[k] for k in ("demo-dk", "demo-dk-out")} == {"demo-dk": "77", "demo-dk-out": "77"}


def test_views_compose_without_id_clashes():
    """All three panels and the control in one page: ids are unique (SVG masks are prefixed)."""
    s, c = computed(text=LONG, query=4)
    markup = (
        embedding.render(s, c)
        + why.render_qkv_lookup(s, c, model.HEADS)
        + why.render_scale_demo(s, c)
        + why.render_scale_demo_controls(s, model.CONFIG.d_head)
    )
    ids = re.findall(r'\sid="([^"]+)"', markup)
    assert len(ids) == len(set(ids))
    parse(markup)  # well nested
