"""Nothing wrong is shown as right, and the reader's work is never lost (issues 38 and 39), in Chromium.

One fresh browser context for the module (its own Cache Storage and local storage, shared by its pages,
as a reader's tabs share them): code that ends or closes Python, the editor keeping the reader's code,
the trained model downloaded by a pasted link, a model choice made during a download, a runaway stop on
the trained model (the model comes back), the cached model file tampered with or replaced by garbage (the
page heals it from the server), a server sending another file, and a start with the runtime unreachable.
Expected weights come from CPython running the shipped bundle (conftest installs it).
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from attention_explorer import core, custom_attention
from attention_explorer.models import minilm
from conftest import PageProblems, scroll_to, wait_ready
from test_browser_code import set_code
from test_browser_skeleton import heatmap_weights, wait_matrix

pytestmark = pytest.mark.browser

MATRIX = 'svg[data-view="attention-matrix"]'
MESSAGE = "#attention-code-message"
MODEL_FILE = "**/models/minilm.*.safetensors.gz"
SLOW_MS = 120_000  # a download, a restart, an install: seconds; generous for a busy 2-core machine
CACHE = "attention-explorer-models-v1"  # worker.MODEL_CACHE (the tests reach the same Cache Storage)


def with_line(line: str) -> str:
    """The page's own function with one line run before it returns."""
    return custom_attention.SOURCE.replace("    return z, weights", f"    {line}\n    return z, weights")


def expected_weights(text, layer, head, dk_scale):
    toks = minilm.MODEL.tokenize(text)
    run = minilm.MODEL.forward(toks, core.Settings(temperature=1.0, dk_scale=dk_scale, causal=False, activation="gelu"))
    return run.layers[layer].weights[head]


@pytest.fixture(scope="module")
def context(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    yield ctx
    ctx.close()


def new_page(context, base_url, fragment=""):
    """A page of the module's context, ready, with its problems recorded: (page, problems)."""
    page = context.new_page()
    problems = PageProblems(page, ("/".join(base_url.split("/", 3)[:3]) + "/",))
    page.goto(base_url + fragment)
    wait_ready(page)
    return page, problems


def run_code(page, code):
    scroll_to(page, "code-card")
    set_code(page, code)
    page.locator("#run-code").dispatch_event("click")


def status(page) -> str:
    return page.inner_text("#runtime-status-text")


@pytest.mark.parametrize(
    "line, said",
    [
        ("import os; os._exit(0)", "ended the page's Python"),
        ("import js; js.close()", "ended the page's Python"),
    ],
)
def test_code_that_ends_python_is_replaced_and_the_page_says_so(context, base_url, line, said):
    """os._exit used to leave a dead page saying "Python is running"; js.close() a page whose next change
    hung. Now Python is replaced at once, the message says why, the editor keeps the code, and the page
    is live again with the last good function."""
    page, problems = new_page(context, base_url)
    code = with_line(line)
    run_code(page, code)
    page.wait_for_function(f"document.querySelector('{MESSAGE}').textContent.includes(\"{said}\")", timeout=SLOW_MS)
    wait_ready(page)
    page.wait_for_function("window.attentionExplorer.idle()")
    assert said in page.inner_text(MESSAGE), "the restart's reason stays under the editor"
    assert "running again" in status(page)
    assert page.input_value("#attention-code") == code, "the reader's code stays in the editor"
    assert not page.is_visible("#link-notice"), "no notice calls the reader's code a link's"
    page.evaluate("window.scrollTo(0, 0)")
    page.eval_on_selector(
        "#temperature", "el => { el.value = '2'; el.dispatchEvent(new Event('input', {bubbles: true})); }"
    )
    wait_matrix(page, temperature="2")  # a new, live Python
    assert page.get_attribute(MATRIX, "data-custom") is None, "the page's own function is in use"
    # the failed call of the dead worker is reported by the browser as a warning of ours, never an error
    problems.assert_none()
    page.close()


def test_the_editor_keeps_what_the_reader_typed_through_reset_and_reload(context, base_url):
    page, problems = new_page(context, base_url)
    scroll_to(page, "code-card")
    page.wait_for_selector("#code-card .code-mirror .cm-content")
    page.click("#code-card .cm-content")
    page.keyboard.press("Control+End")
    page.keyboard.type("\n# my own idea\n")
    typed = page.input_value("#attention-code")
    assert "# my own idea" in typed
    page.evaluate("window.scrollTo(0, 0)")
    page.click("#reset")  # the view's Reset: the reader's code is not the view's
    wait_matrix(page, head="0")
    page.wait_for_function("window.attentionExplorer.idle()")
    assert page.input_value("#attention-code") == typed
    page.reload()
    wait_ready(page)
    assert page.input_value("#attention-code") == typed, "a reload brings the reader's code back"
    scroll_to(page, "code-card")
    page.click("#reset-code")  # the editor's own Reset clears it
    page.wait_for_function(f"document.getElementById('attention-code').value === {json.dumps(custom_attention.SOURCE)}")
    page.reload()
    wait_ready(page)
    assert page.input_value("#attention-code") == custom_attention.SOURCE
    problems.assert_none()
    page.close()


def test_a_link_to_the_trained_model_pasted_into_an_open_tab_downloads_it(context, base_url):
    """A fragment change (a pasted link, an in-page link) used to say '"minilm" is not one of designed,
    minilm' and stay on the designed model. It names the model twice: the last one is used, and said."""
    page, problems = new_page(context, base_url)
    page.evaluate("location.hash = '#m=designed&m=minilm&l=1&h=3&T=2'")
    page.wait_for_selector(
        f'{MATRIX}[data-model="minilm"][data-layer="1"][data-head="3"][data-temperature="2"]', timeout=SLOW_MS
    )
    assert page.input_value("#model") == "minilm"
    assert "more than once" in page.inner_text("#link-notice")
    # a corrected link clears the notice at once
    page.evaluate("location.hash = '#m=minilm&l=1&h=2'")
    wait_matrix(page, head="2")
    page.wait_for_function("document.getElementById('link-notice').hidden")
    problems.assert_none()
    page.close()


def test_the_last_model_chosen_wins_over_a_download_still_running(context, base_url):
    """Trained model chosen, then the designed one at once: when the download ends (the file is in Cache
    Storage from the test before, so it is read and checked), the page stays on the designed model."""
    page, problems = new_page(context, base_url)
    page.select_option("#model", "minilm")
    page.select_option("#model", "designed")
    page.wait_for_function(
        "window.attentionExplorer.idle() && document.getElementById('model-download').hidden",
        timeout=SLOW_MS,
        polling=100,
    )
    # the download ended: the model is installed (the comparison card can use it), yet not shown
    page.wait_for_function("!document.getElementById('model-download').textContent.includes('Unpacking')")
    assert page.get_attribute(MATRIX, "data-model") == "designed" and page.input_value("#model") == "designed"
    page.select_option("#model", "minilm")  # installed: at once
    wait_matrix(page, model="minilm")
    problems.assert_none()
    page.close()


def test_a_runaway_stop_on_the_trained_model_brings_the_model_back(context, base_url):
    """After an endless loop is stopped on MiniLM, the page used to come back on the designed model with
    the message gone and the model unreachable. Now: the trained model, its layer and head, the message,
    the reader's code, and the last good function (none here: the page's own)."""
    page, problems = new_page(context, base_url, "#m=minilm&l=2&h=5")
    page.wait_for_selector(f'{MATRIX}[data-model="minilm"][data-layer="2"][data-head="5"]', timeout=SLOW_MS)
    loop = with_line("while True: pass")
    run_code(page, loop)
    page.wait_for_function(f"document.querySelector('{MESSAGE}').textContent.includes('more than')", timeout=SLOW_MS)
    wait_ready(page)
    page.wait_for_function("window.attentionExplorer.idle()")
    assert "more than 10 s" in page.inner_text(MESSAGE)
    assert page.input_value("#attention-code") == loop
    page.evaluate("window.scrollTo(0, 0)")
    wait_matrix(page, model="minilm", layer="2", head="5")
    assert page.input_value("#model") == "minilm"
    assert not page.is_visible("#link-notice"), page.inner_text("#link-notice")
    text = page.input_value("#tokens")
    scale = float(page.get_attribute(MATRIX, "data-dk-scale"))
    np.testing.assert_allclose(heatmap_weights(page), expected_weights(text, 2, 5, scale), atol=1e-6)
    problems.assert_none()
    page.close()


def good_file(bundle) -> tuple[str, bytes]:
    """The model file as build.py shipped it: (its URL path under the page, its bytes)."""
    manifest = json.loads(
        (bundle / "index.html")
        .read_text(encoding="utf-8")
        .split('id="model-files"', 1)[1]
        .split(">", 1)[1]
        .split("</script>", 1)[0]
    )
    src = manifest["minilm"]["src"]
    return src, (bundle / src).read_bytes()


def changed_weights(blob: bytes) -> bytes:
    """The same safetensors file with bytes of its encoder layers changed: well formed, other weights."""
    raw = bytearray(gzip.decompress(blob))
    header = 8 + int.from_bytes(raw[:8], "little")
    for k in range(header + len(raw) // 3, header + len(raw) // 3 + 4096):
        raw[k] ^= 0x55
    return gzip.compress(bytes(raw), mtime=0)


def put_in_cache(page, base_url, src, body: bytes):
    """Replace the cached model file with body (served once from a side URL, then put under the file's URL)."""
    page.route("**/tampered-file", lambda route: route.fulfill(body=body, content_type="application/octet-stream"))
    page.evaluate(
        """async ([name, url]) => {
        const cache = await caches.open(name);
        await cache.put(url, await fetch('tampered-file'));
    }""",
        [CACHE, base_url + src],
    )
    page.unroute("**/tampered-file")


@pytest.mark.parametrize("bad", ["changed-weights", "garbage", "truncated"])
def test_a_bad_cached_model_is_never_shown_and_heals_from_the_server(context, base_url, bundle, bad):
    src, good = good_file(bundle)
    body = {
        "changed-weights": changed_weights(good),
        "garbage": b"\x00garbage" * 1000,
        "truncated": good[: len(good) // 2],
    }[bad]
    page, problems = new_page(context, base_url)
    put_in_cache(page, base_url, src, body)
    fetched = []
    page.on("request", lambda r: fetched.append(r.url) if "/models/minilm." in r.url else None)
    page.select_option("#model", "minilm")
    wait_matrix(page, model="minilm")
    assert fetched == [base_url + src], "the bad copy was dropped and the file downloaded again"
    text = page.input_value("#tokens")
    np.testing.assert_allclose(
        heatmap_weights(page),
        expected_weights(
            text,
            int(page.get_attribute(MATRIX, "data-layer")),
            int(page.get_attribute(MATRIX, "data-head")),
            float(page.get_attribute(MATRIX, "data-dk-scale")),
        ),
        atol=1e-6,
    )
    stored = page.evaluate(
        """async ([name, url]) => {
        const hit = await (await caches.open(name)).match(url);
        return hit ? (await hit.arrayBuffer()).byteLength : -1; }""",
        [CACHE, base_url + src],
    )
    assert stored == len(good), "the cache holds the good file again"
    problems.assert_none()
    page.close()


def test_a_server_sending_another_file_is_refused_and_try_again_works(context, base_url, bundle):
    src, good = good_file(bundle)
    page, problems = new_page(context, base_url)
    page.evaluate("async (name) => { await caches.delete(name); }", CACHE)
    page.route(MODEL_FILE, lambda route: route.fulfill(body=changed_weights(good), content_type="application/gzip"))
    page.select_option("#model", "minilm")
    page.wait_for_selector("#model-retry:not([hidden])", timeout=SLOW_MS)
    assert "not the one this page was built with" in page.inner_text("#model-download-text")
    assert page.input_value("#model") == "designed" and page.get_attribute(MATRIX, "data-model") == "designed"
    page.unroute(MODEL_FILE)
    page.click("#model-retry")
    wait_matrix(page, model="minilm")
    problems.assert_none()
    page.close()


def test_a_start_without_the_network_says_python_needs_it(browser, base_url):
    """Offline (the runtime unreachable, the page itself from a cache): within seconds the status line
    says which file failed and that Python needs the network; no uncaught error."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    problems = PageProblems(page, ("/".join(base_url.split("/", 3)[:3]) + "/",))
    page.route("**/vendor/pyodide/**", lambda route: route.abort("internetdisconnected"))
    page.goto(base_url)
    page.wait_for_function("document.documentElement.dataset.state === 'error'", timeout=30_000, polling=100)
    said = status(page)
    assert "needs the network" in said and "vendor/pyodide/" in said, said
    assert page.locator(f"{MATRIX} rect[data-i]").count() > 0, "the pre-computed picture stays"
    # the refused downloads are the browser's own console errors, and PyScript's core logs its worker's
    # failed start as "MessageEvent"; nothing else may be
    problems.items = [
        p
        for p in problems.items
        if "ERR_INTERNET_DISCONNECTED" not in p and "Failed to load" not in p and p != "console error: MessageEvent"
    ]
    problems.assert_none()
    ctx.close()


def test_a_full_storage_still_gives_the_model_and_stores_nothing(browser, base_url):
    """A quota too small for the file (as on a phone with little room): the put fails, the model is shown
    all the same, and no half-written entry is left to be read later."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    problems = PageProblems(page, ("/".join(base_url.split("/", 3)[:3]) + "/",))
    origin = "/".join(base_url.split("/", 3)[:3])
    cdp = ctx.new_cdp_session(page)
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": origin, "quotaSize": 1_000_000})
    page.goto(base_url)
    wait_ready(page)
    page.select_option("#model", "minilm")
    wait_matrix(page, model="minilm")
    entries = page.evaluate("async (name) => (await (await caches.open(name)).keys()).length", CACHE)
    assert entries == 0, "nothing stored past the quota"
    problems.assert_none()
    ctx.close()


def test_without_cache_storage_or_native_sha256_the_model_still_loads(_playwright, bundle):
    """Served from a host name over plain HTTP (not a secure context: no Cache Storage, no crypto.subtle,
    as in some private modes), the file is downloaded and checked with Python's hashlib, and shown."""
    from conftest import CHROMIUM, CHROMIUM_ARGS, SUBPATH, serve_folder

    server = serve_folder(bundle)
    port = server.server_address[1]
    browser = _playwright.chromium.launch(
        executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP insecure.test 127.0.0.1"]
    )
    try:
        base = f"http://insecure.test:{port}{SUBPATH}"
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        problems = PageProblems(page, (f"http://insecure.test:{port}/",))
        page.goto(base)
        wait_ready(page)
        assert page.evaluate("!window.isSecureContext && typeof caches === 'undefined'"), "premise: no Cache Storage"
        page.select_option("#model", "minilm")
        wait_matrix(page, model="minilm")
        scale = float(page.get_attribute(MATRIX, "data-dk-scale"))
        np.testing.assert_allclose(
            heatmap_weights(page),
            expected_weights(
                page.input_value("#tokens"),
                int(page.get_attribute(MATRIX, "data-layer")),
                int(page.get_attribute(MATRIX, "data-head")),
                scale,
            ),
            atol=1e-6,
        )
        problems.assert_none()
    finally:
        browser.close()
        server.shutdown()
