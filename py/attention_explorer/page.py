"""The page as a set of panels: which view draws each, and what state each depends on.

Used twice with the same code: by build.py (CPython) to write the first screen
into index.html, and by worker.py (Pyodide) to redraw only the panels whose
inputs changed after an event. Pure: no browser imports.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from dataclasses import dataclass
from typing import Callable, Optional

from . import state as st, tokens, views
from .fields import BY_NAME, LAYER_STAGES, MODEL_INPUTS, PANEL_ID
from .views import attention_matrix, code as code_view, controls, share, stepper
from .views.controls import ACTIVATION_LABELS
from .views.markup import esc

# The views of the panels below the first screen are imported when a panel of theirs is first drawn
# (views/__init__.py's __getattr__, PEP 562: page.py names them as views.<module>, inside lambdas and
# functions only) or at the worker's first idle moment (warm_up), not at start-up: in the browser every
# module imported costs the start-up its reading and running (tests/test_page.py checks). These modules,
# not views, are imported inside the functions that use them, for the same reason:
LATER_ELSEWHERE = ("head_patterns", "pairs", "tour")


def warm_up() -> None:
    """Import every module left for later, every view among them: the worker's first idle moment."""
    import pkgutil

    for found in pkgutil.iter_modules(views.__path__):
        importlib.import_module(f"{views.__name__}.{found.name}")
    for name in LATER_ELSEWHERE:
        importlib.import_module(f"{__package__}.{name}")
    import difflib  # noqa: F401  (state and head_patterns import it where they use it: ready before a reader types)


# Slider positions a rehearsal computes (temperature, √d_k scale as a multiple of the state's): a few, so
# that each part of a move runs often enough for the browser to optimise it.
REHEARSAL_MOVES = tuple((t, s) for t in (0.6, 0.8, 1.25, 1.6, 2.2) for s in (1.0, 0.75))
REHEARSAL_SECONDS = 0.15  # at most: a reader's event that comes meanwhile waits for it


def rehearse(state: st.State, on_screen: Optional[set]) -> dict[str, list]:
    """Compute what slider moves from `state` would send, and throw it away (`state` stays as it is),
    except the last move's patches (by panel id), for the bridge to rehearse applying them off the page.

    The worker's first idle moment, after `ready`: Chromium compiles hot WebAssembly functions (the
    interpreter's and NumPy's parts a move runs) with its optimising compiler only once they have run
    for a while. Without a rehearsal that happened during the reader's first moves of a slider: ~0.4 s
    of compiling on the two cores, in the first half-dozen moves (traced), which were then the slowest.
    on_screen: the panels on or near the screen; only those are drawn, as in a real move. None (the
    bridge has not reported yet, as at `ready`): the workspace's, REHEARSED_UNREPORTED. Drawing all
    fourteen made one rehearsed move cost ~200 ms in Pyodide, so that the time limit allowed only one.
    The bridge's JavaScript is cold too: its first patch cost ~5 ms more than later ones (traced: V8
    compiling the patch loop in the middle of the reader's first move).
    """
    import time

    from . import permalink

    if state.custom:
        return {}  # never run the reader's function unasked (it may be what made Python restart)
    patches = {}
    lo, hi = BY_NAME["dk_scale"].limits
    deadline = time.perf_counter() + REHEARSAL_SECONDS
    for temperature, scale in REHEARSAL_MOVES:
        if time.perf_counter() > deadline:
            break  # a big model's moves are slow: the reader's first event must not wait long
        moved = dataclasses.replace(state, temperature=temperature, dk_scale=min(max(state.dk_scale * scale, lo), hi))
        due = drawn_now(panels_to_redraw(state, moved), moved, REHEARSED_UNREPORTED if on_screen is None else on_screen)
        patches, _ = draw_change(state, moved, due, live=PANELS)  # as if every panel were drawn live
        for rest_of_reply in (control_values, model_form, permalink.encode):
            rest_of_reply(moved)
    return patches


@dataclass(frozen=True)
class Panel:
    """How one panel is drawn, redrawn live or patched, and which state fields it depends on."""

    render: Callable  # (state, computed) -> markup
    depends: frozenset  # State fields whose change means this panel must be redrawn
    render_live: Optional[Callable] = None  # the worker's redraws, when lighter than the pre-render
    # (state, computed) -> patch operations (see attention_matrix.render_patch): the new numbers for
    # live markup drawn for a state that differs only in `patch_fields`
    render_patch: Optional[Callable] = None
    patch_fields: frozenset = frozenset()
    can_patch: Callable = lambda state: True  # (new state) -> whether a patch can bring the markup there
    # the last stage of the selected layer it draws (fields.LAYER_STAGES): at the first layer, a model
    # input acting after it changes none of its numbers, and it is not redrawn for one
    reads: str = "ffn"
    # (state) -> True where the panel's markup depends on none of `depends` but `resting_on` (the tour
    # card's start button, when there is no tour): a change between two such states redraws nothing
    resting: Optional[Callable] = None
    resting_on: frozenset = frozenset()
    # where the page puts it and what readers may do with it
    first_screen: bool = False  # written into index.html as markup (the others wait in prerendered.json)
    always_drawn: bool = False  # small: drawn on every change even off screen (the big ones wait for it)
    title: str = ""  # readers may link to, embed and export it, under this title ("": they may not)
    picture: bool = True  # an embeddable panel with a picture to save as SVG/PNG (False: a link and an embed)

    def __post_init__(self):
        assert self.reads in LAYER_STAGES, f"a panel reads one of {LAYER_STAGES}, not {self.reads!r}"
        assert self.picture or self.title, "only an embeddable panel (with a title) says it has no picture"


def _fields(*names: str) -> frozenset:
    known = {f for f in st.State.__dataclass_fields__}
    assert set(names) <= known, f"unknown state fields {set(names) - known}"
    return frozenset(names)


LAYER = (*MODEL_INPUTS, "layer")  # what changes the selected layer's trace

PANELS: dict[str, Panel] = {
    # the guided tour's card (its question reads the selected head's row, and the block after it)
    "tour": Panel(
        lambda s, c: views.tour.render(s, c),
        _fields(*LAYER, "tour", "tour_answer", "query", "head"),
        resting=lambda s: s.tour < 0,
        resting_on=_fields("tour"),
        first_screen=True,
        always_drawn=True,
    ),
    "model-line": Panel(
        lambda s, c: views.explain.model_line(c.model, _other_model(s)),
        _fields("model"),
        first_screen=True,
        always_drawn=True,
    ),
    "token-chips": Panel(
        lambda s, c: controls.render_token_chips(s, c),
        _fields("model", "text", "query", "pinned"),
        first_screen=True,
        always_drawn=True,
    ),
    "query-why": Panel(
        lambda s, c: views.qk_dot.why_line(s, c),
        _fields(*LAYER, "query", "head"),
        reads="attention",
        first_screen=True,
        always_drawn=True,
    ),
    "preset-info": Panel(
        lambda s, c: views.explain.preset_info(s, c.model.presets, c.model.heads),
        _fields("model", "text", "layer", "head"),
        first_screen=True,
        always_drawn=True,
    ),
    "stepper": Panel(lambda s, c: stepper.render(s, c), _fields("stage"), first_screen=True, always_drawn=True),
    "stage-detail": Panel(
        lambda s, c: stepper.render_detail(s, c),
        _fields("model", "stage", "custom"),
        first_screen=True,
        always_drawn=True,
    ),
    "embedding": Panel(
        lambda s, c: views.embedding.render(s, c),
        _fields("model", "text", "query"),
        title="Token and positional embedding",
    ),
    "projections": Panel(
        lambda s, c: views.projections.render(s, c),
        _fields(*LAYER, "query", "head"),
        reads="input",
        title="Projections: Q, K and V",
    ),
    "why-qkv": Panel(
        lambda s, c: views.why.render_qkv_lookup(s, c, c.heads),
        _fields(*LAYER, "query", "head"),
        reads="heads",
        title="Query, key and value: a soft lookup",
    ),
    "head-info": Panel(
        lambda s, c: views.explain.head_info(s, c.heads) + code_view.badge(s) + views.explain.causal_note(s, c.model),
        _fields("model", "layer", "head", "custom", "causal"),
        first_screen=True,
        always_drawn=True,
    ),
    "attention-matrix": Panel(
        lambda s, c: attention_matrix.render(s, c, c.heads),
        _fields(*LAYER, "query", "head", "pinned"),
        lambda s, c: attention_matrix.render(s, c, c.heads, tips_on_demand=True),
        lambda s, c: attention_matrix.render_patch(s, c, c.heads),
        attention_matrix.NUMBERS_ONLY,
        attention_matrix.can_patch,
        reads="attention",
        first_screen=True,
        title="Attention weights A",
    ),
    "qk-dot": Panel(
        lambda s, c: views.qk_dot.render(s, c),
        _fields(*LAYER, "query", "head", "key"),
        reads="attention",
        title="Where a score comes from: q·k term by term",
    ),
    "affinity": Panel(
        lambda s, c: views.affinity.render(s, c, c.heads),
        _fields(*LAYER, "query", "head"),
        lambda s, c: views.affinity.render(s, c, c.heads, tips_on_demand=True),
        render_patch=lambda s, c: views.affinity.render_patch(s, c, c.heads),
        patch_fields=_fields("temperature", "dk_scale", "activation"),  # = views.affinity.NUMBERS_ONLY
        reads="attention",
        title="Query·key affinity",
    ),
    "routing": Panel(
        lambda s, c: views.routing.render(s, c, c.heads),
        _fields(*LAYER, "query", "head", "routing_all_heads"),
        reads="heads",
        title="Context vector and routing",
    ),
    "head-multiples": Panel(
        lambda s, c: attention_matrix.render_small_multiples(s, c, c.heads),
        _fields(*LAYER, "query", "head"),
        reads="attention",
        title="All heads side by side",
    ),
    "why-scale": Panel(
        lambda s, c: views.why.render_scale_demo(s, c), _fields("model", "demo_dk"), title="Why divide by √d_k"
    ),
    "compare": Panel(lambda s, c: _compare_panel(s), _fields("model", "text", "query", "head", "compare_head")),
    "multihead": Panel(
        lambda s, c: views.multihead.render(s, c, c.heads),
        _fields(*LAYER, "query"),
        reads="multihead",
        title="Multi-head output",
    ),
    "layernorm": Panel(
        lambda s, c: views.layernorm.render(s, c),
        _fields(*LAYER, "query"),
        lambda s, c: views.layernorm.render(s, c, tips_on_demand=True),
        title="Residual and LayerNorm",
    ),
    "ffn": Panel(lambda s, c: views.ffn.render(s, c), _fields(*LAYER, "query"), title="Feed-forward network"),
    # explore like a researcher: every layer at once, heads switched off, a second sentence
    "head-grid": Panel(
        lambda s, c: views.head_grid.render(s, c),
        _fields(*LAYER, "head", "query", "pinned"),
        render_patch=lambda s, c: views.head_grid.render_patch(s, c),
        patch_fields=_fields("query", "head", "layer"),  # = views.head_grid.NUMBERS_ONLY
        can_patch=lambda s: views.head_grid.can_patch(s),
        title="Every head of every layer",
    ),
    "aggregates": Panel(
        lambda s, c: views.aggregates.render(s, c),
        _fields(*LAYER, "query", "pinned"),
        render_patch=lambda s, c: views.aggregates.render_patch(s, c),
        patch_fields=_fields("query"),
        can_patch=lambda s: views.aggregates.can_patch(s),  # = views.aggregates.NUMBERS_ONLY
        reads="heads",
        title="Attention across heads and layers: mean and rollout",
    ),  # it names the switched-off heads
    "ablation": Panel(
        lambda s, c: views.ablation.render(s, c, st.compute_intact(s)),
        _fields(*LAYER, "head", "query"),
        title="Switching heads off (ablation)",
    ),
    "pair": Panel(
        lambda s, c: _pair_panel(s, c),
        _fields(*LAYER, "head", "query", "pair_text"),
        reads="attention",
        title="Two sentences, one head",
    ),
    # your own attention function: which one is in use (the editor itself is static markup)
    "code": Panel(
        lambda s, c: code_view.render_status(s, c),
        _fields("model", "code", "custom"),
        title="Your attention function",
        picture=False,
    ),
}
assert all(re.fullmatch(PANEL_ID, pid) for pid in PANELS), "a panel's id is what a link's panel= may be"


def decode_link(fragment) -> tuple[st.State, list[str]]:
    """permalink.decode, and a link's panel= that names no panel of this page ignored with a notice:
    decode checks its form only, since state and permalink are below this module (fields.PANEL_ID)."""
    from . import permalink

    state, notices = permalink.decode(fragment)
    if state.panel and state.panel not in PANELS:
        quoted = f'"{state.panel}" is ' if len(state.panel) <= 20 else ""
        label = BY_NAME["panel"].label
        notices = [*notices, f"Ignored the link's {label}: {quoted}{permalink.PANEL_UNKNOWN}."]
        state = dataclasses.replace(state, panel="")
    return state, notices


def _other_model(state: st.State):
    """The model the first screen's button switches to: the first trained one from the designed model,
    the designed one from a trained model (None when there is no other)."""
    every = st.all_descriptions()  # the designed model first
    trained = [d for d in every if d.download_mb]
    if state.model == every[0].id:
        return trained[0] if trained else None
    return every[0]


def _compare_panel(state: st.State) -> str:
    """The designed head next to the trained head that does its job best (head_patterns.compare)."""
    try:
        cmp = st.comparison(state)
    except tokens.TokenError as exc:
        return views.compare.unavailable(f"The two models cannot both read this sentence: {exc}")
    names = [h.name for h in cmp.designed.model.heads[0]]
    picker = views.compare.head_picker(names, cmp.head)
    if cmp.trained is None:
        d = st.description(cmp.trained_id)
        return picker + views.compare.not_loaded(
            d.picker_label.removeprefix("Trained: "), d.id, f"about {d.download_mb} MB"
        )
    from . import head_patterns

    found = head_patterns.compare(
        cmp.designed.tokens,
        cmp.designed.run.special,
        cmp.designed.trace.weights[cmp.head],
        cmp.trained.tokens,
        cmp.trained.run.special,
        [t.weights for t in cmp.trained.run.layers],
        query_token=cmp.query if cmp.query >= 0 else None,
    )
    labels = [[h.name for h in layer] for layer in cmp.trained.model.heads]
    return picker + views.compare.render(
        found, names[cmp.head], trained_labels=labels, start_token=cmp.designed.tokens[cmp.designed.run.special[0]]
    )


def _pair_panel(state: st.State, computed) -> str:
    """The sentence and its second sentence side by side with the same head (views.pairs)."""
    try:
        other = st.compute_pair(state)
    except tokens.TokenError as exc:  # the second sentence no longer fits this model (a link from elsewhere)
        return views.pairs.unavailable(f"The second sentence cannot be read: {exc}")
    from . import pairs

    return views.pairs.render(state, computed, other, pairs.presets(computed.model))


# Panels a reader can link to, embed and export, with their titles (Panel.title)
EMBEDDABLE: dict[str, str] = {pid: p.title for pid, p in PANELS.items() if p.title}
DEFAULT_EMBED_PANEL = "attention-matrix"
TEXT_ONLY = frozenset(pid for pid in EMBEDDABLE if not PANELS[pid].picture)  # no picture to save as SVG/PNG


def embed_panel_id(state: st.State) -> str:
    return state.panel if state.panel in EMBEDDABLE else DEFAULT_EMBED_PANEL


def _short(x: float) -> str:
    """1.0 -> '1', 0.5 -> '0.5', 2.8284 -> '2.828': how the page writes a setting."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def _first_sentence(text: str) -> str:
    """The first sentence of a model's description: its honest one-liner ("... designed by hand, not
    learned from data.")."""
    text = " ".join(str(text).split())
    found = re.match(r"(.+?[.!?])(?=\s+[A-Z0-9\"“(<]|$)", text)
    return found.group(1) if found else text


def figure_facts(state: st.State, panel_id: str, computed=None) -> dict:
    """What a figure shows, as plain text, for an export's caption and an embed's frame.

    Names only what this panel depends on (PANELS[panel_id].depends), so that a caption never
    claims a setting the picture ignores: the embedding panel states no head, no T; the √d_k demo
    uses random vectors, not the sentence. Keys (each "" or [] when the panel does not depend on it):
    title, sentence (as typed), query ('query “it” (6)'), model (its name), about (the first
    sentence of its description), layer ('Layer 2 of 6'; "" for a one-layer model), head
    ('Head 1: Coreference'), settings (['T = 1', '√d_k = 8', 'causal mask on', ...]),
    changed (the settings that differ from the defaults), demo (the √d_k demo's inputs).
    """
    computed = computed or st.compute(state)
    depends = PANELS[panel_id].depends
    model = computed.model
    toks = computed.tokens
    facts = {
        "title": EMBEDDABLE[panel_id],
        "sentence": "",
        "query": "",
        "model": model.name,
        "about": _first_sentence(model.about),
        "layer": "",
        "head": "",
        "settings": [],
        "changed": [],
        "demo": "",
    }
    if "text" in depends:
        facts["sentence"] = state.text
    if "text" in depends and "pair_text" in depends and state.pair_text:
        facts["sentence"] = f"{state.text}” beside “{state.pair_text}"  # the caption quotes it: “A” beside “B”
    if "query" in depends and 0 <= state.query < len(toks):
        facts["query"] = f"query “{toks[state.query]}” (token {state.query})"
        extra = [i for i in state.pinned if i != state.query and i < len(toks)] if "pinned" in depends else []
        if extra:
            names = ", ".join(f"“{toks[i]}” ({i})" for i in extra)
            facts["query"] += f" and pinned {names}: their mean is shown too"
    if "layer" in depends and model.n_layers > 1:
        facts["layer"] = f"Layer {state.layer + 1} of {model.n_layers}"
    if "head" in depends:
        facts["head"] = f"Head {state.head + 1}: {computed.heads[state.head].name}"
        if panel_id == "head-multiples":  # every head is drawn; the caption names the one outlined
            facts["head"] = "selected " + facts["head"]
    default = st.State()  # T and the activation default alike for every model; √d_k is the model's own
    settings, changed = [], []

    def setting(text: str, differs: bool):
        settings.append(text)
        if differs:
            changed.append(text)

    if "temperature" in depends and "layer" in depends:  # the attention's knobs, where attention is drawn
        scale, temp = float(state.dk_scale), float(state.temperature)
        setting(f"T = {_short(temp)}", temp != default.temperature)
        own = "" if scale == model.true_dk_scale else f" (the model's own: {_short(model.true_dk_scale)})"
        setting(f"√d_k = {_short(scale)}{own}", scale != model.true_dk_scale)
        settings.append(f"scores divided by √d_k·T = {_short(scale * temp)}")
        if state.causal:
            setting("causal mask on", True)
    if "custom" in depends and state.custom:
        setting("computed with your attention function", True)
    if "ablated" in depends and state.ablated:
        off = ", ".join(
            f"L{l + 1} H{h + 1} ({model.heads[l][h].name})" for l, h in st.head_pairs(state.model, state.ablated)
        )
        setting(f"heads switched off: {off}", True)
    if panel_id in ("ffn", "layernorm") and "activation" in depends:
        setting(
            f"activation {ACTIVATION_LABELS.get(state.activation, state.activation)}",
            state.activation != default.activation,
        )
    facts["settings"], facts["changed"] = settings, changed
    if "demo_dk" in depends:
        own = "" if state.demo_dk == model.d_k else f" (the model's own d_k is {model.d_k})"
        facts["demo"] = f"Random vectors q and k with d_k = {state.demo_dk} entries each, not the sentence's{own}"
        facts["about"] = ""
    return facts


def export_caption(state: st.State, panel_id: str) -> dict:
    """The words an exported picture of a panel carries, as plain text (the page writes them as SVG
    text, never as markup): {"title", "caption", "note"}.

    caption: the sentence as typed, the query, the model, the layer (several layers only), the head,
    T, √d_k and what the scores are divided by, the causal mask when on, each where the panel depends
    on it; note: the model's honest one-liner ("… designed by hand, not learned from data.").
    """
    if panel_id not in EMBEDDABLE or panel_id in TEXT_ONLY:
        raise ValueError(
            f"no exportable panel {panel_id!r}: choose one of {', '.join(p for p in EMBEDDABLE if p not in TEXT_ONLY)}"
        )
    f = figure_facts(state, panel_id)
    parts = [
        f"“{f['sentence']}”" if f["sentence"] else "",
        f["query"],
        f["demo"],
        f["model"],
        f["layer"],
        f["head"],
        ", ".join(f["settings"]),
    ]
    return {"title": f["title"], "caption": " · ".join(p for p in parts if p), "note": f["about"]}


def render_embed(state: st.State) -> dict[str, str]:
    """The embed page's markup: the focused panel (default: the attention matrix) in a small frame
    that names what it shows (head, model and what the model is, settings that differ from the
    defaults), so that the embed stands alone in someone else's page."""
    from . import permalink

    pid = embed_panel_id(state)
    computed = st.compute(state)
    fragment = permalink.encode(state)
    full = "./" + ("#" + fragment if fragment else "")
    # the code is shown read-only in an embed, with a link to run it in the explorer (never run here)
    panel = code_view.render_embed(state, full) if pid == "code" else PANELS[pid].render(state, computed)
    chips = PANELS["token-chips"].render(state, computed)
    facts = figure_facts(state, pid, computed)
    return {"embed": share.embed_frame(state, pid, EMBEDDABLE[pid], panel, chips, full, facts=facts)}


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
    iframe = (
        f'<iframe src="{esc(src)}" title="{esc("Attention Explorer: " + EMBEDDABLE[pid])}" '
        'style="width:100%;height:520px;border:0" loading="lazy"></iframe>'
    )
    return iframe + "\n" + EMBED_HOST_SCRIPT


# Panels on the first screen (Panel.first_screen): written into index.html as markup. The others are written to
# prerendered.json (deferred_panels), each leaving an empty <template data-prerendered> in its place,
# which the bridge fills when the panel comes near the viewport. The page's HTML is then a tenth of
# the size: the first paint parses (and the preload scanner scans) a few hundred elements instead of
# the FFN's and LayerNorm's thousands, yet every stage still shows its real pre-rendered picture
# before Python is ready.
FIRST_SCREEN = frozenset(pid for pid, p in PANELS.items() if p.first_screen)
# What a rehearsal (rehearse) draws when the bridge has not yet said what is on screen: the workspace,
# where a reader first moves a slider (the first screen's panels and the affinity bars beside the heatmap).
REHEARSED_UNREPORTED = FIRST_SCREEN | {"affinity"}

# Small panels drawn on every change even when off screen (Panel.always_drawn; the worker defers the big
# ones); the tour's card is fixed to the screen while its slot scrolls away with the header.
ALWAYS_DRAWN = frozenset(pid for pid, p in PANELS.items() if p.always_drawn)


def tour_focus(state: st.State) -> str:
    """The panel the state's tour step brings into view ("" when there is no tour)."""
    if state.tour < 0:
        return ""
    from . import tour

    return tour.STEPS[state.tour].panel


def stage_section(state: st.State) -> str:
    """The id of the page section the stepper's current stage brings into focus."""
    return stepper.STAGE_SECTIONS[state.stage]


def changed_fields(old: st.State, new: st.State) -> set[str]:
    return {f for f in st.State.__dataclass_fields__ if getattr(old, f) != getattr(new, f)}


def render_panels(state: st.State, only: set[str] | None = None, *, live: bool = False) -> dict[str, str]:
    """Markup for every panel (or only the named ones), by panel id; live: the worker's lighter redraws."""
    if only is not None and not only:
        return {}  # nothing to draw: no model run either (a plain link at start-up)
    computed = st.compute(state)
    ids = PANELS if only is None else [p for p in PANELS if p in only]
    return {pid: ((live and PANELS[pid].render_live) or PANELS[pid].render)(state, computed) for pid in ids}


def patchable(pid: str, old: st.State, new: st.State) -> bool:
    """Whether panel pid's live markup for old can be brought to new by a patch (numbers only)."""
    panel = PANELS[pid]
    return (
        panel.render_patch is not None
        and changed_fields(old, new) <= panel.patch_fields
        and panel.can_patch(old)
        and panel.can_patch(new)
    )


def render_patches(state: st.State, only: set[str]) -> dict[str, list]:
    """Patch operations for the named panels (each must be patchable), by panel id."""
    computed = st.compute(state)
    return {pid: PANELS[pid].render_patch(state, computed) for pid in PANELS if pid in only}


def drawn_now(redraw: set[str], new: st.State, on_screen: Optional[set]) -> set[str]:
    """Of the panels to redraw for a change to `new`, those drawn now: on or near the screen (on_screen;
    None: all), the small ones always drawn, and the panel the state names. The rest wait until seen."""
    return {p for p in redraw if on_screen is None or p in on_screen or p in ALWAYS_DRAWN or p == new.panel}


def draw_change(old: st.State, new: st.State, now: set[str], live) -> tuple[dict[str, list], dict[str, str]]:
    """What the change old -> new sends for the panels `now`: (patches, markup) by panel id. A panel
    whose markup on the page was drawn live (in `live`) for old's structure gets a patch when one can
    bring it to new (patchable); the others new markup."""
    numbers = {p for p in now if p in live and patchable(p, old, new)}
    patches = render_patches(new, numbers) if numbers else {}
    return patches, render_panels(new, only=now - numbers, live=True)


def tip(state: st.State, panel: str, ref: dict) -> str:
    """A tooltip a live redraw left out of its markup (data-tip-src), "" when there is none:
    a heatmap cell's or an affinity bar's derivation (ref i, j) or a LayerNorm dimension's (ref block, j)."""
    computed = st.compute(state)
    n = len(computed.tokens)
    try:
        i, j = int(ref.get("i", -1)), int(ref.get("j", -1))
    except (TypeError, ValueError):
        return ""
    if panel in ("attention-matrix", "affinity") and 0 <= i < n and 0 <= j < n:  # the bars: row i = the query
        return attention_matrix.row_tips(computed.tokens, computed.trace, state.head, i)[j]
    if panel == "layernorm":
        return views.layernorm.dimension_tip(computed, state.query, str(ref.get("block", "")), j)
    return ""


def panels_to_redraw(old: st.State, new: st.State) -> set[str]:
    """The panels whose markup old -> new changes: a declared field changed (at the first layer, before
    and after, one of FIRST_LAYER_DEPENDS)."""
    changed = changed_fields(old, new)
    depends = FIRST_LAYER_DEPENDS if old.layer == new.layer == 0 else DEPENDS
    return {pid for pid in PANELS if depends[pid] & changed and not _resting(PANELS[pid], old, new, changed)}


def _resting(panel: Panel, old: st.State, new: st.State, changed: set[str]) -> bool:
    """Whether the panel shows the same markup for old and new although fields it declares changed."""
    return panel.resting is not None and panel.resting(old) and panel.resting(new) and not changed & panel.resting_on


DEPENDS = {pid: panel.depends for pid, panel in PANELS.items()}
# At the first layer a model input that acts later in the layer than a panel reads has not acted yet
# there: the panel's declared fields without those (fields without a stage always count).
FIRST_LAYER_DEPENDS = {
    pid: frozenset(
        f
        for f in panel.depends
        if LAYER_STAGES.index(BY_NAME[f].acts or LAYER_STAGES[0]) <= LAYER_STAGES.index(panel.reads)
    )
    for pid, panel in PANELS.items()
}


def control_values(state: st.State) -> dict:
    presets = st.description(state.model).presets
    values = controls.control_values(state)
    values["preset"] = next((p.id for p in presets if p.text == state.text), "")
    return values


def model_form(state: st.State) -> dict:
    """The form's model-dependent options and texts (controls.model_form), for the bridge."""
    return controls.model_form(state, st.description(state.model), st.all_descriptions())


def fill_template(
    template: str,
    *,
    worker_config: dict,
    model_files: dict | None = None,
    state: st.State | None = None,
    editor_files: dict | None = None,
) -> str:
    """index.html: replace <!--panel:ID--> markers with pre-rendered markup (FIRST_SCREEN) or an empty
    PRERENDERED_SLOT (the rest: deferred_panels, written to prerendered.json).

    Also fills <!--controls--> with the form and <!--worker-config--> with the
    JSON the bridge hands to PyScript (escaped for a <script type="application/json">), and
    <!--model-files--> with the downloadable models' manifest (build.write_models).
    """
    state = state or st.State()
    panels = render_panels(state, only=set(FIRST_SCREEN))
    out = template
    for pid in PANELS:
        marker = f"<!--panel:{pid}-->"
        assert marker in out, f"index.html has no {marker} for panel {pid!r}"
        out = out.replace(marker, panels.get(pid, PRERENDERED_SLOT))  # the rest: deferred_panels
    model = st.description(state.model)
    out = out.replace("<!--sentence-->", controls.render_sentence(state, model))
    out = out.replace("<!--controls-->", controls.render_controls(state, model, st.all_descriptions()))
    out = out.replace("<!--scale-demo-controls-->", views.why.render_scale_demo_controls(state, model.d_k))
    out = out.replace("<!--pair-controls-->", controls.render_pair_input(state))
    out = out.replace("<!--code-editor-->", code_view.render_editor(state))
    out = out.replace(
        "<!--editor-files-->", _config_json({"files": editor_files or {}, "edits": code_view.edits_data()})
    )
    for pid, title in EMBEDDABLE.items():
        out = out.replace(
            f"<!--share:{pid}-->",
            share.toolbar(pid, title, data=pid == "attention-matrix", pictures=pid not in TEXT_ONLY),
        )
    out = out.replace("<!--designed-not-trained-->", esc(model.about))
    out = out.replace("<!--worker-config-->", _config_json(worker_config))
    out = out.replace("<!--model-files-->", _config_json(model_files or {}))
    assert "<!--panel:" not in out, "index.html names a panel that page.PANELS does not have"
    assert "<!--share:" not in out, "index.html names a share toolbar for a panel that is not EMBEDDABLE"
    return out


def fill_embed_template(
    template: str,
    *,
    worker_config: dict,
    model_files: dict | None = None,
    state: st.State | None = None,
    editor_files: dict | None = None,
) -> str:
    """embed.html: the default embed (the attention matrix) pre-rendered, like index.html."""
    state = state or st.State()
    out = template.replace("<!--panel:embed-->", render_embed(state)["embed"])
    out = out.replace("<!--model-files-->", _config_json(model_files or {}))
    return out.replace("<!--worker-config-->", _config_json(worker_config))


# Where a panel's markup from prerendered.json goes: inert, and gone once the panel is drawn.
PRERENDERED_SLOT = "<template data-prerendered></template>"


def deferred_panels(state: st.State | None = None) -> dict[str, str]:
    """prerendered.json: the markup of the panels index.html leaves out (not FIRST_SCREEN), by panel id."""
    return render_panels(state or st.State(), only=set(PANELS) - FIRST_SCREEN)


def _config_json(worker_config: dict) -> str:
    """JSON for a <script type="application/json">: '</' escaped so it cannot close the element."""
    return json.dumps(worker_config, sort_keys=True).replace("</", "<\\/")
