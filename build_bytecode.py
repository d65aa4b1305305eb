"""Python bytecode made by the pinned Pyodide, so the reader's browser does not compile Python at every start.

Pyodide 0.27.7 ships its standard library (python_stdlib.zip) and NumPy's wheel as source, and a page
has nowhere to keep what Python compiles: every visit, first or repeat, compiles again each of the
~230 modules a start-up imports, in WebAssembly. Measured in Chromium (bench/bench_browser.py; the run
in bench/HISTORY.md): the bare Pyodide + NumPy floor's repeat visit 5.3 s with sources, 2.5 s with this
bytecode; the page's cold `ready` 7.7 -> 5.2 s.

build.py calls runtime_bytecode() once per input (cached under .cache/bytecode/<key>/). It runs the
pinned Pyodide under Node (the CPython 3.11 running build.py cannot write 3.12 bytecode: the magic
number differs), which:
1. boots, loads NumPy from its lock file, imports numpy, every start-up module of ours and the
   modules they import only inside functions (ALSO_IMPORTED), recording each dataclass method text
   compiled meanwhile, and lists the modules that came from the standard library's zip and from
   NumPy: what a start-up compiles;
2. compiles those, and every start-up module of ours, as unchecked hash-based .pyc (no mtimes to go
   stale: files in a page's file system have none worth checking).
This module then writes, from the pinned (verified) files:
- python_stdlib.zip with each of those modules as .pyc in place of its .py (zipimport imports a .pyc
  with no source beside it); the rest stays source, compiled only when imported (a reader's own
  attention function may import anything);
- NumPy's wheel the same way, its RECORD updated, and pyodide-lock.json with that wheel's sha256
  (Pyodide fetches the wheel with it as the integrity);
- our start-up modules' .pyc, which build.startup_bundle zips beside their sources (module.pyc, where
  zipimport looks: the worker imports from that zip), so tracebacks in our code still show their lines;
- the methods `dataclasses` generated during those imports, as code objects keyed by their text
  (DATACLASS_TABLE, zipped beside attention_explorer/runtime/precompiled.py, which uses them: `dataclasses`
  otherwise compiles each one at every start).
Only the imported modules, because bytecode compresses to about twice the size of its source: the
whole standard library as .pyc would add 1.7 MB to the download, the imported part ~0.6 MB.

Standard library only (like build.py); Node >= 18 must be on PATH.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

NODE_MIN = 18  # Pyodide 0.27's own minimum
COMPILE_TIMEOUT_S = 600  # boot + NumPy + our imports + compiling ~350 modules: ~15 s here, far more under load
ZIP_LEVEL = 9  # deflate level of the archives written (every member is compressed again)

# Imported at start-up inside a function, so importing our modules does not import them (page.warm_up
# imports difflib). tests/test_browser_skeleton.py lists every module a page compiled from source by the
# end of its warm-up: a module missing here fails it.
ALSO_IMPORTED = ("difflib", "pkgutil")

STDLIB_PREFIX = "/lib/python312.zip/"  # where Pyodide mounts python_stdlib.zip
# The precompiled dataclass methods' table (attention_explorer/runtime/precompiled.py), under py/ and in the zip
DATACLASS_TABLE = "attention_explorer/runtime/dataclass_methods.marshal"
SITE_PACKAGES = "/lib/python3.12/site-packages/"

# From here on, each method text `dataclasses` exec()s (precompiled.py) is compiled as exec(text) would
# compile it there, run, and kept in dataclass_methods: {text: code object}. Part of COMPILER (and of
# tests/test_precompiled.py, under CPython).
RECORDER = r"""
import builtins, dataclasses, marshal
dataclass_methods = {}


def recording_exec(text, globals=None, locals=None):
    code = compile(text, "<string>", "exec", dont_inherit=True)
    dataclass_methods[text] = code
    return builtins.exec(code, globals, locals)


dataclasses.exec = recording_exec
"""

# Runs inside the pinned Pyodide (CPython 3.12) under Node. /out: the output folder; /app: py/.
# spec.json: {"imports": [dotted names to import], "app": [our modules, paths under py/]}.
COMPILER = (
    r"""
import importlib, importlib.machinery, importlib.util, json, os, sys, zipfile, zipimport
from importlib._bootstrap_external import _code_to_hash_pyc

spec = json.load(open("/out/spec.json"))
sys.dont_write_bytecode = True  # /app is the source tree: no __pycache__ of 3.12's written into it
sys.path.insert(0, "/app")
"""
    + RECORDER
    + r'''
for name in spec["imports"]:
    importlib.import_module(name)
dataclasses.exec = builtins.exec


def pyc(source, filename):  # -> the bytes of an unchecked hash-based .pyc
    code = compile(source, filename, "exec", dont_inherit=True)
    return bytes(_code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


stdlib = zipfile.ZipFile("'''
    + STDLIB_PREFIX.rstrip("/")
    + r'''")
manifest = {"python": sys.version.split()[0], "magic": importlib.util.MAGIC_NUMBER.hex(),
            "stdlib": [], "numpy": [], "app": {}}
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None) or ""
    if not path.endswith(".py"):
        continue
    loader = getattr(module, "__loader__", None)
    if not isinstance(loader, importlib.machinery.SourceFileLoader | zipimport.zipimporter):
        continue  # frozen into the interpreter, or made some other way: nothing to compile
    if path.startswith("'''
    + STDLIB_PREFIX
    + r'''"):
        member = path[len("'''
    + STDLIB_PREFIX
    + r'''"):]
        write("/out/stdlib/" + member + "c", pyc(stdlib.read(member), path))
        manifest["stdlib"].append(member)
    elif path.startswith("'''
    + SITE_PACKAGES
    + r'''numpy/"):
        member = path[len("'''
    + SITE_PACKAGES
    + r""""):]
        with open(path, "rb") as f:
            write("/out/numpy/" + member + "c", pyc(f.read(), path))
        manifest["numpy"].append(member)
for rel in spec["app"]:
    with open("/app/" + rel, "rb") as f:
        cached = rel + "c"  # beside the source, where zipimport looks (the worker imports from the zip)
        write("/out/app/" + cached, pyc(f.read(), rel))
        manifest["app"][rel] = cached
write("/out/app/"""
    + DATACLASS_TABLE
    + r"""", importlib.util.MAGIC_NUMBER + marshal.dumps(dataclass_methods))
manifest["dataclass_methods"] = len(dataclass_methods)
manifest["stdlib"].sort()
manifest["numpy"].sort()
with open("/out/manifest.json", "w") as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
"""
)

DRIVER = r"""
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [indexURL, out, app] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(indexURL + "pyodide.mjs").href);
const py = await loadPyodide({ indexURL });
await py.loadPackage("numpy", { messageCallback: () => {} });
for (const [root, at] of [[out, "/out"], [app, "/app"]]) {
  py.FS.mkdirTree(at);
  py.FS.mount(py.FS.filesystems.NODEFS, { root }, at);
}
py.runPython(readFileSync(out + "/compiler.py", "utf8"));
process.exit(0);
"""


class BytecodeError(Exception):
    """The bytecode step failed; the message says what ran, how it failed, and what to do."""


@dataclass(frozen=True)
class RuntimeBytecode:
    """The compiled runtime files, ready to ship, and our start-up modules' bytecode."""

    stdlib_zip: bytes  # python_stdlib.zip, imported modules as .pyc
    numpy_wheel: bytes  # NumPy's wheel, imported modules as .pyc, RECORD updated
    lock: bytes  # pyodide-lock.json carrying numpy_wheel's sha256
    app: dict  # {our module, path under py/: (path of its .pyc under py/, bytes)}
    dataclass_methods: bytes  # the table for attention_explorer/runtime/precompiled.py (DATACLASS_TABLE)
    manifest: dict  # what was compiled, and by which Python (the compiler's manifest.json)


def module_names(rels: list[str]) -> list[str]:
    """Paths under py/ (attention_explorer/views/markup.py) -> dotted module names to import."""
    names = []
    for rel in rels:
        parts = rel[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def choose_node() -> str:
    """A node on PATH that Pyodide supports, or BytecodeError saying what to install."""
    node = shutil.which("node")
    version = ""
    if node:
        try:
            version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            version = ""
        m = re.match(r"v(\d+)\.", version)
        if m and int(m.group(1)) >= NODE_MIN:
            return node
    raise BytecodeError(
        f"Node.js >= {NODE_MIN} is needed to compile the runtime's Python to bytecode with the "
        f"pinned Pyodide (found: {node or 'no node on PATH'} {version}). Install it (Debian: "
        "apt-get install -y nodejs), then build again."
    )


def compile_with_pyodide(pyodide_dir: Path, numpy_wheel: Path, py_src: Path, app: list[str], out: Path) -> dict:
    """Run COMPILER in the pinned Pyodide under Node; its outputs land in out/. Returns the manifest.

    pyodide_dir: the pinned Pyodide files (pyodide.mjs, the lock, ...); numpy_wheel: the pinned wheel;
    app: our start-up modules (paths under py_src), imported (with ALSO_IMPORTED) and compiled.
    """
    node = choose_node()
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        index.mkdir()
        for f in pyodide_dir.iterdir():
            (index / f.name).symlink_to(f.resolve())
        (index / numpy_wheel.name).symlink_to(numpy_wheel.resolve())
        out.mkdir(parents=True, exist_ok=True)
        (out / "compiler.py").write_text(COMPILER, encoding="utf-8")
        (out / "spec.json").write_text(
            json.dumps({"imports": ["numpy", *ALSO_IMPORTED, *module_names(app)], "app": app}), encoding="utf-8"
        )
        driver = Path(tmp) / "driver.mjs"
        driver.write_text(DRIVER, encoding="utf-8")
        try:
            proc = subprocess.run(
                [node, str(driver), str(index) + "/", str(out), str(py_src)],
                capture_output=True,
                text=True,
                timeout=COMPILE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise BytecodeError(
                f"compiling with the pinned Pyodide under Node took over {COMPILE_TIMEOUT_S} s "
                "(a very busy machine?); build again"
            ) from None
        if proc.returncode != 0 or not (out / "manifest.json").exists():
            raise BytecodeError(
                f"compiling with the pinned Pyodide under Node ({node}) failed (exit "
                f"{proc.returncode}):\n{_python_error(proc.stderr or proc.stdout)}\nA start-up "
                "module that cannot be imported outside the browser fails here: only worker.py and "
                "worker_main.py may touch the browser, and only inside their functions."
            )
    return json.loads((out / "manifest.json").read_text())


def _python_error(output: str) -> str:
    """The Python traceback in Node's output (Pyodide also prints its whole minified loader), or its tail."""
    at = output.rfind("Traceback (most recent call last)")
    if at >= 0:
        return output[at : at + 3000].split("\n    at ")[0].strip()
    return "\n".join(line[:300] for line in output.strip().splitlines()[-20:])


def with_bytecode(archive: bytes, pyc: dict[str, bytes], replace: dict[str, bytes] | None = None) -> bytes:
    """A zip with each member named in pyc (a .py member -> its bytecode) replaced by <member>c, and
    each member named in `replace` given those bytes. Every other member keeps its bytes, order and
    metadata."""
    replace = replace or {}
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as zin, zipfile.ZipFile(out, "w") as zout:
        missing = (set(pyc) | set(replace)) - set(zin.namelist())
        if missing:
            raise BytecodeError(f"members the archive does not have: {sorted(missing)[:5]}")
        for info in zin.infolist():
            if info.filename in pyc:
                new = zipfile.ZipInfo(info.filename + "c", date_time=info.date_time)
                new.external_attr = info.external_attr
                zout.writestr(new, pyc[info.filename], compress_type=zipfile.ZIP_DEFLATED, compresslevel=ZIP_LEVEL)
            else:
                data = replace[info.filename] if info.filename in replace else zin.read(info)
                zout.writestr(info, data, compresslevel=ZIP_LEVEL)
    return out.getvalue()


def _record_hash(data: bytes) -> str:  # a wheel RECORD's hash field (PEP 376/427)
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_with_bytecode(wheel: bytes, pyc: dict[str, bytes]) -> bytes:
    """with_bytecode() for a wheel, its RECORD rewritten to list the .pyc members with their hashes."""
    with zipfile.ZipFile(io.BytesIO(wheel)) as z:
        (record,) = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")]
        lines = []
        for line in z.read(record).decode().splitlines():
            name = line.split(",", 1)[0]
            if name in pyc:
                line = f"{name}c,{_record_hash(pyc[name])},{len(pyc[name])}"
            lines.append(line)
    return with_bytecode(wheel, pyc, {record: ("\n".join(lines) + "\n").encode()})


def lock_with_wheel(lock: bytes, package: str, wheel: bytes) -> bytes:
    """pyodide-lock.json with the package's sha256 set to the wheel's (Pyodide checks it on fetch)."""
    data = json.loads(lock)
    entry = data["packages"].get(package)
    if entry is None:
        raise BytecodeError(f"pyodide-lock.json has no package {package!r}")
    entry["sha256"] = hashlib.sha256(wheel).hexdigest()
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def _cache_key(parts: list[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


# Two builds may fill the cache at once (pytest workers, a build beside a test run): each makes its
# output in a folder of its own, named by its process, then moves it into place in one rename.
PART = ".part-"


def _part_folder(folder: Path) -> Path:
    """An empty folder beside `folder` for this process's output (a leftover of this pid removed)."""
    part = folder.with_name(f"{folder.name}{PART}{os.getpid()}")
    shutil.rmtree(part, ignore_errors=True)
    return part


def _in_progress(folder: Path) -> bool:
    """Whether `folder` is another running process's part folder (a dead one's is left over: not)."""
    name, _, pid = folder.name.rpartition(PART)
    if not name or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        pass
    return True


def _publish(part: Path, folder: Path, complete: str) -> None:
    """Move `part` to `folder` in one rename. If another build got there first with a complete output
    (`complete` in it), that one stays (it may be being read) and ours goes; an incomplete leftover
    is moved aside and replaced."""
    for _ in range(2):
        try:
            os.replace(part, folder)  # fails if a non-empty folder is there
            return
        except OSError:
            if (folder / complete).exists():
                shutil.rmtree(part, ignore_errors=True)
                return
            aside = _part_folder(folder.with_name(folder.name + ".old"))
            os.replace(folder, aside)
            shutil.rmtree(aside, ignore_errors=True)
    raise BytecodeError(f"could not move {part} to {folder}: something keeps writing there")


def runtime_bytecode(
    pyodide_dir: Path, numpy_wheel: Path, py_src: Path, app: list[str], cache: Path
) -> RuntimeBytecode:
    """The compiled runtime and our modules' bytecode, made once per input and cached in cache/<key>/.

    pyodide_dir, numpy_wheel: the pinned, verified files (build.cached_file); app: our start-up modules
    (paths under py_src).
    """
    inputs = sorted(pyodide_dir.iterdir()) + [numpy_wheel]
    key = _cache_key(
        [
            Path(__file__).read_bytes(),
            *(p.name.encode() for p in inputs),
            *(hashlib.sha256(p.read_bytes()).digest() for p in inputs),
            *(rel.encode() + b"\0" + (py_src / rel).read_bytes() for rel in app),
        ]
    )
    folder = cache / key
    if not (folder / "manifest.json").exists():
        part = _part_folder(folder)
        try:
            compile_with_pyodide(pyodide_dir, numpy_wheel, py_src, app, part)
        except BytecodeError:
            shutil.rmtree(part, ignore_errors=True)
            raise
        _publish(part, folder, "manifest.json")
        for old in cache.iterdir():  # earlier inputs' outputs (~4 MB each): one build's is kept
            if old != folder and old.is_dir() and not _in_progress(old):
                shutil.rmtree(old, ignore_errors=True)
    manifest = json.loads((folder / "manifest.json").read_text())
    shipped = folder / "shipped"  # the rewritten archives (recompressing them takes seconds): made once too
    if not (shipped / "pyodide-lock.json").exists():
        stdlib = with_bytecode(
            (pyodide_dir / "python_stdlib.zip").read_bytes(),
            {m: (folder / "stdlib" / (m + "c")).read_bytes() for m in manifest["stdlib"]},
        )
        wheel = wheel_with_bytecode(
            numpy_wheel.read_bytes(), {m: (folder / "numpy" / (m + "c")).read_bytes() for m in manifest["numpy"]}
        )
        part = _part_folder(shipped)
        part.mkdir()
        (part / "python_stdlib.zip").write_bytes(stdlib)
        (part / numpy_wheel.name).write_bytes(wheel)
        (part / "pyodide-lock.json").write_bytes(
            lock_with_wheel((pyodide_dir / "pyodide-lock.json").read_bytes(), "numpy", wheel)
        )
        _publish(part, shipped, "pyodide-lock.json")
    ours = {rel: (cached, (folder / "app" / cached).read_bytes()) for rel, cached in manifest["app"].items()}
    return RuntimeBytecode(
        (shipped / "python_stdlib.zip").read_bytes(),
        (shipped / numpy_wheel.name).read_bytes(),
        (shipped / "pyodide-lock.json").read_bytes(),
        ours,
        (folder / "app" / DATACLASS_TABLE).read_bytes(),
        manifest,
    )
