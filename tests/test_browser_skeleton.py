"""The walking skeleton in a real browser: pre-rendered first paint, Python in a worker,
live heatmap driven by the controls, served from a sub-path with no other host contacted.

Expected weights are derived here independently: Q and K are built with plain NumPy
from the model's published inputs (embedding and weight matrices), and the softmax is
written out in the test.
"""

from __future__ import annotations

import json
import math
import re
import urllib.request

import numpy as np
import pytest

import build
from attention_explorer import tokens as tok
from attention_explorer.models import designed as model
from conftest import PageProblems

pytestmark = pytest.mark.browser

MATRIX = 'svg[data-view="attention-matrix"]'


# the pinned runtime's versions (runtime-pins.json), named when a workaround stops engaging
PINNED = {g["name"]: g["version"] for g in json.loads(build.PINS_FILE.read_text(encoding="utf-8"))["groups"]}


def model_tokens(text: str) -> list[str]:
    """The tokens the designed model sees: its start token "<s>", then the words (index 0 is <s>)."""
    return ["<s>", *tok.tokenize(text)]


def independent_weights(text: str, head: int, temperature: float, dk_scale: float) -> np.ndarray:
    """A [n, n] = softmax(Q_h K_hᵀ / (dk_scale · T)) computed from scratch (no causal mask)."""
    toks = model_tokens(text)
    x = model.embed(toks).x
    p = model.block_params()
    d = model.CONFIG.d_head
    cols = slice(head * d, (head + 1) * d)
    q = x @ p.w_q[:, cols] + p.b_q[cols]
    k = x @ p.w_k[:, cols] + p.b_k[cols]
    n = len(toks)
    out = np.zeros((n, n))
    for i in range(n):
        logits = [float(q[i] @ k[j]) / (dk_scale * temperature) for j in range(n)]
        m = max(logits)
        e = [math.exp(z - m) for z in logits]
        out[i] = [v / sum(e) for v in e]
    return out


def heatmap_weights(page) -> np.ndarray:
    cells = page.eval_on_selector_all(
        'svg[data-view="attention-matrix"] rect[data-i]',
        "els => els.map(e => [+e.dataset.i, +e.dataset.j, parseFloat(e.dataset.weight)])",
    )
    n = int(math.isqrt(len(cells)))
    assert n * n == len(cells) and n > 0, f"expected a square grid, got {len(cells)} cells"
    w = np.full((n, n), np.nan)
    for i, j, v in cells:
        w[i, j] = v
    assert not np.isnan(w).any(), "a cell is missing from the grid"
    return w


def set_range(page, selector: str, value: float):
    """Move a slider the way a reader's drag does: set the value, fire `input`."""
    page.eval_on_selector(
        selector, "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", str(value)
    )


def wait_matrix(page, **attrs):
    cond = " && ".join(f"s.dataset.{k} === {v!r}" for k, v in attrs.items())
    page.wait_for_function(
        f"(() => {{ const s = document.querySelector('svg[data-view=\"attention-matrix\"]'); return s && {cond}; }})()"
    )


def test_first_paint_has_the_real_heatmap_before_python(base_url):
    """index.html itself (no JS run) holds the default preset's heatmap with every weight."""
    html = urllib.request.urlopen(base_url).read().decode()
    n = len(model_tokens(model.DEFAULT_TEXT))
    assert 'data-state="loading"' in html
    assert 'data-view="attention-matrix"' in html
    svg = re.search(r'<svg[^>]*data-view="attention-matrix".*?</svg>', html, re.S).group(0)
    assert len(re.findall(r'<rect[^>]*data-i="\d+"[^>]*data-weight="', svg)) == n * n
    assert 'href="/' not in html and 'src="/' not in html, "absolute URLs break sub-path hosting"


def test_page_is_ready_with_python_in_a_worker(live):
    """Ready means Python rendered; Pyodide was never loaded on the main thread."""
    assert live.evaluate("document.documentElement.dataset.state") == "ready"
    # the bridge checks the runtime files with HEAD requests (no body); a main-thread
    # Pyodide would download their bodies here
    bodies = live.evaluate(
        "performance.getEntriesByType('resource')"
        ".filter(e => e.name.includes('pyodide.asm')).map(e => [e.name, e.encodedBodySize])"
    )
    assert bodies and all(size == 0 for _, size in bodies), f"Pyodide loaded on the main thread: {bodies}"
    assert live.evaluate("typeof globalThis.loadPyodide") == "undefined"
    assert "live" in live.inner_text("#runtime-status")


def test_python_compiles_nothing_at_start_up_it_imports_bytecode(live):
    """build_bytecode ships the modules a start-up imports (the standard library's, NumPy's, ours) as
    bytecode, and the methods their dataclasses generate as code (precompiled.py): compiling them in
    the browser took seconds at every visit. A module named here was compiled from source by the end
    of the worker's warm-up (add it to build_bytecode.ALSO_IMPORTED if start-up imports it inside a
    function); a dataclass method, from its text."""
    live.wait_for_function("!attentionExplorer.waiting().warming")
    compiled = live.evaluate("attentionExplorer.call('compiled_at_start')")
    assert compiled == {"stdlib": [], "numpy": [], "ours": [], "dataclass_methods": []}, compiled


def test_every_runtime_workaround_still_engages_under_the_pinned_runtime(live):
    """Each workaround (py/attention_explorer/runtime/, site/runtime/) relies on internals of the
    pinned runtime; an upgrade that changes them would leave it doing nothing, or something else,
    silently. Each says whether it engaged in this start-up, and why not."""
    pinned = f"Pyodide {PINNED['pyodide']} and PyScript {PINNED['pyscript']}"
    live.wait_for_function("!attentionExplorer.waiting().warming")
    engaged = live.evaluate("attentionExplorer.call('workarounds_engaged')")
    assert set(engaged) == {"precompiled", "numpy_install", "lazy_linalg", "extension_preload"}, engaged
    for name, why_not in engaged.items():
        assert why_not is None, (
            f"the workaround {name} no longer engages under {pinned}: {why_not}. Read "
            f"py/attention_explorer/runtime/{name}.py, then fix it or remove it."
        )
    caught = live.evaluate("import('./runtime/page_observer.js').then((m) => m.caught)")
    assert caught == 1, (
        f"site/runtime/page_observer.js caught {caught} document-wide MutationObservers from {pinned}'s "
        "core, not 1: PyScript's core has changed how it watches the page; fix the workaround or remove it."
    )


def test_the_status_line_counts_the_runtime_download_then_names_each_step(live, bundle):
    """The progress line moves from the start: the runtime's megabytes as the worker receives them,
    out of the sizes of the files Pyodide fetches (in the bundle), until all are in: then starting
    Python, NumPy, the first picture, ready. The bar never goes back."""
    total_mb = f"{sum((bundle / rel).stat().st_size for rel in build.RUNTIME_COUNTED_FILES) / 1e6:.1f}"
    log = live.evaluate("window.__statusLog")
    texts = [entry[0] for entry in log]
    assert texts[0].startswith("Showing the pre-computed default"), texts
    counted = [re.fullmatch(r"Downloading Python: ([\d.]+) of ([\d.]+)\u00a0MB…", t) for t in texts]
    counted = [(float(m[1]), m[2]) for m in counted if m]
    assert len({mb for mb, _ in counted}) >= 2 and counted[0][0] == 0, (
        f"the count did not move: {texts}. site/runtime/pyodide_progress.mjs counts what Pyodide "
        f"{PINNED['pyodide']} fetches with globalThis.fetch: has the runtime changed how it fetches?"
    )
    assert all(of == total_mb for _, of in counted), (counted, total_mb)
    assert [mb for mb, _ in counted] == sorted(mb for mb, _ in counted) and counted[-1][0] <= float(total_mb)
    # "Starting Python" is shown once the worker has counted every byte of those files
    steps = [t for t in texts if not t.startswith("Downloading") and not t.startswith("Showing")]
    assert steps == [
        "Starting Python…",
        "Loading NumPy…",
        "Computing attention in Python…",
        "Python is running: every change you make is computed live in your browser.",
    ], texts
    values = [entry[1] for entry in log[1:]]
    assert values == sorted(values) and values[-1] == log[-1][2] == 4, log


def test_default_heatmap_matches_independent_softmax(live):
    w = heatmap_weights(live)
    expected = independent_weights(model.DEFAULT_TEXT, head=0, temperature=1.0, dk_scale=8.0)
    np.testing.assert_allclose(w, expected, atol=1e-9)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("temperature", [0.25, 2.5, 1.0])
def test_temperature_slider_recomputes_weights_in_python(live, temperature):
    set_range(live, "#temperature", temperature)
    wait_matrix(live, temperature=f"{temperature:g}")
    assert live.input_value("#temperature") == f"{temperature:g}"
    expected = independent_weights(model.DEFAULT_TEXT, head=0, temperature=temperature, dk_scale=8.0)
    np.testing.assert_allclose(heatmap_weights(live), expected, atol=1e-9)
    assert live.inner_text("#temperature-out") == f"{temperature:.2f}"


def test_temperature_slider_by_keyboard(live):
    """Arrow keys on the focused slider move T by one step (0.05) and the heatmap follows."""
    set_range(live, "#temperature", 1.0)
    wait_matrix(live, temperature="1")
    live.focus("#temperature")
    live.keyboard.press("ArrowRight")
    wait_matrix(live, temperature="1.05")
    expected = independent_weights(model.DEFAULT_TEXT, head=0, temperature=1.05, dk_scale=8.0)
    np.testing.assert_allclose(heatmap_weights(live), expected, atol=1e-9)
    set_range(live, "#temperature", 1.0)
    wait_matrix(live, temperature="1")


def test_dk_scale_slider_recomputes_weights(live):
    set_range(live, "#dk-scale", 2.0)
    wait_matrix(live, dkScale="2")
    expected = independent_weights(model.DEFAULT_TEXT, head=0, temperature=1.0, dk_scale=2.0)
    np.testing.assert_allclose(heatmap_weights(live), expected, atol=1e-9)
    set_range(live, "#dk-scale", 8.0)
    wait_matrix(live, dkScale="8")


def test_head_picker_lists_heads_by_name_and_switches(live):
    # the shared page may hold another test's slider values (which tests a worker runs, and in what
    # order, depends on the run): set the ones the expectation below assumes
    for slider, value, shown in (("#temperature", 1.0, {"temperature": "1"}), ("#dk-scale", 8.0, {"dkScale": "8"})):
        set_range(live, slider, value)
        wait_matrix(live, **shown)
    options = live.eval_on_selector_all("#head option", "os => os.map(o => [o.value, o.textContent])")
    assert options == [[str(h), f"Head {h + 1}: {info.name}"] for h, info in enumerate(model.HEADS)]
    live.select_option("#head", "2")
    wait_matrix(live, head="2")
    expected = independent_weights(model.DEFAULT_TEXT, head=2, temperature=1.0, dk_scale=8.0)
    np.testing.assert_allclose(heatmap_weights(live), expected, atol=1e-9)
    live.select_option("#head", "0")
    wait_matrix(live, head="0")


def test_clicking_a_token_moves_the_query_row(live):
    before = live.get_attribute('svg[data-view="attention-matrix"] .query-outline', "data-query-row")
    assert before == str(model.DEFAULT_QUERY)
    target = 1 if model.DEFAULT_QUERY != 1 else 2
    live.click(f'[data-panel=token-chips] .chip[data-token-index="{target}"]')
    live.wait_for_selector(f'svg[data-view="attention-matrix"] .query-outline[data-query-row="{target}"]')
    assert live.get_attribute(f'[data-panel=token-chips] .chip[data-token-index="{target}"]', "aria-pressed") == "true"
    assert live.get_attribute('svg[data-view="attention-matrix"]', "data-query") == str(target)
    live.click(f'[data-panel=token-chips] .chip[data-token-index="{model.DEFAULT_QUERY}"]')
    live.wait_for_selector(f'.query-outline[data-query-row="{model.DEFAULT_QUERY}"]')


def test_typing_a_sentence_recomputes_and_bad_input_keeps_the_last_picture(live):
    text = "Dogs bark loudly ."
    live.fill("#tokens", text)
    live.wait_for_function(
        "document.querySelectorAll('svg[data-view=\"attention-matrix\"] rect[data-i]').length"
        f" === {len(model_tokens(text)) ** 2}"
    )
    np.testing.assert_allclose(heatmap_weights(live), independent_weights(text, 0, 1.0, 8.0), atol=1e-9)
    good = live.inner_html('[data-panel="attention-matrix"]')
    live.fill("#tokens", "   ")
    live.wait_for_function("document.getElementById('input-message').textContent.length > 0")
    assert live.get_attribute("#tokens", "aria-invalid") == "true"
    assert live.inner_html('[data-panel="attention-matrix"]') == good
    live.fill("#tokens", model.DEFAULT_TEXT)
    live.wait_for_function("document.getElementById('input-message').textContent === ''")


def test_a_sentence_typed_just_before_another_change_is_kept(live):
    """The sentence is sent once typing pauses (150 ms). A slider moved within that pause sends it first,
    and the reply to the slider does not put the old sentence back in the box (it did, and the typed
    sentence was lost; seen when a stage was chosen right after typing). The pause's timer is held here
    until the slider's reply is in, so the order does not depend on the machine's speed."""
    text = "Dogs bark loudly ."
    live.evaluate("""() => { window.__heldTimers = []; const plain = window.setTimeout;
        window.__plainSetTimeout = plain;
        window.setTimeout = (f, ms, ...args) =>
            ms === 150 ? (window.__heldTimers.push(f), -1) : plain(f, ms, ...args); }""")
    try:
        live.fill("#tokens", text)
        live.focus("#temperature")
        live.keyboard.press("ArrowRight")
        wait_matrix(live, temperature="1.05")
        live.wait_for_function("attentionExplorer.idle()")
        assert live.input_value("#tokens") == text, "a reply put another sentence in the box"
    finally:
        live.evaluate(
            "() => { window.setTimeout = window.__plainSetTimeout; window.__heldTimers.splice(0).forEach((f) => f()); }"
        )
    live.wait_for_function("attentionExplorer.idle()")
    assert json.loads(live.get_attribute(MATRIX, "data-tokens")) == model_tokens(text)
    assert live.input_value("#tokens") == text
    live.fill("#tokens", model.DEFAULT_TEXT)
    set_range(live, "#temperature", 1.0)
    wait_matrix(live, temperature="1")
    live.wait_for_function(
        f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).length === "
        f"{len(model_tokens(model.DEFAULT_TEXT))}"
    )


NUMPY_WHEEL = build.RUNTIME_NUMPY.rsplit("/", 1)[1]


@pytest.mark.parametrize(
    "missing,named,status,says",
    [
        ("**/pyodide.asm.wasm", "pyodide.asm.wasm", 404, "404"),
        ("**/py/startup.zip", "startup.zip", 404, "404"),
        (f"**/{NUMPY_WHEEL}", NUMPY_WHEEL, 404, "404"),
        (
            f"**/{NUMPY_WHEEL}",
            NUMPY_WHEEL,
            200,
            "is not the pinned file (its sha256 differs)",
        ),  # other bytes: the integrity refuses them
    ],
)
def test_runtime_failure_shows_a_message_and_keeps_the_static_view(browser, base_url, missing, named, status, says):
    """If the runtime or one of our modules cannot load, or NumPy's wheel is not the pinned one,
    data-state is 'error', a message names the file and why, the heatmap stays."""
    context = browser.new_context()
    page = context.new_page()
    page.route(missing, lambda route: route.fulfill(status=status, body="gone"))
    page.goto(base_url)
    page.wait_for_function("document.documentElement.dataset.state !== 'loading'", timeout=120_000)
    assert page.evaluate("document.documentElement.dataset.state") == "error"
    message = page.inner_text("#runtime-status")
    assert "could not start" in message and named in message and says in message, message
    assert "Traceback" not in message
    assert page.locator('svg[data-view="attention-matrix"] rect[data-i]').count() > 0
    context.close()


# What a panel below the first screen shows when JavaScript is off (style.css, "scripting: none")
NEEDS_JS = "needs JavaScript"


# The colours of a text and of the first box behind it with a background (computed, "rgb(r, g, b)")
TEXT_AND_BACKGROUND = """(e, pseudo) => {
    let b = e;
    while (b && getComputedStyle(b).backgroundColor.replace(/ /g, '') === 'rgba(0,0,0,0)') b = b.parentElement;
    return [getComputedStyle(e, pseudo).color, b ? getComputedStyle(b).backgroundColor : 'rgb(255, 255, 255)'];
}"""


def contrast_ratio(foreground: str, background: str) -> float:
    """WCAG 2 contrast ratio of two opaque CSS colours given as "rgb(r, g, b)"."""

    def luminance(colour: str) -> float:
        channels = [int(c) / 255 for c in re.findall(r"\d+", colour)[:3]]
        r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize(
    "viewport,scheme",
    [({"width": 1280, "height": 900}, "light"), ({"width": 360, "height": 740}, "dark")],
    ids=["1280-light", "360-dark"],
)
def test_with_javascript_off_the_page_says_what_needs_it(browser, base_url, bundle, viewport, scheme):
    """With JavaScript off nothing waits for Python or pretends to work: the <noscript> line says the
    first screen is the pre-computed default and the other pictures need JavaScript; every panel whose
    markup only the bridge brings (prerendered.json's) says so in place of an empty card; the first
    screen's panels show their pictures; the status line, the share buttons and the stepper, which
    would do nothing, are hidden; both lines are readable (contrast >= 4.5:1, worked out here: axe
    cannot run with JavaScript off, its promises never settle), and no other host is asked for anything."""
    context = browser.new_context(viewport=viewport, color_scheme=scheme, java_script_enabled=False)
    page = context.new_page()
    problems = PageProblems(page, ("/".join(base_url.split("/", 3)[:3]) + "/",))
    page.goto(base_url)
    notice = page.locator("p.is-error")
    assert notice.count() == 1 and notice.is_visible(), "no visible <noscript> line"
    text = notice.inner_text()
    assert "JavaScript is off" in text and "will not respond" in text and "need JavaScript" in text, text
    for hidden in ("#runtime-status", ".stepper", ".share-btn"):
        shown = page.locator(hidden).evaluate_all("els => els.filter((e) => e.checkVisibility()).length")
        assert shown == 0, f"{shown} × {hidden} visible with JavaScript off"
    deferred = set(json.loads((bundle / build.PRERENDERED).read_text(encoding="utf-8")))
    panels = page.eval_on_selector_all(
        "[data-panel]",
        """els => els.map((e) => ({
        id: e.dataset.panel, says: getComputedStyle(e, '::before').content,
        shown: e.checkVisibility() || Boolean(e.closest('details:not([open])')),  // folded: shown when opened
        drawn: e.querySelectorAll('*:not(template)').length }))""",
    )
    assert {p["id"] for p in panels} >= deferred, "a pre-rendered panel has no place on the page"
    for p in panels:
        if p["id"] in deferred:
            assert NEEDS_JS in p["says"] and p["shown"], f"panel {p['id']} (JavaScript's): {p['says']!r}"
        else:
            assert NEEDS_JS not in p["says"], f"first-screen panel {p['id']} says it needs JavaScript"
    first_screen = {p["id"]: p for p in panels if p["id"] not in deferred}
    for panel in ("attention-matrix", "token-chips", "query-why", "head-info"):
        assert first_screen[panel]["drawn"] > 0, f"first-screen panel {panel} is empty"
    n = len(model_tokens(model.DEFAULT_TEXT))
    assert page.locator('svg[data-view="attention-matrix"] rect[data-i]').count() == n * n
    placeholder = page.locator(f'[data-panel="{sorted(deferred)[0]}"]')
    for what, element, pseudo in (("the <noscript> line", notice, None), ("a panel's line", placeholder, "::before")):
        ratio = contrast_ratio(*element.evaluate(TEXT_AND_BACKGROUND, pseudo))
        assert ratio >= 4.5, f"{what}: contrast {ratio:.2f}:1 in the {scheme} theme"
    problems.assert_none()
    context.close()


def test_an_embed_with_javascript_off_says_its_picture_is_the_default(browser, base_url):
    """An embedded panel in a browser with JavaScript off: the default heatmap, a line saying it may not
    be the picture embedded and will not respond, and no status line waiting for Python."""
    context = browser.new_context(viewport={"width": 640, "height": 480}, java_script_enabled=False)
    page = context.new_page()
    page.goto(base_url + "embed.html#panel=ffn")
    notice = page.locator("p.is-error")
    assert notice.is_visible() and "JavaScript is off" in notice.inner_text(), notice.inner_text()
    assert "may not be the picture embedded" in notice.inner_text()
    assert not page.locator("#runtime-status").is_visible()
    assert page.locator('svg[data-view="attention-matrix"] rect[data-i]').count() > 0
    context.close()
