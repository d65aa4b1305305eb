"""The page as a set of panels: which view draws each, and what state each depends on.

Used twice with the same code: by build.py (CPython) to write the first screen
into index.html, and by worker.py (Pyodide) to redraw only the panels whose
inputs changed after an event. Pure: no browser imports.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from . import model, state as st
from .views import attention_matrix, controls, explain
from .views.markup import esc


@dataclass(frozen=True)
class Panel:
    render: Callable  # (state, computed) -> markup
    depends: frozenset  # State fields whose change means this panel must be redrawn


def _fields(*names: str) -> frozenset:
    known = {f for f in st.State.__dataclass_fields__}
    assert set(names) <= known, f"unknown state fields {set(names) - known}"
    return frozenset(names)


MODEL_INPUTS = ("text", "temperature", "dk_scale", "causal", "activation")  # what changes the trace

PANELS: dict[str, Panel] = {
    "token-chips": Panel(controls.render_token_chips, _fields("text", "query")),
    "head-info": Panel(lambda s, c: explain.head_info(s, model.HEADS), _fields("head")),
    "preset-info": Panel(lambda s, c: explain.preset_info(s, model.PRESETS), _fields("text")),
    "attention-matrix": Panel(lambda s, c: attention_matrix.render(s, c, model.HEADS),
                              _fields(*MODEL_INPUTS, "query", "head")),
}


def changed_fields(old: st.State, new: st.State) -> set[str]:
    return {f for f in st.State.__dataclass_fields__ if getattr(old, f) != getattr(new, f)}


def render_panels(state: st.State, only: set[str] | None = None) -> dict[str, str]:
    """Markup for every panel (or only the named ones), by panel id."""
    computed = st.compute(state)
    ids = PANELS if only is None else [p for p in PANELS if p in only]
    return {pid: PANELS[pid].render(state, computed) for pid in ids}


def panels_to_redraw(old: st.State, new: st.State) -> set[str]:
    changed = changed_fields(old, new)
    return {pid for pid, panel in PANELS.items() if panel.depends & changed}


def control_values(state: st.State) -> dict:
    values = controls.control_values(state)
    values["preset"] = next((p.id for p in model.PRESETS if p.text == state.text), "")
    return values


def fill_template(template: str, *, worker_config: dict, state: st.State | None = None) -> str:
    """index.html: replace <!--panel:ID--> markers with pre-rendered markup.

    Also fills <!--controls--> with the form and <!--worker-config--> with the
    JSON the bridge hands to PyScript (escaped for a <script type="application/json">).
    """
    state = state or st.State()
    panels = render_panels(state)
    out = template
    for pid, markup in panels.items():
        marker = f"<!--panel:{pid}-->"
        assert marker in out, f"index.html has no {marker} for panel {pid!r}"
        out = out.replace(marker, markup)
    out = out.replace("<!--controls-->", controls.render_controls(state, model.HEADS, model.PRESETS,
                                                                  model.CONFIG.max_tokens))
    out = out.replace("<!--designed-not-trained-->", esc(model.DESIGNED_NOT_TRAINED))
    config = json.dumps(worker_config, sort_keys=True).replace("</", "<\\/")
    out = out.replace("<!--worker-config-->", config)
    assert "<!--panel:" not in out, "index.html names a panel that page.PANELS does not have"
    return out
