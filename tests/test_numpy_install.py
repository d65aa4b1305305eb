"""numpy_install: the worker unpacks NumPy's wheel itself (one slice and one decompress per member),
and what it writes is what zipfile's own extraction writes, plus the dist-info's INSTALLER and
PYODIDE_SOURCE. A member it cannot place stops it with a message naming the member.

The browser side (the wheel downloaded with its integrity, `import numpy` loading the extension
modules it needs, the rest loaded when first imported) is checked in Chromium:
test_browser_skeleton.py (the page starts) and test_browser_code.py (a reader's function imports
numpy.random, numpy.fft and numpy.linalg.lapack_lite).
"""

from __future__ import annotations

import ast
import io
import os
import sys
import zipfile
from pathlib import Path

import pytest

import build
from attention_explorer.runtime import numpy_install


def wheel(members: dict[str, bytes | None], compression=zipfile.ZIP_DEFLATED) -> bytes:
    """A wheel's bytes: {name: content}, None for a folder entry."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, content in members.items():
            if content is None:
                z.writestr(zipfile.ZipInfo(name), b"")
            else:
                z.writestr(name, content, compress_type=compression)
    return out.getvalue()


def files_under(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def same_as_zipfile(data: bytes, tmp_path: Path) -> dict[str, bytes]:
    """Unpack with numpy_install and with zipfile.extractall; the files must agree. Returns ours."""
    ours, theirs = tmp_path / "ours", tmp_path / "zipfile"
    written = numpy_install.unpack_wheel(data, str(ours))
    zipfile.ZipFile(io.BytesIO(data)).extractall(theirs)
    got, want = files_under(ours), files_under(theirs)
    dist_info = next(n.split("/")[0] for n in want if n.split("/")[0].endswith(".dist-info"))
    assert got.pop(f"{dist_info}/INSTALLER") == numpy_install.INSTALLER.encode()
    assert got.pop(f"{dist_info}/PYODIDE_SOURCE") == b"pyodide"
    assert got == want
    assert sorted(written) == sorted(str(ours / n) for n in want)
    return got


def test_a_wheel_unpacks_as_zipfile_unpacks_it_deflated_and_stored(tmp_path):
    members = {
        "pkg/__init__.py": b"ANSWER = 42\n" * 50,
        "pkg/sub/": None,
        "pkg/sub/table.bin": os.urandom(70_000),
        "pkg/_ext.cpython-312-wasm32-emscripten.so": b"\0asm" * 999,
        "pkg-1.0.dist-info/METADATA": b"Name: pkg\nVersion: 1.0\n",
        "pkg-1.0.dist-info/RECORD": b"",
    }
    for compression in (zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED):
        got = same_as_zipfile(wheel(members, compression), tmp_path / str(compression))
        assert got["pkg/sub/table.bin"] == members["pkg/sub/table.bin"]
        assert (tmp_path / str(compression) / "ours" / "pkg" / "sub").is_dir()


def test_the_pinned_numpy_wheel_unpacks_as_zipfile_unpacks_it(tmp_path):
    """The real one: every member, byte for byte (the extension modules among them)."""
    data = build.cached_file("numpy", Path(build.RUNTIME_NUMPY).name).read_bytes()
    got = same_as_zipfile(data, tmp_path)
    assert "numpy/_core/_multiarray_umath.cpython-312-wasm32-emscripten.so" in got
    assert "numpy/random/_generator.cpython-312-wasm32-emscripten.so" in got, "every extension module is written"


@pytest.mark.parametrize(
    "name, says",
    [
        ("../evil.py", "outside"),
        ("pkg/../../evil.py", "outside"),
        ("/etc/evil.py", "outside"),
        ("pkg-1.0.data/scripts/tool", ".data folder"),
    ],
)
def test_a_member_it_cannot_place_stops_it_and_is_named(tmp_path, name, says):
    data = wheel({"pkg/__init__.py": b"", name: b"x", "pkg-1.0.dist-info/METADATA": b""})
    with pytest.raises(numpy_install.WheelError, match=says) as caught:
        numpy_install.unpack_wheel(data, str(tmp_path / "site"))
    assert name in str(caught.value)
    assert not (tmp_path / "evil.py").exists()


def test_an_unknown_compression_or_dist_info_is_named(tmp_path):
    data = wheel({"pkg/__init__.py": b"x" * 100, "pkg-1.0.dist-info/METADATA": b""}, zipfile.ZIP_BZIP2)
    with pytest.raises(numpy_install.WheelError, match="pkg/__init__.py.*compression 12"):
        numpy_install.unpack_wheel(data, str(tmp_path / "a"))
    two = wheel({"pkg/__init__.py": b"", "a-1.dist-info/METADATA": b"", "b-1.dist-info/METADATA": b""})
    with pytest.raises(numpy_install.WheelError, match="a-1.dist-info.*b-1.dist-info"):
        numpy_install.unpack_wheel(two, str(tmp_path / "b"))


def test_install_writes_into_site_packages_and_refreshes_only_its_finder(tmp_path, monkeypatch):
    import site

    site_packages = tmp_path / "site-packages"
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(site_packages)])
    refreshed = []

    class Finder:
        def __init__(self, name):
            self.name = name

        def invalidate_caches(self):
            refreshed.append(self.name)

    monkeypatch.setattr(sys, "path_importer_cache", {str(site_packages): Finder("site"), "/elsewhere": Finder("other")})
    written = numpy_install.install(wheel({"pkg/__init__.py": b"", "pkg-1.0.dist-info/METADATA": b""}))
    assert written == [
        str(site_packages / "pkg" / "__init__.py"),
        str(site_packages / "pkg-1.0.dist-info" / "METADATA"),
    ]
    assert refreshed == ["site"], "only the finder of the folder written to"
    monkeypatch.setitem(sys.modules, "pkg", type(sys)("pkg"))
    assert "not from the files install() wrote" in numpy_install.engaged("pkg")
    sys.modules["pkg"].__file__ = str(site_packages / "pkg" / "__init__.py")
    assert numpy_install.engaged("pkg") is None
    numpy_install.refresh_finder(str(tmp_path / "not-on-the-path"))  # no finder: nothing to do, no error


def test_the_benchs_second_floor_runs_this_installer_on_the_pages_wheel(bundle):
    """bench_browser's floor-own page: this module's own code, then a load_numpy that fetches the bundle's
    wheel with the page's integrity; the page's cost is measured against it (information, no budget)."""
    sys.path.insert(0, str(build.ROOT / "bench"))
    import bench_browser

    files = bench_browser.floor_own_files(bundle)
    source = files["floor-own.py"].decode()
    assert source.startswith(
        (build.PY_SRC / "attention_explorer" / "runtime" / "numpy_install.py").read_text(encoding="utf-8")
    )
    tree = ast.parse(source, "floor-own.py")
    names = {node.name for node in tree.body if hasattr(node, "name")}
    assert {"install", "load_numpy"} <= names
    assert build.numpy_wheel_integrity(bundle) in source and Path(build.RUNTIME_NUMPY).name in source
    assert b'"./floor-own.py"' in files["floor-own.html"] and b"./floor.py" not in files["floor-own.html"]
