"""runtime/lazy_linalg.py under CPython: which of the wheel's files it stands in for, and the stand-in itself
in a fresh interpreter with this machine's NumPy: `import numpy` and np.linalg.norm leave it alone, the
first LAPACK call loads the real module and gets LAPACK's answer. That it engages in the browser, under the
pinned runtime: tests/test_browser_skeleton.py (and test_browser_engines.py); a reader's function using
it there: tests/test_browser_code.py."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import build
from attention_explorer.runtime import extension_preload, lazy_linalg
from fresh_python import printed_lines

SITE = "/lib/python3.12/site-packages"


def test_it_stands_in_for_the_pinned_wheels_lapack_module_and_nothing_else():
    data = build.cached_file("numpy", Path(build.RUNTIME_NUMPY).name)
    members = [f"{SITE}/{name}" for name in zipfile.ZipFile(data).namelist()]
    want = f"{SITE}/numpy/linalg/_umath_linalg.cpython-312-wasm32-emscripten.so"
    assert want in members, "the pinned NumPy has moved or renamed numpy.linalg._umath_linalg"
    assert lazy_linalg.chosen(members) == want
    # the module extension_preload would otherwise compile at start-up: the one put off
    assert lazy_linalg.MODULE in extension_preload.IMPORTED_BY_NUMPY
    others = [m for m in members if m != want]
    assert lazy_linalg.chosen(others) is None  # lapack_lite, numpy/_core's: not it
    assert lazy_linalg.chosen([f"/tmp/elsewhere/_umath_linalg{want[-34:]}"]) is None


# In a new interpreter: NumPy's own LAPACK module's file found without importing NumPy, the stand-in put
# in, then NumPy imported and used; each step prints what the module is and what engaged() says.
SCRIPT = """
import glob, importlib.util, json, os, sys
root = importlib.util.find_spec("numpy").submodule_search_locations[0]
assert "numpy" not in sys.modules
from attention_explorer.runtime import extension_preload, lazy_linalg as ll
def show(step, value=None):
    module = sys.modules.get(ll.MODULE)
    print(json.dumps({"step": step, "module": type(module).__name__, "file": getattr(module, "__file__", None),
                      "engaged": ll.engaged(), "value": value}))
show("before install")
print(json.dumps({"installed": ll.install(sorted(glob.glob(os.path.join(root, "linalg", "*.so"))))}))
import numpy as np
extension_preload.after_import()
show("after import numpy", extension_preload._report["imported"])
show("norm", float(np.linalg.norm([3.0, 4.0])))
show("inv", np.linalg.inv([[2.0, 0.0], [0.0, 4.0]]).tolist())
show("solve", np.linalg.solve([[2.0, 1.0], [1.0, 3.0]], [3.0, 5.0]).tolist())
show("package", type(np.linalg._umath_linalg).__name__)
"""


def test_numpy_imports_and_computes_norms_without_lapack_and_the_first_lapack_call_loads_it():
    lines = [json.loads(line) for line in printed_lines(SCRIPT)]
    steps = {line["step"]: line for line in lines if "step" in line}
    assert lines[1] == {"installed": lazy_linalg.MODULE}
    assert steps["before install"]["module"] == "NoneType"
    assert steps["before install"]["engaged"] == "install() never ran"
    after = steps["after import numpy"]
    assert after["module"] == "StandIn" and after["file"] is None and after["engaged"] is None
    # extension_preload's after_import does not count it as loaded (it has no file): nothing to compile
    assert lazy_linalg.MODULE not in after["value"]
    assert steps["norm"]["value"] == 5.0 and steps["norm"]["module"] == "StandIn"
    assert steps["norm"]["engaged"] is None
    # the first LAPACK call: the real module, loaded from its file, and LAPACK's answers
    inv = steps["inv"]
    assert inv["value"] == [[0.5, 0.0], [0.0, 0.25]]
    assert inv["module"] == "module" and inv["file"].endswith(".so") and "_umath_linalg" in inv["file"]
    assert inv["engaged"].startswith(f"{lazy_linalg.MODULE} was loaded: first read 'inv'")
    x = steps["solve"]["value"]  # 2x + y = 3, x + 3y = 5: x = 0.8, y = 1.4
    assert abs(x[0] - 0.8) < 1e-12 and abs(x[1] - 1.4) < 1e-12
    assert steps["package"]["value"] == "module"  # numpy.linalg's attribute is the real module too


def test_it_stands_in_for_nothing_when_there_is_no_file_or_the_module_is_loaded():
    assert lazy_linalg.chosen([]) is None
    script = """
import json, sys, types
from attention_explorer.runtime import lazy_linalg as ll
print(json.dumps([ll.install(["/lib/site-packages/numpy/_core/_multiarray_umath.so"]), ll.engaged()]))
sys.modules[ll.MODULE] = types.ModuleType(ll.MODULE)
print(json.dumps([ll.install(["/lib/site-packages/numpy/linalg/_umath_linalg.x.so"]), ll.engaged()]))
"""
    none_found, already = (json.loads(line) for line in printed_lines(script))
    assert none_found[0] is None and "found no" in none_found[1]
    assert already[0] is None and "imported already" in already[1]
