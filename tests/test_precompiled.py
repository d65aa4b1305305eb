"""precompiled.install: dataclasses run the methods build_bytecode compiled instead of compiling their text.

Checked under CPython in separate interpreters, as the worker does it: a start-up zip (build.startup_bundle)
holding the sources, this Python's bytecode and a table recorded with build_bytecode.RECORDER while
importing them; the browser's own table (3.12's, from the pinned Pyodide) is tested by
tests/test_browser_skeleton.py (no method compiled at start-up) and tests/test_build_bytecode.py (its
place and magic number in the bundle).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import build
import build_bytecode
from test_startup_zip import _own_bytecode

MODULES = [
    "attention_explorer/__init__.py",
    "attention_explorer/runtime/__init__.py",
    "attention_explorer/runtime/precompiled.py",
    "attention_explorer/fields.py",
]

# Records the table the way build_bytecode's COMPILER does, while importing fields (a frozen dataclass)
RECORD = (
    build_bytecode.RECORDER
    + r"""
import importlib.util, sys
sys.path.insert(0, sys.argv[1])
import attention_explorer.fields
sys.stdout.buffer.write(importlib.util.MAGIC_NUMBER + marshal.dumps(dataclass_methods))
"""
)

# The worker's way: the zip on sys.path, install(), then the imports; and a dataclass of its own
PROBE = r"""
import dataclasses, json, sys
sys.path.insert(0, sys.argv[1])
from attention_explorer.runtime import precompiled
held = precompiled.install()
from attention_explorer import fields
f = fields.FIELDS[0]
same = dataclasses.replace(f)
out = {"held": held, "compiled_before": list(precompiled.compiled), "equal": same == f, "hashes": hash(same) == hash(f),
       "repr": repr(f).startswith("Field(name="), "exec": getattr(dataclasses, "exec", exec).__name__}
try:
    f.name = "other"
except dataclasses.FrozenInstanceError:
    out["frozen"] = True

@dataclasses.dataclass
class Own:
    x: int = 1

out["own"] = Own(2).x
out["compiled_after"] = [list(c) for c in precompiled.compiled]
out["engaged"] = precompiled.engaged()
print(json.dumps(out))
"""


def _run(code, *args):
    run = subprocess.run([sys.executable, "-I", "-c", code, *map(str, args)], capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    return run.stdout


def _bundle(tmp_path, table: bytes):
    path = tmp_path / "startup.zip"
    path.write_bytes(build.startup_bundle(MODULES, {rel: _own_bytecode(rel) for rel in MODULES}, table))
    return path


def test_the_start_ups_dataclass_methods_come_from_the_table_and_behave_the_same(tmp_path):
    table = _run(RECORD, build.PY_SRC)
    assert table[:4] == importlib.util.MAGIC_NUMBER
    out = json.loads(_run(PROBE, _bundle(tmp_path, table)))
    assert out["held"] >= 4  # fields.Field: __init__, __repr__, __eq__, __hash__, __setattr__, __delattr__
    assert out["compiled_before"] == [], "a method of the start-up's dataclass was compiled from its text"
    assert out["equal"] and out["hashes"] and out["repr"] and out["frozen"], out
    assert out["exec"] == "exec_precompiled"
    # a dataclass the table does not know is compiled as usual, and named
    assert out["own"] == 2
    assert ["__main__", "__init__"] in out["compiled_after"], out["compiled_after"]
    assert out["engaged"] is None


def test_another_pythons_table_or_none_installs_nothing(tmp_path):
    table = _run(RECORD, build.PY_SRC)
    foreign = bytes([table[0] ^ 0xFF]) + table[1:]  # another magic number: its code objects are not ours
    for bundle in (_bundle(tmp_path, foreign), build.PY_SRC):  # and the source tree: no table at all
        out = json.loads(_run(PROBE, bundle))
        assert out["held"] == 0 and out["exec"] == "exec", out
        assert "no table" in out["engaged"], "it says it is not engaged, and why"
        assert out["equal"] and out["frozen"] and out["own"] == 2
