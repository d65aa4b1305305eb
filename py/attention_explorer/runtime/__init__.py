"""Runtime workarounds: where the worker's start-up replaces or patches a part of the pinned runtime
(Pyodide 0.27.7, its CPython 3.12, its package loader) because no supported API does as well.

Each module is one workaround. Its docstring says what it works around, what of the runtime it relies on,
and its measured gain on each engine (Chromium, Firefox ESR, WebKitGTK; the runs: docs/performance.md,
"Runtime workarounds"; bench/bench_workarounds.py measures them again, each switched off in turn). Each
has `engaged()`: None while it works, else what changed; `engaged()` here gathers them, the worker reports
them (worker.workarounds_engaged), and tests/test_browser_skeleton.py fails naming the pinned Pyodide and
PyScript if one has stopped engaging, which is what an upgrade of the runtime would do silently. A
workaround acts only where it was measured to pay: one whose gain is within the noise everywhere is
removed (zip_once, each module a zip gives read once through zipimport's private _get_module_code,
went that way), and one that pays on one engine but costs on another acts on the first only
(extension_preload: WebKit; it says why not elsewhere).

    precompiled        dataclass methods compiled at build time (dataclasses' exec)
    numpy_install      NumPy's wheel unpacked by the worker (in place of Pyodide's loadPackage)
    lazy_linalg        NumPy's LAPACK module (numpy.linalg._umath_linalg) loaded when first used
    extension_preload  on WebKit, the extension modules `import numpy` loads compiled asynchronously first

The main thread's, in site/runtime/: page_observer.js (PyScript's document-wide MutationObserver left
out) and pyodide_progress.mjs (Pyodide's loader wrapped to count its download for the progress line).
"""

from __future__ import annotations


def engaged() -> dict[str, str | None]:
    """{workaround: None while it works, else why not}, for the worker's start-up that has run."""
    from . import extension_preload, lazy_linalg, numpy_install, precompiled

    modules = (precompiled, numpy_install, lazy_linalg, extension_preload)
    return {m.__name__.rsplit(".", 1)[1]: m.engaged() for m in modules}
