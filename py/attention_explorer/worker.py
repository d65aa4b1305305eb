"""The Python entry point in the browser worker (PyScript on Pyodide).

The main-thread bridge (site/bridge.js) calls the exported functions through
PyScript's `sync`; only plain data crosses (strings, numbers, booleans, lists,
dicts). This module and the bridge are the only code that knows about the
browser; everything it calls is pure and tested in CPython.

    load_numpy()                 -> NumPy version (loads NumPy from Pyodide's lock file)
    boot(fragment, mode)         -> response      (first render; state from the URL fragment)
    dispatch(event)              -> response      (event: {"type": ..., "value": ...})
    tip(ref)                     -> str           (a heatmap cell's derivation, left out of live markup)
    export_data(kind)            -> {"filename", "mime", "text"}   (kind: "csv" | "json")
    embed_snippet(base_url)      -> str           (an <iframe> snippet for the current view)
    export_caption(panel_id)     -> {"title", "caption", "note"}   (plain text an SVG/PNG export carries)
    core_selftest(payload)       -> plain results (browser test: Pyodide agrees with CPython)

A response is {"panels": {panel id: markup}, "values": {control id: value},
"message": str, "field": str, "notice": str, "hash": str, "focus": str}:
"message" is an input error shown next to the input (state and pictures
unchanged); "notice" says which values of a link were ignored; "hash" is the
canonical URL fragment of the state (the bridge replaces the URL with it);
"focus" names a section or panel to bring into view. mode "embed" renders only
the embed page's one panel.
"""
from __future__ import annotations

_state = None  # the one State of this page; the bridge holds none
_mode = "page"
# Rendering is deferred for panels far off screen: the bridge reports which panels are on or
# near the screen ("viewport" events); a panel whose inputs change while it is away is drawn
# when it comes back. A slider then redraws two or three panels, not fourteen.
_visible = None  # panel ids on or near the screen; None until the bridge reports (= all)
_stale = set()   # panels whose inputs changed while they were off screen


def _plain(event):
    """A JS object proxy -> a plain dict (under CPython tests it already is one)."""
    return event.to_py() if hasattr(event, "to_py") else dict(event)


async def load_numpy():
    import pyodide_js  # only inside Pyodide

    await pyodide_js.loadPackage("numpy", {"messageCallback": lambda _msg: None})
    import numpy

    return numpy.__version__


def _panels_now(old, new) -> set:
    """Which panels to draw for old -> new; the rest are remembered as stale."""
    global _stale
    from attention_explorer import page

    redraw = page.panels_to_redraw(old, new) | _stale
    now = {p for p in redraw
           if _visible is None or p in _visible or p in page.ALWAYS_DRAWN or p == new.panel}
    _stale = redraw - now
    return now


def _reply(panels=None, *, values=None, message="", field="", notice="", focus=""):
    """The one response shape; "hash" is always the current state's URL fragment."""
    from attention_explorer import permalink

    return {"panels": panels or {}, "values": values or {}, "message": message, "field": field,
            "notice": notice, "hash": permalink.encode(_state), "focus": focus}


def _redraw(old, new, *, notice="", focus=""):
    """The reply for old -> new (new is already _state): changed panels and every control value."""
    from attention_explorer import page

    if _mode == "embed":
        panels = page.render_embed(new) if old != new else {}
    else:
        panels = page.render_panels(new, only=_panels_now(old, new), live=True)
    return _reply(panels, values=page.control_values(new), notice=notice, focus=focus)


def boot(fragment="", mode="page"):
    global _state, _mode, _visible, _stale
    from attention_explorer import permalink, state as st

    _visible, _stale = None, set()
    _mode = "embed" if mode == "embed" else "page"
    _state, notices = permalink.decode(str(fragment or ""))
    # build.py pre-rendered the page for the default state: redraw only what the link changes
    # (for a plain link, nothing: no markup swap, no layout work on the main thread at ready).
    # The embed page always draws its panel: the link chooses which one.
    prerendered = st.State() if _mode == "page" else None
    return _redraw(prerendered, _state, notice=" ".join(notices), focus=_state.panel)


def dispatch(event):
    global _state
    from attention_explorer import page, permalink, state as st

    event = _plain(event)
    if _state is None:
        _state = st.State()
    if event.get("type") == "viewport":  # panels on or near the screen changed
        return _viewport(event.get("value") or [])
    old = _state
    notice, focus = "", ""
    try:
        if event.get("type") == "load_hash":  # the reader pasted a link or went back
            new, notices = permalink.decode(str(event.get("value") or ""))
            notice, focus = " ".join(notices), new.panel
        else:
            new = st.apply_event(old, event)  # validates; raises InputError for unusable input
            if event.get("type") == "set_stage":
                focus = page.stage_section(new)
    except st.InputError as exc:
        return _reply(message=exc.message, field=exc.field)
    _state = new
    return _redraw(old, new, notice=notice, focus=focus)


def _viewport(panel_ids):
    """Remember what is on screen; draw the stale panels that came into view."""
    global _visible, _stale
    from attention_explorer import page

    _visible = {str(p) for p in panel_ids}
    due = _stale & _visible
    _stale -= due
    return _reply(page.render_panels(_state, only=due, live=True) if due else {})


def tip(ref):
    """The text of a tooltip left out of live markup: ref {"panel", "i", "j"} (a heatmap cell)."""
    from attention_explorer import page

    ref = _plain(ref)
    if _state is None or ref.get("panel") != "attention-matrix":
        return ""
    return page.cell_tip(_state, int(ref.get("i", -1)), int(ref.get("j", -1)))


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
    params = core.BlockParams(**{k: None if v is None else np.asarray(v, dtype=np.float64)
                                 for k, v in p["params"].items()})
    x = np.asarray(p["x"], dtype=np.float64)
    traces = []
    for case in p["cases"]:
        mask = core.causal_mask(len(x)) if case["causal"] else None
        trace = core.transformer_block(x, params, p["n_heads"], temperature=case["temperature"],
                                       scale=case["scale"], mask=mask, activation=case["activation"])
        traces.append({f.name: _listify(getattr(trace, f.name)) for f in dataclasses.fields(trace)})
    return {"traces": traces, "softmax": core.softmax(np.asarray(p["softmax"], dtype=np.float64)).tolist(),
            "numpy": np.__version__}


def _listify(value):
    return value.tolist() if hasattr(value, "tolist") else value


__export__ = ["load_numpy", "boot", "dispatch", "tip", "export_data", "embed_snippet", "export_caption", "core_selftest"]
