"""What each start-up workaround of the page gains, on each of the three engines readers have.

    .venv/bin/python build.py && .venv/bin/python bench/bench_workarounds.py [--runs N] [--moves N]
        [--engine chromium|firefox|webkit|all ...] [--only load|slider] [--workaround NAME ...] [--dist DIR]

A workaround is kept only where it pays: on every engine, or, acting on some only (ACTS_ON), on those:
Chromium (bench_browser.py's executable and flags, through Playwright), Firefox ESR and WebKitGTK
(bench_engines.py's EngineTab over tests/engines/drivers.py). Switched off where it does not act, it
changes nothing there, and what this measures there is noise.
Each one is switched OFF in its own copy of the built bundle (under a temporary folder; dist/ is copied
once at the start and never touched), by an exact text replacement (OFF below) that must match exactly
once, else the run stops and says which code moved:

- precompiled (worker_main.py): the line calling precompiled.install() removed;
- numpy_install (worker_main.py): the worker's own install of NumPy's wheel replaced by Pyodide's stock
  `await pyodide_js.loadPackage("numpy")` (the wheel's own fetch, already started, cancelled), and with it
  extension_preload and lazy_linalg (loadPackage compiles the wheel's extension modules asynchronously
  itself);
- extension_preload (worker_main.py): the line awaiting extension_preload.preload(...) removed, so that
  `import numpy` compiles NumPy's extension modules synchronously, in its dlopen;
- lazy_linalg (worker_main.py): the line calling lazy_linalg.install(...) removed, so that `import numpy`
  loads numpy.linalg's LAPACK module (and on WebKit extension_preload compiles it first);
- pyodide_progress (launch.js): PyScript given Pyodide's own pyodide.mjs as its `version`, in place of the
  loader that counts the runtime's bytes for the status line (a feature: what it costs, not what it gains);
- page_observer (launch.js or the module it imports, any .js/.mjs of the bundle): the call
  importWithoutPageObserver(...) replaced by import(...), so PyScript's MutationObserver on the whole
  document stays: that acts on the main thread at each redraw, so this one is measured on the slider.

Each copy is served as bench_engines serves dist/: gzip-compressed under /attention-explorer/
(bench/gzip_server.py), bench_browser's INSTRUMENT first in every page's <head> (for Chromium it comes
from Playwright's init script, as in bench_browser, and the <head> copy stands aside).

- load: --runs rounds (default 5), after one untimed warm-up visit (the first browser start in a while reads
  the engine's files from disk); each round loads every variant (all on, then each of precompiled,
  numpy_install, lazy_linalg, extension_preload and pyodide_progress off) once, the order reversed every
  other round; each load a first visit in a new browser with a new, empty profile. Time from navigation start to
  html[data-state="ready"] (bench_browser.load_until_ready), DOMContentLoaded, and the status line's 'Loading
  NumPy…' and 'Computing attention…' (the NumPy step is the time between the two). After each load, untimed, a
  check that the page works the same: #temperature moved to CHECK_T, the heatmap must show it (bench_browser's
  MOVE_JS), and a hash of the heatmap's markup is compared with the other variants'; that the switch took
  effect: the worker's workarounds_engaged must name the one switched off, and only it (and ALSO_OFF's), and
  page_observer's module its `caught` (1 on, 0 off; also read before each slider series). A load that fails
  (not ready within bench_browser.READY_TIMEOUT_MS, an error) is reported FAILED, with its reason and the
  page's status line, and the run goes on.
- slider (page_observer on/off): --runs series of each, alternating (on, off; off, on; ...), each in a new
  browser, the page loaded cold first: bench_browser.slider_at at 8 tokens, --moves moves (default 30):
  #temperature moved -> the heatmap shows that T and the next frame is rendered; per series its p95
  (nearest rank), as bench_browser and bench_engines report it.

Prints each figure (medians [min-max] over the rounds), then the gains: gain = median(off) - median(on)
in ms (positive: the workaround saves that much), paired = off - on within the same round (min..max),
ratio = median(off) / median(on); then a summary table, workaround x engine, and for each workaround
whether it pays (gain > 0) on every engine. Writes every figure to bench/results/workarounds/<UTC
time>.json. Asserts nothing about times. Every wait has a time limit and says what it waited for
(bench_browser's constants; the drivers' own: a page load 120 s); past a section's backstop
(bench_browser.time_limit) the browsers this started are stopped and the process ends. The exit status
is non-zero when something could not be measured (an engine missing, a load or series that failed).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "engines"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_browser import (  # noqa: E402
    INSTRUMENT,
    MOVE_JS,
    READY_TIMEOUT_MS,
    STAGE_TIMEOUT_S,
    STEP_TIMEOUT_MS,
    BenchError,
    evaluate,
    fresh_profile,
    load_until_ready,
    med,
    p95,
    run_sections,
    slider_at,
)
from bench_engines import LOAD_INFO_JS, STATUS_MILESTONES, EngineTab, kill_open_tabs, missing_engine  # noqa: E402
from gzip_server import GzipServer  # noqa: E402

from conftest import CHROMIUM  # noqa: E402  (the same browser choice as the tests and bench_browser)

ENGINES = ("chromium", "firefox", "webkit")
RESULTS = ROOT / "bench" / "results" / "workarounds"
ALL_ON = "all on"
LOAD_WORKAROUNDS = ("precompiled", "numpy_install", "lazy_linalg", "extension_preload", "pyodide_progress")
WORKER_REPORTED = ("precompiled", "numpy_install", "lazy_linalg", "extension_preload")  # workarounds_engaged's
# a workaround that acts on these engines only (it decides in the page; the others run as without it)
ACTS_ON = {"extension_preload": ("webkit",)}
# a workaround that goes with another switched off (it works on what that one does)
ALSO_OFF = {"numpy_install": ("extension_preload", "lazy_linalg")}
SLIDER_WORKAROUNDS = ("page_observer",)  # measured on the slider
SLIDER_TOKENS = 8
CHECK_T = 1.7  # the temperature the check after each load moves the slider to (not the page's default)

WORKER_MAIN = "py/attention_explorer/worker_main.py"
ANY_JS = "every .js and .mjs file"  # an Edit's `where`: search them all


class Edit(NamedTuple):
    """In the file `where` (a path in the bundle, or ANY_JS), the one match of `pattern` (re.M) replaced
    by `replacement` (re.Match.expand: \\1 etc.); `what` says what it is looking for."""

    where: str
    pattern: str
    replacement: str
    what: str


# (numpy_install's switch removes it too)
PRELOAD_OFF = Edit(
    WORKER_MAIN,
    r"^[ \t]*await extension_preload\.preload\(.*\n",
    "",
    "the line awaiting extension_preload.preload(...)",
)

# (numpy_install's switch removes it too: it stands in for a file of the wheel numpy_install writes)
LAZY_OFF = Edit(WORKER_MAIN, r"^[ \t]*lazy_linalg\.install\(.*\n", "", "the line calling lazy_linalg.install(...)")

# How each workaround is switched off. Python lines are matched by their start (the comments after may change).
OFF = {
    "precompiled": [
        Edit(WORKER_MAIN, r"^[ \t]*precompiled\.install\(.*\n", "", "the line calling precompiled.install()")
    ],
    "numpy_install": [
        Edit(
            WORKER_MAIN,
            r"^([ \t]*)(?:\w+ = )?numpy_install\.install\(.*\n",
            '\\1wheel_response.cancel()\n\\1await pyodide_js.loadPackage("numpy")\n',
            "the line calling numpy_install.install(...)",
        ),
        Edit(
            WORKER_MAIN,
            r"^[ \t]*pyodide_js\.loadedPackages\.numpy = .*\n",
            "",
            "the line setting pyodide_js.loadedPackages.numpy",
        ),
        PRELOAD_OFF,
        LAZY_OFF,
    ],
    "lazy_linalg": [LAZY_OFF],
    "extension_preload": [PRELOAD_OFF],
    "pyodide_progress": [
        # PyScript given Pyodide's own loader: no byte count, the status line stays at 0 MB until Python starts
        Edit(
            "launch.js",
            r"\./vendor/pyodide/attention-explorer-progress\.mjs#\$\{channel\}",
            "./vendor/pyodide/pyodide.mjs",
            "the Pyodide loader with a byte count, as the `version` URL",
        )
    ],
    "page_observer": [
        # the call, not the function's definition, its import, or a comment naming it (no // before it)
        Edit(
            ANY_JS,
            r"^(?![ \t]*\*)((?:(?!//).)*?)(?<![\w$.])(?<!function )importWithoutPageObserver\(",
            "\\1import(",
            "the call importWithoutPageObserver(...)",
        )
    ],
}

# Where the bundle could pin a hash of a file this bench edits (a hash there would refuse the edited copy).
HASHED_SUFFIXES = {".html", ".json", ".js", ".mjs", ".py", ".txt", ".webmanifest", ".toml"}

# INSTRUMENT for every page's <head> (Firefox, WebKit: their drivers cannot run it before the page's own
# scripts); in Chromium Playwright's init script (bench_browser.fresh_profile) ran it first, so it stands aside.
HEAD_INSTRUMENT = f"if (!window.__bench) {{\n{INSTRUMENT}\n}}"

# In the page: a worker call (window.attentionExplorer.call) with a time limit (an unknown name may never answer),
# its result as plain JSON, or what went wrong as text.
CALL_JS = """(name, ms) => Promise.race([
  Promise.resolve().then(() => window.attentionExplorer.call(name)).then((r) => JSON.parse(JSON.stringify(r ?? null))),
  new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer from ${name} within ${ms} ms`)), ms)),
]).catch((e) => String(e))"""
CALL_LIMIT_MS = 10_000
# In the page: `caught` of the module that holds importWithoutPageObserver (the page observers it disconnected:
# page_observer on 1, off 0), or null if there is no such module (the function inside launch.js).
CAUGHT_JS = """async (path) => path === null ? null
  : import(new URL(path, document.baseURI).href).then((m) => m.caught ?? null, (e) => String(e))"""
# In the page, once ready and the slider moved to CHECK_T: a hash of the heatmap's markup (FNV-1a), its size
# and tokens; which of the worker's workarounds are engaged (worker.workarounds_engaged: {name: null while it
# works, else why not}); caught (CAUGHT_JS).
BEHAVIOUR_JS = f"""async ([observerModule, limit]) => {{
  const svg = document.querySelector('svg[data-view="attention-matrix"]'), text = svg ? svg.outerHTML : '';
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {{ h ^= text.charCodeAt(i); h = Math.imul(h, 0x01000193); }}
  return {{heatmap: (h >>> 0).toString(16).padStart(8, '0'), chars: text.length,
          temperature: svg ? svg.dataset.temperature : null,
          tokens: svg ? JSON.parse(svg.dataset.tokens || '[]').length : 0,
          engaged: await ({CALL_JS})('workarounds_engaged', limit),
          caught: await ({CAUGHT_JS})(observerModule)}};
}}"""

# In the page: the status line's text (what went wrong, when the page did not get ready)
STATUS_JS = "() => (document.getElementById('runtime-status') || document.body).textContent"

# (key, label) of each load's figures, ms
LOAD_FIGURES = [
    ("ready", "ready"),
    ("dcl", "DOMContentLoaded"),
    ("pyodide", "'Loading NumPy…'"),
    ("numpy", "'Computing attention…'"),
    ("numpy_step", "NumPy step"),
    ("boot_step", "our boot"),
]


def off_label(name: str) -> str:
    return ALL_ON if name == ALL_ON else f"{name} off"


def first_line(exc: Exception) -> str:
    """An error's message on one line, without Playwright's call log."""
    text = " ".join(str(exc).split("Call log:")[0].split())
    return text[:400] or type(exc).__name__


# ---------------------------------------------------------------- the variants


def apply_edits(folder: Path, name: str) -> list[dict]:
    """Switch `name` off in folder (a hard-linked copy: each edited file is written anew, the original
    left as it is). Returns what was replaced, where."""
    done = []
    for edit in OFF[name]:
        if edit.where == ANY_JS:
            files = sorted(p for p in folder.rglob("*") if p.suffix in (".js", ".mjs") and p.is_file())
        else:
            files = [folder / edit.where] if (folder / edit.where).is_file() else []
        hits = []
        for file in files:
            text = file.read_text(encoding="utf-8", errors="surrogateescape")
            found = len(re.findall(edit.pattern, text, re.M))
            if found:
                hits.append((file, text, found))
        total = sum(found for *_, found in hits)
        if total != 1:
            where = ", ".join(f"{f.relative_to(folder)} ({n}x)" for f, _, n in hits) or "nowhere"
            raise BenchError(
                f"switching {name} off: {edit.what} (/{edit.pattern}/) must be found exactly once in "
                f"{edit.where} of the bundle, found {total} times ({where}): the code moved; update OFF in "
                "bench/bench_workarounds.py"
            )
        file, text, _ = hits[0]
        match = re.search(edit.pattern, text, re.M)
        after = match.expand(edit.replacement)
        edited = text[: match.start()] + after + text[match.end() :]
        file.unlink()  # a hard link to the snapshot's file: write a new file, the snapshot's stays
        file.write_text(edited, encoding="utf-8", errors="surrogateescape")
        # what changed, as whole lines
        start, end = text.rfind("\n", 0, match.start()) + 1, text.find("\n", match.end() - 1) + 1 or len(text)
        lines_after = edited[start : end + len(edited) - len(text)]
        done.append({"file": str(file.relative_to(folder)), "before": text[start:end], "after": lines_after})
    return done


def check_no_pinned_hash(folder: Path, edited: set[str]):
    """Fail if a text file of the bundle holds a hash (sha256/384/512, hex or base64, or the first 16 hex
    digits of the sha256) of a file this bench edits: the edited copy would then be refused or stale."""
    forms = {}
    for rel in edited:
        data = (folder / rel).read_bytes()
        for algo in ("sha256", "sha384", "sha512"):
            digest = hashlib.new(algo, data).digest()
            forms[digest.hex().encode()] = (rel, f"{algo} hex")
            forms[base64.b64encode(digest)] = (rel, f"{algo} base64")
        forms[hashlib.sha256(data).hexdigest()[:16].encode()] = (rel, "sha256, first 16 hex digits")
    for file in folder.rglob("*"):
        if not file.is_file() or file.suffix not in HASHED_SUFFIXES:
            continue
        body = file.read_bytes()
        for form, (rel, kind) in forms.items():
            if form in body:
                raise BenchError(
                    f"{file.relative_to(folder)} holds a hash of {rel} ({kind}): switching a workaround "
                    "off by editing that file would break the page; bench_workarounds.py must be updated"
                )


def prepare(dist: Path, tmp: Path, names) -> dict:
    """{variant: (folder, edits)}: ALL_ON, dist/ as built (a copy: a rebuild meanwhile changes nothing here),
    and one folder per workaround in names, switched off (hard links to the copy but for the edited files)."""
    base = tmp / "all-on"
    shutil.copytree(dist, base)
    variants = {ALL_ON: (base, [])}
    for name in names:
        folder = tmp / f"{name}-off"
        shutil.copytree(base, folder, copy_function=os.link)
        variants[name] = (folder, apply_edits(folder, name))
    check_no_pinned_hash(base, {e["file"] for _, edits in variants.values() for e in edits})
    return variants


def observer_module(folder: Path) -> str | None:
    """The bundle's module (path in it) that defines importWithoutPageObserver and exports `caught`, or None."""
    for file in sorted(folder.rglob("*")):
        if file.suffix in (".js", ".mjs") and file.is_file() and "vendor" not in file.relative_to(folder).parts:
            text = file.read_text(encoding="utf-8", errors="surrogateescape")
            if re.search(r"function\s+importWithoutPageObserver\b", text) and re.search(
                r"\bexport\s+(?:let|var|const)\s+caught\b", text
            ):
                return str(file.relative_to(folder))
    return None


# ---------------------------------------------------------------- one browser, one page


def chromium_version(page) -> str:
    agent = page.evaluate("navigator.userAgent")
    found = re.search(r"Chrome/([\d.]+)", agent)
    return found.group(1) if found else agent


@contextlib.contextmanager
def new_tab(engine: str, url: str, pw):
    """(page, engine version): a new browser with a new, empty profile and one 1280x800 page; Chromium's
    a Playwright page (INSTRUMENT as its init script), the others bench_engines.EngineTab."""
    if engine == "chromium":
        with fresh_profile(pw) as ctx:
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            yield page, chromium_version(page)
    else:
        with EngineTab(engine, url) as tab:
            yield tab, tab.version


def cold_visit(engine: str, url: str, pw, observer: str | None) -> tuple[dict, str]:
    """One first visit: ({ready, dcl, pyodide, numpy, numpy_step: ms from navigation start (None where the
    page showed no such status), check: BEHAVIOUR_JS's}, the engine's version)."""
    with new_tab(engine, url, pw) as (tab, version):
        try:
            ready = load_until_ready(tab, url)
        except BenchError as exc:  # what the page's status line says, rather than its whole text
            try:
                status = tab.evaluate(STATUS_JS)
            except Exception:
                raise exc from None
            raise BenchError(f"{str(exc).split(': ', 1)[0]}; its status line: {' '.join(status.split())}") from None
        info = tab.evaluate(LOAD_INFO_JS)
        evaluate(
            tab,
            MOVE_JS,
            [CHECK_T, STEP_TIMEOUT_MS],
            f"the check after the load: the heatmap to show T={CHECK_T} once #temperature was moved there",
        )
        check = evaluate(tab, BEHAVIOUR_JS, [observer, CALL_LIMIT_MS], "the check after the load: the heatmap's markup")
    if ready is None:
        raise BenchError(f"{url} on {engine}: ready, but INSTRUMENT noted no time (was it in the page's <head>?)")
    got = {"ready": ready, "dcl": info["dcl"], "pyodide": None, "numpy": None}
    for t, text in reversed(info["status"] or []):  # each status's first time
        key = STATUS_MILESTONES.get(text.split("…")[0])
        if key in got:
            got[key] = t
    got["numpy_step"] = got["numpy"] - got["pyodide"] if None not in (got["numpy"], got["pyodide"]) else None
    # 'Computing attention…' -> ready: our modules imported (their dataclasses made: precompiled), the first run
    got["boot_step"] = got["ready"] - got["numpy"] if None not in (got["ready"], got["numpy"]) else None
    got["check"] = check
    return got, version


def engaged_note(check: dict, name: str) -> tuple[str, bool]:
    """What the check says of the workarounds (variant `name`), and whether that is what the variant should
    show: all engaged when all on, all but `name` (and ALSO_OFF[name]) when it is off."""
    engaged, caught = check.get("engaged"), check.get("caught")
    notes, expected = [], True
    if isinstance(engaged, dict):
        off = sorted(k for k, why in engaged.items() if why is not None)
        notes.append("worker's workarounds: " + (f"not engaged: {', '.join(off)}" if off else "all engaged"))
        expected = off == (sorted([name, *ALSO_OFF.get(name, ())]) if name in WORKER_REPORTED else [])
    else:
        notes.append(f"workarounds_engaged: n/a ({engaged})")
    if caught is not None:
        notes.append(f"page observers caught: {caught}")
        expected = expected and caught == (0 if name in SLIDER_WORKAROUNDS else 1)
    return "; ".join(notes) + ("" if expected else "  UNEXPECTED: did the switch take effect?"), expected


# ---------------------------------------------------------------- figures


def spread(xs) -> dict | None:
    xs = [x for x in xs if x is not None]
    return {"median": med(xs), "min": min(xs), "max": max(xs), "n": len(xs)} if xs else None


def cell(s: dict | None, width=24) -> str:
    text = f"{s['median']:6.0f} [{s['min']:.0f}-{s['max']:.0f}]" if s else "-"
    return f"{text:>{width}s}"


def gain(on: list[dict], off: list[dict], key: str) -> dict | None:
    """off against on (each a list of per-round records, k-th from round k+1; a failed one has no key):
    gain = median(off) - median(on), ratio, and the rounds' own differences (paired)."""
    a, b = spread(r.get(key) for r in on), spread(r.get(key) for r in off)
    if not a or not b:
        return None
    pairs = [y[key] - x[key] for x, y in zip(on, off) if x.get(key) is not None and y.get(key) is not None]
    return {
        "gain_ms": b["median"] - a["median"],
        "ratio": b["median"] / a["median"],
        "on": a,
        "off": b,
        "paired": pairs,
        "paired_min": min(pairs, default=None),
        "paired_max": max(pairs, default=None),
        "rounds_off_slower": sum(p > 0 for p in pairs),
    }


def gain_text(g: dict | None) -> str:
    if not g:
        return "(not measured)"
    paired = f"[{g['paired_min']:+.0f}..{g['paired_max']:+.0f}]" if g["paired"] else "[-]"
    return f"{g['gain_ms']:+7.1f} ms {paired:>14s} {g['ratio']:5.2f}x"


# ---------------------------------------------------------------- load


def bench_load(engine: str, urls: dict, runs: int, pw, observer: str | None) -> dict:
    """runs rounds of cold loads of every variant in urls ({variant: url}, ALL_ON first); prints and returns
    {version, visits: {variant: [record per round]}, gains: {workaround: {figure: gain}}, unexpected: [...]}."""
    names = list(urls)
    visits, version, unexpected = {n: [] for n in names}, "", []
    print(
        f"{engine}: load: {runs} round(s), each a first visit of every variant ({', '.join(map(off_label, names))}) "
        "in a new browser and profile, the order reversed every other round; ms from navigation start"
    )
    # The first browser start in a while reads the engine's files from disk: a visit before the rounds, untimed
    try:
        got, _ = cold_visit(engine, urls[ALL_ON], pw, observer)
        print(f"  warm-up (all on, not counted): ready {got['ready']:.0f} ms")
    except Exception as exc:  # the rounds will say it again if it lasts
        print(f"  warm-up (all on, not counted): FAILED: {first_line(exc)}")
    for k in range(runs):
        for name in names if k % 2 == 0 else names[::-1]:
            try:
                got, version = cold_visit(engine, urls[name], pw, observer)
            except Exception as exc:  # BenchError, or a browser's error (Playwright's, EngineTab's): go on
                got = {"failed": first_line(exc)}
                print(f"  round {k + 1}  {off_label(name):20s} FAILED: {got['failed']}")
            else:
                c = got["check"]
                note, expected = engaged_note(c, name)
                if not expected:
                    unexpected.append(f"{off_label(name)}, round {k + 1}: {note}")
                print(
                    f"  round {k + 1}  {off_label(name):20s} ready {got['ready']:6.0f}  DCL {got['dcl'] or 0:5.0f}  "
                    f"NumPy step {got['numpy_step'] or float('nan'):5.0f}  heatmap {c['heatmap']} "
                    f"(T={c['temperature']}, {c['tokens']} tokens)  {note}"
                )
            got["round"] = k + 1
            visits[name].append(got)
    print(f"  {engine} {version}: medians [min-max] over the rounds, ms")
    print(f"    {'variant':20s}" + "".join(f"{label:>24s}" for _, label in LOAD_FIGURES) + "   failed")
    for name in names:
        failed = [v["failed"] for v in visits[name] if "failed" in v]
        row = "".join(cell(spread(v.get(key) for v in visits[name])) for key, _ in LOAD_FIGURES)
        print(f"    {off_label(name):20s}{row}   {len(failed)}/{runs}" + (f": {failed[0]}" if failed else ""))
    # equal behaviour: the heatmap after the same move, the same markup in every variant
    hashes = {n: sorted({v["check"]["heatmap"] for v in visits[n] if "check" in v}) for n in names}
    seen = sorted({h for hs in hashes.values() for h in hs})
    same = len(seen) == 1
    if same:
        print(f"    check: the heatmap's markup after moving T to {CHECK_T}: the same in every load (hash {seen[0]})")
    else:
        print(
            f"    check: the heatmap's markup after moving T to {CHECK_T} DIFFERS between loads: "
            + ", ".join(f"{off_label(n)} {' '.join(h) or '(no load)'}" for n, h in hashes.items())
        )
    gains = {}
    print("    gains: median(off) - median(on) [off - on in the same round, min..max], ratio off/on")
    for name in names[1:]:
        gains[name] = {
            key: gain(visits[ALL_ON], visits[name], key) for key in ("ready", "numpy_step", "boot_step", "dcl")
        }
        g = gains[name]["ready"]
        slower = f"(off slower in {g['rounds_off_slower']}/{len(g['paired'])} rounds)" if g else ""
        print(
            f"      {name:16s} ready {gain_text(g)} {slower:28s} NumPy step {gain_text(gains[name]['numpy_step'])}"
            f"   our boot {gain_text(gains[name]['boot_step'])}"
        )
    return {
        "version": version,
        "visits": visits,
        "heatmaps": hashes,
        "same_heatmap": same,
        "gains": gains,
        "unexpected": unexpected,
    }


# ---------------------------------------------------------------- slider


def slider_run(engine: str, url: str, moves: int, pw, observer: str | None) -> tuple[dict, str]:
    """One series: a new browser, the page loaded cold, bench_browser.slider_at at SLIDER_TOKENS (its own
    printout kept out of ours); {p95_ms, median_ms, rest_ms: the median of the rest of the swap's task
    (forced style, observers), caught: CAUGHT_JS's, parts}."""
    with new_tab(engine, url, pw) as (tab, version):
        load_until_ready(tab, url)
        caught = evaluate(tab, CAUGHT_JS, observer, "the page observers caught (page_observer's module)")
        with contextlib.redirect_stdout(io.StringIO()):
            parts = slider_at(tab, SLIDER_TOKENS, moves)
    rest = [s - r - h for s, r, h in zip(parts["swap"], parts["reply"], parts["html"])]
    total = parts["total"]
    got = {"p95_ms": p95(total), "median_ms": med(total), "rest_ms": med(rest), "caught": caught, "parts": parts}
    return got, version


def bench_slider(engine: str, urls: dict, runs: int, moves: int, pw, observer: str | None) -> dict:
    """runs series with page_observer on and off (urls: {"on": url, "off": url}), alternating."""
    series, version, unexpected = {"on": [], "off": []}, "", []
    print(
        f"{engine}: slider, page_observer on/off: {runs} series of each, alternating, each in a new browser, "
        f"the page loaded cold; #temperature -> heatmap on screen, next frame; {moves} moves at "
        f"{SLIDER_TOKENS} tokens, p95 (nearest rank) per series"
    )
    for k in range(runs):
        for which in ("on", "off") if k % 2 == 0 else ("off", "on"):
            try:
                got, version = slider_run(engine, urls[which], moves, pw, observer)
            except Exception as exc:  # BenchError, or a browser's error: go on
                got = {"failed": first_line(exc)}
                print(f"  round {k + 1}  page_observer {which:3s} FAILED: {got['failed']}")
            else:
                caught = got["caught"]
                note = "" if caught is None else f"  page observers caught: {caught}"
                if caught is not None and caught != (1 if which == "on" else 0):
                    note += "  UNEXPECTED: did the switch take effect?"
                    unexpected.append(f"page_observer {which}, round {k + 1}:{note}")
                print(
                    f"  round {k + 1}  page_observer {which:3s} p95 {got['p95_ms']:6.1f} ms  median "
                    f"{got['median_ms']:6.1f} ms  rest of the swap's task (style, observers) {got['rest_ms']:5.1f} ms"
                    + note
                )
            got["round"] = k + 1
            series[which].append(got)
    print(f"  {engine} {version}: medians [min-max] over the series, ms")
    for which in ("on", "off"):
        failed = [s["failed"] for s in series[which] if "failed" in s]
        p, m, r = (spread(s.get(key) for s in series[which]) for key in ("p95_ms", "median_ms", "rest_ms"))
        fmt = "{0[median]:6.1f} [{0[min]:.1f}-{0[max]:.1f}]"
        print(
            f"    page_observer {which:3s}  p95 "
            + (fmt.format(p) if p else "-")
            + "  median "
            + (fmt.format(m) if m else "-")
            + "  rest of task "
            + (fmt.format(r) if r else "-")
            + f"  failed {len(failed)}/{runs}"
            + (f": {failed[0]}" if failed else "")
        )
    gains = {key: gain(series["on"], series["off"], key) for key in ("p95_ms", "median_ms", "rest_ms")}
    print(
        "    gain on the p95: median(off) - median(on) [same round, min..max], ratio off/on: "
        + gain_text(gains["p95_ms"])
    )
    return {"version": version, "series": series, "gains": {"page_observer": gains}, "unexpected": unexpected}


# ---------------------------------------------------------------- summary


def summarize(results: dict, engines: list[str], names) -> dict:
    """Prints the table workaround x engine and whether each pays everywhere; returns the same as data."""
    summary = {}
    print(
        "summary: gain of each workaround = median(off) - median(on), ms [off - on in the same round, min..max], "
        "ratio off/on\n  (load: ready of a cold first visit; page_observer: slider p95 at 8 tokens; a gain > 0 "
        "means the workaround saves time)"
    )
    print(f"  {'workaround':16s}" + "".join(f"{engine:>36s}" for engine in engines))
    for name in names:
        section, key = ("slider", "p95_ms") if name in SLIDER_WORKAROUNDS else ("load", "ready")
        per = {
            e: (((results.get(e) or {}).get(section) or {}).get("gains") or {}).get(name, {}).get(key) for e in engines
        }
        print(f"  {name:16s}" + "".join(f"{gain_text(per[e]):>36s}" for e in engines))
        summary[name] = {"metric": f"{section}: {key}", "engines": per}
    for name in names:
        measured, acts = summary[name]["engines"], ACTS_ON.get(name, ENGINES)
        missing = [e for e in acts if not measured.get(e)]
        losing = [e for e in acts if measured.get(e) and measured[e]["gain_ms"] <= 0]
        if missing:
            verdict = f"unknown (not measured on {', '.join(missing)})" + (
                f"; no gain on {', '.join(losing)}" if losing else ""
            )
            pays = None
        else:
            pays = not losing
            verdict = "yes" if pays else f"no (no gain on {', '.join(losing)})"
        summary[name]["pays_on_every_engine"] = pays
        where = f"on {', '.join(ACTS_ON[name])}, where it acts" if name in ACTS_ON else "on every engine"
        print(f"  {name}: pays {where}: {verdict}")
    return summary


def write_results(doc: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{doc['time']}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def missing(engine: str) -> str | None:
    if engine == "chromium":
        return None if os.access(CHROMIUM, os.X_OK) else CHROMIUM
    return missing_engine(engine)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="rounds of loads, and series of the slider (default 5)")
    ap.add_argument("--moves", type=int, default=30, help="slider moves per series (default 30, as bench_browser)")
    ap.add_argument(
        "--engine",
        action="append",
        choices=[*ENGINES, "all"],
        help="an engine to measure (repeatable; default all three)",
    )
    ap.add_argument("--only", choices=["load", "slider"], help="one section only")
    ap.add_argument(
        "--workaround",
        action="append",
        choices=[*LOAD_WORKAROUNDS, *SLIDER_WORKAROUNDS],
        help="switch off only this one (repeatable; default each in turn), against all on",
    )
    ap.add_argument("--dist", type=Path, default=ROOT / "dist", help="the built bundle (default dist/)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    engines = [e for e in ENGINES if not args.engine or "all" in args.engine or e in args.engine]
    if not (args.dist / "index.html").exists():
        sys.exit(f"bench_workarounds: {args.dist}/index.html is missing: run `python build.py` first")
    stamp = time.strftime("%Y%m%d-%H%M%SZ", time.gmtime())
    load_start = os.getloadavg()[0]
    print(
        f"bench_workarounds: {args.dist}, engines {', '.join(engines)}, {args.runs} round(s); "
        f"load average {load_start:.1f} on {os.cpu_count()} CPUs"
    )
    names = [
        n
        for n in (
            *(LOAD_WORKAROUNDS if args.only in (None, "load") else ()),
            *(SLIDER_WORKAROUNDS if args.only in (None, "slider") else ()),
        )
        if not args.workaround or n in args.workaround
    ]
    failed, results = [], {}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ae-bench-workarounds-")))
        try:
            variants = prepare(args.dist, tmp, names)
        except BenchError as exc:
            sys.exit(f"bench_workarounds: {exc}")
        for name, (_, edits) in variants.items():
            for e in edits:
                before, after = e["before"].strip() or "(nothing)", e["after"].strip() or "(removed)"
                print(f"  {off_label(name)}: {e['file']}: {before!r} -> {after!r}")
        observer = observer_module(variants[ALL_ON][0])
        print(f"  page_observer's module (its `caught` is read in the page): {observer or '(none: not checked)'}")
        urls = {}
        for name, (folder, _) in variants.items():
            try:
                urls[name] = stack.enter_context(GzipServer(folder, head_script=HEAD_INSTRUMENT)).url
            except (RuntimeError, ValueError, OSError) as exc:
                sys.exit(f"bench_workarounds: could not serve {off_label(name)} ({folder}): {exc}")
        print(f"  each variant served gzip-compressed on its own port ({urls[ALL_ON]} and on)")
        pw = None
        if "chromium" in engines:
            from playwright.sync_api import sync_playwright

            pw = stack.enter_context(sync_playwright())
        load_urls = {n: u for n, u in urls.items() if n == ALL_ON or n in LOAD_WORKAROUNDS}
        slider_urls = {"on": urls[ALL_ON], "off": urls.get("page_observer")}
        for engine in engines:
            gone = missing(engine)
            if gone:
                failed.append(f"{engine}: not installed ({gone}; `bash dev.sh test` installs it)")
                print(f"{engine}: could not measure: not installed: {gone}")
                continue
            sections = [
                (
                    "load",
                    f"{args.runs} round(s) of cold loads of {len(load_urls)} variants on {engine}",
                    max(STAGE_TIMEOUT_S, args.runs * len(load_urls) * (READY_TIMEOUT_MS / 1000 + 60)),
                    lambda: bench_load(engine, load_urls, args.runs, pw, observer),
                ),
                (
                    "slider",
                    f"{args.runs} slider series with page_observer on and off on {engine} ({args.moves} moves each)",
                    max(STAGE_TIMEOUT_S, args.runs * 2 * (READY_TIMEOUT_MS / 1000 + args.moves * 10)),
                    lambda: bench_slider(engine, slider_urls, args.runs, args.moves, pw, observer),
                ),
            ]
            # (a section none of the chosen workarounds is measured in is left out)
            sections = [
                sec
                for sec in sections
                if sec[0] == "load" and len(load_urls) > 1 or sec[0] == "slider" and slider_urls["off"]
            ]
            results[engine] = run_sections(sections, args.only, failed, cleanup=kill_open_tabs, label=f"{engine} ")
            for section in results[engine].values():
                failed += [f"{engine}: {u}" for u in section["unexpected"]]
                runs = section.get("visits") or section.get("series") or {}
                for name, records in runs.items():
                    bad = [r["failed"] for r in records if "failed" in r]
                    if bad:
                        label = off_label(name) if "visits" in section else f"page_observer {name}"
                        failed.append(f"{engine}: {label}: {len(bad)} of {len(records)} failed ({bad[0]})")
    summary = summarize(results, engines, names)
    load_end = os.getloadavg()[0]
    doc = {
        "time": stamp,
        "runs": args.runs,
        "moves": args.moves,
        "engines_requested": engines,
        "cpus": os.cpu_count(),
        "load_average_start": load_start,
        "load_average_end": load_end,
        "check_temperature": CHECK_T,
        "slider_tokens": SLIDER_TOKENS,
        "edits": {name: edits for name, (_, edits) in variants.items() if edits},
        "engines": results,
        "summary": summary,
    }
    print(f"figures written to {write_results(doc).relative_to(ROOT)}")
    print(f"load average at the start {load_start:.1f}, at the end {load_end:.1f} ({os.cpu_count()} CPUs)")
    if failed:
        sys.exit("bench_workarounds: could not measure: " + "; ".join(failed))


if __name__ == "__main__":
    main()
