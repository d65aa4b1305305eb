"""Share, embed, export in a real browser: permalinks restore the view, hostile links are
harmless, an embed snippet works inside a page from another origin, exported files are valid.
"""

from __future__ import annotations

import csv
import io
import json
import random
import struct
import xml.etree.ElementTree as ET
from urllib.parse import quote

import numpy as np
import pytest

from attention_explorer import page as page_module, permalink, tokens as tok
from attention_explorer.models import designed as model
from conftest import TALL, open_page, serve_folder, wait_ready
from test_browser_skeleton import independent_weights, set_range, wait_matrix

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'


def fragment_of(page) -> str:
    """The address bar's fragment once it has caught up with the state (it follows a quiet moment later)."""
    page.wait_for_function("!window.attentionExplorer.urlPending()")
    return page.evaluate("location.hash")


def test_the_url_follows_the_state_without_flooding_history(live):
    live.click("#reset")
    wait_matrix(live, temperature="1", head="0")
    length = live.evaluate("history.length")
    for t in (0.5, 0.75, 1.5, 2.0):
        set_range(live, "#temperature", t)
    live.select_option("#head", "2")
    live.check("#causal")
    live.select_option("#activation", "relu")
    wait_matrix(live, temperature="2", head="2")
    live.wait_for_selector('[data-view="ffn"][data-activation="relu"]')
    live.wait_for_function("location.hash.includes('act=relu')")
    state, notices = permalink.decode(fragment_of(live))
    assert notices == []
    assert (state.temperature, state.head, state.causal, state.activation) == (2.0, 2, True, "relu")
    assert live.evaluate("history.length") == length, "slider moves must not add history entries"
    live.click("#reset")
    live.wait_for_function("location.hash === ''")


def test_a_fragment_the_reader_sets_wins_over_the_pages_pending_url_update(live):
    """The address bar follows the state a quarter of a second late. A fragment the reader sets in that
    quarter second (a pasted link, Back) is what the page then shows, even when the page's own update
    runs before the fragment's hashchange event (seen in CI on a busy machine: the old view came back).
    That order is made here: the update's timer is held, then run right after the fragment is set."""
    live.click("#reset")
    wait_matrix(live, temperature="1", head="0")
    fragment_of(live)
    live.evaluate("""() => { window.__heldTimers = []; const plain = window.setTimeout;
        window.__plainSetTimeout = plain;
        window.setTimeout = (f, ms, ...args) => ms === 250 ? window.__heldTimers.push(f) : plain(f, ms, ...args); }""")
    try:
        set_range(live, "#temperature", 1.5)
        wait_matrix(live, temperature="1.5")
        live.wait_for_function("window.__heldTimers.length > 0")  # the page's URL update, held
        wanted = permalink.encode(permalink.decode("h=2&T=0.5")[0])
        live.evaluate(
            """h => { location.hash = h; window.setTimeout = window.__plainSetTimeout;
            window.__heldTimers.splice(0).forEach((f) => f()); }""",
            wanted,
        )
    finally:
        live.evaluate("() => { window.setTimeout = window.__plainSetTimeout; }")
    wait_matrix(live, temperature="0.5", head="2")
    state, _ = permalink.decode(fragment_of(live))
    assert (state.temperature, state.head) == (0.5, 2)


def test_a_permalink_restores_exactly_that_view(profile, base_url):
    preset = model.PRESETS[4]
    fragment = (
        f"s={quote(preset.text)}&q={preset.query}&h=1&T=0.5&dk=4&mask=1&act=swiglu&stage=3&all=1&ddk=128&panel=routing"
    )
    context, page, problems = open_page(profile, base_url + "#" + fragment)
    wait_ready(page)
    wait_matrix(page, head="1", temperature="0.5", dkScale="4", query=str(preset.query))
    assert page.input_value("#tokens") == preset.text
    assert page.input_value("#head") == "1" and page.input_value("#activation") == "swiglu"
    assert page.is_checked("#causal") and page.is_checked("#routing-all")
    assert page.get_attribute("[data-stage-detail]", "data-stage-detail") == "3"
    assert page.get_attribute('[data-view="scale-demo"]', "data-dk") == "128"
    assert page.locator(f"{MATRIX} rect[data-masked]").count() > 0
    w = np.array(
        page.eval_on_selector_all(f'{MATRIX} rect[data-i="{preset.query}"]', "els => els.map(e => +e.dataset.weight)")
    )
    assert w.sum() == pytest.approx(1.0)
    assert permalink.decode(fragment_of(page))[0] == permalink.decode(fragment)[0], "the URL keeps the view"
    # the page scrolls to the named panel; once that scroll has come to rest (the same position 0.4 s
    # apart), its card's heading is readable: below the sticky stepper bar, not under it
    page.wait_for_function(
        "(() => { const y = window.scrollY, same = y > 0 && y === window.__lastY;"
        " window.__lastY = y; return same; })()",
        polling=400,
    )
    heading, bar = page.evaluate("""() => [
        document.querySelector('[data-panel="routing"]').closest('.card').querySelector('h2, h3'),
        document.querySelector('.stepper-bar')].map((el) => el.getBoundingClientRect().toJSON())""")
    assert bar["bottom"] <= heading["top"] and heading["bottom"] <= 900, (heading, bar)
    problems.assert_none()
    context.close()


def test_hostile_links_are_ignored_with_a_notice_and_never_injected(profile, base_url):
    hostile = "s=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E%22%27&T=abc&h=99&panel=%3Cscript%3E&zzz=1"
    context, page, problems = open_page(profile, base_url + "#" + hostile, viewport=TALL)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    wait_ready(page)
    page.wait_for_selector("#link-notice:not([hidden])")
    notice = page.inner_text("#link-notice")
    assert "temperature" in notice and "head" in notice
    # the sentence itself is fine as text: it is shown, as tokens, never as markup
    assert page.locator('img[src="x"]').count() == 0 and page.locator("script:not([src]):not([type])").count() == 0
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyzT=&%#<>\"'()/\\;:+-. 0123456789"
    for k in range(10):  # random fragments through the worker in the page (test_permalink fuzzes 3,000 in CPython)
        junk = f"{k}" + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80)))
        res = page.evaluate("(h) => attentionExplorer.call('dispatch', {type: 'load_hash', value: h})", junk)
        assert res["message"] == "" and "<" not in res["notice"]
        for markup in res["panels"].values():
            assert "<img" not in markup and "<script" not in markup
    page.evaluate("location.hash = 'h=2'")  # a real hashchange after all that
    wait_matrix(page, head="2")
    page.evaluate("location.hash = 'h=3'")
    wait_matrix(page, head="3")
    assert page.evaluate("document.documentElement.dataset.state") == "ready"
    assert page.locator('img[src="x"]').count() == 0 and not dialogs
    problems.assert_none()
    context.close()


def _share_text(page, action: str, target: str) -> str:
    page.click(f'[data-action="{action}"][data-target="{target}"]')
    page.wait_for_selector("#share-dialog[open]")
    text = page.input_value("#share-text")
    page.click('#share-dialog button[value="close"]')
    return text


def test_link_button_gives_the_current_url_naming_the_panel(live):
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")
    live.select_option("#head", "3")
    wait_matrix(live, head="3")
    url = _share_text(live, "link", "affinity")
    state, notices = permalink.decode(url.split("#", 1)[1])
    assert notices == [] and state.head == 3 and state.panel == "affinity"
    live.click("#reset")
    live.wait_for_function("location.hash === ''")


def test_an_embed_snippet_works_in_a_page_from_another_origin(live, profile, base_url, tmp_path):
    """Copy the snippet from the page, paste it twice (two views) into a plain HTML page served
    from another port: both frames become ready, size themselves, and keep separate state."""
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")
    live.select_option("#head", "1")
    set_range(live, "#temperature", 2)
    wait_matrix(live, head="1", temperature="2")
    first = _share_text(live, "embed", "attention-matrix")
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")
    second = _share_text(live, "embed", "ffn")
    assert "<iframe" in first and "embed.html#" in first and "attention-explorer:height" in first
    iframe2 = second.split("\n", 1)[0]  # the host script is needed once per page
    (tmp_path / "post.html").write_text(
        '<!doctype html><html><head><link rel=icon href="data:,"></head><body><h1>My post</h1>'
        f"{first}<p>Between the two.</p>{iframe2}</body></html>"
    )
    host = serve_folder(tmp_path, handler=__import__("http.server").server.SimpleHTTPRequestHandler)
    host_origin = f"http://127.0.0.1:{host.server_address[1]}/"
    bundle_origin = base_url.split("/attention-explorer/")[0] + "/"
    context, page, problems = open_page(
        profile, host_origin + "post.html", allowed_origins=(host_origin, bundle_origin)
    )
    page.wait_for_function("[...document.querySelectorAll('iframe')].length === 2")
    for index in range(2):  # lazy iframes: wait until each has its document
        page.locator("iframe").nth(index).element_handle().content_frame().wait_for_load_state()
    frames = [page.locator("iframe").nth(k).element_handle().content_frame() for k in range(2)]
    assert all("embed.html" in f.url for f in frames)
    # Chromium pauses rendering (so requestAnimationFrame, which the waits poll with, and ResizeObserver)
    # in a cross-origin frame that is off screen: look at each frame, as a reader scrolling to it does
    for index, frame in enumerate(frames):
        page.locator("iframe").nth(index).scroll_into_view_if_needed()
        frame.wait_for_function("document.documentElement.dataset.state !== 'loading'", timeout=120_000)
        assert frame.evaluate("document.documentElement.dataset.state") == "ready"
    matrix_frame, ffn_frame = frames
    matrix_frame.wait_for_selector(f'{MATRIX}[data-head="1"][data-temperature="2"]')
    ffn_frame.wait_for_selector('[data-view="ffn"]')
    assert ffn_frame.locator(MATRIX).count() == 0
    expected = independent_weights(model.DEFAULT_TEXT, 1, 2.0, 8.0)
    cells = matrix_frame.eval_on_selector_all(
        f"{MATRIX} rect[data-i]", "els => els.map(e => [+e.dataset.i, +e.dataset.j, +e.dataset.weight])"
    )
    for i, j, w in cells:
        assert w == pytest.approx(expected[i, j], abs=1e-9)
    # each iframe was sized by the host script to its own content
    page.wait_for_function("[...document.querySelectorAll('iframe')].every(f => f.style.height.endsWith('px'))")
    for index, frame in enumerate(frames):
        page.locator("iframe").nth(index).scroll_into_view_if_needed()
        content = frame.evaluate("Math.ceil(document.body.getBoundingClientRect().height)")
        page.wait_for_function(
            f"Math.abs(document.querySelectorAll('iframe')[{index}].getBoundingClientRect().height - {content}) <= 2"
        )
    # separate state: a query click in one frame leaves the other alone
    matrix_frame.click('.chip[data-token-index="1"]')
    matrix_frame.wait_for_selector(f'{MATRIX}[data-query="1"]')
    assert ffn_frame.get_attribute('.chip[aria-pressed="true"]', "data-token-index") == str(model.DEFAULT_QUERY)
    # and a link back to the full explorer with the same view
    href = matrix_frame.get_attribute(".embed-open", "href")
    assert permalink.decode(href.split("#", 1)[1])[0].head == 1
    problems.assert_none()
    context.close()
    host.shutdown()


def _download(page, action: str, target: str):
    with page.expect_download() as info:
        page.click(f'[data-action="{action}"][data-target="{target}"]')
    return info.value.suggested_filename, open(info.value.path(), "rb").read()


SVG = "{http://www.w3.org/2000/svg}"


def _svg_text(data: bytes):
    """(root, every <text>'s text in document order, {class: its lines joined}): what a reader of the file sees."""
    root = ET.fromstring(data)  # valid XML
    assert root.tag == SVG + "svg"
    texts, by_class = [], {}
    for t in root.iter(SVG + "text"):
        text = "".join(t.itertext())
        texts.append(text)
        by_class.setdefault(t.get("class"), []).append(text)
    return root, texts, {k: " ".join(v) for k, v in by_class.items()}


def _png_size(png: bytes):
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])  # IHDR: width, height


# Panels whose pictures need a setting first: a head switched off, a second sentence.
NEEDS = {
    "ablation": ('[data-view="ablation"] button[data-toggle="0"]', 'svg[data-view="ablation-change"]'),
    "pair": ('[data-view="pair"] button[data-event="pair_preset"]', 'svg[data-view="pair-diff"]'),
}


@pytest.mark.parametrize("target", [p for p in page_module.EMBEDDABLE if p not in page_module.TEXT_ONLY])
def test_every_panel_exports_as_a_figure_with_its_title_and_caption(live, target):
    """Each figure's SVG and PNG buttons save a file that stands alone: its title and the caption the
    worker writes (sentence, model, head, settings) are SVG text in it, above the panel's pictures."""
    if target in NEEDS:
        live.click("#reset")
        button, drawn = NEEDS[target]
        live.locator(f'[data-panel="{target}"]').scroll_into_view_if_needed()
        live.locator(button).first.click()
        live.wait_for_selector(drawn)
    name, data = _download(live, "svg", target)
    assert name.endswith(".svg")
    root, texts, lines = _svg_text(data)
    assert len(list(root.iter())) > 20
    assert texts[0] == page_module.EMBEDDABLE[target], "the title comes first"
    expected = page_module.export_caption(permalink.decode(fragment_of(live))[0], target)
    assert lines["export-caption"] == expected["caption"], "the caption's lines are the worker's caption, wrapped"
    assert lines.get("export-note", "") == expected["note"]
    assert not root.findall(f".//{SVG}svg/{SVG}title"), "the page's tooltips stay on the page"
    name, png = _download(live, "png", target)
    width, height = _png_size(png)
    assert name.endswith(".png") and width >= 400 and height >= 150
    # the PNG is the SVG drawn at 2x
    assert (width, height) == (2 * int(root.get("width")), 2 * int(root.get("height")))


def test_an_exported_heatmap_names_its_sentence_head_and_labels(live):
    """The attention matrix, exported with another head and settings, carries as text the panel's
    title, the sentence as typed, the head's name, T and √d_k, and every token label."""
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")
    live.select_option("#head", "2")
    set_range(live, "#temperature", 0.5)
    wait_matrix(live, head="2", temperature="0.5")
    _, data = _download(live, "svg", "attention-matrix")
    _, texts, lines = _svg_text(data)
    caption = lines["export-caption"]
    assert "Attention weights A" in texts
    assert f"“{model.DEFAULT_TEXT}”" in caption
    assert f"Head 3: {model.HEADS[2].name}" in caption and "T = 0.5" in caption and "√d_k = 8" in caption
    assert "designed by hand, not learned from data" in " ".join(texts)
    for token in tok.tokenize(model.DEFAULT_TEXT):
        assert token in texts, f"the heatmap's label {token!r}"
    assert "each rounded on its own" in " ".join(texts), "the file says its cells' numbers are rounded"
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")


def test_the_heads_side_by_side_export_names_every_head(live):
    """The small multiples' HTML labels (each head's name and where the query looks most) are in the file."""
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")
    _, data = _download(live, "svg", "head-multiples")
    _, texts, lines = _svg_text(data)
    words = " ".join(texts)
    assert "All heads side by side" in texts and f"“{model.DEFAULT_TEXT}”" in lines["export-caption"]
    for h, info in enumerate(model.HEADS):
        assert f"Head {h + 1}: {info.name}" in words
    assert words.count("looks most at") == len(model.HEADS)
    assert "✓" in words, "the selected head's mark"


def test_reader_text_in_an_export_stays_text(live):
    """A sentence with markup and quotes is written into the figure as text: no element comes of it."""
    hostile = 'Sarah said "<script>alert(1)</script>" & it\'s <b>fine</b>'
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")
    live.fill("#tokens", hostile)
    live.wait_for_function(f"document.querySelector('{MATRIX}').dataset.tokens.includes('script')")
    _, data = _download(live, "svg", "attention-matrix")
    root, texts, lines = _svg_text(data)
    assert f"“{hostile}”" in lines["export-caption"]
    assert not [e for e in root.iter() if e.tag.split("}")[-1] in ("script", "b", "foreignObject")]
    _, png = _download(live, "png", "attention-matrix")
    assert _png_size(png)[0] >= 400
    live.eval_on_selector("#tokens", "el => el.blur()")  # a focused field keeps its text; let reset show the default
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")


def test_weights_export_as_csv_and_json(live):
    live.click("#reset")
    wait_matrix(live, head="0", temperature="1")
    live.select_option("#head", "2")
    wait_matrix(live, head="2")
    toks = ["<s>", *tok.tokenize(model.DEFAULT_TEXT)]  # the start token, then the words
    expected = independent_weights(model.DEFAULT_TEXT, 2, 1.0, 8.0)
    name, data = _download(live, "csv", "attention-matrix")
    assert name.endswith(".csv")
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
    assert list(rows[0]) == ["query_index", "query_token", "key_index", "key_token", "weight", "masked"]
    assert len(rows) == len(toks) ** 2
    for r in rows:
        i, j = int(r["query_index"]), int(r["key_index"])
        assert r["query_token"] == toks[i] and r["key_token"] == toks[j]
        assert float(r["weight"]) == pytest.approx(expected[i, j], abs=1e-12)
    name, data = _download(live, "json", "attention-matrix")
    doc = json.loads(data)
    assert doc["format"] == "attention-explorer/weights" and doc["tokens"] == toks
    assert doc["head"]["index"] == 2 and doc["head"]["name"] == model.HEADS[2].name
    assert doc["temperature"] == 1.0 and doc["dk_scale"] == 8.0
    np.testing.assert_allclose(doc["weights"], expected, atol=1e-12)
    live.click("#reset")
