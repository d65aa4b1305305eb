"""The browser worker's main script: PyScript's PyWorker runs this file (site/launch.js names it), and
each call it exports goes on to worker.py, which is the worker.

Why a separate, small main script: PyScript fetches and compiles its main script from source at
every start, before the page can make its first call. With worker.py (21 kB) as the main script that
took ~0.12 s of a cold start (Pyodide up -> main script running 143 ms, against 17 ms for a 0.3 kB
script, in Chromium; bench/HISTORY.md has the run). Imported from the start-up zip, worker.py comes as bytecode. So this
script only fetches that zip and NumPy's wheel (load_numpy), puts the zip on sys.path, has
numpy_install (from the zip) install the wheel, and forwards the rest. It runs only inside Pyodide,
and touches the browser only inside its functions, as worker.py does.

    load_numpy(spec) -> NumPy version   (spec: build.worker_config's bundle and NumPy wheel, the page's folder)
    boot, warm_up, dispatch, ...        -> worker.boot, worker.warm_up, ... (worker.py's docstring)
"""

STARTUP_ZIP = "attention-explorer-startup.zip"  # where the start-up zip is kept (the worker's folder)


class StartupDownloadError(Exception):
    """A file the start-up downloads (our modules' zip, NumPy's wheel) did not arrive; the message names it."""


async def load_numpy(spec):
    """NumPy, installed from its pinned wheel by numpy_install (not Pyodide's loadPackage: its docstring
    says why), and meanwhile our start-up modules' zip (build.startup_bundle: each module's source with
    its bytecode beside it) saved as one file and put first on sys.path. Python then imports our
    modules from the zip (zipimport, as it does the standard library): only those imported, from their
    bytecode, and a traceback still shows their lines. Unpacking its ~100 members instead took 0.1-0.4
    s of the start-up. Before NumPy is imported, precompiled gives dataclasses its methods' code,
    lazy_linalg puts off LAPACK, extension_preload compiles the rest (runtime/: each one says why).

    spec: {"bundle": path of the zip, "numpy": {"src": path of the wheel, "integrity": "sha256-..."},
    "base": the page's folder} (build.worker_config)."""
    import asyncio
    import os
    import sys

    import js
    import pyodide_js

    spec = spec.to_py()
    base, wheel = str(spec["base"]), spec["numpy"]
    # both download at once; the browser checks the wheel against its pinned sha256 (the integrity)
    wheel_response = asyncio.ensure_future(fetched(base + wheel["src"], StartupDownloadError, wheel["integrity"]))
    try:
        response = await fetched(base + str(spec["bundle"]), StartupDownloadError)
        data = (await response.arrayBuffer()).to_bytes()
    except BaseException:
        wheel_response.cancel()
        raise
    path = os.path.abspath(STARTUP_ZIP)
    with open(path, "wb") as f:
        f.write(data)
    sys.path.insert(0, path)
    from attention_explorer.runtime import extension_preload, lazy_linalg, numpy_install, precompiled

    precompiled.install()  # the dataclass methods, compiled at build time
    written = numpy_install.install((await (await wheel_response).arrayBuffer()).to_bytes())
    pyodide_js.loadedPackages.numpy = "default channel"  # as loadPackage marks it: a later call leaves it be
    lazy_linalg.install(written)
    await extension_preload.preload(written, pyodide_js.FS, js.navigator.userAgent)
    import numpy

    extension_preload.after_import()
    return numpy.__version__


async def fetched(url, error, integrity=None):
    """The browser's response for url (absolute), or `error` saying which file and why (worker.load_model
    is handed it for its downloads). integrity ("sha256-<base64>"): the browser refuses a body that differs."""
    import js

    name = url.rsplit("/", 1)[-1]
    try:
        if integrity is None:
            response = await js.fetch(url)
        else:
            from pyodide.ffi import to_js

            response = await js.fetch(url, to_js({"integrity": integrity}, dict_converter=js.Object.fromEntries))
    except Exception as exc:  # offline, refused, blocked, or not the body the integrity names
        why = f"could not reach {name} ({str(exc).splitlines()[-1][:80]})"
        if integrity:  # a second look, unchecked, tells a missing file from another file
            try:
                response = await js.fetch(url)
                why = (
                    f"{name} answered HTTP {response.status}"
                    if not response.ok
                    else f"{name} is not the pinned file (its sha256 differs)"
                )
            except Exception:  # unreachable either way: the first reason stands
                pass
        raise error(why) from None
    if not response.ok:
        raise error(f"{name} answered HTTP {response.status}")
    return response


def _forward(name, is_async):
    """The export `name`: worker.<name>, imported from the start-up zip at the first call. The async one
    (load_model) downloads: it gets `fetched` too, so that worker.py never imports this script."""

    def call(*args):
        from attention_explorer import worker

        return getattr(worker, name)(*args)

    async def call_async(*args):
        from attention_explorer import worker

        return await getattr(worker, name)(*args, fetched)

    forward = call_async if is_async else call
    forward.__name__ = name
    return forward


# worker.__export__ (tests/test_worker_main.py checks that they agree), and which of them are coroutines
FORWARDED = (
    "boot",
    "warm_up",
    "dispatch",
    "tip",
    "export_data",
    "embed_snippet",
    "export_caption",
    "core_selftest",
    "compiled_at_start",
    "workarounds_engaged",
    "load_model",
    "download_progress",
)
ASYNC = {"load_model"}
globals().update({name: _forward(name, name in ASYNC) for name in FORWARDED})

__export__ = ["load_numpy", *FORWARDED]
