"""The input and controls: sentence field, presets, model, layer, head, T, √d_k, mask, activation, reset.

The form itself is rendered once (at build time) and stays in the page, so the
reader's caret and focus are never disturbed; the worker only sends new values
for it (`control_values`). The token chips are a separate, live panel.
Every control carries data-event: the bridge forwards {type: data-event, value}.
"""

from __future__ import annotations

from ..fields import ACTIVATIONS, BY_NAME, FIELDS
from .markup import attr, esc, num

ACTIVATION_LABELS = {"relu": "ReLU", "gelu": "GELU", "swiglu": "SwiGLU"}
PRESET_PROMPT = "Pick a classic sentence…"
OUTPUT_DIGITS = {"temperature": 2, "dk_scale": 1}  # number fields with an <output> beside the slider


def _control_value(kind: str, value):
    if kind == "flag":
        return bool(value)
    if kind == "number":
        return f"{value:g}"
    return str(value)


def control_values(state) -> dict:
    """Values for the form controls, by element id (plain data for the bridge), from fields.FIELDS."""
    values = {f.control: _control_value(f.kind, getattr(state, f.name)) for f in FIELDS if f.control}
    for name, digits in OUTPUT_DIGITS.items():
        values[BY_NAME[name].control + "-out"] = num(getattr(state, name), digits)
    for f in FIELDS:  # a whole-number slider shows its value beside it (the √d_k demo's d_k)
        if f.kind == "count" and f.control:
            values[f.control + "-out"] = str(getattr(state, f.name))
    return values


def _options(pairs, selected) -> str:
    return "".join(f"<option{attr(value=v, selected=v == selected)}>{esc(label)}</option>" for v, label in pairs)


def _choice_lists(state, model, models) -> dict:
    """The options of each select whose choices depend on the model: {control id: [(value, label), ...]}."""
    return {
        "model": [(m.id, m.picker_label) for m in models],
        "layer": [(str(i), f"Layer {i + 1} of {model.n_layers}") for i in range(model.n_layers)],
        "head": [(str(h), f"Head {h + 1}: {info.name}") for h, info in enumerate(model.heads[state.layer])],
        "activation": [(a, ACTIVATION_LABELS[a]) for a in ACTIVATIONS if a in model.activations],
        "preset": [("", PRESET_PROMPT)] + [(p.id, p.title) for p in model.presets],
    }


def _dk_marker_pct(model) -> float:
    lo, hi = BY_NAME["dk_scale"].limits
    return 100 * (model.true_dk_scale - lo) / (hi - lo)


def _dk_true_text(model) -> str:
    return f"true √d_k = {num(model.true_dk_scale, 1)} (d_k = {model.d_k})"


def model_form(state, model, models) -> dict:
    """What the form shows that depends on the model, as plain data for the bridge (the form itself is
    never redrawn): select options, a few texts, and where the √d_k slider marks the true scale.

    {"options": {id: [[value, label], ...]}, "text": {id: text}, "marker": {"dk-scale": percent}}
    """
    return {
        "options": {k: [list(o) for o in v] for k, v in _choice_lists(state, model, models).items()},
        "text": {
            "max-tokens": str(model.max_tokens),
            "dk-true": _dk_true_text(model),
            "dk-d": str(model.d_k),
            "demo-dk-model": str(model.d_k),  # the √d_k demo's hint (why.MODEL_DK_ID), also drawn once
            "model-about": model.about,
        },
        "marker": {"dk-scale": round(_dk_marker_pct(model), 2)},
    }


def render_sentence(state, model) -> str:
    """The sentence field, drawn once at the top of the input card (the token chips follow it)."""
    return f"""
<form class="sentence-form" autocomplete="off" onsubmit="return false">
  <div class="field">
    <label for="tokens">Sentence <span class="hint">(at most <span id="max-tokens">{model.max_tokens}</span> tokens; \
click a token below to make it the query)</span></label>
    <input id="tokens" name="tokens" type="text" data-event="set_text" spellcheck="false"
           maxlength="2000" value="{esc(state.text)}" aria-describedby="input-message">
    <p id="input-message" class="input-message" role="status" aria-live="polite"></p>
  </div>
</form>"""


def render_controls(state, model, models) -> str:
    """The form, drawn once; model: the state's ModelDescription, models: every model's, in order."""
    lo_t, hi_t = BY_NAME["temperature"].limits
    lo_d, hi_d = BY_NAME["dk_scale"].limits
    lists = _choice_lists(state, model, models)
    model_options = _options(lists["model"], state.model)
    layer_options = _options(lists["layer"], str(state.layer))
    head_options = _options(lists["head"], str(state.head))
    act_options = _options(lists["activation"], state.activation)
    # the prompt is the selected, disabled first option until a preset is chosen
    preset_options = "".join(
        f"<option{attr(value=v, disabled=not v, selected=not v)}>{esc(label)}</option>" for v, label in lists["preset"]
    )
    return f"""
<form class="controls" id="controls" autocomplete="off" onsubmit="return false">
  <div class="field">
    <label for="temperature">Temperature <var>T</var> = <output id="temperature-out" \
for="temperature">{num(state.temperature, 2)}</output></label>
    <input id="temperature" type="range" data-event="set_temperature" min="{lo_t:g}" max="{hi_t:g}" \
step="{BY_NAME["temperature"].step:g}"
           value="{state.temperature:g}" aria-describedby="t-limits">
    <span id="t-limits" class="hint">T → 0: all weight on the top score · T → ∞: even, 1/n each</span>
  </div>
  <div class="field">
    <label for="dk-scale">Scale <math><msqrt><msub><mi>d</mi><mi>k</mi></msub></msqrt></math> = <output \
id="dk-scale-out" for="dk-scale">{num(state.dk_scale, 1)}</output></label>
    <div class="range-with-marker" style="--marker: {_dk_marker_pct(model):.2f}%">
      <input id="dk-scale" type="range" data-event="set_dk_scale" min="{lo_d:g}" max="{hi_d:g}" \
step="{BY_NAME["dk_scale"].step:g}"
             value="{state.dk_scale:g}" aria-describedby="dk-true">
      <span class="range-marker" aria-hidden="true"></span>
    </div>
    <span id="dk-true" class="hint">{esc(_dk_true_text(model))}</span>
  </div>
  <details class="field field-wide knob-why">
    <summary>What do <var>T</var> and √d_k do?</summary>
    <p>Every score is divided by √d_k·<var>T</var> before the softmax. Only that product matters, so the
      two sliders do the same thing: a smaller product sharpens the weights towards the strongest key,
      a larger one evens them out.</p>
    <p>In a real model √d_k is fixed by the width of its heads \
(here d_k = <span id="dk-d">{model.d_k}</span>): it keeps scores
      from growing with d_k (see “Why divide by √d_k?”). <var>T</var> is the knob people do turn: to sample
      text more or less adventurously, or to soften a teacher's outputs when distilling a model. A trained
      model is run at <var>T</var> = 1.</p>
  </details>
  <div class="field field-wide">
    <label for="head">Head</label>
    <select id="head" data-event="set_head">{head_options}</select>
  </div>
  <div class="field field-wide">
    <label for="layer">Layer</label>
    <select id="layer" data-event="set_layer">{layer_options}</select>
  </div>
  <div class="field field-wide">
    <label for="preset">Preset</label>
    <select id="preset" data-event="preset">{preset_options}</select>
  </div>
  <div class="field field-wide">
    <label for="model">Model</label>
    <select id="model" data-event="set_model">{model_options}</select>
    <div id="model-download" class="model-download" hidden>
      <progress id="model-progress" max="1" value="0" aria-label="Download of the trained model"></progress>
      <span id="model-download-text" role="status" aria-live="polite"></span>
      <button type="button" id="model-retry" hidden>Try again</button>
    </div>
  </div>
  <div class="field">
    <label for="activation">FFN activation</label>
    <select id="activation" data-event="set_activation">{act_options}</select>
  </div>
  <div class="field field-inline">
    <input id="causal" type="checkbox" data-event="set_causal"{attr(checked=state.causal)}>
    <label for="causal">Causal mask: each token sees only itself and the tokens before it</label>
  </div>
  <div class="field field-inline">
    <button type="button" id="reset" data-event="reset">Reset</button>
  </div>
</form>"""


def _special_role(i: int, n: int) -> str:
    """What a special token is, from where it stands: models put their specials at the ends
    (<s> or [CLS] first, [SEP] or </s> last)."""
    return "start token" if i == 0 else "end token" if i == n - 1 else "special token"


def _chip(i: int, token: str, n: int, query: int, special: bool, pinned: bool = False, guessed: bool = False) -> str:
    classes = (
        "chip"
        + (" is-query" if i == query else "")
        + (" is-pinned" if pinned and i != query else "")
        + (" is-special" if special else "")
        + (" is-guessed" if guessed else "")
    )
    what = f"{_special_role(i, n)} (special, not a word of the sentence)" if special else ""
    # said in hidden text, not aria-label: the accessible name must contain the visible "0<s>" as well
    said = f'<span class="sr-only">{esc(what)}: </span>' if special else ""
    pin = '<span class="sr-only"> (pinned)</span>' if pinned and i != query else ""

    # Shift/Ctrl-click or Shift+Enter pins it as one more query (the bridge sends data-pin-event, toggling it)
    return (
        '<button type="button"'
        + attr(
            class_=classes,
            data_event="set_query",
            data_token_index=i,
            data_pin_event="set_pinned",
            aria_pressed="true" if i == query or pinned else "false",
            data_special=special or None,
            title=f"{token}: {what}"
            if special
            else f"{token}: not in the lexicon, its features guessed"
            if guessed
            else None,
        )
        + f'><span class="chip-index">{i}</span>{said}{esc(token)}{pin}</button>'
    )


def _token_count(toks, special) -> str:
    """'9 tokens (8 from the sentence + start token <s>)': a reader counting the chips finds the
    specials named, so no one takes <s> or [CLS] for a word they typed."""
    n = len(toks)
    total = f"{n} token" + ("" if n == 1 else "s")
    if not special:
        return total
    roles = " and ".join(f"{_special_role(i, n)} {toks[i]}" for i in sorted(special))
    return f"{total} ({n - len(special)} from the sentence + {roles})"


def render_token_chips(state, computed) -> str:
    """The tokens as clickable chips; the query chip is pressed; special tokens are marked and named."""
    toks, special, pinned = computed.tokens, set(computed.run.special), set(state.pinned)
    guessed = _guessed(computed)
    chips = "".join(
        _chip(i, t, len(toks), state.query, i in special, i in pinned, i in guessed) for i, t in enumerate(toks)
    )
    extra = sorted(pinned - {state.query})
    if extra:
        names = ", ".join(f"{toks[i]} ({i})" for i in extra)
        selection = (
            f" + pinned: {esc(names)}: the heatmap adds the mean of these {len(extra) + 1} rows "
            f'<button type="button" class="unpin" data-event="set_pinned" data-value="">Unpin all</button>'
        )
    else:
        selection = ""
    return (
        f'<div class="chips" role="group" aria-label="Tokens: choose the query (Shift-click or Shift+Enter '
        f'pins more)">{chips}</div>'
        f'<p class="token-count" data-token-count="{len(toks)}">{esc(_token_count(toks, special))} · query: '
        f"<strong>{esc(toks[state.query])}</strong> (position {state.query}){selection}</p>"
        f"{tokenisation_note(state, computed)}"
    )


GUESSED = "guessed from spelling"  # the designed model's tag for a word its lexicon lacks


def _guessed(computed) -> set[int]:
    return {i for i, tags in enumerate(computed.run.token_tags) if GUESSED in tags}


def tokenisation_note(state, computed) -> str:
    """What the tokens show that a reader would not expect, said where they show it: word pieces, [UNK],
    lowercasing and dropped accents (a trained WordPiece model), or guessed features (the designed model's
    small English lexicon). "" when nothing of that kind is in the sentence."""
    import unicodedata

    toks, notes = computed.tokens, []
    if computed.embedding.learned:
        pieces = [t for t in toks if t.startswith("##")]
        if pieces:
            notes.append(
                f"“##” marks a piece that continues the word before it ({', '.join(pieces[:3])}): the "
                "model's vocabulary has no entry for a rarer word as a whole, so it is split into "
                "pieces it has."
            )
        if "[UNK]" in toks:
            notes.append(
                "[UNK] is a sign the vocabulary lacks (an emoji, a rare script): the model sees only "
                "“unknown”, nothing of what it was."
            )
        text = state.text
        accents = any(unicodedata.category(c) == "Mn" for c in unicodedata.normalize("NFD", text))
        if any(c.isupper() for c in text) or accents:
            notes.append(
                "This model lowercases the text"
                + (" and drops accents (é becomes e)" if accents else "")
                + " before splitting it: it was trained that way (uncased), so “The” and “the” are one "
                "token to it."
            )
    else:
        guessed = [toks[i] for i in sorted(_guessed(computed))]
        if guessed:
            shown = ", ".join(f"“{t}”" for t in guessed[:4]) + ("…" if len(guessed) > 4 else "")
            notes.append(
                f"{shown} {'is' if len(guessed) == 1 else 'are'} not in this model's small English "
                "lexicon: the features marked ? are guesses from the spelling (often “noun, "
                "singular”), so its heads may treat these words wrongly. Its words and grammar are "
                "English only."
            )
    return "".join(f'<p class="token-note">{esc(n)}</p>' for n in notes)


def render_pair_input(state) -> str:
    """The second sentence's input (static markup outside the re-rendered pair panel, as #tokens)."""
    return (
        '<div class="field pair-field"><label for="pair-text">Second sentence</label>'
        "<input"
        + attr(
            id="pair-text",
            type="text",
            data_event="set_pair_text",
            value=state.pair_text,
            autocomplete="off",
            spellcheck="false",
            placeholder="e.g. the first sentence with one word changed",
            aria_describedby="pair-hint pair-text-message",
        )
        + '><span id="pair-hint" class="hint">Shown beside the first sentence with the same head; '
        "empty it to close the pair.</span>"
        '<p id="pair-text-message" class="input-message" role="status" aria-live="polite"></p></div>'
    )
