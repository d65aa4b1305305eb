"""zip_once: modules imported from a zip are read from it once, with the same code, file and fallbacks."""

from __future__ import annotations

import importlib
import importlib.util
import marshal
import sys
import zipfile
import zipimport

import pytest

from attention_explorer import zip_once

PACKAGE = "zo_demo_pkg"


def pyc(source: str, name: str) -> bytes:
    """An unchecked hash-based .pyc of `source` for this Python (as build_bytecode writes for Pyodide's)."""
    code = compile(source, name, "exec")
    flags = (0b01).to_bytes(4, "little")  # hash-based, unchecked
    return importlib.util.MAGIC_NUMBER + flags + b"\0" * 8 + marshal.dumps(code)


@pytest.fixture
def demo_zip(tmp_path):
    """A zip holding a package with a module in bytecode beside its source, one in source only, and one
    whose .pyc is another Python's (bad magic: the importer falls back to its source)."""
    path = tmp_path / "demo.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{PACKAGE}/__init__.py", "WHO = 'package'\n")
        z.writestr(f"{PACKAGE}/__init__.pyc", pyc("WHO = 'package'\n", "__init__.py"))
        z.writestr(f"{PACKAGE}/compiled.py", "WHO = 'source'\n")
        z.writestr(f"{PACKAGE}/compiled.pyc", pyc("WHO = 'bytecode'\n", "compiled.py"))  # tells which was run
        z.writestr(f"{PACKAGE}/plain.py", "WHO = 'plain'\n")
        z.writestr(f"{PACKAGE}/stale.py", "WHO = 'fallback'\n")
        z.writestr(f"{PACKAGE}/stale.pyc", b"\0\0\0\0" + pyc("WHO = 'stale'\n", "stale.py")[4:])
    sys.path.insert(0, str(path))
    yield path
    sys.path.remove(str(path))
    forget(path)


@pytest.fixture
def reads(monkeypatch):
    """The zip members read while importing: a list of member paths, appended to as they are read."""
    seen = []
    real = zipimport._get_data

    def counting(archive, toc_entry):
        seen.append(toc_entry[0])
        return real(archive, toc_entry)

    monkeypatch.setattr(zipimport, "_get_data", counting)
    return seen


def import_all():
    modules = {name: importlib.import_module(f"{PACKAGE}.{name}") for name in ("compiled", "plain", "stale")}
    return {name: (m.WHO, m.__file__) for name, m in modules.items()} | {
        "package": (sys.modules[PACKAGE].WHO, sys.modules[PACKAGE].__file__)
    }


def forget(path):
    """The demo package unimported and the zip's importers dropped: the next import reads it afresh."""
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    sys.path_importer_cache.pop(str(path), None)
    sys.path_importer_cache.pop(str(path / PACKAGE), None)
    importlib.invalidate_caches()


def test_without_it_each_module_is_read_twice(demo_zip, reads):
    """The cost zip_once removes (if a later Python reads once by itself, this says so)."""
    import_all()
    compiled = [r for r in reads if r.endswith("compiled.pyc")]
    assert len(compiled) == 2


def test_each_module_is_read_once_with_the_same_code_files_and_fallbacks(demo_zip, reads):
    before = import_all()
    forget(demo_zip)
    reads.clear()
    assert zip_once.install()
    try:
        after = import_all()
    finally:
        zip_once.uninstall()
    assert after == before
    assert after["compiled"][0] == "bytecode" and after["compiled"][1].endswith("compiled.pyc")
    assert after["stale"] == ("fallback", before["stale"][1]) and after["stale"][1].endswith("stale.py")
    members = [r.rsplit("/", 2)[-2] + "/" + r.rsplit("/", 1)[-1] for r in reads]
    for member in (f"{PACKAGE}/__init__.pyc", f"{PACKAGE}/compiled.pyc", f"{PACKAGE}/plain.py", f"{PACKAGE}/stale.py"):
        assert members.count(member) == 1, (member, members)
    assert not zip_once._found  # every code found was executed


def test_a_module_found_but_loaded_later_lazily_is_still_read_once(demo_zip, reads):
    assert zip_once.install()
    try:
        importlib.import_module(PACKAGE)
        reads.clear()
        spec = importlib.util.find_spec(f"{PACKAGE}.compiled")  # as importlib.util.LazyLoader users do
        spec.loader = importlib.util.LazyLoader(spec.loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        assert module.WHO == "bytecode"
    finally:
        zip_once.uninstall()
    assert [r for r in reads if r.endswith("compiled.pyc")] == [reads[0]] and len(reads) == 1


def test_uninstall_restores_the_importer_and_install_is_idempotent():
    methods = (zipimport.zipimporter.get_filename, zipimport.zipimporter.get_code)
    assert zip_once.install() and zip_once.install()
    assert zipimport.zipimporter.get_code is not methods[1]
    zip_once.uninstall()
    assert (zipimport.zipimporter.get_filename, zipimport.zipimporter.get_code) == methods


def test_a_zipimport_without_its_internal_finder_is_left_alone(monkeypatch):
    monkeypatch.delattr(zipimport, "_get_module_code")
    methods = (zipimport.zipimporter.get_filename, zipimport.zipimporter.get_code)
    assert zip_once.install() is False
    assert (zipimport.zipimporter.get_filename, zipimport.zipimporter.get_code) == methods
