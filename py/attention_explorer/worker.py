"""The Python side of the browser worker (PyScript on Pyodide).

The main-thread bridge (site/bridge.js) calls the exported functions through
PyScript's `sync`; only plain data crosses (strings, numbers, booleans, lists,
dicts). This module (with worker_main.py, the worker's small main script, which
loads NumPy and our start-up zip and forwards every other call here) and the
bridge are the only code that knows about the browser; everything it calls is
pure and tested in CPython.

    load_numpy(spec)             -> NumPy version (worker_main.py: loads NumPy from Pyodide's lock
                                    file; meanwhile fetches our start-up modules' zip)
    boot(fragment, mode, options) -> response     (first render; state from the URL fragment; options:
                                    {"restart", "own_code"}, see boot)
    warm_up()                    -> {panel id: [operation, ...]}  (load the views start-up left for later,
                                    rehearse a slider; its last move's patches, for the bridge to rehearse)
    dispatch(event)              -> response      (event: {"type": ..., "value": ...})
    tip(ref)                     -> str           (a heatmap cell's or LayerNorm dimension's tip, left out
                                                   of live markup)
    export_data(kind)            -> {"filename", "mime", "text"}   (kind: "csv" | "json")
    embed_snippet(base_url)      -> str           (an <iframe> snippet for the current view)
    export_caption(panel_id)     -> {"title", "caption", "note"}   (plain text an SVG/PNG export carries)
    core_selftest(payload)       -> plain results (browser test: Pyodide agrees with CPython)
    compiled_at_start()          -> {"stdlib", "numpy", "ours": [module]}  (what a start-up compiled from source)
    load_model(spec)             -> {"ok", "message"}  (download a trained model's files, install it;
                                    worker_main adds its `fetched`)
    download_progress()          -> {"model", "loaded", "total", "phase"}  (polled while load_model runs)

A response is {"panels": {panel id: markup}, "patches": {panel id: [operation, ...]},
"values": {control id: value},
"message": str, "field": str, "notice": str, "hash": str, "focus": str, "form": {...} | None,
"load_model": str, "stale": [panel id, ...]}:
"message" is an input error shown next to the input (state and pictures
unchanged); "notice" says which values of a link were ignored; "hash" is the
canonical URL fragment of the state (the bridge replaces the URL with it);
"focus" names a section or panel to bring into view. mode "embed" renders only
the embed page's one panel. "patches" bring panels drawn live before up to date
when a slider changed only their numbers (page.render_patches). "form" is the form's model-dependent options and
texts (page.model_form), or None when unchanged since the last reply. "load_model" names a model a link asks for whose
files are not loaded yet: the bridge downloads it (load_model) and then
replays the link. "stale" lists the panels whose picture on the page is not the current state's (off
screen when their inputs changed; drawn when they come near): a printout leaves them out.
"""

from __future__ import annotations

import contextlib

_state = None  # the one State of this page; the bridge holds none
_mode = "page"
# Rendering is deferred for panels far off screen: the bridge reports which panels are on or
# near the screen ("viewport" events); a panel whose inputs change while it is away is drawn
# when it comes back. A slider then redraws two or three panels, not fourteen.
_visible = None  # panel ids on or near the screen; None until the bridge reports (= all)
_stale = set()  # panels whose inputs changed while they were off screen
# Panels whose markup on the page was drawn live for the current state's structure: a slider then
# sends them a patch of numbers (page.render_patches) instead of new markup. Pre-rendered markup
# (build.py) is not live: its tooltips are inline and would go stale.
_live = set()
_form_sent = None  # the form data last sent (page.model_form): sent again only when it changes
_imported_at_start = []  # sys.modules' names at the end of warm_up (compiled_at_start)
_methods_compiled_at_start = []  # precompiled.compiled at the end of warm_up: ["module.method"]


def _plain(event):
    """A JS object proxy -> a plain dict (under CPython tests it already is one)."""
    return event.to_py() if hasattr(event, "to_py") else dict(event)


def _panels_now(old, new) -> set:
    """Which panels to draw for old -> new; the rest are remembered as stale."""
    global _stale
    from attention_explorer import page

    redraw = page.panels_to_redraw(old, new) | _stale
    now = page.drawn_now(redraw, new, _visible)
    _stale = redraw - now
    return now


def _reply(panels=None, *, values=None, message="", field="", notice="", focus="", load_model="", patches=None):
    """The one response shape; "hash" is always the current state's URL fragment."""
    from attention_explorer import page, permalink

    global _form_sent
    _live.update(panels or {})
    form = page.model_form(_state)
    fresh_form = form if form != _form_sent else None  # it changes with the model or the layer only
    _form_sent = form
    return {
        "panels": panels or {},
        "patches": patches or {},
        "values": values or {},
        "message": message,
        "field": field,
        "notice": notice,
        "hash": permalink.encode(_state),
        "focus": focus,
        "form": fresh_form,
        "load_model": load_model,
        "stale": sorted(_stale),
    }


def _redraw(old, new, *, notice="", focus="", load_model="", code_to_editor=False):
    """The reply for old -> new (new is already _state): changed panels and every control value.

    code_to_editor: the editor shows the state's code (a link's code, or the page's own after the
    editor's Reset); otherwise the editor is the reader's and keeps what they typed (a restart, Reset
    of the view, a model switch)."""
    from attention_explorer import page

    patches = {}
    if _mode == "embed":
        panels = page.render_embed(new) if old != new else {}
    else:
        now = _panels_now(old, new)
        patches, panels = page.draw_change(old, new, now, _live)
        # redrawn now, or left stale (off screen): either way not patchable until drawn again
        _live.difference_update((now - set(patches)) | _stale)
    values = page.control_values(new)
    if code_to_editor:
        from attention_explorer import custom_attention

        values["attention-code"] = new.code or custom_attention.SOURCE
    return _reply(panels, values=values, notice=notice, focus=focus, load_model=load_model, patches=patches)


def boot(fragment="", mode="page", options=None):
    """options: {"restart": the page's own link after its Python was restarted, "own_code": the function
    the reader last ran on this page}. A link's code is put in the editor with a notice that it was not
    run, unless the link is the page's own (a restart) or the code is the reader's own (a reload)."""
    global _state, _mode, _visible, _stale, _form_sent
    from attention_explorer import models, page, permalink, state as st

    _visible, _stale, _form_sent = None, set(), None
    _live.clear()
    _mode = "embed" if mode == "embed" else "page"
    fragment = str(fragment or "")
    wanted = permalink.requested_model(fragment)
    if wanted in models.MODELS and not models.get(wanted).available:
        # the link's model must be downloaded before its sentence can be read: show the default
        # meanwhile; the bridge loads the model and replays the link (a "load_hash" event)
        _state, notices, load = st.State(), [], wanted
    else:
        (_state, notices), load = page.decode_link(fragment), ""
    # build.py pre-rendered the page for the default state: redraw only what the link changes
    # (for a plain link, nothing: no markup swap, no layout work on the main thread at ready).
    # The embed page always draws its panel: the link chooses which one.
    prerendered = st.State() if _mode == "page" else None
    options = _plain(options) if options else {}
    own = bool(options.get("restart")) or (bool(_state.code) and _state.code == str(options.get("own_code") or ""))
    if own:
        notices = [n for n in notices if n != permalink.CODE_NOTICE]
    focus = _state.panel or (page.tour_focus(_state) if _mode == "page" else "")
    reply = _redraw(
        prerendered,
        _state,
        notice=" ".join(notices),
        focus=focus,
        load_model=load,
        code_to_editor=bool(_state.code) and not own,
    )
    # everything imported and built so far lives as long as the page: move it out of the collector's
    # way, so a full collection (~25 ms in Pyodide) does not land in the middle of a slider move
    import gc

    gc.freeze()
    return reply


def warm_up():
    """Load what start-up left for later (page.warm_up) and rehearse a slider's moves (page.rehearse):
    called by the bridge once the page is ready. Nothing the page shows changes; the last rehearsed
    move's patches come back for the bridge to apply to copies of the panels, off the page."""
    import sys

    from attention_explorer import page
    from attention_explorer.runtime import precompiled

    global _imported_at_start, _methods_compiled_at_start
    page.warm_up()
    _imported_at_start = list(sys.modules)  # what a start-up imports (compiled_at_start)
    _methods_compiled_at_start = [f"{module}.{method}" for module, method in precompiled.compiled]
    if _state is not None and _mode == "page":
        return page.rehearse(_state, _visible)
    return {}


def compiled_at_start(_unused=None):
    """The modules imported by the end of warm_up that Python compiled from source, by where they come
    from: {"stdlib": [...], "numpy": [...], "ours": [...]}, and the dataclass methods compiled from
    their text by then ("dataclass_methods": ["module.method", ...]). build_bytecode ships all of them
    compiled; a name here is one it missed (each costs its compile at every visit). A module a zip
    gave from its bytecode has the .pyc as its __file__ (the standard library's, ours); one it gave
    from source, the .py; NumPy's come from files, whose .pyc sits in place of the source."""
    import sys

    found = {"stdlib": [], "numpy": [], "ours": [], "dataclass_methods": list(_methods_compiled_at_start)}
    for name in _imported_at_start:
        path = getattr(sys.modules.get(name), "__file__", None) or ""
        if not path.endswith(".py"):  # built in, frozen, or imported from bytecode alone (.pyc)
            continue
        if "/python312.zip/" in path:
            found["stdlib"].append(name)
        elif "/site-packages/numpy/" in path:
            found["numpy"].append(name)
        elif name.split(".")[0] == "attention_explorer":
            found["ours"].append(name)
    return found


def workarounds_engaged(_unused=None):
    """{workaround: None while it works, else why not} (runtime.engaged): a browser test fails,
    naming the pinned runtime, when an upgrade has left one behind."""
    from attention_explorer import runtime

    return runtime.engaged()


def dispatch(event):
    global _state
    from attention_explorer import page, state as st

    event = _plain(event)
    if _state is None:
        _state = st.State()
    if event.get("type") == "viewport":  # panels on or near the screen changed
        return _viewport(event.get("value") or [])
    if event.get("type") == "redraw":  # a patch did not fit the page's markup: draw the panel anew
        pid = str(event.get("value") or "")
        _live.discard(pid)
        return _reply(page.render_panels(_state, only={pid}, live=True) if pid in page.PANELS else {})
    from attention_explorer import custom_attention

    old, kind = _state, event.get("type")
    # the reader's code runs while a function is compiled (run_code) and while one in use computes: it
    # cannot replace the page's own Python (page_kept undoes it and says so)
    guard = custom_attention.page_kept() if kind == "run_code" or old.custom else contextlib.nullcontext()
    try:
        with guard:  # (no reply is built inside: a reply rebinds this module's own globals)
            step = _next_state(old, event)
            if isinstance(step, str):  # a link to a model still to download: the bridge downloads it first
                wanted = step
            else:
                new, notice, focus = step
            if (
                not isinstance(step, str) and new.custom
            ):  # the reader's function: run it now (a failure keeps the last good view)
                st.compute(new)
                if new.ablated:
                    st.compute_intact(new)
                if new.pair_text:
                    st.compute_pair(new)
    except custom_attention.CodeError as exc:
        return _reply(message=_code_message(exc), field="attention-code")
    except st.InputError as exc:
        return _reply(message=exc.message, field=exc.field)
    if isinstance(step, str):
        return _reply(load_model=wanted)  # then the bridge sends this link again
    _state = new
    to_editor = kind == "reset_code" or (kind == "load_hash" and bool(new.code) and not event.get("restart"))
    return _redraw(old, new, notice=notice, focus=focus, code_to_editor=to_editor)


def _next_state(old, event):
    """-> (new state, notice, focus) for a reader's event, or the id of a model a link names that must be
    downloaded first. Raises state.InputError for unusable input."""
    from attention_explorer import models, page, permalink, state as st

    kind = event.get("type")
    if kind == "load_hash":  # the reader pasted a link or went back (restart: the page's own, replayed)
        fragment = str(event.get("value") or "")
        wanted = permalink.requested_model(fragment)
        if wanted in models.MODELS and not models.get(wanted).available:
            return wanted
        new, notices = page.decode_link(fragment)
        if event.get("restart"):
            notices = [n for n in notices if n != permalink.CODE_NOTICE]
        return new, " ".join(notices), new.panel or page.tour_focus(new)
    new = st.apply_event(old, event)  # validates; raises InputError for unusable input
    # a chosen stage is brought into view; a followed one is there; a tour step shows its panel
    focus = page.stage_section(new) if kind == "set_stage" and not event.get("follow") else ""
    if kind == "tour_step":
        focus = page.tour_focus(new)
    return new, "", focus


def _code_message(exc) -> str:
    """A failure of the reader's function, for the message under the editor (the last good view stays)."""
    return f"Your attention function: {exc.message} The pictures show the last function that worked."


def _viewport(panel_ids):
    """Remember what is on screen; draw the stale panels that came into view."""
    global _visible, _stale
    from attention_explorer import page

    _visible = {str(p) for p in panel_ids}
    due = _stale & _visible
    _stale -= due
    return _reply(page.render_panels(_state, only=due, live=True) if due else {})


def tip(ref):
    """The text of a tooltip left out of live markup: ref {"panel", "i", "j"} (a heatmap cell) or
    {"panel": "layernorm", "block", "j"} (one dimension of a LayerNorm block)."""
    from attention_explorer import page

    ref = _plain(ref)
    if _state is None:
        return ""
    return page.tip(_state, str(ref.get("panel", "")), ref)


def export_data(kind):
    from attention_explorer import exports, state as st

    return exports.export(_state, st.compute(_state), str(kind))


def embed_snippet(base_url):
    from attention_explorer import page

    return page.embed_snippet(_state, str(base_url))


def export_caption(panel_id):
    """The title, caption and note an exported picture of the panel carries (plain text)."""
    from attention_explorer import page, state as st

    return page.export_caption(_state if _state is not None else st.State(), str(panel_id))


def core_selftest(payload):
    """Run the core on the caller's inputs; every result back as plain lists.

    For the browser test that the core computes in Pyodide exactly what it
    computes in CPython. payload: {"x": [n][d_model], "params": {BlockParams
    field: nested lists or None}, "n_heads": int, "cases": [{"temperature",
    "scale", "causal", "activation"}], "softmax": [[...]]}.
    """
    import dataclasses

    import numpy as np

    from attention_explorer import core

    p = _plain(payload)
    params = core.BlockParams(
        **{k: None if v is None else np.asarray(v, dtype=np.float64) for k, v in p["params"].items()}
    )
    x = np.asarray(p["x"], dtype=np.float64)
    traces = []
    for case in p["cases"]:
        mask = core.causal_mask(len(x)) if case["causal"] else None
        trace = core.transformer_block(
            x,
            params,
            p["n_heads"],
            temperature=case["temperature"],
            scale=case["scale"],
            mask=mask,
            activation=case["activation"],
        )
        traces.append({f.name: _listify(getattr(trace, f.name)) for f in dataclasses.fields(trace)})
    return {
        "traces": traces,
        "softmax": core.softmax(np.asarray(p["softmax"], dtype=np.float64)).tolist(),
        "numpy": np.__version__,
    }


# ------------------------------------------------------------------ trained models, on demand

MODEL_CACHE = "attention-explorer-models-v1"  # Cache Storage: the bundle, for later and offline visits
_progress = {"model": "", "loaded": 0, "total": 0, "phase": "idle"}


def download_progress():
    """Where load_model is: phase "cache" | "verify" | "download" | "install" | "done" | "failed"."""
    return dict(_progress)


class DownloadError(Exception):
    """A model file could not be had; the message is for the reader."""


async def _fetch_module(base, rel, fetched):
    """One of our modules, py/<rel> under the page's folder `base`, into the file system at <rel>, and
    its package told to look there too (the package itself came from the start-up zip). fetched: as
    _fetch_bytes."""
    import os
    import sys

    source = await _fetch_bytes(f"{base}py/{rel}", fetched)
    os.makedirs(os.path.dirname(rel) or ".", exist_ok=True)
    with open(rel, "wb") as f:
        f.write(source)
    package = sys.modules.get(os.path.dirname(rel).replace("/", "."))
    folder = os.path.abspath(os.path.dirname(rel))
    if package is not None and folder not in package.__path__:
        package.__path__.append(folder)


async def _fetch_bytes(url, fetched, *, count=False):
    """The bytes at url (absolute), counting them into _progress["loaded"] as they arrive. fetched:
    worker_main.fetched, handed in by load_model (worker_main imports this module, never the reverse)."""
    response = await fetched(url, DownloadError)
    reader = response.body.getReader()
    chunks = []
    while True:
        try:
            part = await reader.read()
        except Exception as exc:  # the connection dropped mid-way
            raise DownloadError(
                f"the download stopped after {_progress['loaded']:,} bytes ({str(exc).splitlines()[-1][:80]})"
            ) from None
        if part.done:
            break
        chunks.append(part.value.to_bytes())
        if count:
            _progress["loaded"] += part.value.length
    return b"".join(chunks)


class _BrowserCache:
    """model_file.Cache on the browser's Cache Storage: no call raises (a failing cache is an empty one:
    Cache Storage missing outside secure contexts or in some private modes, a quota error, a read that
    throws)."""

    async def _open(self):
        import js

        if not hasattr(js, "caches"):  # not a secure context
            return None
        try:
            return await js.caches.open(MODEL_CACHE)
        except Exception:  # refused (a private mode)
            return None

    async def read(self, url):
        import js

        cache = await self._open()
        try:
            hit = cache and await cache.match(url)
            if hit is None or hit is js.undefined:
                return None
            return (await hit.arrayBuffer()).to_bytes()
        except Exception:
            return None

    async def write(self, url, blob):
        import js
        from pyodide.ffi import to_js

        cache = await self._open()
        try:
            if cache:
                await cache.put(url, js.Response.new(to_js(blob)))
        except Exception:  # storage full or refused: the next visit downloads again
            await self.delete(url)  # never leave a half-written entry behind

    async def delete(self, url):
        cache = await self._open()
        try:
            if cache:
                await cache.delete(url)
        except Exception:
            pass

    async def keep_only(self, url, prefix):
        cache = await self._open()
        try:
            for request in (await cache.keys()) if cache else []:
                if request.url.startswith(prefix) and request.url != url:
                    await cache.delete(request)
        except Exception:
            pass


async def _digest(blob):
    """sha256 hex of blob: the browser's native SHA-256 (crypto.subtle, secure contexts), else hashlib."""
    import js

    from attention_explorer import model_file

    subtle = getattr(getattr(js, "crypto", None), "subtle", None)
    if subtle is None:
        return await model_file.sha256_hex(blob)
    from pyodide.ffi import to_js

    return (await subtle.digest("SHA-256", to_js(blob))).to_bytes().hex()


async def load_model(spec, fetched):
    """Download a trained model's files and install it. -> {"ok": bool, "message": str}

    spec: the page's manifest entry (build.write_models: "src", "bytes", "sha256", "modules", paths
    relative to the page) plus "model" (its id) and "base" (the page's folder as an absolute URL, ending
    in "/"). The file comes from Cache Storage or the server, and is used only if its sha256 is the
    manifest's (model_file.verified_file: a bad cached copy is evicted and downloaded again).
    fetched: worker_main.fetched, which worker_main's forwarder adds."""
    import gzip
    import os

    from attention_explorer import model_file, models

    spec = _plain(spec)
    model_id = str(spec.get("model", ""))
    if model_id not in models.MODELS:
        return {"ok": False, "message": f"There is no model {model_id!r}."}
    model = models.get(model_id)
    if model.available:
        return {"ok": True, "message": ""}
    _progress.update(model=model_id, loaded=0, total=int(spec.get("bytes") or 0), phase="cache")

    async def download(url):
        _progress["loaded"] = 0
        blob = await _fetch_bytes(url, fetched, count=True)
        if _progress["total"] and len(blob) < _progress["total"]:  # more, or other bytes: the sha256 says
            raise DownloadError(f"the download stopped after {len(blob):,} of {_progress['total']:,} bytes")
        return blob

    def install(blob):
        # stored gzip-compressed; a server that sent it with Content-Encoding: gzip has unpacked it already
        model.install(gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob)

    def on_phase(phase):
        _progress["phase"] = phase
        if phase == "install":
            _progress["loaded"] = _progress["total"]

    try:
        # the Python modules only the trained model needs (a few kB), into the worker's file system
        base = str(spec["base"])
        for rel in spec.get("modules") or []:
            if not os.path.exists(rel):
                await _fetch_module(base, rel, fetched)
        url = base + str(spec["src"])
        await model_file.verified_file(
            url,
            str(spec["sha256"]),
            cache=_BrowserCache(),
            download=download,
            install=install,
            digest=_digest,
            prefix=base + str(spec["src"]).split(".", 1)[0] + ".",
            on_phase=on_phase,
        )
    except (DownloadError, model_file.FileMismatch) as exc:
        _progress["phase"] = "failed"
        return {
            "ok": False,
            "message": f"Could not download the trained model: {exc}. Check the connection "
            "and try again; the designed model keeps working meanwhile.",
        }
    except Exception as exc:  # a corrupt file: say so, keep the page working
        _progress["phase"] = "failed"
        return {
            "ok": False,
            "message": f"The trained model's file could not be read ({type(exc).__name__}: "
            f"{str(exc)[:120]}). Try again; if it fails again, reload the page.",
        }
    _progress["phase"] = "done"
    return {"ok": True, "message": ""}


def _listify(value):
    return value.tolist() if hasattr(value, "tolist") else value


# the calls worker_main.py forwards here (tests/test_worker_main.py checks that the two lists agree)
__export__ = [
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
]
