"""A runtime workaround: NumPy's wheel unpacked into site-packages by the worker itself, in place of Pyodide's
loadPackage.

What it works around: Pyodide 0.27.7's loadPackage("numpy") spends time a page that needs three of NumPy's
extension modules does not need to (below). The worker's main script (worker_main.load_numpy) downloads the
pinned wheel with its sha256 as the fetch's integrity (the browser checks it, as loadPackage's fetch does),
calls `install`, marks pyodide_js.loadedPackages.numpy as loadPackage would, and `import numpy` then loads
the extension modules it needs.
It relies on: the wheel's layout (one .dist-info, no .data; unpack_wheel refuses anything else, naming the
member), Pyodide loading an extension module from site-packages when Python imports it, and
pyodide_js.loadedPackages. `engaged()` says whether NumPy came from what it wrote (tests/test_browser_skeleton.py).
Measured gain, against loadPackage, on cold first visits (bench/bench_workarounds.py; the runs in
docs/performance.md, "Runtime workarounds"): the NumPy step ('Loading NumPy…' -> 'Computing attention…')
is shorter by 206 ms in Chromium (8 of 8 rounds), 228 ms in Firefox ESR (8 of 8) and 386 ms in WebKitGTK
(6 of 8); `ready` comes 218, 179 and 337 ms sooner (medians). What loadPackage spends that we do not:
- it unpacks with shutil.unpack_archive, which streams each member through zipfile in small reads
  (~0.31 s in the browser for this 3.3 MB wheel); one zlib.decompress per member here: ~0.18 s;
- it compiles and instantiates every extension module of the wheel (7.5 MB of WebAssembly), while
  `import numpy` needs three (2.7 MB of the rest is numpy.random, numpy.fft, lapack_lite and test
  modules); here each is loaded when first imported, as Python does anywhere else;
- it ends with importlib.invalidate_caches(), whose first call imports importlib.metadata (~0.1 s)
  only to empty that module's still-empty caches; here only site-packages' finder is refreshed.

Pure Python over bytes and the file system (no browser, no Pyodide import): tested under CPython
against zipfile's own extraction.
"""

from __future__ import annotations

import io
import os
import sys
import zipfile
import zlib

INSTALLER = "attention-explorer"  # written to the dist-info's INSTALLER, as the packaging spec asks
LOCAL_HEADER = b"PK\x03\x04"  # a zip member's local header starts with this; 30 bytes, then name + extra


class WheelError(Exception):
    """The wheel holds something this installer does not handle; the message names the member."""


def install(data: bytes) -> list[str]:
    """The wheel `data` unpacked into this Python's site-packages, which the import system is told of;
    returns the files written (unpack_wheel)."""
    from site import getsitepackages

    target = getsitepackages()[0]
    written = unpack_wheel(data, target)
    refresh_finder(target)
    _installed_into.append(target)
    return written


_installed_into: list[str] = []  # the site-packages install() wrote into (engaged)


def engaged(module: str = "numpy") -> str | None:
    """None once install() has run and `module` was imported from what it wrote; else what happened."""
    if not _installed_into:
        return "install() never ran"
    imported = sys.modules.get(module)
    where = os.path.abspath(getattr(imported, "__file__", None) or "")
    if not where.startswith(os.path.abspath(_installed_into[-1]) + os.sep):
        return f"{module} was imported from {where or 'nowhere'}, not from the files install() wrote"
    return None


def unpack_wheel(data: bytes, target: str, source: str = "pyodide") -> list[str]:
    """Write every member of the wheel `data` under the folder `target` (site-packages); return the
    files written (absolute paths, in the wheel's order).

    The wheel is the pinned one, its bytes checked against their sha256 on download, so no member is
    checked again here (zipfile's CRC-32 check would be the third check of the same bytes); a member
    whose path would leave `target`, a compression other than stored/deflate, or a .data folder (files
    installed elsewhere than site-packages) stops the install with a WheelError naming it.
    Also writes the dist-info's INSTALLER and, as Pyodide's own installer does, PYODIDE_SOURCE.
    """
    view = memoryview(data)
    archive = zipfile.ZipFile(io.BytesIO(data))  # reads the central directory; BytesIO shares the bytes
    root = os.path.abspath(target)
    made: set[str] = set()
    written = []
    for info in archive.infolist():
        name = info.filename
        path = os.path.normpath(os.path.join(root, name))
        if os.path.isabs(name) or not path.startswith(root + os.sep):
            raise WheelError(f"wheel member {name!r} would be written outside {root}")
        if name.split("/", 1)[0].endswith(".data"):
            raise WheelError(f"wheel member {name!r} is in a .data folder, which this installer does not place")
        if name.endswith("/"):
            os.makedirs(path, exist_ok=True)
            continue
        folder = os.path.dirname(path)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        with open(path, "wb") as f:
            f.write(_member_bytes(data, view, info))
        written.append(path)
    dist_info = _dist_info(archive)
    with open(os.path.join(root, dist_info, "INSTALLER"), "w") as f:
        f.write(INSTALLER)
    with open(os.path.join(root, dist_info, "PYODIDE_SOURCE"), "w") as f:
        f.write(source)
    return written


def _member_bytes(data: bytes, view: memoryview, info: zipfile.ZipInfo) -> bytes | memoryview:
    """One member's content, read straight from its place in `data`: one slice and one decompress."""
    at = info.header_offset
    if data[at : at + 4] != LOCAL_HEADER:
        raise WheelError(f"wheel member {info.filename!r}: no local header at offset {at}")
    name_length = int.from_bytes(data[at + 26 : at + 28], "little")
    extra_length = int.from_bytes(data[at + 28 : at + 30], "little")
    start = at + 30 + name_length + extra_length
    raw = view[start : start + info.compress_size]
    if info.compress_type == zipfile.ZIP_DEFLATED:
        return zlib.decompress(raw, -zlib.MAX_WBITS)  # a raw deflate stream, as zip stores it
    if info.compress_type == zipfile.ZIP_STORED:
        return raw
    raise WheelError(
        f"wheel member {info.filename!r} uses compression {info.compress_type}: only stored and deflate are handled"
    )


def _dist_info(archive: zipfile.ZipFile) -> str:
    """The wheel's one top-level *.dist-info folder."""
    found = {n.split("/", 1)[0] for n in archive.namelist() if n.split("/", 1)[0].endswith(".dist-info")}
    if len(found) != 1:
        raise WheelError(f"a wheel has one .dist-info folder; this one has {sorted(found) or 'none'}")
    return found.pop()


def refresh_finder(folder: str) -> None:
    """Make the import system see what was just written to `folder` (a sys.path entry): its finder
    forgets the listing it cached. importlib.invalidate_caches() would do it for every finder, but its
    first call imports importlib.metadata (~0.1 s in the browser) to empty caches nobody filled."""
    finder = sys.path_importer_cache.get(folder)
    if finder is not None:
        finder.invalidate_caches()
