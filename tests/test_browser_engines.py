"""The flows a reader depends on, in Firefox ESR and in WebKit (the engine of Safari and of every
browser on an iPhone), as the Chromium suite tests them in more detail.

Each engine loads the page once and runs the flows in order on it (a later page load only where the
flow is a new page: a permalink, a blog post with the embed). The drivers are in tests/engines/:
Firefox through WebDriver BiDi (puppeteer-core), WebKit through WebDriver (Selenium, WebKitWebDriver,
MiniBrowser on Xvfb). Problems are seen the same way on both (tests/engines/server.py): console and
page errors through a probe script, requests to other hosts through a report-only security policy.
Expected numbers come from CPython: the designed model's weights written out
(test_browser_skeleton.independent_weights) and the trained model's forward pass on the same bundle.
"""

from __future__ import annotations

import http.server
import json
import math
import shutil
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

from attention_explorer import custom_attention
from attention_explorer.models import designed as model
from attention_explorer.runtime import extension_preload
from conftest import serve_folder
from engines import drivers
from engines.server import serve_probed
from test_browser_panels import independent_scores
from test_browser_skeleton import independent_weights
from test_browser_trained import expected_weights

pytestmark = pytest.mark.browser

ENGINES = ("firefox", "webkit")
MATRIX = 'svg[data-view="attention-matrix"]'
READY_S = 120  # Pyodide + NumPy start: seconds on these 2-core machines; generous for a busy one
DOWNLOAD_S = 180  # the trained model: 24 MB from 127.0.0.1, unpacked and checked in the worker

# In the page: the heatmap's weights as rows [[i, j, weight]…], and its data-* attributes
CELLS = f"""() => [...document.querySelectorAll('{MATRIX} rect[data-i]')]
    .map((e) => [+e.dataset.i, +e.dataset.j, parseFloat(e.dataset.weight)])"""
SHOWN = f"() => ({{...document.querySelector('{MATRIX}').dataset}})"


def matrix_is(**want) -> str:
    """A predicate: the heatmap's data-* attributes have these values."""
    return (
        f"(w) => {{ const s = document.querySelector('{MATRIX}'); "
        f"return s && Object.entries(w).every(([k, v]) => s.dataset[k] === v); }}",
        want,
    )


def as_matrix(cells) -> np.ndarray:
    n = math.isqrt(len(cells))
    assert n > 1 and n * n == len(cells), f"expected a square heatmap, got {len(cells)} cells"
    w = np.full((n, n), np.nan)
    for i, j, v in cells:
        w[i, j] = v
    return w


def wait_ready(page, what="the page"):
    page.wait(
        "() => ['ready', 'error'].includes(document.documentElement.dataset.state)",
        timeout=READY_S,
        what=f"{what} to be ready (html[data-state])",
    )
    state = page.run(
        "() => [document.documentElement.dataset.state, document.getElementById('runtime-status')?.innerText]"
    )
    assert state[0] == "ready", f"{page.name}: Python did not start: {state[1]}"
    page.wait("() => !window.attentionExplorer.waiting().warming", timeout=READY_S, what="the warm-up to end")


def missing_engine(name: str) -> str | None:
    """What a machine lacks to run an engine (dev.sh installs it all), or None."""
    needs = {
        "firefox": [drivers.FIREFOX, shutil.which("node") or "node"],
        "webkit": [drivers.WEBKIT_DRIVER, str(drivers.MINIBROWSER), drivers.XVFB],
    }[name]
    absent = [p for p in needs if not Path(p).exists()]
    return f"{name} needs {', '.join(absent)}: run `bash dev.sh test`, which installs them" if absent else None


@pytest.fixture(scope="session")
def probed(bundle):
    server, reports = serve_probed(bundle)
    yield f"http://127.0.0.1:{server.server_address[1]}", reports
    server.shutdown()


@pytest.fixture(scope="module", params=ENGINES)
def engine(request, probed):
    """(page, base URL) of one engine, the explorer loaded and ready."""
    if problem := missing_engine(request.param):
        pytest.fail(problem)
    origin, reports = probed  # the bundle's own origin is checked by the policy; the driver allows any local port
    page = (
        drivers.FirefoxPage(reports, ["http://127.0.0.1:"])
        if request.param == "firefox"
        else drivers.WebKitPage(reports)
    )
    try:
        base = origin + "/attention-explorer/"
        page.goto(base)
        wait_ready(page)
        yield page, base
    finally:
        page.close()


# In the page: bring the element to the middle of the screen and return true once it has stayed at the same
# place for two polls in a row (panels shown above it as they come near move it: puppeteer then found
# the footer's Print button "not clickable", seen once in Firefox)
AT_REST = """(selector) => {
    const el = document.querySelector(selector);
    el.scrollIntoView({ block: 'center' });
    const top = Math.round(el.getBoundingClientRect().top), same = top === window.__aeAtRest?.[selector];
    window.__aeAtRest = { ...window.__aeAtRest, [selector]: top };
    return same && top >= 0 && top < innerHeight;
}"""


def click_at_rest(page, selector: str):
    """Click an element lower on the page once it has stopped moving, as a reader would."""
    page.run("(selector) => { if (window.__aeAtRest) delete window.__aeAtRest[selector]; }", selector)
    page.wait(AT_REST, selector, what=f"{selector} to come to rest on screen")
    page.click(selector)


def back_to_default(page):
    page.run("() => window.scrollTo(0, 0)")
    page.click("#reset")
    page.wait(
        *matrix_is(model="designed", head="0", temperature="1", query=str(model.DEFAULT_QUERY)),
        what="the default view after Reset",
    )


def test_ready_with_no_errors_and_nothing_from_another_host(engine):
    page, _ = engine
    assert page.run("() => document.getElementById('runtime-status').innerText").startswith("Python is running")
    shown = page.run(SHOWN)
    np.testing.assert_allclose(
        as_matrix(page.run(CELLS)), independent_weights(model.DEFAULT_TEXT, 0, 1.0, float(shown["dkScale"])), atol=1e-9
    )
    # the download's progress came from the worker (a BroadcastChannel): from 0 MB to every byte in
    status = page.run("() => window.__aeStatus")
    counts = [k for k, text in enumerate(status) if text.startswith("Downloading Python: ")]
    assert len(counts) >= 2 and status[counts[0]].startswith("Downloading Python: 0.0 of"), status
    assert "Starting Python…" in status[counts[-1] :], status
    page.assert_no_problems()


def test_every_runtime_workaround_engages_here_too(engine):
    """As test_browser_skeleton checks in Chromium: each workaround of the start-up says whether it did what
    it is for on this engine too (extension_preload leans on how each engine's Emscripten runtime answers)."""
    page, _ = engine
    # (Python's None arrives as undefined, which the drivers would drop with its key)
    engaged = page.run(
        "() => attentionExplorer.call('workarounds_engaged')"
        ".then((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v ?? null])))"
    )
    assert set(engaged) == {"precompiled", "numpy_install", "lazy_linalg", "extension_preload"}, engaged
    assert all(why_not is None for why_not in engaged.values()), engaged
    # extension_preload acts on WebKit only: that it knows this engine for what it is
    assert extension_preload.wanted(page.run("() => navigator.userAgent")) == (page.name == "webkit")
    assert page.run("() => import('./runtime/page_observer.js').then((m) => m.caught)") == 1
    page.assert_no_problems()


def test_the_formulas_are_typeset(engine):
    """MathML: each fraction's numerator drawn above its denominator, every formula given room."""
    page, _ = engine
    shown = page.run("""() => ({
        sizes: [...document.querySelectorAll('math')].filter((m) => m.getClientRects().length)
            .map((m) => m.getBoundingClientRect().height),
        fractions: [...document.querySelectorAll('math mfrac')].filter((f) => f.getClientRects().length)
            .map((f) => f.children[0].getBoundingClientRect().bottom
                <= f.children[1].getBoundingClientRect().top + 1) })""")
    assert shown["sizes"] and min(shown["sizes"]) > 8, shown
    assert shown["fractions"] and all(shown["fractions"]), shown


def test_the_stepper_follows_the_readers_scrolling(engine):
    """A reader's End key scrolls the page down; once the scroll settles (scrollend, or where an engine
    has none, as WebKitGTK 2.50 and Safari before 18, 150 ms without a scroll event) the stepper shows
    the stage whose section crosses the reading line, a third down the screen."""
    page, _ = engine
    back_to_default(page)
    page.press("body", "End")
    shown = page.wait(
        """() => {
        const y = scrollY, still = y > 1000 && y === window.__lastY;
        window.__lastY = y;
        if (!still) return null;
        const steps = [...document.querySelectorAll('.stepper .step[aria-controls]')];
        let want = -1;
        steps.forEach((b, k) => { if (document.getElementById(b.getAttribute('aria-controls'))
            .getBoundingClientRect().top <= innerHeight / 3) want = k; });
        const at = steps.findIndex((b) => b.getAttribute('aria-current') === 'step');
        return want > 0 && at === want ? [at, 'onscrollend' in window] : null; }""",
        what="the scroll to settle and the stepper to show the stage on screen",
    )
    assert shown[0] > 0
    page.assert_no_problems()


PRINT_RECORDER = """() => { window.__printed = []; window.print = () => window.__printed.push({
    folded: document.querySelectorAll('details.more:not([open])').length,
    pending: [...document.querySelectorAll('[data-panel]')]
        .filter((p) => p.querySelector(':scope > template[data-prerendered]'))
        .map((p) => p.dataset.panel),
    outdated: [...document.querySelectorAll('[data-panel][data-outdated]')].map((p) => p.dataset.panel) }); }"""


def test_print_draws_every_panel_and_opens_every_folded_part(engine):
    """The footer's Print: every panel drawn for the current view and every folded part open when the
    print dialog comes (window.print is replaced by a recorder: a real dialog would wait for a person)."""
    page, _ = engine
    back_to_default(page)
    page.press("#temperature", "ArrowRight")
    page.wait(*matrix_is(temperature="1.05"), what="the heatmap at T = 1.05")
    page.run(PRINT_RECORDER)
    click_at_rest(page, "#print-all")
    printed = page.wait("() => window.__printed[0]", what="the print dialog to be asked for")
    assert printed == {"folded": 0, "pending": [], "outdated": []}, printed
    page.wait(
        "() => document.querySelectorAll('details.more[open]').length === 0", what="the folded parts folded again"
    )
    page.assert_no_problems()


def test_the_slider_and_a_query_click_give_cpythons_numbers(engine):
    page, _ = engine
    back_to_default(page)
    for _ in range(3):  # the keyboard moves the slider as a reader's arrow keys do: input events, step 0.05
        page.press("#temperature", "ArrowRight")
    page.wait(
        "() => document.querySelector('svg[data-view=\"attention-matrix\"]').dataset.temperature === '1.15'",
        what="the heatmap at T = 1.15 after three steps right",
    )
    page.click('[data-panel="token-chips"] .chip[data-token-index="2"]')
    page.wait(*matrix_is(query="2", temperature="1.15"), what="the heatmap's query to become token 2")
    shown = page.run(SHOWN)
    want = independent_weights(model.DEFAULT_TEXT, 0, 1.15, float(shown["dkScale"]))
    np.testing.assert_allclose(as_matrix(page.run(CELLS)), want, atol=1e-9)
    page.assert_no_problems()


def test_every_panel_is_drawn_as_the_reader_scrolls_down(engine):
    """After a change at the top, scrolling down the whole page (every folded part open) draws every
    panel with the new numbers: none is left a placeholder or marked outdated."""
    page, _ = engine
    back_to_default(page)
    page.press("#temperature", "ArrowLeft")  # T = 0.95: every panel below now shows old numbers
    page.wait(*matrix_is(temperature="0.95"), what="the heatmap at T = 0.95")
    left = page.run("""async () => {
        for (const d of document.querySelectorAll('details.more:not([open])')) d.open = true;
        const waiting = () => [...document.querySelectorAll('[data-panel]')].filter((p) => {
            const r = p.getBoundingClientRect();  // a panel still a <template> is 0 px tall, but on screen
            return p.getClientRects().length && r.bottom >= 0 && r.top < innerHeight
                && (p.hasAttribute('data-outdated') || p.querySelector(':scope > template[data-prerendered]'));
        });
        for (let y = 0; ; y += Math.round(innerHeight * 0.8)) {
            window.scrollTo(0, y);
            const end = Date.now() + 30000;
            while (waiting().length && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
            if (waiting().length) return 'still not drawn at ' + y + ' px: ' + waiting().map((p) => p.dataset.panel);
            if (y + innerHeight >= document.documentElement.scrollHeight) break;
        }
        return [...document.querySelectorAll('[data-panel]')]
            .filter((p) => p.hasAttribute('data-outdated') || p.querySelector(':scope > template[data-prerendered]'))
            .map((p) => p.dataset.panel);
    }""")
    assert left == [], f"{page.name}: panels not drawn after scrolling the page: {left}"
    bars = page.run("""() => [...document.querySelectorAll('[data-panel="affinity"] g.bar[data-measure="score"]')]
        .map((e) => [+e.dataset.j, +e.dataset.weight])""")
    want = independent_weights(model.DEFAULT_TEXT, 0, 0.95, float(page.run(SHOWN)["dkScale"]))[model.DEFAULT_QUERY]
    assert bars and all(w == pytest.approx(want[j], abs=1e-9) for j, w in bars), bars
    page.run("() => { for (const d of document.querySelectorAll('details.more[open]')) d.open = false; }")
    page.assert_no_problems()


NO_SCALING = next(e for e in custom_attention.EDITS if e.id == "no-scaling").source
SET_CODE = """(text) => { const el = document.getElementById('attention-code'); el.value = text;
    el.dispatchEvent(new Event('input')); }"""
CODE_MESSAGE = "() => document.getElementById('attention-code-message').textContent"


def test_the_editor_runs_a_function_and_stops_an_endless_one(engine):
    page, _ = engine
    back_to_default(page)
    page.run("""() => { const card = document.getElementById('code-card');
        for (let d = card.closest('details:not([open])'); d; d = d.parentElement?.closest('details:not([open])'))
            d.open = true;
        card.scrollIntoView(); }""")
    page.wait("() => document.querySelector('#code-card .cm-content')", what="CodeMirror in the code card")
    page.run("""() => { const s = document.getElementById('code-edit'); s.value = 'no-scaling';
        s.dispatchEvent(new Event('change', { bubbles: true })); }""")
    shown = page.wait(
        "() => { const t = document.querySelector('#code-card .cm-content').innerText;"
        " return t.includes('no √d_k') || t.includes('scaling') ? t : ''; }",
        what="the ready-made edit in CodeMirror",
    )
    assert "def attention" in shown
    click_at_rest(page, "#run-code")
    page.wait(
        '() => document.querySelector(\'[data-view="code-status"][data-custom="true"]\')',
        what="the code card to say the reader's function runs",
    )
    page.run("() => window.scrollTo(0, 0)")  # the heatmap on screen: it is redrawn there
    page.wait(*matrix_is(custom="true"), what="the heatmap to use the reader's function")
    scores = independent_scores(model.DEFAULT_TEXT, 0)
    want = np.exp(scores - scores.max(axis=1, keepdims=True))  # softmax(QKᵀ / T), T = 1: no √d_k
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(as_matrix(page.run(CELLS)), want, atol=1e-9)
    # an endless loop: stopped after 2 s, a new worker started with the last good state
    page.run(
        SET_CODE,
        custom_attention.SOURCE.replace(
            "    return z, weights", "    while True:\n        pass\n    return z, weights"
        ),
    )
    click_at_rest(page, "#run-code")
    page.wait(f"() => ({CODE_MESSAGE})().includes('more than 2 s')", timeout=30, what="the loop to be stopped")
    wait_ready(page, "Python, started again")
    click_at_rest(page, "#reset-code")
    page.wait(
        '() => document.querySelector(\'[data-view="code-status"][data-custom="false"]\')',
        what="the page's own function back",
    )
    page.assert_no_problems()


def test_the_trained_model_downloads_and_gives_cpythons_numbers(engine):
    page, _ = engine
    back_to_default(page)
    page.run("""() => { const s = document.getElementById('model'); s.value = 'minilm';
        s.dispatchEvent(new Event('input', { bubbles: true }));
        s.dispatchEvent(new Event('change', { bubbles: true })); }""")
    page.wait(*matrix_is(model="minilm"), timeout=DOWNLOAD_S, what="the trained model's heatmap")
    page.run("""() => { const s = document.getElementById('layer'); s.value = '2';
        s.dispatchEvent(new Event('change', { bubbles: true })); }""")
    page.wait(*matrix_is(model="minilm", layer="2"), what="layer 3 of the trained model")
    shown = page.run(SHOWN)
    text = page.run("() => document.getElementById('tokens').value")
    tokens, want = expected_weights(text, 2, int(shown["head"]), dk_scale=float(shown["dkScale"]))
    assert json.loads(shown["tokens"]) == list(tokens)
    np.testing.assert_allclose(as_matrix(page.run(CELLS)), want, atol=1e-6)
    stored = page.run(
        "async () => (await Promise.all((await caches.keys())"
        ".map(async (k) => (await (await caches.open(k)).keys()).length)))"
    )
    assert sum(stored) > 0, f"{page.name}: the trained model's files were not kept in Cache Storage"
    page.run("""() => { const s = document.getElementById('model'); s.value = 'designed';
        s.dispatchEvent(new Event('change', { bubbles: true })); }""")
    page.wait(*matrix_is(model="designed"), what="the designed model back")
    page.assert_no_problems()


def test_a_link_pasted_into_the_open_tab_restores_its_view(engine):
    """A permalink opened in a tab that shows the page already: only the fragment changes (a fresh
    load of a link is the embed's, below)."""
    page, base = engine
    back_to_default(page)
    preset = model.PRESETS[4]
    page.run("(f) => { location.hash = f; }", f"s={quote(preset.text)}&q={preset.query}&h=1&T=0.5&dk=4")
    page.wait(
        *matrix_is(head="1", temperature="0.5", dkScale="4", query=str(preset.query)), what="the view the link names"
    )
    assert page.run("() => document.getElementById('tokens').value") == preset.text
    np.testing.assert_allclose(as_matrix(page.run(CELLS)), independent_weights(preset.text, 1, 0.5, 4.0), atol=1e-9)
    page.assert_no_problems()


def test_the_address_bar_follows_each_change_not_one_behind(engine):
    """Each change, after the reader pauses, is in the URL: T = 0.05, then T = 5 (a report had the bar
    showing the change before), then Reset clears it."""
    page, _ = engine
    back_to_default(page)
    for value in ("0.05", "5"):
        page.run(
            """(v) => { const el = document.getElementById('temperature'); el.value = v;
            el.dispatchEvent(new Event('input', { bubbles: true }));
            el.dispatchEvent(new Event('change', { bubbles: true })); }""",
            value,
        )
        page.wait(*matrix_is(temperature=value), what=f"the heatmap at T = {value}")
        page.wait("(v) => location.hash === '#T=' + v", value, timeout=5, what=f"the URL to say T = {value}")
    page.click("#reset")
    page.wait("() => location.hash === ''", timeout=5, what="the URL of the default view after Reset")
    page.assert_no_problems()


def test_the_problem_checks_can_fail(engine):
    """What the other tests rely on to fail: a console error, and requests to another host from the
    page and from a worker, are each reported."""
    page, _ = engine
    page.run("""() => { console.error('a console error the test made');
        fetch('http://192.0.2.1/from-the-page').catch(() => {});
        const code = "fetch('http://192.0.2.1/from-a-worker').catch(() => {})";
        new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' }))); }""")
    seen: list[str] = []
    for _ in range(100):  # the worker's report comes to the server a moment later
        seen += page.problems()
        if all(any(part in line for line in seen) for part in ("a console error", "from-the-page", "from-a-worker")):
            break
        page.run("() => new Promise((r) => setTimeout(r, 100))")
    quiet = 0
    while quiet < 3:  # what else the engine says of these requests (Firefox: CORS and policy messages)
        page.run("() => new Promise((r) => setTimeout(r, 300))")
        more = page.problems()
        seen += more
        quiet = 0 if more else quiet + 1
    text = "\n".join(seen)
    assert "console error: a console error the test made" in text, text
    assert "request to another host: http://192.0.2.1/from-the-page" in text, text
    assert "http://192.0.2.1/from-a-worker" in text, text


def test_an_embed_in_a_blog_post_is_ready_and_sized_to_its_content(engine, tmp_path):
    """The embed snippet of the heatmap at head 2 and T = 1.05, pasted into a page of another origin:
    the frame loads that view from its link (a fresh load of a permalink), and the host sizes it."""
    page, base = engine
    back_to_default(page)
    page.run("""() => { const s = document.getElementById('head'); s.value = '1';
        s.dispatchEvent(new Event('change', { bubbles: true })); }""")
    page.press("#temperature", "ArrowRight")
    page.wait(*matrix_is(head="1", temperature="1.05"), what="head 2 at T = 1.05")
    page.click('[data-action="embed"][data-target="attention-matrix"]')
    snippet = page.wait(
        "() => document.querySelector('#share-dialog[open]') && document.getElementById('share-text').value",
        what="the embed snippet",
    )
    page.click('#share-dialog button[value="close"]')
    probe = (Path(drivers.HERE) / "probe.js").read_text()
    (tmp_path / "post.html").write_text(
        f'<!doctype html><html><head><script>{probe}</script><link rel=icon href="data:,">'
        f"</head><body><h1>My post</h1><p>Before.</p>{snippet}<p>After.</p></body></html>"
    )
    host = serve_folder(tmp_path, handler=http.server.SimpleHTTPRequestHandler)  # another origin: another port
    try:
        page.goto(f"http://127.0.0.1:{host.server_address[1]}/post.html")
        page.wait(
            "() => document.documentElement.dataset.state === 'ready'"
            f" && document.querySelector('{MATRIX}')?.dataset.head === '1'",
            frame=0,
            timeout=READY_S,
            what="the embedded explorer, ready, on head 2",
        )
        assert page.run(SHOWN, frame=0)["temperature"] == "1.05"  # the view of the link, restored
        cells = page.run(CELLS, frame=0)
        np.testing.assert_allclose(as_matrix(cells), independent_weights(model.DEFAULT_TEXT, 1, 1.05, 8.0), atol=1e-9)
        # the host script gives the frame its content's height (the frame says it in a message)
        content = page.run("() => Math.ceil(document.body.getBoundingClientRect().height)", frame=0)
        page.wait(
            "(h) => { const f = document.querySelector('iframe'); return f.style.height.endsWith('px')"
            " && Math.abs(f.getBoundingClientRect().height - h) <= 2; }",
            content,
            what=f"the frame to be {content} px tall, its content's height",
        )
        assert content > 300, f"the embedded heatmap is only {content} px tall"
        assert page.run(drivers.TAKE_PROBLEMS, frame=0) == [], "the embedded page reported problems"
        page.assert_no_problems()
    finally:
        host.shutdown()
