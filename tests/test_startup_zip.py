"""The worker imports our start-up modules straight from build.startup_bundle's zip (zipimport;
worker_main.load_numpy), the way Python imports its standard library in the browser.

Checked under CPython in a separate interpreter whose only way to our package is the zip: a bundle of
the sources with this Python's own unchecked hash-based bytecode beside them (the built bundle's is
3.12's, made by the pinned Pyodide: tests/test_build_bytecode.py checks that one's layout, and
tests/test_browser_skeleton.py that the browser imports it without compiling).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib._bootstrap_external import _code_to_hash_pyc

import build

PROBE = r"""
import asyncio, json, os, sys, traceback
sys.path.insert(0, sys.argv[1])
from attention_explorer import models, page, worker  # the page's start-up imports
from attention_explorer.models import designed

out = {"files": {m.__name__: m.__file__ for m in (page, designed, worker)}}
try:
    models.get("no-such-model")
except KeyError:
    out["traceback"] = traceback.format_exc()


async def fake_fetch(url, fetched):  # the trained model's module, as the page would serve it
    out["fetched"] = url
    return b"ANSWER = 42\n"

worker._fetch_bytes = fake_fetch
os.chdir(sys.argv[2])
asyncio.run(worker._fetch_module("https://example.test/site/", "attention_explorer/models/extra_probe.py", None))
from attention_explorer.models import extra_probe
out["extra"] = [extra_probe.ANSWER, extra_probe.__file__]
print(json.dumps(out))
"""


def _own_bytecode(rel: str) -> tuple[str, bytes]:
    source = (build.PY_SRC / rel).read_bytes()
    code = compile(source, rel, "exec", dont_inherit=True)
    return rel + "c", bytes(_code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False))


def test_the_start_up_modules_import_from_the_zip_as_bytecode_with_their_source_lines(tmp_path):
    modules = build.startup_sources()
    bundle = tmp_path / "startup.zip"
    bundle.write_bytes(build.startup_bundle(modules, {rel: _own_bytecode(rel) for rel in modules}))
    work = tmp_path / "worker-folder"
    work.mkdir()
    # -I: no current folder, no PYTHON* variables; site-packages (NumPy) stay
    run = subprocess.run(
        [sys.executable, "-I", "-c", PROBE, str(bundle), str(work)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    for name, path in out["files"].items():  # from the zip, and from the .pyc: nothing compiled
        assert path.startswith(str(bundle) + "/") and path.endswith(".pyc"), (name, path)
    # a traceback through our code still shows its source lines (zipimport hands linecache the .py)
    assert 'raise KeyError(f"no model {model_id!r}' in out["traceback"], out["traceback"]
    # a module fetched later (the trained model's) lands in the file system and its package finds it
    assert out["fetched"] == "https://example.test/site/py/attention_explorer/models/extra_probe.py"
    answer, path = out["extra"]
    assert answer == 42 and path == str(work / "attention_explorer/models/extra_probe.py")


def test_a_module_whose_bytecode_is_not_this_pythons_is_imported_from_its_source(tmp_path):
    """A .pyc of another Python (a bundle built for another Pyodide) costs a compile, never an error."""
    rel = "attention_explorer/tokens.py"
    path, pyc = _own_bytecode(rel)
    foreign = bytes([pyc[0] ^ 0xFF]) + pyc[1:]  # another magic number
    bundle = tmp_path / "startup.zip"
    bundle.write_bytes(build.startup_bundle(["attention_explorer/__init__.py", rel], {rel: (path, foreign)}))
    probe = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); from attention_explorer import tokens; "
        "print(json.dumps([tokens.__file__, tokens.tokenize('The cat sat')]))"
    )
    run = subprocess.run([sys.executable, "-I", "-c", probe, str(bundle)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    file, toks = json.loads(run.stdout)
    assert file == f"{bundle}/{rel}" and toks == ["The", "cat", "sat"]
