"""The page as a set of panels: which view draws each, and what state each depends on.

Used twice with the same code: by build.py (CPython) to write the first screen
into index.html, and by worker.py (Pyodide) to redraw only the panels whose
inputs changed after an event. Pure: no browser imports.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Callable

from . import state as st
from .fields import MODEL_INPUTS, PANEL_IDS
from .views import (affinity, attention_matrix, controls, embedding, explain, ffn, layernorm,
                    multihead, routing, share, stepper, why)
from .views.markup import esc


@dataclass(frozen=True)
class Panel:
    render: Callable  # (state, computed) -> markup
    depends: frozenset  # State fields whose change means this panel must be redrawn


def _fields(*names: str) -> frozenset:
    known = {f for f in st.State.__dataclass_fields__}
    assert set(names) <= known, f"unknown state fields {set(names) - known}"
    return frozenset(names)


LAYER = (*MODEL_INPUTS, "layer")  # what changes the selected layer's trace

PANELS: dict[str, Panel] = {
    "token-chips": Panel(controls.render_token_chips, _fields("model", "text", "query")),
    "preset-info": Panel(lambda s, c: explain.preset_info(s, c.model.presets), _fields("model", "text")),
    "stepper": Panel(stepper.render, _fields("stage")),
    "embedding": Panel(embedding.render, _fields("model", "text", "query")),
    "why-qkv": Panel(lambda s, c: why.render_qkv_lookup(s, c, c.heads), _fields(*LAYER, "query", "head")),
    "head-info": Panel(lambda s, c: explain.head_info(s, c.heads), _fields("model", "layer", "head")),
    "attention-matrix": Panel(lambda s, c: attention_matrix.render(s, c, c.heads), _fields(*LAYER, "query", "head")),
    "affinity": Panel(lambda s, c: affinity.render(s, c, c.heads), _fields(*LAYER, "query", "head")),
    "routing": Panel(lambda s, c: routing.render(s, c, c.heads),
                     _fields(*LAYER, "query", "head", "routing_all_heads")),
    "head-multiples": Panel(lambda s, c: attention_matrix.render_small_multiples(s, c, c.heads),
                            _fields(*LAYER, "query", "head")),
    "why-scale": Panel(why.render_scale_demo, _fields("model", "demo_dk")),
    "multihead": Panel(lambda s, c: multihead.render(s, c, c.heads), _fields(*LAYER, "query")),
    "layernorm": Panel(layernorm.render, _fields(*LAYER, "query")),
    "ffn": Panel(ffn.render, _fields(*LAYER, "query")),
}
assert tuple(PANELS) == PANEL_IDS, "fields.PANEL_IDS must list page.PANELS, in order"


# Panels a reader can link to, embed and export, with their titles.
EMBEDDABLE: dict[str, str] = {
    "embedding": "Token and positional embedding",
    "why-qkv": "Query, key and value: a soft lookup",
    "attention-matrix": "Attention weights A",
    "affinity": "Query·key affinity",
    "routing": "Context vector and routing",
    "head-multiples": "All heads side by side",
    "why-scale": "Why divide by √d_k",
    "multihead": "Multi-head output",
    "layernorm": "Residual and LayerNorm",
    "ffn": "Feed-forward network",
}
DEFAULT_EMBED_PANEL = "attention-matrix"
assert set(EMBEDDABLE) <= set(PANELS), "every embeddable panel must be a panel"


def embed_panel_id(state: st.State) -> str:
    return state.panel if state.panel in EMBEDDABLE else DEFAULT_EMBED_PANEL


def render_embed(state: st.State) -> dict[str, str]:
    """The embed page's markup: the focused panel (default: the attention matrix) in a small frame."""
    from . import permalink

    pid = embed_panel_id(state)
    computed = st.compute(state)
    panel = PANELS[pid].render(state, computed)
    chips = PANELS["token-chips"].render(state, computed)
    fragment = permalink.encode(state)
    full = "./" + ("#" + fragment if fragment else "")
    return {"embed": share.embed_frame(state, pid, EMBEDDABLE[pid], panel, chips, full)}


EMBED_HOST_SCRIPT = """<script>
  // Size each Attention Explorer iframe to its content (it posts its height).
  addEventListener("message", (e) => {
    if (!e.data || e.data.type !== "attention-explorer:height") return;
    for (const f of document.querySelectorAll("iframe"))
      if (f.contentWindow === e.source) f.style.height = e.data.height + "px";
  });
</script>"""


def embed_snippet(state: st.State, base_url: str) -> str:
    """Copyable HTML for a blog post: an <iframe> of embed.html showing this exact view, plus
    the few lines of host script that size it (include those once per page)."""
    from . import permalink

    pid = embed_panel_id(state)
    fragment = permalink.encode(dataclasses.replace(state, panel=pid))
    src = base_url.split("#")[0].rsplit("/", 1)[0] + "/embed.html#" + fragment
    iframe = (f'<iframe src="{esc(src)}" title="{esc("Attention Explorer: " + EMBEDDABLE[pid])}" '
              'style="width:100%;height:520px;border:0" loading="lazy"></iframe>')
    return iframe + "\n" + EMBED_HOST_SCRIPT


# Small panels drawn on every change even when off screen (the worker defers the big ones).
ALWAYS_DRAWN = frozenset({"token-chips", "preset-info", "stepper", "head-info"})


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
    presets = st.description(state.model).presets
    values = {**controls.control_values(state), **why.scale_demo_control_values(state)}
    values["preset"] = next((p.id for p in presets if p.text == state.text), "")
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
    model = st.description(state.model)
    out = out.replace("<!--controls-->", controls.render_controls(state, model, st.all_descriptions()))
    out = out.replace("<!--scale-demo-controls-->", why.render_scale_demo_controls(state, model.d_k))
    for pid, title in EMBEDDABLE.items():
        out = out.replace(f"<!--share:{pid}-->", share.toolbar(pid, title, data=pid == "attention-matrix"))
    out = out.replace("<!--designed-not-trained-->", esc(model.about))
    out = out.replace("<!--worker-config-->", _config_json(worker_config))
    assert "<!--panel:" not in out, "index.html names a panel that page.PANELS does not have"
    assert "<!--share:" not in out, "index.html names a share toolbar for a panel that is not EMBEDDABLE"
    return out


def fill_embed_template(template: str, *, worker_config: dict, state: st.State | None = None) -> str:
    """embed.html: the default embed (the attention matrix) pre-rendered, like index.html."""
    state = state or st.State()
    out = template.replace("<!--panel:embed-->", render_embed(state)["embed"])
    return out.replace("<!--worker-config-->", _config_json(worker_config))


def _config_json(worker_config: dict) -> str:
    """JSON for a <script type="application/json">: '</' escaped so it cannot close the element."""
    return json.dumps(worker_config, sort_keys=True).replace("</", "<\\/")
