"""The Python entry point in the browser worker (PyScript on Pyodide).

The main-thread bridge (site/bridge.js) calls the exported functions through
PyScript's `sync`; only plain data crosses (strings, numbers, booleans, lists,
dicts). This module and the bridge are the only code that knows about the
browser; everything it calls is pure and tested in CPython.

    load_numpy()      -> NumPy version          (loads NumPy from Pyodide's lock file)
    boot()            -> response               (first full render, state = default)
    dispatch(event)   -> response               (event: {"type": ..., "value": ...})

A response is {"panels": {panel id: markup}, "values": {control id: value},
"message": str, "field": str, "focus": section id or ""} ("focus": the stepper
moved, so the bridge brings that section into view). On bad input the state and every panel stay as
they were and "message" says what to fix.
"""
from __future__ import annotations

_state = None  # the one State of this page; the bridge holds none


def _plain(event):
    """A JS object proxy -> a plain dict (under CPython tests it already is one)."""
    return event.to_py() if hasattr(event, "to_py") else dict(event)


async def load_numpy():
    import pyodide_js  # only inside Pyodide

    await pyodide_js.loadPackage("numpy", {"messageCallback": lambda _msg: None})
    import numpy

    return numpy.__version__


def boot():
    global _state
    from attention_explorer import page, state as st

    _state = st.State()
    return {"panels": page.render_panels(_state), "values": page.control_values(_state),
            "message": "", "field": ""}


def dispatch(event):
    global _state
    from attention_explorer import page, state as st

    event = _plain(event)
    if _state is None:
        _state = st.State()
    try:
        new = st.apply_event(_state, event)
        new.tokens  # validate before committing (the text may have been set elsewhere)
    except st.InputError as exc:
        return {"panels": {}, "values": {}, "message": exc.message, "field": exc.field}
    redraw = page.panels_to_redraw(_state, new)
    focus = page.stage_section(new) if event.get("type") == "set_stage" else ""
    _state = new
    return {"panels": page.render_panels(new, only=redraw), "values": page.control_values(new),
            "message": "", "field": "", "focus": focus}


__export__ = ["load_numpy", "boot", "dispatch"]
