"""Load against each engine's own floor, and slider latency, on Firefox and WebKit (Safari's engine).

    .venv/bin/python build.py && .venv/bin/python bench/bench_engines.py [--runs N] [--moves N]
        [--engine firefox|webkit] [--only load|slider]

bench_browser.py measures Chromium; this measures two of its figures, the same way, on the two other
engines readers have (issue 36): cold-load `ready` against the floor, and the slider's p95. Driven by
tests/engines/drivers.py (`bash dev.sh test` installs the engines and their drivers):
Firefox ESR (Debian's firefox-esr, over WebDriver BiDi by puppeteer-core, headless) and WebKitGTK
(Debian's webkit2gtk-driver: MiniBrowser through WebKitWebDriver and Selenium, on its own Xvfb screen).
bench_browser's helpers run here unchanged on EngineTab, a page with the methods of Playwright's they use.

Served as for Chromium: dist/ gzip-compressed under /attention-explorer/ (bench/gzip_server.py) with
bench_browser's floor page (floor.html, floor.py) beside it. Neither driver can run a script before the
page's own, as Playwright's add_init_script does for Chromium, so the server puts bench_browser's
INSTRUMENT first in every HTML page's <head> instead: the same script, in the real page and the floor.

- load (--runs of each page on each engine, default 10: both engines' loads and sliders take 3-6 minutes
  on this 2-core machine; a WebKit round is ~15 s): real and floor alternating, the order flipped
  each round; each load in a new browser with a new, empty profile (no HTTP cache, no compiled
  WebAssembly: puppeteer gives Firefox a new temporary profile at each launch, and MiniBrowser in
  automation mode keeps its data in memory only). Time from navigation start to html[data-state=
  "ready"], from the page's own clock (bench_browser.load_until_ready: INSTRUMENT's observer notes
  it; the page is polled every 100 ms only to know when to read it). Medians, the ratio real/floor
  against bench_browser.BUDGET_RATIO, the ratio round by round and a 90% bootstrap interval over the
  rounds (bench_browser.ratio_interval: with ten rounds it is often wider than the budget's margin,
  which the interval then shows). Then where the time goes:
  milestones of both pages (DOMContentLoaded, first contentful paint, the real page's status line
  as INSTRUMENT saw it change, the floor's own phases: Pyodide booted, NumPy imported, ready) and
  the steps between them, real against floor.
- slider (a 1280x800 viewport, a new browser, the page loaded cold first): bench_browser.slider_at
  at 8 and 32 tokens, --moves moves each (default 30): #temperature moved -> the heatmap shows that
  T and the next frame is rendered, p95 (nearest rank) against bench_browser.BUDGET_P95_MS.

Prints figures and a summary table; writes every figure to bench/results/engines/<UTC time>.json.
Asserts nothing. Every wait has a time limit (bench_browser's constants; the drivers' own: a page
load 120 s) and says what it waited for; past a section's backstop (bench_browser.time_limit) the
browsers this started are stopped and the process ends. The exit status is non-zero when a section
could not run (an engine not installed, a page that never got ready).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "engines"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_browser import (  # noqa: E402
    BUDGET_P95_MS,
    BUDGET_RATIO,
    FLOOR_FILES,
    INSTRUMENT,
    READY_TIMEOUT_MS,
    STAGE_TIMEOUT_S,
    BenchError,
    load_until_ready,
    med,
    met,
    p95,
    print_ratio,
    run_sections,
    slider_at,
)
from drivers import FIREFOX, MINIBROWSER, WEBKIT_DRIVER, XVFB, FirefoxPage, WebKitPage  # noqa: E402
from gzip_server import GzipServer  # noqa: E402

ENGINES = ("firefox", "webkit")
VIEWPORT = (1280, 800)  # CSS px, as bench_browser's loads and slider series
RESULTS = ROOT / "bench" / "results" / "engines"

# In the page: src (a function's source or an expression, as Playwright's evaluate takes) applied to arg.
APPLY_JS = "(src, arg) => { const v = (0, eval)(`(${src})`); return typeof v === 'function' ? v(arg) : v; }"
# The same as a predicate for the drivers' wait (polled in the page every 100 ms): args [src, arg].
WAIT_JS = f"([src, arg]) => ({APPLY_JS})(src, arg)"

# In the page, once ready: what INSTRUMENT and the page noted on the way (ms from navigation start).
LOAD_INFO_JS = """() => ({
  status: window.__bench.status,
  phases: JSON.parse(document.documentElement.dataset.phases || 'null'),
  dcl: performance.getEntriesByType('navigation')[0]?.domContentLoadedEventStart ?? null,
  fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null})"""

# The real page's status line (site/launch.js, bridge/boot.js), by the text before its "…": the
# milestone each one marks, in the order they come.
STATUS_MILESTONES = {
    "Downloading Python": "started",
    "Starting Python": "downloaded",
    "Loading NumPy": "pyodide",
    "Computing attention in Python": "numpy",
}
# (key, label) of the load's milestones; the floor has dcl, fcp, pyodide, numpy and ready
MILESTONES = [
    ("dcl", "DOMContentLoaded (HTML parsed, scripts run)"),
    ("fcp", "first contentful paint"),
    ("started", "  'Downloading Python…': worker started"),
    ("downloaded", "  'Starting Python…': runtime's bytes all in"),
    ("pyodide", "Pyodide booted ('Loading NumPy…'; floor: PyWorker)"),
    ("numpy", "NumPy in ('Computing attention…'; floor: import)"),
    ("ready", "ready (data-state=ready)"),
]
CHAIN = ["dcl", "pyodide", "numpy", "ready"]  # the steps both pages take, one after another
STEP_NAMES = {
    "start": "navigation",
    "dcl": "DOMContentLoaded",
    "pyodide": "Pyodide booted",
    "numpy": "NumPy in",
    "ready": "ready",
}
# the real page's own steps from DOMContentLoaded to Pyodide booted: (from, to, label)
SUBSTEPS = [
    ("dcl", "started", "real: DOMContentLoaded -> worker started"),
    ("started", "downloaded", "real:   -> runtime's bytes all in"),
    ("downloaded", "pyodide", "real:   -> Pyodide booted"),
]


def engine_error(engine: str, exc: Exception):
    """A driver's failure as Playwright's Error (its TimeoutError for a time limit), the errors that
    bench_browser's helpers catch and name what they waited for."""
    from playwright.sync_api import Error as PlaywrightError, TimeoutError as PlaywrightTimeout

    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    # the drivers' wait ("after N s still waiting for ..."), Selenium's TimeoutException, puppeteer's "timed out"
    timed_out = "still waiting for" in text or "Timeout" in type(exc).__name__ or "timed out" in text.lower()
    named = text if text.lower().startswith(engine) else f"{engine}: {text}"  # the drivers' own name theirs
    return (PlaywrightTimeout if timed_out else PlaywrightError)(named)


class EngineTab:
    """A new browser with a new, empty profile and one page (viewport in CSS px), with the methods of
    a Playwright page that bench_browser's helpers call (and its errors: engine_error)."""

    open_tabs: set[EngineTab] = set()  # what kill_open_tabs stops when a section's backstop fires

    def __init__(self, engine: str, url: str, viewport=VIEWPORT):
        self.engine = engine
        try:
            if engine == "firefox":
                self.driver = FirefoxPage([], [url], *viewport)
            else:
                self.driver = WebKitPage([], *viewport)
        except Exception as exc:
            raise engine_error(engine, exc) from None
        self.version = self.driver.version
        EngineTab.open_tabs.add(self)

    def _do(self, call, *args, **kwargs):
        try:
            return call(*args, **kwargs)
        except Exception as exc:
            raise engine_error(self.engine, exc) from None

    def goto(self, url: str):
        self._do(self.driver.goto, url)  # returns at the load event (the drivers' limit: 120 s)

    def evaluate(self, js: str, arg=None):
        return self._do(self.driver.run, APPLY_JS, js, arg)

    def wait_for_function(self, js: str, timeout: float, polling=100):
        """Until js is truthy (timeout in ms); the drivers poll every 100 ms, as load_until_ready asks."""
        self._do(self.driver.wait, WAIT_JS, [js, None], timeout=timeout / 1000, what=f"{js} (on {self.engine})")

    def wait_for_timeout(self, ms: float):
        time.sleep(ms / 1000)

    def inner_text(self, selector: str) -> str:
        return self.evaluate("(s) => document.querySelector(s).innerText", selector)

    def locator(self, selector: str):
        tab = self

        class Locator:
            def scroll_into_view_if_needed(self):
                tab.evaluate(
                    """(s) => { const el = document.querySelector(s), r = el.getBoundingClientRect();
                    if (r.top < 0 || r.bottom > innerHeight) el.scrollIntoView({block: 'center'}); }""",
                    selector,
                )

        return Locator()

    def close(self):
        """Close the browser; if its driver cannot, stop it without (kill)."""
        EngineTab.open_tabs.discard(self)
        try:
            self.driver.close()
        except Exception as exc:
            self.kill()
            raise engine_error(self.engine, exc) from None

    def kill(self):
        """Stop the browser without its driver's help (that may be what hangs): the Firefox driver's
        Node process on SIGTERM closes Firefox (puppeteer's handleSIGTERM); WebKitWebDriver killed and
        the Xvfb screen closed, MiniBrowser loses its display and ends."""
        if self.engine == "firefox":
            self.driver._proc.terminate()  # FirefoxPage offers no way but its own close()
        else:
            self.driver.driver.service.process.kill()
            self.driver.screen.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        try:
            self.close()
        except Exception:
            if exc_type is None:  # else the error on its way says more
                raise


def kill_open_tabs():
    for tab in list(EngineTab.open_tabs):
        try:
            tab.kill()
        except Exception as exc:  # the process is ending: say what may be left, and go on
            print(f"bench_engines: could not stop a {tab.engine} browser: {exc}", file=sys.stderr)


def missing_engine(engine: str) -> str | None:
    """What of the engine is not installed, or None."""
    need = [FIREFOX] if engine == "firefox" else [WEBKIT_DRIVER, str(MINIBROWSER), XVFB]
    missing = [p for p in need if not os.access(p, os.X_OK)]
    if engine == "firefox" and not (ROOT / "tests" / "engines" / "node_modules" / "puppeteer-core").is_dir():
        missing.append("tests/engines/node_modules/puppeteer-core")
    return ", ".join(missing) or None


# ---------------------------------------------------------------- load


def cold_load(engine: str, url: str) -> tuple[dict, str]:
    """One first visit in a new browser: ({ready, dcl, fcp, pyodide, numpy, ...: ms from navigation
    start, None or missing where the page has no such milestone}, the engine's version)."""
    with EngineTab(engine, url) as tab:
        ready = load_until_ready(tab, url)
        info = tab.evaluate(LOAD_INFO_JS)
    if ready is None:
        raise BenchError(f"{url} on {engine}: ready, but INSTRUMENT noted no time (was it served in <head>?)")
    got = {"ready": ready, "dcl": info["dcl"], "fcp": info["fcp"]}
    for t, text in reversed(info["status"] or []):  # each milestone's first time
        key = STATUS_MILESTONES.get(text.split("…")[0])
        if key:
            got[key] = t
    if info["phases"]:  # the floor's own (FLOOR_HTML)
        got.update(pyodide=info["phases"]["pyodide"], numpy=info["phases"]["numpy"])
    return got, tab.version


def bench_load(engine: str, url: str, runs: int) -> dict:
    """runs cold loads of each page, alternating; prints and returns {real: [load], floor: [load], ...}."""
    loads, version = {"real": [], "floor": []}, ""
    for k in range(runs):
        for which in ("real", "floor") if k % 2 == 0 else ("floor", "real"):
            got, version = cold_load(engine, url if which == "real" else url + "floor.html")
            loads[which].append(got)
    real, floor = ([x["ready"] for x in loads[w]] for w in ("real", "floor"))  # ms, the k-th of each in round k
    print(
        f"{engine} {version}: load ({runs} first visits of each page, alternating, each in "
        "a new browser and profile; medians [min-max]; ms from navigation start)"
    )
    for label, xs in (
        ("real page: data-state=ready, cold", real),
        ("floor (bare Pyodide + NumPy worker), cold", floor),
    ):
        print(f"  {label:42s} {med(xs):7.0f} ms  [{min(xs):.0f}-{max(xs):.0f}]")
    ratio, rounds, interval = print_ratio(real, floor)
    print_phases(loads)
    return {
        "version": version,
        "loads": loads,
        "ratio": ratio,
        "ratio_rounds": rounds,
        "ratio_interval_90": interval,
        "ready_real_ms": med(real),
        "ready_floor_ms": med(floor),
    }


def print_phases(loads: dict):
    """Where the time goes: each milestone (median over the loads) on both pages, then each step of
    CHAIN (median of each load's own difference), real against floor, the real page's between
    DOMContentLoaded and Pyodide booted split at its status line's milestones."""

    def at(which, key):
        xs = [x[key] for x in loads[which] if x.get(key) is not None]
        return med(xs) if xs else None

    def cell(v, sign=False):
        return f"{v:+9.0f}" if sign and v is not None else f"{v:9.0f}" if v is not None else f"{'-':>9s}"

    print(f"  {'where the time goes (medians, ms)':52s} {'real':>9s} {'floor':>9s} {'real-floor':>10s}")
    for key, label in MILESTONES:
        r, f = at("real", key), at("floor", key)
        print(f"    {label:50s} {cell(r)} {cell(f)} {cell(r - f if None not in (r, f) else None, True):>10s}")

    def step(which, a, b):
        xs = [x[b] - x[a] for x in loads[which] if x.get(a) is not None and x.get(b) is not None]
        return med(xs) if xs else None

    print("  steps (median of each load's own difference)")
    for a, b in zip(["start", *CHAIN], CHAIN):
        if a == "start":
            r, f = at("real", b), at("floor", b)
        else:
            r, f = step("real", a, b), step("floor", a, b)
        name = f"{STEP_NAMES[a]} -> {STEP_NAMES[b]}"
        print(f"    {name:50s} {cell(r)} {cell(f)} {cell(r - f if None not in (r, f) else None, True):>10s}")
        if (a, b) == ("dcl", "pyodide"):  # the real page's own milestones in between
            for c, d, label in SUBSTEPS:
                print(f"      {label:48s} {cell(step('real', c, d))}")


# ---------------------------------------------------------------- slider


def bench_slider(engine: str, url: str, moves: int) -> dict:
    print(
        f"{engine}: slider: #temperature -> heatmap shows the new T, next frame rendered; {moves} moves each, "
        "medians and p95 (nearest rank)"
    )
    with EngineTab(engine, url) as tab:
        load_until_ready(tab, url)
        series = {n: slider_at(tab, n, moves) for n in BUDGET_P95_MS}
    return {
        "version": tab.version,
        **{
            n: {"p95_ms": p95(parts["total"]), "median_ms": med(parts["total"]), "parts": parts}
            for n, parts in series.items()
        },
    }


# ---------------------------------------------------------------- summary


def print_summary(results: dict):
    print("summary (ready: medians of cold loads; slider: p95 of slider -> heatmap on screen, next frame)")
    print(
        (
            f"  {'engine':22s} {'real':>7s} {'floor':>7s} {'ratio':>7s} {'':9s}"
            + "".join(f" {f'{n} tokens':>10s} {'':9s}" for n in BUDGET_P95_MS)
        ).rstrip()
    )
    for engine, r in results.items():
        load, slider = r.get("load"), r.get("slider")
        row = f"  {(engine + ' ' + (r.get('version') or '').split('/')[-1])[:22]:22s}"
        if load:
            row += (
                f" {load['ready_real_ms']:7.0f} {load['ready_floor_ms']:7.0f} {load['ratio']:6.2f}x"
                f" {met(load['ratio'] <= BUDGET_RATIO):9s}"
            )
        else:
            row += f" {'(not measured)':>32s}"
        for n, budget in BUDGET_P95_MS.items():
            s = slider and slider.get(n)
            row += f" {s['p95_ms']:7.1f} ms {met(s['p95_ms'] <= budget):9s}" if s else f" {'-':>10s} {'':9s}"
        print(row.rstrip())
    print(
        f"  budgets: ratio <= {BUDGET_RATIO}x; slider p95 "
        + ", ".join(f"<= {b} ms at {n} tokens" for n, b in BUDGET_P95_MS.items())
    )


def write_results(results: dict, args) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%SZ", time.gmtime())
    path = RESULTS / f"{stamp}.json"
    doc = {
        "time": stamp,
        "runs": args.runs,
        "moves": args.moves,
        "load_average": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "budgets": {"ratio": BUDGET_RATIO, "slider_p95_ms": BUDGET_P95_MS},
        "engines": results,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="cold loads of each page on each engine (default 10)")
    ap.add_argument("--moves", type=int, default=30, help="slider moves per series (default 30)")
    ap.add_argument("--engine", choices=ENGINES, help="one engine only")
    ap.add_argument("--only", choices=["load", "slider"], help="one section only")
    ap.add_argument("--dist", type=Path, default=ROOT / "dist", help="the built bundle (default dist/)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    if not (args.dist / "index.html").exists():
        sys.exit(f"bench_engines: {args.dist}/index.html is missing: run `python build.py` first")
    try:
        srv = GzipServer(args.dist, extra=FLOOR_FILES, head_script=INSTRUMENT)
    except (RuntimeError, ValueError, OSError) as exc:
        sys.exit(f"bench_engines: could not serve {args.dist}: {exc}")
    failed, results = [], {}
    with srv:
        print(
            f"bench_engines: {args.dist} served gzip-compressed at {srv.url} (+ floor.html), INSTRUMENT first in "
            f"each page's <head>; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        for engine in [args.engine] if args.engine else ENGINES:
            results[engine] = {}
            missing = missing_engine(engine)
            if missing:
                failed.append(f"{engine}: not installed ({missing}; `bash dev.sh test` installs it)")
                print(f"{engine}: could not measure: not installed: {missing}")
                continue
            sections = [
                (
                    "load",
                    f"{args.runs} cold loads of the page and of the floor on {engine}",
                    max(STAGE_TIMEOUT_S, args.runs * 2 * READY_TIMEOUT_MS / 1000),
                    lambda: bench_load(engine, srv.url, args.runs),
                ),
                (
                    "slider",
                    f"the slider series on {engine} ({args.moves} moves each)",
                    max(STAGE_TIMEOUT_S, args.moves * 30),
                    lambda: bench_slider(engine, srv.url, args.moves),
                ),
            ]
            # (a failed section's browser is closed on its way out: EngineTab.__exit__)
            results[engine].update(
                run_sections(sections, args.only, failed, cleanup=kill_open_tabs, label=f"{engine} ")
            )
            versions = [results[engine][k]["version"] for k in ("load", "slider") if k in results[engine]]
            results[engine]["version"] = versions[0] if versions else None
    print_summary(results)
    print(f"figures written to {write_results(results, args).relative_to(ROOT)}")
    if failed:
        sys.exit(f"bench_engines: could not measure: {'; '.join(failed)}")


if __name__ == "__main__":
    main()
