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
"""
from __future__ import annotations

import argparse
import gzip
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM, CHROMIUM_ARGS, SUBPATH, serve_folder  # noqa: E402

RUNTIME = ["vendor/pyodide/pyodide.mjs", "vendor/pyodide/pyodide.asm.js", "vendor/pyodide/pyodide.asm.wasm",
           "vendor/pyodide/python_stdlib.zip", "vendor/pyodide/pyodide-lock.json",
           "vendor/pyodide/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"]

LONG_TASKS = """
window.__longtasks = [];
new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longtasks.push(e.duration); })
  .observe({type: 'longtask', buffered: true});
"""


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def bench_load(browser, url, runs):
    fcp, ready, floor, longest, total_blocking = [], [], [], [], []
    for _ in range(runs):
        ctx = browser.new_context()
        page = ctx.new_page()
        page.add_init_script(LONG_TASKS)
        page.goto(url)
        page.wait_for_function("document.documentElement.dataset.state !== 'loading'", timeout=180_000)
        assert page.evaluate("document.documentElement.dataset.state") == "ready"
        ready.append(page.evaluate("performance.now()"))
        fcp.append(page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || NaN"))
        tasks = page.evaluate("window.__longtasks")
        longest.append(max(tasks, default=0))
        total_blocking.append(sum(max(0, t - 50) for t in tasks))
        ctx.close()
        ctx = browser.new_context()  # cold again: the download floor alone
        page = ctx.new_page()
        page.goto(url + "favicon.svg")
        floor.append(page.evaluate("""async (files) => { const t = performance.now();
            await Promise.all(files.map(f => fetch(f).then(r => r.arrayBuffer())));
            return performance.now() - t; }""", [url + f for f in RUNTIME]))
        ctx.close()
    print(f"load ({runs} cold runs, medians)")
    print(f"  first contentful paint      {med(fcp):8.0f} ms   (pre-rendered panels visible)")
    print(f"  data-state=ready            {med(ready):8.0f} ms")
    print(f"  runtime download floor      {med(floor):8.0f} ms   ready/floor = {med(ready) / med(floor):.1f}x")
    print(f"  longest main-thread task    {med(longest):8.0f} ms   total blocking {med(total_blocking):.0f} ms")


def bench_interaction(browser, url, runs, viewport, label):
    ctx = browser.new_context(viewport=viewport)
    page = ctx.new_page()
    page.goto(url)
    page.wait_for_function("document.documentElement.dataset.state === 'ready'", timeout=180_000)
    page.locator('[data-panel="attention-matrix"]').scroll_into_view_if_needed()  # a reader watching it
    page.wait_for_timeout(300)  # let the viewport report settle before timing (a benchmark, not a test)

    def round_trip(selector, js_change, wait_js):
        return page.evaluate("""async ([sel, change, wait]) => {
            const el = document.querySelector(sel);
            const t = performance.now();
            (new Function('el', change))(el);
            await new Promise((resolve) => { const check = () => (new Function(wait))() ? resolve() : requestAnimationFrame(check); check(); });
            return performance.now() - t; }""", [selector, js_change, wait_js])

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
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    dist = ROOT / "dist"
    if not (dist / "index.html").exists():
        sys.exit("dist/ is missing: run `python build.py` first")
    srv = serve_folder(dist)
    url = f"http://127.0.0.1:{srv.server_address[1]}{SUBPATH}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        bench_load(browser, url, args.runs)
        runs = max(10, args.runs * 4)
        bench_interaction(browser, url, runs, {"width": 1280, "height": 800}, "1280x800 window")
        bench_interaction(browser, url, runs, {"width": 1280, "height": 12000}, "every panel on screen")
        browser.close()
    bench_sizes(dist)
    srv.shutdown()


if __name__ == "__main__":
    main()
