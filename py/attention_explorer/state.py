"""The explorer's UI state: one frozen dataclass, its transitions, its derived computation.

All shared UI state lives here (as in Transformer Explainer's store): the views
read it, the worker applies events to it, build.py renders the default. An event
is a plain dict from the page (`{"type": "set_temperature", "value": "1.5"}`);
`apply_event` returns the next state, or raises `InputError` with a message for
the reader, in which case the caller keeps the last good state and picture.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import lru_cache

from . import core, model, tokens

TEMPERATURE_RANGE = (0.05, 5.0)  # the slider's range; T < 0.05 is indistinguishable from argmax here
DK_SCALE_RANGE = (0.5, 32.0)     # √d_k slider: from "barely scaled" to 4x the true √d_k
DEMO_DK_RANGE = (1, 512)          # the √d_k demo's d_k slider
ACTIVATIONS = ("relu", "gelu", "swiglu")
TRUE_DK_SCALE = math.sqrt(model.CONFIG.d_head)  # √d_k of the model (8.0 for d_k = 64)


class InputError(ValueError):
    """Reader input that cannot be used; the message is shown next to the control."""

    def __init__(self, message: str, field: str = "tokens"):
        super().__init__(message)
        self.message = message
        self.field = field  # which control the message belongs next to


@dataclass(frozen=True)
class State:
    text: str = model.DEFAULT_TEXT        # the sentence as typed
    query: int = model.DEFAULT_QUERY      # 0-based index of the query token
    head: int = 0                         # selected head index
    temperature: float = 1.0              # T in softmax(QKᵀ / (√d_k·T))
    dk_scale: float = TRUE_DK_SCALE       # the √d_k actually divided by
    causal: bool = False                  # hide future keys (decoder-style)
    activation: str = "gelu"              # the FFN nonlinearity
    stage: int = 0                        # layer-flow stepper position (index into STAGES)
    routing_all_heads: bool = False       # routing panel: all heads colour-coded, or the selected one
    demo_dk: int = 64                     # "why divide by √d_k" demo: the d_k of its random vectors
    panel: str = ""                       # the focused panel (page.PANELS id) for links, embeds, exports

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(tokens.tokenize(self.text))


@dataclass(frozen=True)
class Computed:
    """Everything the views draw for one state: the tokens, the embedding, the block's trace."""
    tokens: tuple[str, ...]
    embedding: "model.Embedding"   # token_embedding, positional, x: [n, d_model]
    trace: "core.BlockTrace"       # every intermediate of the block
    params: "core.BlockParams"     # the weights (views show W_O's shape, γ, β)


@lru_cache(maxsize=64)
def _forward(toks: tuple[str, ...], temperature: float, dk_scale: float, causal: bool,
             activation: str) -> Computed:
    embedding, trace = model.forward(list(toks), temperature=temperature, scale=dk_scale,
                                     causal=causal, activation=activation)
    return Computed(toks, embedding, trace, model.block_params())


def compute(state: State) -> Computed:
    """The model run for a state: the only place the state meets the model (memoised)."""
    return _forward(state.tokens, state.temperature, state.dk_scale, state.causal, state.activation)


def _number(value, name: str, lo: float, hi: float) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number between {lo:g} and {hi:g}; got {str(value)[:40]!r}.",
                         field=name) from None
    if not math.isfinite(x):
        raise InputError(f"{name} must be a finite number between {lo:g} and {hi:g}.", field=name)
    return min(hi, max(lo, x))


def _flag(value) -> bool:
    """A checkbox's value as sent by the page (true/false, or "1"/"on" from a link)."""
    return str(value).lower() in ("true", "1", "on")


def _index(value, name: str, n: int) -> int:
    try:
        i = int(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a whole number; got {str(value)[:40]!r}.", field=name) from None
    if not 0 <= i < n:
        raise InputError(f"{name} {i} is out of range: choose 0 to {n - 1}.", field=name)
    return i


def apply_event(state: State, event: dict) -> State:
    """The next state after one page event. Raises InputError for unusable input."""
    kind = event.get("type")
    value = event.get("value")
    if kind == "set_text":
        text = str(value if value is not None else "")
        try:
            toks = tokens.tokenize(text)
        except tokens.TokenError as exc:
            raise InputError(str(exc)) from None
        # keep the query on the same position when it still exists, else the last token
        return dataclasses.replace(state, text=text, query=min(state.query, len(toks) - 1))
    if kind == "set_query":
        return dataclasses.replace(state, query=_index(event.get("index", value), "query", len(state.tokens)))
    if kind == "set_head":
        return dataclasses.replace(state, head=_index(value, "head", model.CONFIG.n_heads))
    if kind == "set_temperature":
        return dataclasses.replace(state, temperature=_number(value, "temperature", *TEMPERATURE_RANGE))
    if kind == "set_dk_scale":
        return dataclasses.replace(state, dk_scale=_number(value, "dk_scale", *DK_SCALE_RANGE))
    if kind == "set_causal":
        return dataclasses.replace(state, causal=_flag(value))
    if kind == "set_activation":
        if value not in ACTIVATIONS:
            raise InputError(f"activation must be one of {', '.join(ACTIVATIONS)}.", field="activation")
        return dataclasses.replace(state, activation=value)
    if kind == "set_stage":
        return dataclasses.replace(state, stage=_index(value, "stage", len(STAGES)))
    if kind == "set_routing_all":
        return dataclasses.replace(state, routing_all_heads=_flag(value))
    if kind == "set_demo_dk":
        lo, hi = DEMO_DK_RANGE
        return dataclasses.replace(state, demo_dk=int(round(_number(value, "demo_dk", lo, hi))))
    if kind == "set_panel":
        from . import page  # page imports state; look the ids up lazily

        if value not in page.PANELS and value != "":
            raise InputError(f"Unknown panel {str(value)[:40]!r}.", field="panel")
        return dataclasses.replace(state, panel=value)
    if kind == "preset":
        preset = next((p for p in model.PRESETS if p.id == value), None)
        if preset is None:
            raise InputError(f"Unknown preset {str(value)[:40]!r}.", field="preset")
        return dataclasses.replace(state, text=preset.text, query=preset.query)
    if kind == "reset":
        return State()
    raise InputError(f"Unknown event type {str(kind)[:40]!r}.", field="event")


# The layer-flow stepper's stages (issue 4 fills in their panels).
STAGES = ("Input", "Projections", "Scaled self-attention", "Multi-head output",
          "Residual & LayerNorm", "Feed-forward")
