"""Benchmarks in real Chromium against the built bundle: load, interaction latency, sizes.

    .venv/bin/python build.py && .venv/bin/python bench/bench_browser.py [--runs N]

Prints figures; asserts nothing (these machines are shared and noisy). Each figure
comes with a baseline measured in the same run, so ratios are comparable across
machines:

- load: first contentful paint and time to `data-state=ready` in a cold context,
  against the floor of downloading the runtime files alone (fetch() of each file).
- main-thread blocking while Python boots: the longest long task and their total
  (Python runs in a worker, so both should stay small).
- interaction: round trip of a temperature change (event -> Python -> markup swapped) with
  the attention matrix on screen (panels far off screen are drawn when scrolled to), and the
  same with every panel on screen (a very tall window), against a round trip that changes
  only the stepper (the smallest panel).
- sizes: dist/ total, the runtime, and gzip -9 of the main pieces.

Every wait has a time limit (the constants below); past it the benchmark stops with a
message saying what it was waiting for, and exits non-zero.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import os
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM, CHROMIUM_ARGS, SUBPATH, serve_folder  # noqa: E402

RUNTIME = ["vendor/pyodide/pyodide.mjs", "vendor/pyodide/pyodide.asm.js", "vendor/pyodide/pyodide.asm.wasm",
           "vendor/pyodide/python_stdlib.zip", "vendor/pyodide/pyodide-lock.json",
           "vendor/pyodide/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"]

READY_TIMEOUT_MS = 180_000  # Pyodide + NumPy boot: seconds on a 2-core machine, allow for load
STEP_TIMEOUT_MS = 30_000    # navigation, scrolling, one round trip, one runtime file download
STAGE_TIMEOUT_S = 600       # backstop for one interaction series or two cold loads (a frozen page)

LONG_TASKS = """
window.__longtasks = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longtasks.push(e.duration); })
  .observe({type: 'longtask', buffered: true});
"""


def med(xs):
    return statistics.median(xs) if xs else float("nan")


class BenchError(Exception):
    """The benchmark could not run; the message says what it was waiting for."""


@contextlib.contextmanager
def time_limit(what: str, seconds: float = STAGE_TIMEOUT_S):
    """Backstop for waits no timeout reaches (page.evaluate on a frozen page): past `seconds`,
    say what we were waiting for and end the process (Playwright's driver then closes Chromium)."""
    def give_up():
        print(f"bench_browser: gave up after {seconds:g} s waiting for {what}", file=sys.stderr, flush=True)
        os._exit(1)

    timer = threading.Timer(seconds, give_up)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def new_page(browser, **context_args):
    ctx = browser.new_context(**context_args)
    ctx.set_default_timeout(STEP_TIMEOUT_MS)  # goto, scrolling, waits: none without a limit
    ctx.set_default_navigation_timeout(STEP_TIMEOUT_MS)
    return ctx, ctx.new_page()


def wait_ready(page, url):
    """Wait for data-state to leave `loading`; it must be `ready`."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("document.documentElement.dataset.state !== 'loading'", timeout=READY_TIMEOUT_MS)
    except PlaywrightTimeout:
        raise BenchError(f"{url} still had data-state=loading after {READY_TIMEOUT_MS / 1000:g} s")
    state = page.evaluate("document.documentElement.dataset.state")
    if state != "ready":
        raise BenchError(f"{url} reached data-state={state}: {page.inner_text('#runtime-status')}")


def bench_load(browser, url, runs):
    fcp, ready, floor, longest, total_blocking = [], [], [], [], []
    for _ in range(runs):
        ctx, page = new_page(browser)
        page.add_init_script(LONG_TASKS)
        page.goto(url)
        wait_ready(page, url)
        ready.append(page.evaluate("performance.now()"))
        fcp.append(page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || NaN"))
        tasks = page.evaluate("window.__longtasks")
        longest.append(max(tasks, default=0))
        total_blocking.append(sum(max(0, t - 50) for t in tasks))
        ctx.close()
        ctx, page = new_page(browser)  # cold again: the download floor alone
        page.goto(url + "favicon.svg")
        floor.append(page.evaluate("""async ([files, limit]) => { const t = performance.now();
            await Promise.all(files.map(f => fetch(f, {signal: AbortSignal.timeout(limit)}).then(r => r.arrayBuffer())
              .catch((e) => { throw new Error(`downloading ${f} (limit ${limit} ms): ${e.message}`); })));
            return performance.now() - t; }""", [[url + f for f in RUNTIME], STEP_TIMEOUT_MS]))
        ctx.close()
    print(f"load ({runs} cold runs, medians)")
    print(f"  first contentful paint      {med(fcp):8.0f} ms   (pre-rendered panels visible)")
    print(f"  data-state=ready            {med(ready):8.0f} ms")
    print(f"  runtime download floor      {med(floor):8.0f} ms   ready/floor = {med(ready) / med(floor):.1f}x")
    print(f"  longest main-thread task    {med(longest):8.0f} ms   total blocking {med(total_blocking):.0f} ms")


def bench_interaction(browser, url, runs, viewport, label):
    ctx, page = new_page(browser, viewport=viewport)
    page.goto(url)
    wait_ready(page, url)
    page.locator('[data-panel="attention-matrix"]').scroll_into_view_if_needed()  # a reader watching it
    page.wait_for_timeout(300)  # let the viewport report settle before timing (a benchmark, not a test)

    def round_trip(selector, js_change, wait_js):
        return page.evaluate("""async ([sel, change, wait, limit]) => {
            const el = document.querySelector(sel);
            if (!el) throw new Error(`no element matches ${sel}`);
            const t = performance.now();
            (new Function('el', change))(el);
            let last = "";  // a check that throws (element not there yet) counts as "not yet"
            await new Promise((resolve, reject) => { const check = () => {
                try { if ((new Function(wait))()) return resolve(); } catch (e) { last = ` (last check: ${e.message})`; }
                if (performance.now() - t > limit)
                  return reject(new Error(`no update within ${limit} ms after ${change} on ${sel}; waited for: ${wait}${last}`));
                requestAnimationFrame(check); };
              check(); });
            return performance.now() - t; }""", [selector, js_change, wait_js, STEP_TIMEOUT_MS])

    temps, stages = [], []
    for k in range(runs):
        t = 0.5 + (k % 9) * 0.25
        temps.append(round_trip("#temperature",
                                f"el.value = '{t:g}'; el.dispatchEvent(new Event('input', {{bubbles: true}}));",
                                f"return document.querySelector('svg[data-view=\"attention-matrix\"]').dataset.temperature === '{t:g}'"))
        s = k % 2
        stages.append(round_trip(f'.step[data-value="{s}"]', "el.click();",
                                 f"return document.querySelector('[data-stage-detail]').dataset.stageDetail === '{s}'"))
    ctx.close()
    print(f"interaction, {label} ({runs} round trips each, medians; event -> Python -> markup in the page)")
    print(f"  temperature change (panels on screen)  {med(temps):7.1f} ms   max {max(temps):.1f} ms")
    print(f"  stepper change (baseline, one panel)   {med(stages):7.1f} ms   ratio {med(temps) / med(stages):.1f}x")


def bench_sizes(dist: Path):
    files = [p for p in dist.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    runtime = sum(p.stat().st_size for p in files if "vendor" in p.parts)
    print("sizes")
    print(f"  dist/ total {total / 1e6:.1f} MB in {len(files)} files; runtime {runtime / 1e6:.1f} MB")
    for rel in ["index.html", "style.css", "bridge.js", *RUNTIME[1:4], RUNTIME[5]]:
        data = (dist / rel).read_bytes()
        print(f"  {rel:60s} {len(data) / 1e3:9.1f} kB  gzip -9 {len(gzip.compress(data, 9)) / 1e3:9.1f} kB")


def main():
    from playwright.sync_api import Error as PlaywrightError, sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    dist = ROOT / "dist"
    if not (dist / "index.html").exists():
        sys.exit("dist/ is missing: run `python build.py` first")
    srv = serve_folder(dist)
    url = f"http://127.0.0.1:{srv.server_address[1]}{SUBPATH}"
    runs = max(10, args.runs * 4)
    failed = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=STEP_TIMEOUT_MS)
        sections = [(f"{args.runs} cold loads", args.runs * STAGE_TIMEOUT_S / 2,
                     lambda: bench_load(browser, url, args.runs))]
        for viewport, label in [({"width": 1280, "height": 800}, "1280x800 window"),
                                ({"width": 1280, "height": 12000}, "every panel on screen")]:
            sections.append((f"{runs} interaction round trips, {label}", STAGE_TIMEOUT_S,
                             functools.partial(bench_interaction, browser, url, runs, viewport, label)))
        for what, seconds, run in sections:
            try:
                with time_limit(what, seconds):
                    run()
            except (BenchError, PlaywrightError) as exc:
                failed.append(what)
                print(f"{what}: could not measure: {exc}", flush=True)
                for ctx in browser.contexts:  # a page left loading would skew the next section
                    ctx.close()
        browser.close()
    srv.shutdown()
    bench_sizes(dist)
    if failed:
        sys.exit(f"bench_browser: could not measure: {'; '.join(failed)}")


if __name__ == "__main__":
    main()
