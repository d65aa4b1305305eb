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
import zipfile

import pytest

import build
import build_bytecode as bb
from attention_explorer import precompiled


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
    assert list(_members(out).items()) == [("a/__init__.py", b"x = 1\n"), ("a/b.pyc", b"BYTECODE-B"),
                                           ("a/data.txt", b"text"), ("c.pyc", b"BYTECODE-C")]


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
        "pkg/__init__.py,sha256=old,6", f"pkg/m.pyc,sha256={digest},8", "pkg-1.0.dist-info/RECORD,,"]


def test_the_lock_carries_the_new_wheels_sha256():
    lock = json.dumps({"info": {}, "packages": {"numpy": {"sha256": "0" * 64, "file_name": "n.whl"}}}).encode()
    out = json.loads(bb.lock_with_wheel(lock, "numpy", b"wheel bytes"))
    assert out["packages"]["numpy"] == {"sha256": hashlib.sha256(b"wheel bytes").hexdigest(), "file_name": "n.whl"}
    with pytest.raises(bb.BytecodeError, match="no package 'scipy'"):
        bb.lock_with_wheel(lock, "scipy", b"")


def test_module_names_of_paths():
    assert bb.module_names(["attention_explorer/__init__.py", "attention_explorer/views/markup.py"]) == \
        ["attention_explorer", "attention_explorer.views.markup"]


def test_no_node_is_a_build_error_saying_what_to_install(monkeypatch):
    monkeypatch.setattr(bb.shutil, "which", lambda _name: None)
    with pytest.raises(bb.BytecodeError, match=r"Node\.js >= 18 is needed[\s\S]*apt-get install -y nodejs"):
        bb.choose_node()


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
    compiled = _check_compiled(wheel, build.cached_file("numpy", build.RUNTIME_NUMPY.rsplit("/", 1)[1]).read_bytes(),
                               "numpy/")
    assert {"numpy/__init__.py", "numpy/_core/numeric.py"} <= set(compiled)
    lock = json.loads((bundle / build.RUNTIME_LOCK).read_bytes())
    assert lock["packages"]["numpy"]["sha256"] == hashlib.sha256(wheel).hexdigest()
    pinned = json.loads(build.cached_file("pyodide", "pyodide-lock.json").read_bytes())
    pinned["packages"]["numpy"]["sha256"] = lock["packages"]["numpy"]["sha256"]
    assert lock == pinned, "the lock differs from the pinned one in more than NumPy's hash"


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
    assert bb.DATACLASS_TABLE == f"attention_explorer/{precompiled.TABLE}"
    assert len(members) == 2 * len(sources)
