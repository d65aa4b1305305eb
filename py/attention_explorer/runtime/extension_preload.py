"""A runtime workaround: the extension modules `import numpy` loads, compiled asynchronously before it runs.

What it works around: Python imports an extension module with dlopen, which Pyodide 0.27.7 (Emscripten
3.1.58) does synchronously: it compiles the module's WebAssembly with the synchronous
`new WebAssembly.Module`. WebKitGTK 2.50 compiles NumPy's _multiarray_umath (2.6 MB) that way in 474-658
ms, against 38-54 ms for an asynchronous compile of the same bytes (Firefox ESR: ~30 ms either way).
Pyodide's loadPackage compiles a package's extension modules asynchronously, but numpy_install replaces
it (its docstring says why), so without this the import pays the synchronous compile.
How: after numpy_install has written the wheel, preload() hands the files of IMPORTED_BY_NUMPY (less a
module sys.modules holds as a stand-in, which `import numpy` will not load: lazy_linalg's) to
`FS.createPreloadedFile` (Emscripten's file-system API; Pyodide exposes the file system as pyodide.FS),
which gives a file whose name ends in .so to Emscripten's preload plugin for WebAssembly: the plugin
compiles and instantiates it asynchronously and keeps its exports, and the synchronous dlopen of the
import then takes them from there instead of compiling. The files themselves are already written
(createPreloadedFile's dontCreateFile).
It relies on: that plugin, which Emscripten registers for a main module built for dynamic linking (the
plugin calls back later, from a promise; with no plugin for the name, createPreloadedFile calls back at
once, which `engaged()` reports), and dlopen looking for a library's preloaded exports by the same path;
IMPORTED_BY_NUMPY being what the pinned NumPy 2.0.2 imports (`engaged()` reports a module imported but
not preloaded, or preloaded but not imported).
Measured (bench/bench_workarounds.py, switched off against on; docs/performance.md, "Runtime workarounds"):
in WebKitGTK ready came 414 ms sooner (10 of 10 rounds) and the NumPy step ('Loading NumPy…' -> 'Computing
attention…') was 430 ms shorter on a quiet machine; 313 and 315 ms in a run of 8; within the noise in a
run on a busy machine (WebKit's asynchronous compile shares its threads with the tier-up of Pyodide's own
WebAssembly). In Firefox ESR the NumPy step was 49 ms longer (every round: Firefox compiles synchronously
as fast, and the asynchronous round trips cost), in Chromium 12 ms longer (within the noise). So it acts
on WebKit only (`wanted`, from the user agent: iPhones' browsers are all WebKit); elsewhere the import
compiles the modules, as without it.

    preload(paths, fs, user_agent)   awaitable: on WebKit, the files of `paths` (numpy_install's) that
                         IMPORTED_BY_NUMPY names, compiled and instantiated; before `import numpy`
    wanted(user_agent) -> whether the engine is WebKit
    after_import()       notes which of NumPy's extension modules `import numpy` loaded (for engaged)
    engaged() -> None (working, or not wanted on this engine), or why it is not (runtime.engaged)

Only the worker calls preload() (worker_main.load_numpy), with pyodide.FS; the choice of files
(to_preload) is plain Python, tested under CPython.
"""

from __future__ import annotations

import os
import sys

# The extension modules `import numpy` (NumPy 2.0.2, the pinned wheel) loads: the rest of the wheel's
# (numpy.random's, numpy.fft's, lapack_lite, test modules) load when first imported, as before.
IMPORTED_BY_NUMPY = frozenset(
    {"numpy._core._multiarray_umath", "numpy._core._multiarray_tests", "numpy.linalg._umath_linalg"}
)

_report: dict[str, object] = {}  # what preload() and after_import() saw (engaged)


def module_name(path: str, site_packages: str) -> str | None:
    """The module an extension file under site_packages is ('numpy/_core/_x.cpython-312-....so' ->
    'numpy._core._x'); None for a file that is not an extension module."""
    rel = os.path.relpath(path, site_packages)
    if not rel.endswith(".so") or rel.startswith(".."):
        return None
    folder, name = os.path.split(rel)
    return ".".join([*folder.split(os.sep), name.split(".", 1)[0]]) if folder else name.split(".", 1)[0]


def to_preload(paths: list[str], site_packages: str, loaded=None) -> list[str]:
    """The files among `paths` whose module IMPORTED_BY_NUMPY names, in their order, less a module that
    `loaded` (sys.modules) holds with no file: a stand-in (lazy_linalg's), which `import numpy` takes as
    it is, so nothing would use the compile."""
    loaded = sys.modules if loaded is None else loaded
    stand_ins = {m for m in IMPORTED_BY_NUMPY if m in loaded and getattr(loaded[m], "__file__", None) is None}
    return [p for p in paths if module_name(p, site_packages) in IMPORTED_BY_NUMPY - stand_ins]


def wanted(user_agent: str) -> bool:
    """Whether the engine is WebKit (Safari, and every browser on an iPhone), the one engine where this was
    measured to pay. Every browser built on Chromium says "Chrome/" (or "Chromium/") beside its
    "AppleWebKit/", Firefox has no "AppleWebKit/". A performance property has no feature to detect,
    hence the user agent."""
    return "AppleWebKit/" in user_agent and "Chrome/" not in user_agent and "Chromium/" not in user_agent


async def preload(paths: list[str], fs, user_agent: str) -> None:
    """Compile and instantiate the files of `paths` that to_preload chooses, through fs.createPreloadedFile
    (fs: Pyodide's FS), on an engine this is wanted on (user_agent: the worker's navigator.userAgent);
    returns when every one is done. A file the plugin could not load is left to the import's own dlopen
    (Emscripten has logged why to the console) and reported by engaged()."""
    if not wanted(user_agent):
        _report["preloaded"] = None  # not on this engine: the import compiles them, as without this
        return
    import asyncio
    from site import getsitepackages

    from pyodide.ffi import create_proxy

    site_packages = getsitepackages()[0]
    loop = asyncio.get_running_loop()
    waits = []
    for path in to_preload(paths, site_packages):
        done = loop.create_future()
        onload = create_proxy(lambda d=done: d.done() or d.set_result("later"))
        onerror = create_proxy(lambda d=done: d.done() or d.set_result("failed"))
        folder, name = os.path.split(path)
        # the file's bytes as a Uint8Array (one copy, kept by the plugin until compiled); dontCreateFile
        fs.createPreloadedFile(folder, name, fs.readFile(path), True, True, onload, onerror, True)
        # the plugin answers from a promise: an answer before the call returned means no plugin took the file
        waits.append((path, "at once" if done.done() else done, (onload, onerror)))
    preloaded = {}
    for path, done, proxies in waits:
        preloaded[module_name(path, site_packages)] = done if isinstance(done, str) else await done
        for proxy in proxies:
            proxy.destroy()
    _report["preloaded"] = preloaded


def after_import(modules: dict | None = None) -> None:
    """Note NumPy's extension modules loaded so far (call right after `import numpy`); modules: sys.modules."""
    _report["imported"] = sorted(
        name
        for name, module in list((sys.modules if modules is None else modules).items())
        if name.startswith("numpy.") and (getattr(module, "__file__", None) or "").endswith(".so")
    )


def engaged() -> str | None:
    """None once preload() compiled every module `import numpy` then loaded, through the plugin, or left them
    to the import on an engine it is not wanted on; else what happened."""
    if "preloaded" not in _report:
        return "preload() never ran"
    preloaded = _report["preloaded"]
    if preloaded is None:  # not wanted on this engine
        return None
    if "imported" not in _report:
        return "after_import() never ran"
    not_later = {m: how for m, how in preloaded.items() if how != "later"}
    if not_later:
        return f"Emscripten's preload plugin did not load {not_later} (at once: no plugin took the file)"
    imported = set(_report["imported"])
    if imported != set(preloaded):
        return (
            f"import numpy loaded {sorted(imported)}, preload() compiled {sorted(preloaded)}: "
            "update IMPORTED_BY_NUMPY for the pinned NumPy"
        )
    return None
