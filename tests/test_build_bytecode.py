"""build_bytecode: the runtime's Python shipped as bytecode made by the pinned Pyodide.

The archive rewriting is checked on small archives made here; the real output (the built bundle's
python_stdlib.zip, NumPy's wheel and lock, our start-up zip) against the pinned files it came from.
That the browser really imports from this bytecode is tested in tests/test_browser_skeleton.py.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import subprocess
import sys
import zipfile

import pytest

import build
import build_bytecode as bb
from attention_explorer.runtime import precompiled


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def _members(archive: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        return {n: z.read(n) for n in z.namelist()}


def test_named_modules_become_pyc_members_and_everything_else_is_kept_in_order():
    src = _zip({"a/__init__.py": b"x = 1\n", "a/b.py": b"y = 2\n", "a/data.txt": b"text", "c.py": b"z = 3\n"})
    out = bb.with_bytecode(src, {"a/b.py": b"BYTECODE-B", "c.py": b"BYTECODE-C"})
    assert list(_members(out).items()) == [
        ("a/__init__.py", b"x = 1\n"),
        ("a/b.pyc", b"BYTECODE-B"),
        ("a/data.txt", b"text"),
        ("c.pyc", b"BYTECODE-C"),
    ]


def test_bytecode_for_a_member_the_archive_lacks_is_refused():
    with pytest.raises(bb.BytecodeError, match="does not have"):
        bb.with_bytecode(_zip({"a.py": b""}), {"b.py": b"?"})


def test_a_wheels_record_lists_the_pyc_members_with_their_hashes_and_sizes():
    record = "pkg/__init__.py,sha256=old,6\npkg/m.py,sha256=old,6\npkg-1.0.dist-info/RECORD,,\n"
    wheel = _zip({"pkg/__init__.py": b"x = 1\n", "pkg/m.py": b"y = 2\n", "pkg-1.0.dist-info/RECORD": record.encode()})
    out = _members(bb.wheel_with_bytecode(wheel, {"pkg/m.py": b"BYTECODE"}))
    assert set(out) == {"pkg/__init__.py", "pkg/m.pyc", "pkg-1.0.dist-info/RECORD"}
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"BYTECODE").digest()).rstrip(b"=").decode()
    assert out["pkg-1.0.dist-info/RECORD"].decode().splitlines() == [
        "pkg/__init__.py,sha256=old,6",
        f"pkg/m.pyc,sha256={digest},8",
        "pkg-1.0.dist-info/RECORD,,",
    ]


def test_the_lock_carries_the_new_wheels_sha256():
    lock = json.dumps({"info": {}, "packages": {"numpy": {"sha256": "0" * 64, "file_name": "n.whl"}}}).encode()
    out = json.loads(bb.lock_with_wheel(lock, "numpy", b"wheel bytes"))
    assert out["packages"]["numpy"] == {"sha256": hashlib.sha256(b"wheel bytes").hexdigest(), "file_name": "n.whl"}
    with pytest.raises(bb.BytecodeError, match="no package 'scipy'"):
        bb.lock_with_wheel(lock, "scipy", b"")


def test_module_names_of_paths():
    assert bb.module_names(["attention_explorer/__init__.py", "attention_explorer/views/markup.py"]) == [
        "attention_explorer",
        "attention_explorer.views.markup",
    ]


def test_no_node_is_a_build_error_saying_what_to_install(monkeypatch):
    monkeypatch.setattr(bb.shutil, "which", lambda _name: None)
    with pytest.raises(bb.BytecodeError, match=r"Node\.js >= 18 is needed[\s\S]*apt-get install -y nodejs"):
        bb.choose_node()


# --------------------------------------------------------------------------- the cache, shared


def _inputs(tmp_path):
    """Pinned-runtime stand-ins for runtime_bytecode: a Pyodide folder, a wheel, one app module."""
    pyodide = tmp_path / "pyodide"
    pyodide.mkdir()
    (pyodide / "python_stdlib.zip").write_bytes(_zip({"os.py": b"x = 1\n"}))
    (pyodide / "pyodide-lock.json").write_text(json.dumps({"info": {}, "packages": {"numpy": {"sha256": ""}}}))
    wheel = tmp_path / "numpy-1-py3-none-any.whl"
    wheel.write_bytes(_zip({"numpy/__init__.py": b"", "numpy-1.dist-info/RECORD": b"numpy/__init__.py,,\n"}))
    src = tmp_path / "src"
    (src / "app").mkdir(parents=True)
    (src / "app" / "m.py").write_text("y = 2\n")
    return pyodide, wheel, src, ["app/m.py"]


def _fake_compiler(tag: str, during=None):
    """compile_with_pyodide's stand-in (no Node): writes a complete output marked `tag`; `during()`
    runs before the manifest is written, as another process's work would interleave."""

    def compile_(pyodide_dir, numpy_wheel, py_src, app, out):
        (out / "stdlib").mkdir(parents=True)
        (out / "stdlib" / "os.pyc").write_bytes(b"BYTECODE " + tag.encode())
        (out / "numpy" / "numpy").mkdir(parents=True)
        (out / "numpy" / "numpy" / "__init__.pyc").write_bytes(b"")
        (out / "app" / bb.DATACLASS_TABLE).parent.mkdir(parents=True)
        (out / "app" / "app" / "m.pyc").parent.mkdir(parents=True)
        (out / "app" / "app" / "m.pyc").write_bytes(tag.encode())
        (out / "app" / bb.DATACLASS_TABLE).write_bytes(b"")
        if during:
            during()
        manifest = {"stdlib": ["os.py"], "numpy": ["numpy/__init__.py"], "app": {"app/m.py": "app/m.pyc"}}
        (out / "manifest.json").write_text(json.dumps(manifest))
        return manifest

    return compile_


def test_a_cache_another_build_filled_meanwhile_is_kept_and_ours_dropped(tmp_path, monkeypatch):
    # another process compiles the same inputs while this one does and publishes first: its output
    # stays (it may be reading it), this one's part folder goes, and both read one complete output
    pyodide, wheel, src, app = _inputs(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()

    def other_build_finishes():
        with monkeypatch.context() as other:  # another process: its own pid, its own compiler run
            other.setattr(bb.os, "getpid", lambda: 4_000_000)
            other.setattr(bb, "compile_with_pyodide", _fake_compiler("other"))
            bb.runtime_bytecode(pyodide, wheel, src, app, cache)

    monkeypatch.setattr(bb, "compile_with_pyodide", _fake_compiler("ours", during=other_build_finishes))
    out = bb.runtime_bytecode(pyodide, wheel, src, app, cache)
    assert out.app == {"app/m.py": ("app/m.pyc", b"other")}
    (folder,) = cache.iterdir()  # one output, no part folder left
    assert bb.PART not in folder.name and not list(folder.glob("*" + bb.PART + "*"))
    assert _members(out.stdlib_zip)["os.pyc"] == b"BYTECODE other"


def test_the_cache_cleanup_spares_a_running_builds_part_folder_and_removes_a_dead_ones(tmp_path, monkeypatch):
    pyodide, wheel, src, app = _inputs(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        running = cache / f"0123456789abcdef{bb.PART}{alive.pid}"
        leftover = cache / f"fedcba9876543210{bb.PART}{dead.pid}"
        earlier = cache / "00000000deadbeef"  # an earlier input's output
        for folder in (running, leftover, earlier):
            folder.mkdir()
        monkeypatch.setattr(bb, "compile_with_pyodide", _fake_compiler("ours"))
        bb.runtime_bytecode(pyodide, wheel, src, app, cache)
        names = {p.name for p in cache.iterdir()}
        assert running.name in names and leftover.name not in names and earlier.name not in names
        assert len(names) == 2
    finally:
        alive.kill()
        alive.wait()


def test_an_incomplete_cache_folder_is_replaced(tmp_path, monkeypatch):
    pyodide, wheel, src, app = _inputs(tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.setattr(bb, "compile_with_pyodide", _fake_compiler("first"))
    bb.runtime_bytecode(pyodide, wheel, src, app, cache)
    (folder,) = cache.iterdir()
    (folder / "manifest.json").unlink()  # a half-deleted folder
    (folder / "shipped" / "pyodide-lock.json").unlink()
    monkeypatch.setattr(bb, "compile_with_pyodide", _fake_compiler("second"))
    out = bb.runtime_bytecode(pyodide, wheel, src, app, cache)
    assert out.app["app/m.py"][1] == b"second"
    assert [p.name for p in cache.iterdir()] == [folder.name]


# --------------------------------------------------------------------------- the built bundle


def _pyc_header_flags(data: bytes) -> int:
    return int.from_bytes(data[4:8], "little")


def _check_compiled(built: bytes, pinned: bytes, prefix: str) -> list[str]:
    """built holds every member of pinned: the same bytes, or a .py as .pyc. Returns the compiled ones."""
    b, p = _members(built), _members(pinned)
    compiled = [n for n in p if n not in b]
    assert all(n.endswith(".py") and n + "c" in b for n in compiled), [n for n in compiled if n + "c" not in b][:5]
    assert {n for n in b if n not in p} == {n + "c" for n in compiled}, "members the pinned archive lacks"
    for name, data in p.items():
        if name in b and not name.endswith("RECORD"):
            assert b[name] == data, f"{name} changed"
    magic = b[compiled[0] + "c"][:4]
    for name in compiled:
        pyc = b[name + "c"]
        assert pyc[:4] == magic and _pyc_header_flags(pyc) == 0b01, f"{name}c: not an unchecked hash-based pyc"
    assert any(n.startswith(prefix) for n in compiled)
    return compiled


def test_the_bundles_standard_library_has_the_start_ups_modules_as_bytecode_and_nothing_lost(bundle):
    pinned = build.cached_file("pyodide", "python_stdlib.zip").read_bytes()
    compiled = _check_compiled((bundle / build.RUNTIME_STDLIB).read_bytes(), pinned, "asyncio/")
    # what every start-up imports (Pyodide's own modules, NumPy's and ours), and not what none does
    assert {"_pyodide/_base.py", "pyodide/_package_loader.py", "dataclasses.py", "json/decoder.py"} <= set(compiled)
    assert "turtle.py" not in compiled and "pydoc_data/topics.py" not in compiled
    # the pinned Python 3.12's magic number (importlib: 3531 for CPython 3.12), which the 3.11 here cannot write
    pyc = _members((bundle / build.RUNTIME_STDLIB).read_bytes())["dataclasses.pyc"]
    assert int.from_bytes(pyc[:2], "little") == 3531 and pyc[2:4] == b"\r\n"


def test_the_bundles_numpy_wheel_is_compiled_and_the_lock_names_its_hash(bundle):
    wheel = (bundle / build.RUNTIME_NUMPY).read_bytes()
    compiled = _check_compiled(
        wheel, build.cached_file("numpy", build.RUNTIME_NUMPY.rsplit("/", 1)[1]).read_bytes(), "numpy/"
    )
    assert {"numpy/__init__.py", "numpy/_core/numeric.py"} <= set(compiled)
    lock = json.loads((bundle / build.RUNTIME_LOCK).read_bytes())
    assert lock["packages"]["numpy"]["sha256"] == hashlib.sha256(wheel).hexdigest()
    pinned = json.loads(build.cached_file("pyodide", "pyodide-lock.json").read_bytes())
    pinned["packages"]["numpy"]["sha256"] = lock["packages"]["numpy"]["sha256"]
    assert lock == pinned, "the lock differs from the pinned one in more than NumPy's hash"
    # the page's worker downloads that wheel itself (numpy_install) with the lock's sha256 as its integrity
    for page in build.TEMPLATES:
        html = (bundle / page).read_text(encoding="utf-8")
        config = json.loads(
            re.search(r'<script type="application/json" id="worker-config">(.*?)</script>', html, re.S).group(1)
        )
        sha256 = base64.b64encode(bytes.fromhex(lock["packages"]["numpy"]["sha256"])).decode()
        assert config["numpy_wheel"] == {"src": build.RUNTIME_NUMPY, "integrity": f"sha256-{sha256}"}, page


def test_the_start_up_zip_holds_each_start_up_module_and_its_bytecode_where_zipimport_looks(bundle):
    members = _members((bundle / build.STARTUP_BUNDLE).read_bytes())
    sources = {n: d for n, d in members.items() if n.endswith(".py")}
    assert sorted(sources) == sorted(build.startup_sources())
    for rel, data in sources.items():
        assert data == (build.PY_SRC / rel).read_bytes(), rel
        pyc = members[rel + "c"]  # zipimport: module.pyc beside module.py (no __pycache__ in a zip)
        assert int.from_bytes(pyc[:2], "little") == 3531 and _pyc_header_flags(pyc) == 0b01, rel
    # and the precompiled dataclass methods, made by the same Python (precompiled.py checks the magic)
    table = members.pop(bb.DATACLASS_TABLE)
    assert int.from_bytes(table[:2], "little") == 3531 and len(table) > 1000
    assert bb.DATACLASS_TABLE == f"attention_explorer/runtime/{precompiled.TABLE}"
    assert len(members) == 2 * len(sources)
