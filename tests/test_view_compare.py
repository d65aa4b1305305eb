"""Designed vs trained, side by side (views/compare.py).

The product promises one honest sentence per comparison ("For 'it', layer 1,
head 2 of the trained model agrees best with the designed Coreference head:
0.75 of its attention falls where the designed head's does", or "No trained
head does ... job"), two word-level heatmaps whose cells are the numbers
compared, accessible markup, and no reader text turned into markup. The
comparisons here are built from hand-made attention whose agreement is known
by construction.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from attention_explorer import head_patterns as hp
from attention_explorer.views import compare
from markup_tree import parse

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = '<img src=x onerror=alert(1)> "q" & 😀'

D_TOKS = ("<s>", "The", "cat", "saw", "the", "dog", "because", "it", "was", "hungry", ".")
T_TOKS = ("[CLS]", "the", "cat", "saw", "the", "dog", "because", "it", "was", "hungry", ".", "[SEP]")
IT_D, IT_T = D_TOKS.index("it"), T_TOKS.index("it")


def designed_coref():
    """Every word rests on <s> except 'it', which looks at 'cat' (token 2)."""
    a = np.zeros((len(D_TOKS), len(D_TOKS)))
    a[:, 0] = 1.0
    a[IT_D] = 0.0
    a[IT_D, 2] = 1.0
    return a


def trained_heads(it_row):
    """Two layers x two heads; only layer 0, head 1 has the given row for 'it' (others all on [SEP])."""
    n = len(T_TOKS)
    sep = np.zeros((n, n))
    sep[:, n - 1] = 1.0
    doer = sep.copy()
    doer[IT_T] = 0.0
    for j, w in it_row.items():
        doer[IT_T, j] = w
    return [np.stack([sep, doer]), np.stack([sep, sep])]


def comparison(it_row, query_token=IT_D, d_toks=D_TOKS, t_toks=T_TOKS, d=None):
    return hp.compare(
        d_toks,
        (0,),
        designed_coref() if d is None else d,
        t_toks,
        (0, len(t_toks) - 1),
        trained_heads(it_row),
        query_token,
    )


def verdict(markup):
    root = parse(markup)
    (p,) = [n for n in root.iter() if n.has_class("compare-verdict")]
    return root, p.all_text()


def test_a_match_names_the_trained_head_and_its_agreement():
    # 'it' puts 0.75 on 'cat' and 0.25 on 'dog': 0.75 of it falls where the designed head's does (all on 'cat')
    c = comparison({2: 0.75, 5: 0.25})
    root, text = verdict(compare.render(c, "Coreference"))
    assert text.startswith(
        "For “it”, layer 1, head 2 of the trained model agrees best with the designed "
        "Coreference head: 0.75 of its attention falls where the designed head's does."
    )
    (div,) = root.find_all("div", data_view="compare")
    assert (div.attrs["data-verdict"], div.attrs["data-layer"], div.attrs["data-head"]) == ("match", "0", "1")
    assert float(div.attrs["data-agreement"]) == pytest.approx(0.75)


def test_a_trained_row_partly_on_special_tokens_says_so():
    c = comparison({2: 0.6, T_TOKS.index("[SEP]"): 0.4})
    _, text = verdict(compare.render(c, "Coreference"))
    assert "1.00 of its attention" in text and "40 % of the row on [CLS], [SEP]" in text


def test_below_the_threshold_no_trained_head_does_the_job():
    c = comparison({2: 0.3, 5: 0.7})
    assert c.best.query_agreement < hp.NO_MATCH_BELOW
    root, text = verdict(compare.render(c, "Coreference"))
    assert text.startswith(
        "No trained head does the designed Coreference head's job for “it”: the closest, "
        "layer 1, head 2, puts only 0.30 of its attention where the designed head does."
    )
    assert root.find_all("div", data_verdict="no-match")


def test_a_query_the_designed_head_rests_on_has_nothing_to_compare():
    c = comparison({2: 1.0}, query_token=D_TOKS.index("cat"))
    root, text = verdict(compare.render(c, "Coreference"))
    assert text.startswith(
        "For “cat”, the designed Coreference head rests 100 % of its attention on the start "
        "token <s>, a no-op: there is nothing to compare."
    )
    assert "layer 1, head 2 of the trained model agrees best: 1.00 on average" in text
    assert root.find_all("div", data_verdict="no-query")


def test_a_special_query_and_a_word_split_differently_are_explained():
    _, text = verdict(compare.render(comparison({2: 1.0}, query_token=0), "Coreference"))
    assert text.startswith("The query is a special token, not a word")
    d_toks = ("<s>", "It", "did", "n't", "fit", ".")
    t_toks = ("[CLS]", "it", "didn", "'", "t", "fit", ".", "[SEP]")
    d = np.full((6, 6), 1 / 6)
    c = hp.compare(d_toks, (0,), d, t_toks, (0, 7), [np.full((1, 8, 8), 1 / 8)], query_token=3)
    root, text = verdict(compare.render(c, "Coreference"))
    assert text.startswith("The two models split “n't” differently, so it is left out of the comparison.")
    (how,) = [n for n in root.iter() if n.has_class("compare-how")]
    assert "“did”, “n't”" in how.all_text()


def test_nothing_aligned_draws_no_heatmap():
    c = hp.compare(
        ("<s>", "Hi"), (0,), np.eye(2), ("[CLS]", "hello", "[SEP]"), (0, 2), [np.full((1, 3, 3), 1 / 3)], query_token=1
    )
    root, text = verdict(compare.render(c, "Coreference"))
    assert "too differently to compare" in text and not root.find_all("svg")


def test_heatmaps_draw_the_numbers_compared():
    c = comparison({2: 0.75, 5: 0.25})
    root = parse(compare.render(c, "Coreference", trained_labels=[["[CLS], 0.90", "broad, 0.40"]] * 2))
    (d_svg,) = root.find_all("svg", data_view="compare-designed")
    (t_svg,) = root.find_all("svg", data_view="compare-trained")
    k = len(c.words)
    for svg, matrix in ((d_svg, c.designed), (t_svg, c.trained)):
        assert svg.attrs["role"] == "img" and len(svg.attrs["aria-label"]) > 40
        cells = [n for n in svg.iter() if n.tag == "rect" and n.has_class("cell")]
        for cell in cells:
            i, j = int(cell.attrs["data-i"]), int(cell.attrs["data-j"])
            assert float(cell.attrs["data-weight"]) == pytest.approx(matrix[i, j], abs=1e-9)
        assert len([n for n in svg.iter() if n.has_class("query-outline")]) == 1
        labels = [n.all_text() for n in svg.iter() if n.has_class("row-label")]
        assert labels == list(c.words)
    # the designed head rests for every word but 'it': those rows are one hatched bar each, not cells
    d_cells = [n for n in d_svg.iter() if n.tag == "rect" and n.has_class("cell")]
    resting = [n for n in d_svg.iter() if n.has_class("compare-resting")]
    assert len(d_cells) == k and len(resting) == k - 1
    assert "rests 100 %" in resting[0].attrs["data-tip"]
    assert len([n for n in t_svg.iter() if n.tag == "rect" and n.has_class("cell")]) == k * k
    assert "“it” looks most at “cat”" in d_svg.attrs["aria-label"]
    assert "layer 1, head 2 (measured: broad, 0.40)" in t_svg.attrs["aria-label"]
    caption = " ".join(n.all_text() for n in root.iter() if n.tag == "figcaption")
    assert "broad, 0.40" in caption and "Agreement 0.75 for “it”" in caption
    # keyboard: one tab stop per map, on the query row's strongest key; the arrow keys move within the grid
    for svg in (d_svg, t_svg):
        (stop,) = [n for n in svg.iter() if n.attrs.get("tabindex") == "0"]
        assert "data-grid-cell" in stop.attrs and stop.attrs["data-i"] == str(c.query)
        assert stop.attrs["data-j"] == str(c.words.index("cat"))


def test_a_name_ending_in_head_is_not_doubled():
    _, text = verdict(compare.render(comparison({2: 1.0}), "Noun-phrase head"))
    assert "designed Noun-phrase head:" in text and "head head" not in text


def test_reader_text_never_becomes_markup():
    d_toks = ("<s>", HOSTILE, "it", ".")
    t_toks = ("[CLS]", HOSTILE, "it", ".", "[SEP]")
    d = np.zeros((4, 4))
    d[:, 0] = 1.0
    d[2] = [0, 1.0, 0, 0]
    c = hp.compare(d_toks, (0,), d, t_toks, (0, 4), [np.full((1, 5, 5), 0.2)], query_token=1)
    markup = compare.render(c, HOSTILE, trained_labels=[[HOSTILE]], start_token=HOSTILE)
    root = parse(markup)
    assert not root.find_all("img") and not any("onerror" in n.attrs for n in root.iter())
    assert "<img" not in markup and "&lt;img" in markup and "&quot;" in markup and "&amp;" in markup
    assert HOSTILE in root.find_all("svg", data_view="compare-designed")[0].attrs["aria-label"]


def test_twelve_words_stay_under_four_hundred_elements():
    words = "one two three four five six seven eight nine ten eleven twelve".split()
    d_toks, t_toks = ("<s>", *words), ("[CLS]", *words, "[SEP]")
    prev = np.zeros((13, 13))
    for i in range(13):
        prev[i, max(i - 1, 1) if i > 1 else 0] = 1.0  # every word at work but the first
    c = hp.compare(d_toks, (0,), prev, t_toks, (0, 13), [np.full((12, 14, 14), 1 / 14)], query_token=5)
    markup = compare.render(c, "Previous token")
    assert len(re.findall(r"<[a-zA-Z]", markup)) < 400


def _hex_rgb(value: str):
    value = value.lstrip("#")
    if len(value) == 3:
        value = "".join(ch * 2 for ch in value)
    return tuple(int(value[k : k + 2], 16) / 255 for k in (0, 2, 4))


def _contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two hex colours."""

    def lum(rgb):
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((lum(_hex_rgb(a)), lum(_hex_rgb(b))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_text_colours_have_at_least_4_5_to_1_contrast_in_light_and_dark_mode():
    """compare.css colours text only with style.css variables; each, on the card and page background."""
    css = (ROOT / "site/css/compare.css").read_text()
    assert not re.search(r"#[0-9a-fA-F]{3,6}\b|rgb\(", css), "compare.css uses the theme's variables only"
    used = set(re.findall(r"(?<![-\w])color:\s*var\(--([\w-]+)\)", css)) | {"ink"}  # body text is --ink
    style = (ROOT / "site/style.css").read_text()
    light = style[: style.index("prefers-color-scheme: dark")]
    dark = style[style.index("prefers-color-scheme: dark") :]
    for block in (light, dark):
        colours = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{3,6})", block))
        for name in used:
            for bg in ("card", "bg"):
                assert _contrast(colours[name], colours[bg]) >= 4.5, (name, bg)
