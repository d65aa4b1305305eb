"""Shared fixtures. Unit tests need none of this; browser tests use `bundle`, `explorer`.

Browser tests drive Debian's Chromium through Playwright against dist/ built by
build.py and served on 127.0.0.1 under a sub-path (as GitHub Pages serves a
project site), with the real Pyodide and NumPy. Every page the fixtures open
records console errors, page errors and any request to another host; a test
fails if any happened. Most pages open in one on-disk profile per test process
(`profile`: storage cleared, compiled WebAssembly kept); tests of a first
visit's downloads and of failed requests use fresh contexts (`browser`).
"""

from __future__ import annotations

import collections
import functools
import http.server
import os
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT))

from build import BundleHandler  # noqa: E402  (the server build.py uses: same MIME types)

SUBPATH = "/attention-explorer/"
DEBIAN_CHROMIUM = "/usr/bin/chromium"


def playwright_chromium() -> str:
    """Where Playwright's own Chromium is (`python -m playwright install chromium` puts it there)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        return pw.chromium.executable_path


def choose_chromium(env=os.environ, exists=os.path.exists, playwright=playwright_chromium) -> str:
    """The browser tests' Chromium: $AE_CHROMIUM if set; else Debian's, if installed; else
    Playwright's own (machines without apt-get: macOS, Fedora; dev.sh installs it there)."""
    if env.get("AE_CHROMIUM"):
        return env["AE_CHROMIUM"]
    if exists(DEBIAN_CHROMIUM):
        return DEBIAN_CHROMIUM
    return playwright()


CHROMIUM = choose_chromium()
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-gpu",
    "--no-first-run",
]
READY_TIMEOUT_MS = 120_000  # Pyodide + NumPy boot takes seconds on a 2-core machine; allow for load


class SubpathHandler(BundleHandler):
    """Serves a folder only under SUBPATH; anything else is a 404 (catches absolute URLs)."""

    def translate_path(self, path):
        if not path.startswith(SUBPATH):
            return "/nonexistent/outside-the-subpath"
        return super().translate_path("/" + path[len(SUBPATH) :])

    def log_message(self, *args):  # keep test output quiet
        pass


def serve_folder(folder: Path, handler=SubpathHandler):
    h = functools.partial(handler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# Modules that share one page load (see "pages are shared" below). Under pytest-xdist with
# `--dist loadfile` (`bash dev.sh test`) each file is one unit of work, and each of these groups too,
# so a worker loads a shared page once. A new module using `live` belongs in "explorer".
SHARED_PAGE_MODULES = {
    "explorer": (
        "test_browser_core_agreement.py",
        "test_browser_panels.py",
        "test_browser_qk.py",
        "test_browser_research.py",
        "test_browser_share.py",
        "test_browser_skeleton.py",
    ),
    "laptop": ("test_browser_keyboard.py", "test_browser_layout.py", "test_browser_tour.py"),
}


# The longest units first (a page load each, and the axe-core checks), so that the two workers end
# together: modules run in this order, then every other file in its usual order.
LONGEST_FIRST = (
    "test_browser_engines.py",
    *SHARED_PAGE_MODULES["explorer"],
    "test_browser_a11y.py",
    "test_browser_reader_work.py",
    "test_browser_code.py",
    "test_browser_trained.py",
    *SHARED_PAGE_MODULES["laptop"],
)


def pytest_collection_modifyitems(items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept within


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with each group of SHARED_PAGE_MODULES one unit, handed out in collection
    order (LONGEST_FIRST), not by number of tests. (pytest-xdist's `loadgroup` would read xdist_group
    marks, but it cannot mark node ids under pytest 9.2: it groups nothing.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False

    group_of = {name: group for group, names in SHARED_PAGE_MODULES.items() for name in names}

    class SharedPageScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path.endswith("test_browser_engines.py"):  # one unit per engine: the two run side by side
                return path + "[" + nodeid.rsplit("[", 1)[-1]
            return group_of.get(path.rsplit("/", 1)[-1], path)

    return SharedPageScheduling(config, log)


@pytest.fixture(scope="session", autouse=True)
def trained_model_installed():
    """The trained model installed from its bundle, as the page's worker installs it after the download.

    build.minilm_bundle() makes the bundle once (about 20 s) and caches it; a missing pinned file is a
    failure naming what to run, never a skip. Tests of the not-yet-downloaded state make their own
    trained.TrainedModel(minilm.SPEC).
    """
    import gzip

    import build
    from attention_explorer.models import minilm

    if not minilm.MODEL.available:
        try:
            blob = build.minilm_bundle().read_bytes()
        except build.BuildError as exc:
            pytest.fail(f"the trained model's files are not available: run `python build.py`.\n{exc}")
        minilm.MODEL.install(gzip.decompress(blob))
    return minilm.MODEL


@pytest.fixture(scope="session")
def bundle(tmp_path_factory):
    """dist/ built once per test session into a temporary folder (runtime from the cache)."""
    import build

    return build.build(dist=tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def server(bundle):
    srv = serve_folder(bundle)
    yield srv
    srv.shutdown()


@pytest.fixture(scope="session")
def base_url(server):
    return f"http://127.0.0.1:{server.server_address[1]}{SUBPATH}"


@pytest.fixture(scope="session")
def _playwright():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `bash .ci/run` or `apt-get install -y chromium`")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(_playwright):
    """Chromium whose contexts each start with nothing stored: for tests of what a first visit
    downloads and stores (the trained model), or that intercept requests."""
    b = _playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    b.close()


class Profile:
    """A Chromium profile on disk whose pages open_page opens with the site's storage cleared (what the
    page stores: the trained model's files in Cache Storage) but the HTTP cache kept. Chromium keeps
    the WebAssembly it compiled for Pyodide beside the cached files, so a page load after the first
    skips the ~5 s of CPU that compiling it takes on these two cores (measured: ~14.5 s of machine CPU
    a cold load, ~8 s a warm one). What a first visit does is tested on `browser`."""

    def __init__(self, context):
        self.context = context


@pytest.fixture(scope="session")
def profile(_playwright, tmp_path_factory):
    context = _playwright.chromium.launch_persistent_context(
        tmp_path_factory.mktemp("chromium-profile"), executable_path=CHROMIUM, args=CHROMIUM_ARGS
    )
    yield Profile(context)
    context.close()


class PageOnly:
    """open_page's handle for a page of a Profile: closing it closes the page (the profile stays)."""

    def __init__(self, page):
        self.page = page

    def close(self):
        self.page.close()


class PageProblems:
    """Console errors, page errors and requests to other hosts seen by one page; also the page's last
    console messages of any kind, which a failed test's report shows (see pytest_runtest_makereport)."""

    def __init__(self, page, allowed_origins: tuple[str, ...]):
        self.items: list[str] = []
        self.allowed = allowed_origins
        self.page = page
        self.console = collections.deque(maxlen=30)
        page.on("console", self._on_console)
        page.on("pageerror", lambda e: self.items.append(f"page error: {e}"))
        page.on("request", self._on_request)
        OPEN_PAGES.append(self)
        page.on("close", lambda _: OPEN_PAGES.remove(self))

    def _on_console(self, message):
        self.console.append(f"{message.type}: {message.text[:300]}")
        if message.type == "error":
            self.items.append(f"console error: {message.text}")

    def _on_request(self, request):
        url = request.url
        if url.startswith("blob:") or url.startswith("data:"):
            url = url.split(":", 1)[1] if url.startswith("blob:") else ""
        if url and not url.startswith(self.allowed):
            self.items.append(f"request to another host: {request.url}")

    def assert_none(self):
        """Fail on what was seen since the last call (a shared page's problem fails one test, not every later one)."""
        items, self.items = self.items, []
        assert not items, "the page reported problems:\n" + "\n".join(items)


OPEN_PAGES: list[PageProblems] = []  # pages open now, in this process

# What a failed browser test's report adds for each page still open: where the page stood (a flaky
# failure on a shared machine can then be read from the CI log, not only rerun).
PAGE_STATE = """() => ({
    url: location.href, state: document.documentElement.dataset.state, scrollY: Math.round(scrollY),
    viewport: innerWidth + 'x' + innerHeight, focused: document.activeElement?.outerHTML.slice(0, 120),
    message: document.getElementById('input-message')?.textContent,
    sent: (globalThis.attentionExplorer?.sent || []).slice(-20).join(' '),
    waiting: JSON.stringify(globalThis.attentionExplorer?.waiting?.()),
    heatmap: Object.entries(document.querySelector('svg[data-view="attention-matrix"]')?.dataset || {})
        .map(([k, v]) => k + '=' + String(v).slice(0, 80)).join(' '),
})"""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and OPEN_PAGES:
        for k, seen in enumerate(OPEN_PAGES):
            try:  # with a time limit: a page whose main thread hangs must not hang the run
                state = seen.page.wait_for_function(f"({PAGE_STATE})()", timeout=5000, polling=100).json_value()
            except Exception as exc:  # a crashed, closing or hung page: say so, keep the report
                state = {"could not read the page": str(exc).splitlines()[0]}
            lines = [f"{key}: {value}" for key, value in state.items()]
            lines += ["last console messages:", *seen.console]
            report.sections.append((f"open page {k + 1} of {len(OPEN_PAGES)}", "\n".join(lines)))
    return report


# Records the MutationObservers watching the whole document, each with the stack that made it;
# window.__documentObserversMadeBy(text) counts those whose stack names text: the bridge imports
# PyScript without the one it would put there (test_browser_panels). Playwright's own script makes one.
OBSERVER_PROBE = """(() => {
  const watching = new Map();
  window.__documentObserversMadeBy = (text) => [...watching.values()].filter((s) => s.includes(text)).length;
  const { observe, disconnect } = MutationObserver.prototype;
  MutationObserver.prototype.observe = function (target, options) {
    if (target === document) watching.set(this, new Error().stack);
    return observe.call(this, target, options);
  };
  MutationObserver.prototype.disconnect = function () {
    watching.delete(this);
    return disconnect.call(this);
  };
  // window.__statusLog: the status line's [text, progress value, progress max, box height in px] from
  // the end of parsing (before the bridge runs), each change once (test_browser_skeleton, _layout)
  window.__statusLog = [];
  document.addEventListener("readystatechange", () => {
    const text = document.getElementById("runtime-status-text"), bar = document.getElementById("runtime-progress");
    if (document.readyState !== "interactive" || !text || !bar) return;
    const note = () => {
      const entry = [text.textContent, Number(bar.value), Number(bar.max),
                     document.getElementById("runtime-status").getBoundingClientRect().height];
      const last = window.__statusLog.at(-1);
      if (!last || last[0] !== entry[0] || last[1] !== entry[1]) window.__statusLog.push(entry);
    };
    note();
    observe.call(new MutationObserver(note), text, { childList: true, characterData: true, subtree: true });
  });
})();"""


def open_page(where, url: str, *, viewport=None, color_scheme="light", allowed_origins=None):
    """A new page at url with problem tracking, in a new context of `where` (a browser) or in `where`
    (a Profile, with the url's site storage cleared first); returns (a handle to close, page, problems)."""
    origin = "/".join(url.split("/", 3)[:3])
    allowed = allowed_origins or (origin + "/",)
    size = viewport or {"width": 1280, "height": 900}
    if isinstance(where, Profile):
        page = where.context.new_page()
        cdp = where.context.new_cdp_session(page)
        cdp.send(
            "Storage.clearDataForOrigin",
            {"origin": origin, "storageTypes": "cache_storage,indexeddb,local_storage,service_workers,cookies"},
        )
        cdp.detach()
        page.set_viewport_size(size)
        page.emulate_media(color_scheme=color_scheme)
        page.add_init_script(OBSERVER_PROBE)
        context = PageOnly(page)
    else:
        context = where.new_context(viewport=size, color_scheme=color_scheme)
        context.add_init_script(OBSERVER_PROBE)
        page = context.new_page()
    problems = PageProblems(page, allowed)
    page.goto(url)
    return context, page, problems


def wait_ready(page, timeout=READY_TIMEOUT_MS):
    """Wait for the page's explicit readiness signal; fail at once on the error state."""
    # both waits polled every 100 ms, not every animation frame (Playwright's default): polling by
    # frames makes Chromium render 60 frames a second through the whole start-up and the warm-up,
    # which takes the cores from Pyodide (bench_browser.load_until_ready)
    page.wait_for_function(
        "['ready','error'].includes(document.documentElement.dataset.state)", timeout=timeout, polling=100
    )
    state = page.evaluate("document.documentElement.dataset.state")
    assert state == "ready", f"runtime failed: {page.inner_text('#runtime-status')}"
    # a test starts once the worker's warm-up is over (bridge warmUp), which must leave the page as it
    # was: its rehearsed slider moves come back as patches applied to copies of the panels only, so the
    # heatmap still shows the T of the slider (the rehearsal's moves are other values: page.REHEARSAL_MOVES)
    page.wait_for_function("!window.attentionExplorer.waiting().warming", timeout=timeout, polling=100)
    shown = page.evaluate("""() => { const svg = document.querySelector('svg[data-view="attention-matrix"]');
        const slider = document.getElementById('temperature');
        return svg && slider ? [parseFloat(svg.dataset.temperature), parseFloat(slider.value)] : null; }""")
    assert shown is None or shown[0] == shown[1], (
        f"after the warm-up the heatmap shows T={shown[0]}, the slider {shown[1]}"
    )


# The shared page is one very tall viewport, so every panel is on screen and is redrawn at
# once (the page defers panels far off screen; test_browser_layout tests that separately).
TALL = {"width": 1280, "height": 12000}
LAPTOP = {"width": 1280, "height": 800}


# Page loads are the suite's main cost (Pyodide + NumPy boot: seconds of CPU each on 2 cores), so
# pages are shared: one tall page across the "explorer" modules of SHARED_PAGE_MODULES, one
# laptop-sized page across the "laptop" ones (each group runs on one worker: see above). Each module
# gets the page back at the top, in the default view (back_to_default).


def ready_page(where, base_url, viewport):
    """Yields (page, problems) of a new page (open_page) loaded and ready in that window; closes it after."""
    context, page, problems = open_page(where, base_url, viewport=viewport)
    try:
        wait_ready(page)
        yield page, problems
    finally:
        context.close()


@pytest.fixture(scope="session")
def _tall_page(profile, base_url):
    yield from ready_page(profile, base_url, TALL)


@pytest.fixture(scope="session")
def _laptop_page(profile, base_url):
    yield from ready_page(profile, base_url, LAPTOP)


def unfold_all(page):
    """Open every folded part of the page (details.more, as a reader clicking each "More"), so that every
    panel is shown; the worker draws the panels that came into view."""
    page.evaluate("""() => { for (const d of document.querySelectorAll('details.more:not([open])')) d.open = true; }""")


@pytest.fixture(scope="module")
def explorer(_tall_page):
    """The shared tall page, ready, in the default view, every folded part open: (page, problems)."""
    back_to_default(_tall_page[0])
    unfold_all(_tall_page[0])
    return _tall_page


@pytest.fixture
def live(explorer):
    """The shared ready page; each test using it also fails on any page problem."""
    page, problems = explorer
    yield page
    problems.assert_none()


@pytest.fixture(scope="module")
def laptop(_laptop_page):
    """A shared page in a 1280×800 window (panels far below are deferred), ready, in the default view,
    scrolled to the top: (page, problems)."""
    back_to_default(_laptop_page[0])
    return _laptop_page


MATRIX = 'svg[data-view="attention-matrix"]'


def to_the_top(page):
    """Scroll a page to the top as a reader would (a wheel event first: a scroll the page itself began,
    to a stage chosen in the test before, is then over and not finished later), and wait until that
    scroll has settled and the bridge has reacted to it (scrollend, then two frames).

    The page's own scroll, if one still runs, ends first (the page still for 10 frames): a reader's
    scroll that cuts the page's short keeps the bridge waiting for the reader's own scrollend, which
    a real wheel brings later but this instant one does not, and a later scroll nobody asked for (the
    reset's redraw) then moved the stepper (seen once on the 12,000 px page: stage 2 after Reset)."""
    page.evaluate("""() => new Promise((resolve, reject) => {
        if (window.scrollY === 0) return resolve();
        let last = window.scrollY, still = 0, scrolled = false;
        const limit = setTimeout(() => reject(
            new Error(`to_the_top: ${scrolled ? 'no scrollend' : 'the page still scrolling'}`
                + ` after 10 s (scrollY ${window.scrollY}, still for ${still} frames)`)), 10000);
        const whenStill = () => {
            still = window.scrollY === last ? still + 1 : 0;
            last = window.scrollY;
            if (still < 10) return requestAnimationFrame(whenStill);
            if (window.scrollY === 0) { clearTimeout(limit); return resolve(); }
            window.addEventListener('scrollend', () => requestAnimationFrame(() => requestAnimationFrame(() => {
                clearTimeout(limit); resolve(); })), { once: true });
            scrolled = true;
            window.dispatchEvent(new WheelEvent('wheel'));
            window.scrollTo({ top: 0, behavior: 'instant' });
        };
        requestAnimationFrame(whenStill);
    })""")


def reset_page(page):
    """A shared page at the top, reset to the default state, once its heatmap shows it (panels far off
    screen are redrawn only when they come back, so the page goes to the top first)."""
    from attention_explorer import tokens
    from attention_explorer.models import designed

    n = len(tokens.tokenize(designed.DEFAULT_TEXT)) + 1  # the designed model's start token, then the words
    # A page opened later in the same profile (a module's phone page) is the front tab, and a tab behind
    # it renders frames only now and then: requestAnimationFrame stopped after a few frames and a
    # scrollend never came (seen: to_the_top timing out on the laptop page after the phone tests).
    page.bring_to_front()
    to_the_top(page)
    page.click("#reset")
    page.wait_for_function(f"""(() => {{ const s = document.querySelector('{MATRIX}');
        return s.dataset.model === 'designed' && s.dataset.head === '0' && s.dataset.temperature === '1'
            && s.dataset.query === '{designed.DEFAULT_QUERY}'
            && document.querySelector('[data-stage-detail]').dataset.stageDetail === '0'
            && !document.querySelector('{MATRIX} [data-masked]')
            && document.querySelectorAll('{MATRIX} rect[data-i]').length === {n * n}; }})()""")
    page.mouse.move(0, 0)
    return page


@pytest.fixture
def fresh(live):
    """The shared page back at the top (the previous test may have left it scrolled, with the heatmap off
    screen and so not redrawn), reset to the default state."""
    return reset_page(live)


def back_to_default(page):
    """A shared page as a new module expects it: no dialog open, nothing focused, every folded part
    folded, at the top, the default view."""
    page.evaluate("""() => { for (const d of document.querySelectorAll('dialog[open]')) d.close();
        for (const d of document.querySelectorAll('details.more[open]')) d.open = false;
        document.activeElement?.blur?.(); }""")
    reset_page(page)


def scroll_to(page, element_id: str):
    """Scroll an element into view as a reader scrolling down would find it: the pre-rendered panels
    above it shown first (build.py ships them in prerendered.json, which the page shows as they come
    near), so they do not grow and push it off screen after the jump. A folded part it is in is opened
    first, as a reader would click its "More"."""
    page.evaluate(
        """async (id) => {
        const el = document.getElementById(id);
        for (let d = el.closest('details:not([open])'); d; d = d.parentElement?.closest('details:not([open])'))
            d.open = true;
        const pending = [...document.querySelectorAll('[data-panel] > template[data-prerendered]')]
            .filter((t) => t.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING);
        if (pending.length) {
            const markup = await (await fetch('prerendered.json')).json();
            for (const t of pending) if (t.isConnected) {
                t.insertAdjacentHTML('beforebegin', markup[t.parentElement.dataset.panel]);
                t.remove();
            }
        }
        el.scrollIntoView(); }""",
        element_id,
    )


def cut_choices(page, more: dict[str, list[str]] | None = None) -> list[str]:
    """The choices of the settings card's selects that would show cut off once chosen, one line each:
    each option's text (and the texts in more, by select id: another layer's heads, say) against the
    select's content box less the drop-down arrow Chromium draws inside it (~20 px; 24 allowed)."""
    return page.evaluate(
        """(more) => {
        const ctx = document.createElement('canvas').getContext('2d'), cut = [];
        for (const sel of document.querySelectorAll('#settings-card select')) {
            const st = getComputedStyle(sel);
            ctx.font = `${st.fontWeight} ${st.fontSize} ${st.fontFamily}`;
            const room = sel.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight) - 24;
            for (const text of [...[...sel.options].map((o) => o.text), ...(more[sel.id] || [])]) {
                const w = ctx.measureText(text).width;
                if (w > room) cut.push(`#${sel.id}: "${text}" needs ${Math.ceil(w)} px, has ${Math.floor(room)}`);
            }
        }
        return cut;
    }""",
        more or {},
    )


@functools.lru_cache(maxsize=1)
def _axe_source() -> str:
    """axe-core, pinned and verified by build.py like the runtime (cache only, never shipped in dist/)."""
    import build

    return build.cached_file("axe-core", "axe.min.js").read_text(encoding="utf-8")


def axe_violations(page, context: str = "document", colours_only: bool = False) -> list[str]:
    """Every axe-core violation on the page (any impact), one readable line per rule and node.
    colours_only: only the rules that look at colours (axe's "cat.color" rules that are on by default:
    colour contrast, links told apart by colour), for the same page in the other colour scheme."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.add_script_tag(content=_axe_source())
    only = (
        (
            "runOnly: { type: 'rule', values: axe._audit.rules"
            ".filter((r) => r.enabled && r.tags.includes('cat.color')).map((r) => r.id) }, "
        )
        if colours_only
        else ""
    )
    results = page.evaluate(f"""async () => {{
        const r = await axe.run({context}, {{ {only}resultTypes: ["violations"] }});
        return r.violations.map((v) => ({{ id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map((n) => n.target.join(" ") + " :: "
                + (n.failureSummary || "").split("\\n").slice(1, 2).join("")) }}));
    }}""")
    return [
        f"{v['id']} ({v['impact']}): {v['help']}\n    "
        + "\n    ".join(v["nodes"][:6])
        + (f"\n    … and {len(v['nodes']) - 6} more" if len(v["nodes"]) > 6 else "")
        for v in results
    ]
