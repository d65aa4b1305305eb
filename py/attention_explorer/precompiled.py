"""Dataclass methods compiled at build time, so that the worker's start-up does not compile them.

`dataclasses` writes each method it generates (__init__, __repr__, __eq__, __hash__, a frozen class's
__setattr__ and __delattr__) as source text and exec()s that text, at every import of a module that
defines a dataclass. In the browser that is Python compiling in WebAssembly at start-up speed (V8's
baseline code): the 16 dataclasses a start-up defines (81 methods) made most of the worker's start-up
(worker.boot under the pinned Pyodide in Node, 2026-12-03: 110-146 ms, 45-52 ms with this; in Chromium
"Computing attention" -> ready 137 -> 63 ms). build_bytecode records each text those imports exec
together with its code object, compiled by the same pinned Pyodide, and build.startup_bundle puts the table in the
start-up zip beside this module (TABLE). install() makes `dataclasses` run those code objects instead
of compiling the same text again: the same text gives the same code, so nothing else changes. A text
the table lacks (a reader's own dataclass, a class changed since the build) is compiled as before,
and listed in `compiled` (worker.compiled_at_start reports it; a browser test expects none).

    install() -> how many texts the table holds (0: no table here, or another Python's)
    compiled: [(module, method)]   methods compiled from their text since install()

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
        if code is None:
            # "def __create_fn__(...):\n def __init__(self, ...)..." -> "__init__"
            method = text.split("\n", 2)[1].strip()[len("def ") :].split("(")[0]
            compiled.append(((globals or {}).get("__name__", "?"), method))
            code = text
        exec(code, globals, locals)

    dataclasses.exec = exec_precompiled  # _create_fn's exec (dataclasses calls it by this name)
    return len(table)
