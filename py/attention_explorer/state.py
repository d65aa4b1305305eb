"""The explorer's UI state: one frozen record derived from fields.py, its transitions, its model run.

`State` is the record the views read (as in Transformer Explainer's store): one
field per `fields.FIELDS` entry, everything a view may depend on, and what a link
carries. This module defines it and its transitions but holds no current state:
the page's one `State` is `worker._state`, in the worker, and build.py renders the
default `State()`. Beside it, worker.py keeps in module globals the bookkeeping no
view reads (page or embed mode, the panels on screen, left stale or drawn live,
the form data last sent, a model download's progress), and the bridge keeps its
own about the page (site/bridge/*.js, each module's header says what). The only
memory here is caches of pure functions (`_tokenize`, `_run`).

An event is a plain dict from the page (`{"type": "set_temperature", "value": "1.5"}`);
`apply_event` returns the next state, or raises `InputError` with a message for
the reader, in which case the caller keeps the last good state and picture.

`compute(state)` runs the state's model (memoised) on `settings(state)`, the one
`core.Settings` built from every model input of fields.py, and hands the views a
`Computed` for the selected layer: the views get the models' numbers only through here.

The guided tour is above this module: its questions run the model through `compute` (tour.py). So a
tour step's settings, the step count and a question's most answers come from tour_steps.py, plain
data, and nothing here imports tour.py: the imports between the two run one way.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from . import core, models, tokens
from .fields import ACTIVATIONS, BY_EVENT, BY_NAME, FIELDS, FROM_MODEL, MODEL_INPUTS, PANEL_ID, STAGES
from .models.base import ModelDescription, ModelRun

__all__ = [
    "ACTIVATIONS",
    "STAGES",
    "State",
    "Computed",
    "InputError",
    "apply_event",
    "compute",
    "description",
    "TEMPERATURE_RANGE",
    "DK_SCALE_RANGE",
    "DEMO_DK_RANGE",
]

TEMPERATURE_RANGE = BY_NAME["temperature"].limits
DK_SCALE_RANGE = BY_NAME["dk_scale"].limits
DEMO_DK_RANGE = BY_NAME["demo_dk"].limits


class InputError(ValueError):
    """Reader input that cannot be used; the message is shown next to the control."""

    def __init__(self, message: str, field: str = "tokens"):
        super().__init__(message)
        self.message = message
        self.field = field  # which control the message belongs next to


def description(model_id: str) -> ModelDescription:
    return models.get(model_id).description


def all_descriptions() -> tuple[ModelDescription, ...]:
    """Every model's description, in the model picker's order (the default first)."""
    return tuple(m.description for m in models.MODELS.values())


def _model_defaults(model_id: str) -> dict:
    """The fields whose default is the model's: its example sentence and query, its true √d_k."""
    d = description(model_id)
    return {"text": d.default_text, "query": d.default_query, "dk_scale": d.true_dk_scale}


_PY_TYPES = {
    "text": str,
    "index": int,
    "choice": str,
    "panel": str,
    "number": float,
    "count": int,
    "flag": bool,
    "indices": tuple,
    "code": str,
}
_DEFAULTS = {f.name: f.default for f in FIELDS} | _model_defaults(BY_NAME["model"].default)
assert FROM_MODEL not in _DEFAULTS.values(), "every model-dependent default must be filled in"


def _tokens(self) -> tuple[str, ...]:
    """The sentence as the state's model tokenizes it."""
    return _tokenize(self.model, self.text)


def _queries(self) -> tuple[int, ...]:
    """The query and the pinned tokens, sorted: the rows whose mean attention the views show."""
    return tuple(sorted({self.query, *self.pinned}))


State = dataclasses.make_dataclass(
    "State",
    [(f.name, _PY_TYPES[f.kind], dataclasses.field(default=_DEFAULTS[f.name])) for f in FIELDS],
    frozen=True,
    namespace={
        "tokens": property(_tokens),
        "queries": property(_queries),
        "__module__": __name__,
        "__doc__": "The whole UI state; one field per fields.FIELDS entry.",
    },
)


@lru_cache(maxsize=64)
def _tokenize(model_id: str, text: str) -> tuple[str, ...]:
    return models.get(model_id).tokenize(text)


@dataclass(frozen=True, eq=False)
class Computed:
    """What the views draw for one state: the model's description, its run, and the selected layer."""

    model: ModelDescription
    run: ModelRun
    layer: int

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.run.tokens

    @property
    def embedding(self):
        return self.run.embedding  # token, position, x: each [n, d_model]

    @property
    def trace(self) -> core.BlockTrace:
        return self.run.layers[self.layer]  # every intermediate of the selected layer

    @property
    def params(self) -> core.BlockParams:
        return self.run.params[self.layer]  # the selected layer's weights (views show W_O's shape, γ, β)

    @property
    def heads(self) -> tuple:
        return self.model.heads[self.layer]  # HeadInfo of the selected layer's heads


@lru_cache(maxsize=64)
def _run(model_id: str, toks: tuple[str, ...], settings: core.Settings, code: str = "") -> ModelRun:
    """The model's forward pass; code: the reader's attention function ("" = the page's own). Raises
    custom_attention.CodeError when the reader's function fails or returns something unusable."""
    if code:
        from . import custom_attention

        settings = dataclasses.replace(settings, attention_fn=custom_attention.compile_attention(code))
    return models.get(model_id).forward(toks, settings)


# The model inputs that are not a knob of core.Settings: which model runs, what it reads, and the
# reader's function (compiled by _run into Settings.attention_fn). Every other model input is a field
# of core.Settings of the same name, filled in by settings() (converted on the way when listed here).
_RUN_INPUTS = ("model", "text", "code", "custom")
_TO_SETTING = {"ablated": lambda state: head_pairs(state.model, state.ablated)}  # flat indices -> (layer, head)


def settings_fields(model_inputs: tuple[str, ...]) -> tuple[str, ...]:
    """The model inputs core.Settings carries; raises ValueError unless they are exactly its fields."""
    names = tuple(name for name in model_inputs if name not in _RUN_INPUTS)
    knobs = {f.name for f in dataclasses.fields(core.Settings)} - {"attention_fn"}
    if set(names) != knobs:
        raise ValueError(
            f"model inputs {sorted(set(names) - knobs)} are not fields of core.Settings, and its "
            f"fields {sorted(knobs - set(names))} no model inputs: a model input (fields.Field with "
            "model_input=True) is a field of core.Settings, used in core.run_block"
        )
    return names


SETTINGS_FIELDS = settings_fields(MODEL_INPUTS)


def settings(state) -> core.Settings:
    """The knobs of state's forward pass, one core.Settings (its attention_fn is set by _run)."""
    return core.Settings(
        **{name: _TO_SETTING[name](state) if name in _TO_SETTING else getattr(state, name) for name in SETTINGS_FIELDS}
    )


def _code(state) -> str:
    """The attention function the run uses: the reader's when switched on, else "" (the page's own)."""
    return state.code if state.custom else ""


def head_pairs(model_id: str, flat: tuple) -> tuple:
    """Flat head indices (fields: layer * heads_per_layer + head) -> ((layer, head), ...), in order."""
    sizes = [len(layer) for layer in description(model_id).heads]
    out = []
    for i in flat:
        layer = 0
        while i >= sizes[layer]:
            i -= sizes[layer]
            layer += 1
        out.append((layer, i))
    return tuple(out)


def flat_head(model_id: str, layer: int, head: int) -> int:
    """(layer, head) -> the flat index the "ablated" field holds."""
    return sum(len(h) for h in description(model_id).heads[:layer]) + head


def compute(state) -> Computed:
    """The model run for a state (memoised on the model inputs; choosing a layer recomputes nothing)."""
    run = _run(state.model, state.tokens, settings(state), _code(state))
    return Computed(description(state.model), run, state.layer)


def compute_intact(state) -> Computed:
    """compute(state) with every head on: what an ablation is measured against (state's own run when
    nothing is switched off)."""
    return compute(dataclasses.replace(state, ablated=())) if state.ablated else compute(state)


def compute_pair(state) -> Optional[Computed]:
    """The state's model on its second sentence (pair_text), with the same knobs and switched-off heads;
    None when there is no second sentence."""
    if not state.pair_text:
        return None
    toks = _tokenize(state.model, state.pair_text)
    run = _run(state.model, toks, settings(state), _code(state))
    return Computed(description(state.model), run, state.layer)


def selected_queries(state) -> tuple[int, ...]:
    """state.queries: the query and the pinned tokens, sorted."""
    return state.queries


@dataclass(frozen=True, eq=False)
class Comparison:
    """The designed-vs-trained comparison's inputs: both models on the state's sentence, run as they
    were made (T = 1, their true √d_k, no mask), the designed head and query to compare."""

    designed: Computed
    trained: Optional[Computed]  # None: the trained model's files are not loaded yet
    head: int  # the designed head (0-based)
    query: int  # the designed model's token index of the state's query (-1: none)
    trained_id: str


def comparison(state) -> Comparison:
    """Raises tokens.TokenError when a model cannot read the sentence (the panel says so)."""
    designed_id = models.DEFAULT
    # the trained model in use, else the first one
    trained_id = state.model if state.model in models.TRAINED else models.TRAINED[0]
    head = state.compare_head if state.compare_head >= 0 else (state.head if state.model == designed_id else 0)

    def as_made(model_id):
        d = description(model_id)
        run = _run(model_id, _tokenize(model_id, state.text), d.as_made)
        return Computed(d, run, 0)

    designed = as_made(designed_id)
    trained = as_made(trained_id) if models.get(trained_id).available else None
    if state.model == designed_id:
        query = state.query
    else:  # the same word, in the designed model's tokens
        query = _same_word(state.tokens, state.query, designed.tokens)
    return Comparison(designed, trained, head, query, trained_id)


def _same_word(toks, index, other) -> int:
    """The index in `other` of the word token `index` of `toks` belongs to (-1 if none): word
    pieces ("##") joined, compared lowercased."""
    start, _ = tokens.word_span(toks, index)
    word = tokens.word_at(toks, index)
    before = sum(1 for k in range(start) if toks[k].lower() == word.lower())  # which occurrence
    hits = [k for k, t in enumerate(other) if t.lower() == word.lower()]
    return hits[before] if before < len(hits) else (hits[0] if hits else -1)


# --------------------------------------------------------------------------- reading event values


def _number(value, name: str, lo: float, hi: float) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(
            f"{name} must be a number between {lo:g} and {hi:g}; got {str(value)[:40]!r}.", field=name
        ) from None
    if not math.isfinite(x):
        raise InputError(f"{name} must be a finite number between {lo:g} and {hi:g}.", field=name)
    return min(hi, max(lo, x))


def _indices(value, field, n: int) -> tuple[int, ...]:
    """A set of indices from an event or a link: a list, or text "1_5" / "1,5" ("" = none)."""
    if isinstance(value, (list, tuple)):
        parts = [str(v) for v in value]
    else:
        text = str(value if value is not None else "")
        if len(text) > 4000:
            raise InputError(f"{field.label} must be a short list of numbers.", field=field.name)
        parts = [p for p in text.replace(",", "_").split("_") if p.strip()]
    if len(parts) > n:
        raise InputError(
            f"{field.label}: {len(parts)} numbers, but there are only {n} to choose from.", field=field.name
        )
    try:
        return tuple(sorted({_index(p, field.label, n) for p in parts}))
    except InputError as exc:
        raise InputError(exc.message[:1].upper() + exc.message[1:], field=field.name) from None


def _source(value) -> str:
    """The reader's code as text, within the size limit (custom_attention.MAX_CHARS)."""
    from . import custom_attention

    text = str(value if value is not None else "").replace("\r\n", "\n")
    if len(text) > custom_attention.MAX_CHARS:
        raise InputError(
            f"Your code is {len(text):,} characters long; the limit is "
            f"{custom_attention.MAX_CHARS:,}. Shorten it and press Run again.",
            field="attention-code",
        )
    return text


def _panel_id(value, name: str) -> str:
    """ "" or a panel's id (fields.PANEL_ID). Which ids the page has is page.py's (page.decode_link)."""
    text = str(value if value is not None else "")
    if text and not re.fullmatch(PANEL_ID, text):
        raise InputError(f"{name} must be a panel's id (lowercase letters, digits and dashes).", field=name)
    return text


def _flag(value) -> bool:
    """A checkbox's value as sent by the page (true/false, or "1"/"on" from a link)."""
    return str(value).lower() in ("true", "1", "on")


def _index(value, name: str, n: int, auto: bool = False) -> int:
    try:
        i = int(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a whole number; got {str(value)[:40]!r}.", field=name) from None
    if auto and i == -1:
        return i
    if not 0 <= i < n:
        raise InputError(f"{name} {i} is out of range: choose 0 to {n - 1}.", field=name)
    return i


def _tour_steps():
    """The tour's steps, as data (never tour.py: see the module's doc)."""
    from . import tour_steps  # here, not at the top: a start-up without a tour step reads none of its text

    return tour_steps


def _tour_step(i: int):
    """The state tour step i shows: the designed model's default sentence, with the step's settings."""
    step = _tour_steps().STEPS[i]
    base = State()  # the designed model, its sentence, T = 1, its √d_k, no mask, nothing switched off
    fields = {k: v for k, v in step.setup.items() if k != "query_word"}
    new = dataclasses.replace(
        base, tour=i, tour_answer=-1, dk_scale=description(models.DEFAULT).true_dk_scale, **fields
    )
    word = step.setup.get("query_word")
    if word and word in new.tokens:
        new = dataclasses.replace(new, query=new.tokens.index(word))
    return new


def extent(of: str, state) -> int:
    """How many choices an index field has in this state (tokens, heads, layers, stages)."""
    d = description(state.model)
    counts = {
        "tokens": lambda: len(state.tokens),
        "heads": lambda: len(d.heads[state.layer]),
        "all_heads": lambda: sum(len(h) for h in d.heads),
        "layers": lambda: d.n_layers,
        "stages": lambda: len(STAGES),
        "designed_heads": lambda: len(description(models.DEFAULT).heads[0]),
        "tour_steps": lambda: len(_tour_steps().STEPS),
        "tour_answers": lambda: _tour_steps().MAX_ANSWERS,
    }
    return counts[of]()


def choices(of: str, state) -> tuple[str, ...]:
    """The values a choice field accepts in this state."""
    return {
        "models": lambda: tuple(models.MODELS),
        "activations": lambda: tuple(a for a in ACTIVATIONS if a in description(state.model).activations),
    }[of]()


def _value(field, value, state):
    """The event's value for field, checked; raises InputError for the reader."""
    if field.kind == "text":
        return str(value if value is not None else "")
    if field.kind == "flag":
        return _flag(value)
    if field.kind == "number":
        return _number(value, field.name, *field.limits)
    if field.kind == "count":
        return int(round(_number(value, field.name, *field.limits)))
    if field.kind == "index":
        return _index(value, field.name, extent(field.of, state), field.auto)
    if field.kind == "indices":
        return _indices(value, field, extent(field.of, state))
    if field.kind == "code":
        return _source(value)
    if field.kind == "panel":
        return _panel_id(value, field.name)
    allowed = choices(field.of, state)
    if value not in allowed:
        shown = ", ".join(a for a in allowed if a) if len(allowed) <= 8 else f"{len(allowed)} names"
        raise InputError(f"{field.label} must be one of {shown}; got {str(value)[:40]!r}.", field=field.name)
    return value


# --------------------------------------------------------------------------- transitions


def _follow_query(old_tokens: tuple[str, ...], query: int, new_tokens: tuple[str, ...], model_id: str) -> int:
    """Where the query goes when the tokens change: onto the same occurrence of its word when it survives
    the edit, else to the model's default (designed model: the first pronoun, else the last token).

    "Same occurrence" is identity, not position: the tokens the edit left untouched are the 'equal'
    blocks of a diff of the two token sequences, so typing a word before "it" moves "it" one place
    right and the query with it, while a new "it" elsewhere is a different word."""
    import difflib  # at the first new sentence, or page.warm_up: not during the worker's start-up

    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal" and i1 <= query < i2:
            return j1 + (query - i1)
    return models.get(model_id).default_query(new_tokens)


def _with_text(state, text: str, old_tokens: tuple[str, ...] | None = None):
    """state with a new sentence; the query follows its word (_follow_query). old_tokens: what the
    query indexes, when not the state's own tokens (the previous model's, after a change of model)."""
    try:
        toks = _tokenize(state.model, text)
    except tokens.TokenError as exc:
        raise InputError(str(exc)) from None
    old = state.tokens if old_tokens is None else old_tokens
    # the key goes back to "the query's strongest key": its index may not exist in the new sentence
    return dataclasses.replace(
        state,
        text=text,
        query=_follow_query(old, state.query, toks, state.model),
        key=-1,
        pinned=_follow_pinned(old, state.pinned, toks),
    )


def _follow_pinned(old_tokens, pinned, new_tokens) -> tuple[int, ...]:
    """The pinned tokens whose words survive an edit, at their new places (the others are unpinned)."""
    if not pinned:
        return ()
    import difflib  # at the first new sentence, or page.warm_up: not during the worker's start-up

    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    moved = set()
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            moved |= {j1 + (p - i1) for p in pinned if i1 <= p < i2}
    return tuple(sorted(moved))


def _with_model(state, model_id: str):
    """state on another model: its √d_k; the head it shows first (its showcase), else layer and head kept
    where they still exist; the query on its word."""
    if not getattr(models.get(model_id), "available", True):
        raise InputError(
            f"The {description(model_id).name} is not loaded yet; choose it in the Model menu to download it.",
            field="model",
        )
    d = description(model_id)
    if d.showcase is not None:
        layer, head = d.showcase
    else:
        layer = min(state.layer, d.n_layers - 1)
        head = min(state.head, len(d.heads[layer]) - 1)
    new = dataclasses.replace(
        state,
        model=model_id,
        dk_scale=d.true_dk_scale,
        layer=layer,
        head=head,
        activation=state.activation if state.activation in d.activations else d.activations[0],
        ablated=(),
    )  # another model's heads
    if new.pair_text:
        try:
            _tokenize(model_id, new.pair_text)
        except tokens.TokenError:
            new = dataclasses.replace(new, pair_text="")  # this model cannot read it: the pair is closed
    return _with_text(new, state.text, old_tokens=state.tokens)


def apply_event(state, event: dict):
    """The next state after one page event. Raises InputError for unusable input."""
    kind = event.get("type")
    value = event.get("value")
    if kind == "preset":
        preset = next((p for p in description(state.model).presets if p.id == value), None)
        if preset is None:
            raise InputError(f"Unknown preset {str(value)[:40]!r}.", field="preset")
        # the head and the query the preset's note talks about
        return dataclasses.replace(
            state, text=preset.text, query=preset.query, key=-1, layer=preset.layer, head=preset.head, pinned=()
        )
    if kind == "reset":
        return State()
    if kind == "tour_step":  # a step of the guided tour sets the page up (_tour_step); -1 leaves the tour
        i = _index(value, "tour step", len(_tour_steps().STEPS), auto=True)
        return dataclasses.replace(state, tour=-1, tour_answer=-1) if i < 0 else _tour_step(i)
    if kind == "run_code":  # the reader's Run: their code, switched on (compute() then runs and checks it)
        from . import custom_attention

        code = _source(value)
        try:
            custom_attention.compile_attention(code)
        except custom_attention.CodeError as exc:
            raise InputError(exc.message, field="attention-code") from None
        return dataclasses.replace(state, code=code, custom=True)
    if kind == "reset_code":  # back to the page's own attention function
        return dataclasses.replace(state, code="", custom=False)
    if kind == "pair_preset":  # a ready-made sentence pair (pairs.py): both sentences, its query and head
        from . import pairs

        found = pairs.preset(description(state.model), str(value))
        if found is None:
            raise InputError(f"Unknown sentence pair {str(value)[:40]!r}.", field="pair-text")
        new = _with_text(state, found.first)
        toks = new.tokens
        query = toks.index(found.query_word) if found.query_word in toks else new.query
        layer = min(found.layer, description(state.model).n_layers - 1)
        return dataclasses.replace(
            new,
            pair_text=found.second,
            query=query,
            pinned=(),
            layer=layer,
            head=min(found.head, len(description(state.model).heads[layer]) - 1),
        )
    if kind == "pick_head":  # a thumbnail of the all-heads grid "l,h": that layer and head
        l, _, h = str(value).partition(",")
        layer = _index(l, "layer", extent("layers", state))
        heads = len(description(state.model).heads[layer])
        return dataclasses.replace(state, layer=layer, head=_index(h, "head", heads))
    if kind == "pick_cell":  # a heatmap cell "i,j": query i, and key j for the Q·K breakdown
        i, _, j = str(value).partition(",")
        query = _index(i, "query", len(state.tokens))
        return dataclasses.replace(state, query=query, key=_index(j, "key", len(state.tokens)))
    field = BY_EVENT.get(kind)
    if field is None:
        raise InputError(f"Unknown event type {str(kind)[:40]!r}.", field="event")
    if field.name == "query" and "index" in event:
        value = event["index"]
    if field.kind == "indices" and event.get("toggle") is not None:  # flip one member
        i = _index(event["toggle"], field.label, extent(field.of, state))
        current = set(getattr(state, field.name))
        value = tuple(sorted(current ^ {i}))
    value = _value(field, value, state)
    if field.name == "custom" and value and not state.code:
        raise InputError("There is no function of yours to switch on: write one and press Run.", field="attention-code")
    if field.name == "pair_text":
        value = value.strip()
        if value:
            try:
                _tokenize(state.model, value)
            except tokens.TokenError as exc:
                raise InputError(f"Second sentence: {exc}", field="pair-text") from None
        return dataclasses.replace(state, pair_text=value)
    if field.name == "text":
        return _with_text(state, value)
    if field.name == "model":
        return _with_model(state, value) if value != state.model else state
    if field.name == "query":  # a new query: the breakdown shows its strongest key again
        return dataclasses.replace(state, query=value, key=-1)
    if field.name == "layer":
        heads = len(description(state.model).heads[value])
        return dataclasses.replace(state, layer=value, head=min(state.head, heads - 1))
    return dataclasses.replace(state, **{field.name: value})
