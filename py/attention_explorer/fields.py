"""Every field of the UI state, declared once.

Derived from `FIELDS`: the state record (`state.State`), how an event sets each
field (`state.apply_event`), the permalink codec (`permalink`) and the values sent
to the form's controls (`views.controls.control_values`). The page's redraw rules
(`page`) take from here which fields are model inputs and where in a layer each
acts; which fields each panel draws is declared with the panel (`page.PANELS`).

So a new slider is one entry here and, written by hand, its control in the form
(`views.controls`), the field in the `depends` of every panel that draws it
(`page.PANELS`; a model input is in `page.LAYER`, which the panels drawing the
model's run list already), and, when `model_input` is set, a field of the same
name in `core.Settings` used in `core.run_block` (state.settings fills it in;
every model passes it on). docs/contributing.md has the whole recipe, tests
included.

Kinds, and how a value of each is read from an event or a link:

    text    any string (the model's tokenizer decides whether it is usable)
    index   a whole number 0 <= i < count, where `of` names what it indexes
            (tokens, heads, layers, stages, ...: counted by state.extent, which knows the model);
            with auto=True also -1: "let the page choose" (e.g. the query's strongest key)
    choice  one of a set of strings; `of` names the set (models, activations)
    panel   "" or a panel's id (PANEL_ID); page.decode_link drops a link's one that names no panel
    number  a float clamped to `limits` (lo, hi); a link must give it exactly
    count   an int clamped to `limits` (lo, hi)
    flag    a checkbox: true/false, "1"/"0", "on"
    indices a set of whole numbers 0 <= i < count (`of` as for index), kept sorted; an event gives
            the whole set ("1_5", "1,5" or a list; "" = none) or, with "toggle": i, flips one
    code    Python source text; written into a link compressed (permalink), never run from one

Imports nothing from the package, so that any module of it may import this.
"""

from __future__ import annotations

from dataclasses import dataclass

# The layer-flow stepper's stages, in order (views.stepper draws them).
STAGES = ("Input", "Projections", "Scaled self-attention", "Multi-head output", "Residual & LayerNorm", "Feed-forward")

# A panel's id (page.PANELS declares the page's panels): the form a link's "panel" must have. Whether it
# names a panel of the page is page.py's to say (page.decode_link), since this module and state are below it.
PANEL_ID = r"[a-z][a-z0-9-]{0,39}"

ACTIVATIONS = ("relu", "gelu", "swiglu")  # the FFN nonlinearities core.transformer_block knows

FROM_MODEL = None  # a default that depends on the model (its example sentence, its √d_k)

# What one layer computes, in order: its input x (and Q, K, V = xW), the attention weights A, the heads'
# outputs z (a switched-off head's is 0), the multi-head output (W_O, residual + LayerNorm), then the FFN
# (and its residual + LayerNorm). A model input acting at one stage leaves the earlier stages of the
# first layer as they were (page.py: a panel drawing only those is not redrawn for it there); in a later
# layer it has acted already, in the layers before.
LAYER_STAGES = ("input", "attention", "heads", "multihead", "ffn")


@dataclass(frozen=True)
class Field:
    """One state field's declaration: its default, permalink key, event, range and label."""

    name: str  # the State attribute
    kind: str  # text | index | choice | panel | number | count | flag | indices | code (module doc)
    default: object  # State()'s value; FROM_MODEL: the default model's
    key: str  # its key in a permalink ("s=...&q=2")
    label: str  # how a notice names it ("Ignored the link's <label>: ...")
    event: str  # the page event that sets it ({"type": event, "value": ...})
    of: str = ""  # index/choice: what it ranges over
    limits: tuple = ()  # number/count: (lo, hi)
    step: float = 1  # number/count: the slider's step
    control: str = ""  # the id of the form control that shows it ("" when none)
    auto: bool = False  # index: -1 is allowed and means "chosen automatically"
    model_input: bool = False  # the model's forward pass reads it: changing it changes the trace
    in_link: bool = True  # False: a permalink neither writes nor reads it (key "")
    acts: str = ""  # model inputs: where in each layer it first changes numbers (LAYER_STAGES)

    def __post_init__(self):
        assert (self.acts in LAYER_STAGES) == self.model_input, f"{self.name}: a model input says where it acts"
        assert self.kind in ("text", "index", "choice", "panel", "number", "count", "flag", "indices", "code"), (
            f"{self.name}: unknown kind {self.kind!r}"
        )
        assert (self.kind in ("index", "choice", "indices")) == bool(self.of), (
            f"{self.name}: 'of' is for index/choice/indices"
        )
        assert (self.kind in ("number", "count")) == (len(self.limits) == 2), (
            f"{self.name}: number/count fields need (lo, hi) limits"
        )


# In the order a link is written and applied: model before everything it decides (the sentence's
# tokens, the head and layer counts, √d_k), the sentence before the query (an index into it).
FIELDS: tuple[Field, ...] = (
    # the guided tour's step (tour.py; -1: no tour), first: a step sets the page up, and the rest of
    # a link changes what the reader changed since
    Field("tour", "index", -1, "tour", "tour step", "tour_step", of="tour_steps", auto=True),
    Field(
        "model",
        "choice",
        "designed",
        "m",
        "model",
        "set_model",
        of="models",
        control="model",
        model_input=True,
        acts="input",
    ),
    Field("text", "text", FROM_MODEL, "s", "sentence", "set_text", control="tokens", model_input=True, acts="input"),
    Field("query", "index", FROM_MODEL, "q", "query token", "set_query", of="tokens"),
    # more query tokens selected with the query (Shift/Ctrl-click): views show the rows' mean
    Field("pinned", "indices", (), "p", "pinned queries", "set_pinned", of="tokens"),
    # a second sentence, shown beside the first with the same head ("" = none)
    Field("pair_text", "text", "", "s2", "second sentence", "set_pair_text", control="pair-text"),
    # the key whose score the Q·K breakdown takes apart; -1: the query's strongest key
    Field("key", "index", -1, "k", "key token", "set_key", of="tokens", auto=True),
    Field("layer", "index", 0, "l", "layer", "set_layer", of="layers", control="layer"),
    Field("head", "index", 0, "h", "head", "set_head", of="heads", control="head"),
    # T < 0.05 is indistinguishable from argmax here; T > 5 from uniform
    Field(
        "temperature",
        "number",
        1.0,
        "T",
        "temperature",
        "set_temperature",
        limits=(0.05, 5.0),
        step=0.05,
        control="temperature",
        model_input=True,
        acts="attention",
    ),
    # from "barely scaled" to 4x the designed model's true √d_k = 8
    Field(
        "dk_scale",
        "number",
        FROM_MODEL,
        "dk",
        "√d_k scale",
        "set_dk_scale",
        limits=(0.5, 32.0),
        step=0.5,
        control="dk-scale",
        model_input=True,
        acts="attention",
    ),
    Field(
        "causal",
        "flag",
        False,
        "mask",
        "causal mask",
        "set_causal",
        control="causal",
        model_input=True,
        acts="attention",
    ),
    # heads switched off (ablation), as flat indices layer * heads_per_layer + head
    Field(
        "ablated",
        "indices",
        (),
        "ab",
        "switched-off heads",
        "set_ablated",
        of="all_heads",
        model_input=True,
        acts="heads",
    ),
    Field(
        "activation",
        "choice",
        "gelu",
        "act",
        "activation",
        "set_activation",
        of="activations",
        control="activation",
        model_input=True,
        acts="ffn",
    ),
    Field("stage", "index", 0, "stage", "stage", "set_stage", of="stages"),
    Field("routing_all_heads", "flag", False, "all", "all-heads setting", "set_routing_all", control="routing-all"),
    Field("demo_dk", "count", 64, "ddk", "demo d_k", "set_demo_dk", limits=(1, 512), control="demo-dk"),
    # the designed head the designed-vs-trained comparison takes; -1: the selected head (designed
    # model) or the first designed head (trained model)
    Field(
        "compare_head", "index", -1, "ch", "compared designed head", "set_compare_head", of="designed_heads", auto=True
    ),
    Field("panel", "panel", "", "panel", "panel", "set_panel"),
    # the reader's attention function: the code last run ("" = the page's own), and whether it is in
    # use. A link carries the code but never switches it on: only the reader's Run does (run_code).
    Field("code", "code", "", "code", "attention function", "set_code", model_input=True, acts="attention"),
    Field(
        "custom",
        "flag",
        False,
        "",
        "your attention function in use",
        "set_custom",
        model_input=True,
        in_link=False,
        acts="attention",
    ),
    # the answer chosen to the tour step's question (-1: none yet)
    Field("tour_answer", "index", -1, "", "tour answer", "tour_answer", of="tour_answers", auto=True, in_link=False),
)

BY_NAME = {f.name: f for f in FIELDS}
BY_EVENT = {f.event: f for f in FIELDS}
BY_KEY = {f.key: f for f in FIELDS if f.in_link}
MODEL_INPUTS = tuple(f.name for f in FIELDS if f.model_input)  # what changes the model's run
assert len(BY_NAME) == len(BY_EVENT) == len(FIELDS), "names and events must be unique"
assert len(BY_KEY) == sum(f.in_link for f in FIELDS) and all(bool(f.key) == f.in_link for f in FIELDS), (
    "link keys must be unique, and only fields a link carries have one"
)
