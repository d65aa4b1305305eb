"""A runtime workaround: NumPy's LAPACK module loaded when first used, not by `import numpy`.

What it works around: `import numpy` (the pinned NumPy 2.0.2) imports numpy.linalg, whose _linalg module
imports the extension module numpy.linalg._umath_linalg: LAPACK's generalized ufuncs (inv, solve, det,
eig, svd, ...), 1.9 MB of WebAssembly beside _multiarray_umath's 2.6 MB. Every start-up compiled it, yet
nothing the page computes calls it: np.linalg.norm, the one numpy.linalg function the models and views
use, is plain NumPy (a sum of squares and a square root).
How: install(paths), after numpy_install has written the wheel and before `import numpy`, puts a stand-in
for the module in sys.modules. _linalg's `from numpy.linalg import _umath_linalg` then binds the stand-in,
and the first attribute read from it (a reader's own attention function calling np.linalg.inv, say)
loads the real module from its file the way the import would have (importlib's ExtensionFileLoader) and
gives the stand-in its attributes, so the functions holding the stand-in see the real gufuncs from then
on. Dunder names (`__file__`, `__spec__`, ...) are answered without loading: looking is not using.
extension_preload leaves a module that sys.modules holds with no file alone, so WebKit does not compile it
either.
It relies on: NumPy reading no attribute of the module while it imports, and the page's own Python
reading none (engaged() reports one that did, with where it was read; a reader's function that uses
LAPACK ends the stand-in's time, as it should, and engaged() then says so too: it is checked at start-up).
Measured (bench/bench_workarounds.py, switched off against on, alternating cold loads; docs/performance.md,
"Runtime workarounds"): what it removes is fixed, 1.9 MB of WebAssembly compiled and instantiated at every
start and the code kept in memory; what that is in time is within the noise of `ready` on every engine
(WebKitGTK +186 ms in 8 rounds, -23 ms in 10 on a busier machine; Chromium -143, -1 and +10 ms in 8, 12, 10;
Firefox ESR -11 ms in 8); it shows in the step it shortens: Firefox's NumPy step +19.5 ms (longer without
it in 6 of 8 rounds), and in WebKitGTK `import numpy` itself, timed in the worker, 203 against 246.5 ms
(8 loads each, shorter in 6 of 8 pairs). No engine showed a cost, so it acts on every one; a phone's
memory is the other reason.
Its tests: tests/test_lazy_linalg.py (the stand-in in a fresh CPython with NumPy: left alone by
`import numpy` and np.linalg.norm, then inv's result exact), tests/test_browser_skeleton.py (engaged at
start-up, on every engine: tests/test_browser_engines.py), tests/test_browser_code.py (a reader's
function solving a system with it, in Pyodide).

    install(paths) -> the module it stands in for, or None when paths hold no such file
    engaged() -> None while the stand-in holds (not loaded), else why not (runtime.engaged)
"""

from __future__ import annotations

import posixpath
import sys
import types

MODULE = "numpy.linalg._umath_linalg"
_FILE_PREFIX = "_umath_linalg."  # its file: numpy/linalg/_umath_linalg.cpython-312-wasm32-emscripten.so

_report: dict[str, object] = {}  # install's stand-in, and what first read from it (engaged)


class StandIn(types.ModuleType):
    """The module until an attribute is read from it; then the real one's attributes are its own."""

    def __init__(self, name: str, path: str):
        super().__init__(name)
        self.__dict__["_stand_in_path"] = path

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)  # introspection (__file__, __wrapped__, ...): not a use
        real = _load(self)
        import traceback

        _report["first_read"] = f"{attr!r}, read at " + " <- ".join(
            f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in reversed(traceback.extract_stack()[-4:-1])
        )
        return getattr(real, attr)


def _load(stand_in: StandIn) -> types.ModuleType:
    """The real module, loaded from the stand-in's file as the import would; the stand-in gets its attributes."""
    import importlib.machinery
    import importlib.util

    path = stand_in.__dict__["_stand_in_path"]
    loader = importlib.machinery.ExtensionFileLoader(stand_in.__name__, path)
    spec = importlib.util.spec_from_file_location(stand_in.__name__, path, loader=loader)
    real = importlib.util.module_from_spec(spec)  # dlopen, PyInit: the compile this put off
    loader.exec_module(real)
    sys.modules[stand_in.__name__] = real
    package = sys.modules.get(stand_in.__name__.rpartition(".")[0])
    if package is not None:
        setattr(package, stand_in.__name__.rpartition(".")[2], real)
    stand_in.__dict__.update({k: v for k, v in real.__dict__.items() if k != "__name__"})
    return real


def chosen(paths: list[str]) -> str | None:
    """The file among `paths` (numpy_install's: absolute, in Emscripten's POSIX file system) that is
    numpy.linalg's LAPACK module, or None."""
    for path in paths:
        folder, name = posixpath.split(path)
        if folder.endswith("/numpy/linalg") and name.startswith(_FILE_PREFIX) and name.endswith(".so"):
            return path
    return None


def install(paths: list[str]) -> str | None:
    """Before `import numpy`: a stand-in for numpy.linalg._umath_linalg in sys.modules, for its file among
    `paths`. Returns the module's name, or None (no such file, or the module is imported already)."""
    path = chosen(paths)
    if path is None or MODULE in sys.modules:
        _report["installed"] = None
        return None
    stand_in = StandIn(MODULE, path)
    sys.modules[MODULE] = stand_in
    _report["installed"] = stand_in
    return MODULE


def engaged() -> str | None:
    """None while the stand-in holds: the page's start-up never needed LAPACK; else why not."""
    if "installed" not in _report:
        return "install() never ran"
    if _report["installed"] is None:
        return f"install() found no {MODULE} file among the wheel's, or the module was imported already"
    if "first_read" in _report:
        return f"{MODULE} was loaded: first read {_report['first_read']}"
    return None
