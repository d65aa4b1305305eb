"""runtime/extension_preload.py under CPython: which of the wheel's files it hands to Emscripten's preload
plugin, and what engaged() says for each way the plugin can answer (a stand-in for pyodide.FS and
pyodide.ffi). That it engages in the browser, under the pinned runtime: tests/test_browser_skeleton.py."""

from __future__ import annotations

import asyncio
import sys
import types
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import build
from attention_explorer.runtime import extension_preload as ep

SITE = "/lib/python3.12/site-packages"
# Real user agents: Safari on an iPhone and on a Mac, Chrome and Firefox on iPhones (WebKit underneath),
# WebKitGTK's MiniBrowser; Chrome, Edge, Android's WebView, Firefox on Linux and Android
SAFARI = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.5 Mobile/15E148 Safari/604.1"
)
WEBKIT = [
    SAFARI,
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 "
    "Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "CriOS/126.0.6478.54 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/127.0 "
    "Mobile/15E148 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15",
]
NOT_WEBKIT = [
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 "
    "Edg/126.0.0.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 "
    "Chrome/126.0.6478.71 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0",
    "Mozilla/5.0 (Android 14; Mobile; rv:127.0) Gecko/127.0 Firefox/127.0",
]


@pytest.mark.parametrize("user_agent", WEBKIT)
def test_it_is_wanted_on_webkit_whatever_the_browser(user_agent):
    assert ep.wanted(user_agent)


@pytest.mark.parametrize("user_agent", NOT_WEBKIT)
def test_it_is_not_wanted_on_chromium_or_firefox(user_agent):
    assert not ep.wanted(user_agent)


SUFFIX = ".cpython-312-wasm32-emscripten.so"


@pytest.mark.parametrize(
    "rel, module",
    [
        (f"numpy/_core/_multiarray_umath{SUFFIX}", "numpy._core._multiarray_umath"),
        (f"numpy/linalg/_umath_linalg{SUFFIX}", "numpy.linalg._umath_linalg"),
        (f"_cffi_backend{SUFFIX}", "_cffi_backend"),
        ("numpy/_core/__init__.py", None),
        ("numpy-2.0.2.dist-info/RECORD", None),
    ],
)
def test_a_files_module_name_is_its_path_under_site_packages(rel, module):
    assert ep.module_name(f"{SITE}/{rel}", SITE) == module


def test_a_file_outside_site_packages_is_no_module():
    assert ep.module_name(f"/tmp/numpy/_core/_x{SUFFIX}", SITE) is None


def test_it_chooses_the_pinned_wheels_files_of_the_modules_import_numpy_loads():
    """From the real wheel's listing: one file for each module named, found by its path, and nothing else
    (numpy.random's, numpy.fft's and the test modules load when imported)."""
    data = build.cached_file("numpy", Path(build.RUNTIME_NUMPY).name)
    members = [f"{SITE}/{name}" for name in zipfile.ZipFile(data).namelist()]
    expected = sorted(f"{SITE}/{m.replace('.', '/')}{SUFFIX}" for m in ep.IMPORTED_BY_NUMPY)
    assert all(path in members for path in expected), "the pinned NumPy has moved or renamed one"
    assert sorted(ep.to_preload(members, SITE, loaded={})) == expected
    assert len([m for m in members if m.endswith(".so")]) > len(expected)


def test_a_module_held_by_a_stand_in_is_not_compiled_and_a_loaded_one_still_is():
    """lazy_linalg's stand-in (a module in sys.modules with no file) is what `import numpy` gets: no compile
    for it. A module loaded from its file (CPython's own NumPy, here) says nothing about the browser's."""
    linalg = f"{SITE}/numpy/linalg/_umath_linalg{SUFFIX}"
    core = f"{SITE}/numpy/_core/_multiarray_umath{SUFFIX}"
    stand_in = types.ModuleType("numpy.linalg._umath_linalg")  # no __file__
    loaded_from_file = types.SimpleNamespace(__file__="/somewhere/_multiarray_umath.so")
    chosen = ep.to_preload(
        [core, linalg],
        SITE,
        loaded={"numpy.linalg._umath_linalg": stand_in, "numpy._core._multiarray_umath": loaded_from_file},
    )
    assert chosen == [core]
    assert ep.to_preload([core, linalg], SITE, loaded={}) == [core, linalg]


class FakeFS:
    """pyodide.FS's createPreloadedFile as Emscripten's answers it: "later" (its plugin compiled the file:
    onload from a later task), "at once" (no plugin took it: onload before returning) or "failed"."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def readFile(self, path):  # noqa: N802
        return Path(path).read_bytes()

    def createPreloadedFile(self, folder, name, data, can_read, can_write, onload, onerror, dont_create):  # noqa: N802
        self.calls.append((folder, name, bytes(data), dont_create))
        if self.answer == "at once":
            onload()
        else:
            asyncio.get_running_loop().call_soon(onload if self.answer == "later" else onerror)


class Proxy:
    def __init__(self, fn):
        self.fn, self.destroyed = fn, False

    def __call__(self, *args):
        assert not self.destroyed, "called after destroy()"
        return self.fn(*args)

    def destroy(self):
        self.destroyed = True


@pytest.fixture
def preload_in(tmp_path, monkeypatch):
    """preload(...) run under CPython with site-packages at tmp_path, the wheel's three files and one more
    written there; returns (run(answer) -> the FakeFS, the paths)."""
    ffi = types.SimpleNamespace(create_proxy=Proxy)
    monkeypatch.setitem(sys.modules, "pyodide", types.SimpleNamespace(ffi=ffi))
    monkeypatch.setitem(sys.modules, "pyodide.ffi", ffi)
    monkeypatch.setattr("site.getsitepackages", lambda: [str(tmp_path)])
    monkeypatch.setattr(ep, "_report", {})
    paths = []
    for module in [*sorted(ep.IMPORTED_BY_NUMPY), "numpy.fft._pocketfft_umath"]:
        path = tmp_path / f"{module.replace('.', '/')}{SUFFIX}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0asm" + module.encode())
        paths.append(str(path))

    def run(answer, user_agent=SAFARI):
        fs = FakeFS(answer)
        # in a thread of its own: the browser tests' Playwright may be running an event loop in this one
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, ep.preload(paths, fs, user_agent)).result()
        return fs

    return run, paths


def imported(names):
    """A stand-in for sys.modules right after `import numpy`: these extension modules and a Python one."""
    modules = {name: types.SimpleNamespace(__file__=f"/x/{name.rsplit('.', 1)[1]}{SUFFIX}") for name in names}
    return {**modules, "numpy.linalg": types.SimpleNamespace(__file__="/x/numpy/linalg/__init__.py")}


def test_each_chosen_file_goes_to_the_plugin_with_its_bytes_and_is_not_written_again(preload_in):
    run, paths = preload_in
    fs = run("later")
    assert [(f"{folder}/{name}", data) for folder, name, data, _ in fs.calls] == [
        (p, Path(p).read_bytes()) for p in paths[:3]
    ]
    assert all(dont_create for *_, dont_create in fs.calls)
    ep.after_import(imported(ep.IMPORTED_BY_NUMPY))
    assert ep.engaged() is None


def test_it_says_when_no_plugin_took_the_files(preload_in):
    run, _ = preload_in
    run("at once")
    ep.after_import(imported(ep.IMPORTED_BY_NUMPY))
    assert "did not load" in ep.engaged() and "at once" in ep.engaged()


def test_a_file_the_plugin_failed_on_is_left_to_the_import_and_reported(preload_in):
    run, _ = preload_in
    run("failed")  # returns: the import's own dlopen loads it
    ep.after_import(imported(ep.IMPORTED_BY_NUMPY))
    assert "failed" in ep.engaged()


def test_a_module_import_numpy_loaded_but_not_preloaded_is_named(preload_in):
    run, _ = preload_in
    run("later")
    ep.after_import(imported([*ep.IMPORTED_BY_NUMPY, "numpy._core._simd"]))
    assert "numpy._core._simd" in ep.engaged() and "IMPORTED_BY_NUMPY" in ep.engaged()


def test_it_says_which_step_never_ran(preload_in):
    assert ep.engaged() == "preload() never ran"
    preload_in[0]("later")
    assert ep.engaged() == "after_import() never ran"


def test_on_another_engine_it_hands_nothing_and_the_import_compiles(preload_in):
    run, _ = preload_in
    fs = run("later", user_agent=NOT_WEBKIT[0])
    assert fs.calls == []
    ep.after_import(imported(ep.IMPORTED_BY_NUMPY))
    assert ep.engaged() is None
