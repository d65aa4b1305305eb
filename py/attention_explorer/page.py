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
from .views import (affinity, attention_matrix, controls, embedding, explain, ffn, layernorm,
                    multihead, routing, stepper, why)
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
H = model.HEADS

PANELS: dict[str, Panel] = {
    "token-chips": Panel(controls.render_token_chips, _fields("text", "query")),
    "preset-info": Panel(lambda s, c: explain.preset_info(s, model.PRESETS), _fields("text")),
    "stepper": Panel(stepper.render, _fields("stage")),
    "embedding": Panel(embedding.render, _fields("text", "query")),
    "why-qkv": Panel(lambda s, c: why.render_qkv_lookup(s, c, H), _fields(*MODEL_INPUTS, "query", "head")),
    "head-info": Panel(lambda s, c: explain.head_info(s, H), _fields("head")),
    "attention-matrix": Panel(lambda s, c: attention_matrix.render(s, c, H), _fields(*MODEL_INPUTS, "query", "head")),
    "affinity": Panel(lambda s, c: affinity.render(s, c, H), _fields(*MODEL_INPUTS, "query", "head")),
    "routing": Panel(lambda s, c: routing.render(s, c, H),
                     _fields(*MODEL_INPUTS, "query", "head", "routing_all_heads")),
    "head-multiples": Panel(lambda s, c: attention_matrix.render_small_multiples(s, c, H),
                            _fields(*MODEL_INPUTS, "query", "head")),
    "why-scale": Panel(why.render_scale_demo, _fields("demo_dk")),
    "multihead": Panel(lambda s, c: multihead.render(s, c, H), _fields(*MODEL_INPUTS, "query", "head")),
    "layernorm": Panel(layernorm.render, _fields(*MODEL_INPUTS, "query")),
    "ffn": Panel(ffn.render, _fields(*MODEL_INPUTS, "query")),
}


def stage_section(state: st.State) -> str:
    """The id of the page section the stepper's current stage brings into focus."""
    return stepper.STAGE_SECTIONS[state.stage]


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
    out = out.replace("<!--scale-demo-controls-->", why.render_scale_demo_controls(state))
    out = out.replace("<!--designed-not-trained-->", esc(model.DESIGNED_NOT_TRAINED))
    config = json.dumps(worker_config, sort_keys=True).replace("</", "<\\/")
    out = out.replace("<!--worker-config-->", config)
    assert "<!--panel:" not in out, "index.html names a panel that page.PANELS does not have"
    return out
