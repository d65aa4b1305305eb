"""A runtime workaround: dataclass methods compiled at build time, so that the worker's start-up does not
compile them.

What it works around: `dataclasses` (CPython 3.12, in Pyodide 0.27.7) writes each method it generates
(__init__, __repr__, __eq__, __hash__, a frozen class's __setattr__ and __delattr__) as source text and
exec()s that text, at every import of a module that defines a dataclass, and has no supported way to
cache what it compiled. In the browser that is Python compiling in WebAssembly not yet optimised: the 16
dataclasses a start-up defines (81 methods) were most of our boot.
It relies on: `dataclasses` calling `exec` by that module-level name; the bytecode's magic number (a
table from another Python installs nothing). `engaged()` says whether dataclasses ran code from the table
(tests/test_browser_skeleton.py).
Measured gain on cold first visits (bench/bench_workarounds.py; the runs in docs/performance.md, "Runtime
workarounds"): our boot ('Computing attention…' -> ready) is shorter by 63 ms in Chromium (8 of 8 rounds),
24 ms in Firefox ESR (8 of 8) and 35 ms in WebKitGTK (7 of 8); install(), which unmarshals the table,
costs 2-4 ms in Firefox and 8-41 ms in WebKit (timed in the worker), which the gain covers.
How: build_bytecode records each text those imports exec
together with its code object, compiled by the same pinned Pyodide, and build.startup_bundle puts the table in the
start-up zip beside this module (TABLE). install() makes `dataclasses` run those code objects instead
of compiling the same text again: the same text gives the same code, so nothing else changes. A text
the table lacks (a reader's own dataclass, a class changed since the build) is compiled as before,
and listed in `compiled` (worker.compiled_at_start reports it; a browser test expects none).

    install() -> how many texts the table holds (0: no table here, or another Python's)
    compiled: [(module, method)]   methods compiled from their text since install()
    engaged() -> None, or why it is not (runtime.engaged)

Only the worker calls install() (worker_main.load_numpy). Under CPython, from the source tree, there
is no table and nothing is installed.
"""

from __future__ import annotations

import importlib.util
import marshal
import os

# The table's file beside this module: importlib.util.MAGIC_NUMBER (the Python that compiled it), then
# marshal.dumps({method text: code object})
TABLE = "dataclass_methods.marshal"

compiled: list[tuple[str, str]] = []
_used = [0, 0]  # [texts in the table, texts dataclasses exec'd from it] (engaged)


def install() -> int:
    try:
        data = __loader__.get_data(os.path.join(os.path.dirname(__file__), TABLE))
    except OSError:  # no table beside this module: a source tree, not the start-up zip
        return 0
    magic = importlib.util.MAGIC_NUMBER
    if data[: len(magic)] != magic:  # another Python's code objects: compile as usual
        return 0
    table = marshal.loads(data[len(magic) :])

    import dataclasses

    def exec_precompiled(text, globals=None, locals=None):
        code = table.get(text)
        if code is not None:
            _used[1] += 1
        else:
            # "def __create_fn__(...):\n def __init__(self, ...)..." -> "__init__"
            method = text.split("\n", 2)[1].strip()[len("def ") :].split("(")[0]
            compiled.append(((globals or {}).get("__name__", "?"), method))
            code = text
        exec(code, globals, locals)

    dataclasses.exec = exec_precompiled  # _create_fn's exec (dataclasses calls it by this name)
    _used[0] = len(table)
    return len(table)


def engaged() -> str | None:
    """None once the table is installed and dataclasses ran code from it; else what changed."""
    if not _used[0]:
        return "no table installed: none beside this module, or another Python's (magic number)"
    if not _used[1]:
        return "installed, but dataclasses never exec'd a text through it: it no longer calls `exec` by that name"
    return None
