"""The input and controls: sentence field, presets, T, √d_k, head, mask, activation, reset.

The form itself is rendered once (at build time) and stays in the page, so the
reader's caret and focus are never disturbed; the worker only sends new values
for it (`control_values`). The token chips are a separate, live panel.
Every control carries data-event: the bridge forwards {type: data-event, value}.
"""
from __future__ import annotations

from ..state import ACTIVATIONS, DK_SCALE_RANGE, TEMPERATURE_RANGE, TRUE_DK_SCALE
from .markup import attr, esc, num

ACTIVATION_LABELS = {"relu": "ReLU", "gelu": "GELU", "swiglu": "SwiGLU"}


def control_values(state) -> dict:
    """Values for the form controls, by element id (plain data for the bridge)."""
    return {
        "tokens": state.text,
        "temperature": f"{state.temperature:g}",
        "dk-scale": f"{state.dk_scale:g}",
        "head": str(state.head),
        "causal": state.causal,
        "activation": state.activation,
        "routing-all": state.routing_all_heads,
        "temperature-out": num(state.temperature, 2),
        "dk-scale-out": num(state.dk_scale, 1),
    }


def render_controls(state, heads, presets, max_tokens: int) -> str:
    lo_t, hi_t = TEMPERATURE_RANGE
    lo_d, hi_d = DK_SCALE_RANGE
    marker_pct = 100 * (TRUE_DK_SCALE - lo_d) / (hi_d - lo_d)
    head_options = "".join(f"<option{attr(value=h, selected=h == state.head)}>{esc(info.name)}</option>"
                           for h, info in enumerate(heads))
    preset_options = "".join(f"<option{attr(value=p.id, data_look_for=p.look_for)}>{esc(p.title)}</option>"
                             for p in presets)
    act_options = "".join(f"<option{attr(value=a, selected=a == state.activation)}>{ACTIVATION_LABELS[a]}</option>"
                          for a in ACTIVATIONS)
    return f"""
<form class="controls" id="controls" autocomplete="off" onsubmit="return false">
  <div class="field field-wide">
    <label for="tokens">Sentence <span class="hint">(up to {max_tokens} tokens; click a token below to make it the query)</span></label>
    <input id="tokens" name="tokens" type="text" data-event="set_text" spellcheck="false"
           maxlength="2000" value="{esc(state.text)}" aria-describedby="input-message">
    <p id="input-message" class="input-message" role="status" aria-live="polite"></p>
  </div>
  <div class="field">
    <label for="preset">Preset</label>
    <select id="preset" data-event="preset">
      <option value="" disabled selected>Pick a classic sentence…</option>{preset_options}
    </select>
  </div>
  <div class="field">
    <label for="head">Head</label>
    <select id="head" data-event="set_head">{head_options}</select>
  </div>
  <div class="field">
    <label for="temperature">Temperature <var>T</var> = <output id="temperature-out" for="temperature">{num(state.temperature, 2)}</output></label>
    <input id="temperature" type="range" data-event="set_temperature" min="{lo_t:g}" max="{hi_t:g}" step="0.05"
           value="{state.temperature:g}">
  </div>
  <div class="field">
    <label for="dk-scale">Scale <math><msqrt><msub><mi>d</mi><mi>k</mi></msub></msqrt></math> = <output id="dk-scale-out" for="dk-scale">{num(state.dk_scale, 1)}</output></label>
    <div class="range-with-marker" style="--marker: {marker_pct:.2f}%">
      <input id="dk-scale" type="range" data-event="set_dk_scale" min="{lo_d:g}" max="{hi_d:g}" step="0.5"
             value="{state.dk_scale:g}" aria-describedby="dk-true">
      <span class="range-marker" aria-hidden="true"></span>
    </div>
    <span id="dk-true" class="hint">true √d_k = {num(TRUE_DK_SCALE, 1)} (d_k = {round(TRUE_DK_SCALE ** 2)})</span>
  </div>
  <div class="field">
    <label for="activation">FFN activation</label>
    <select id="activation" data-event="set_activation">{act_options}</select>
  </div>
  <div class="field field-inline">
    <input id="causal" type="checkbox" data-event="set_causal"{attr(checked=state.causal)}>
    <label for="causal">Causal mask (hide future tokens)</label>
  </div>
  <div class="field field-inline">
    <button type="button" id="reset" data-event="reset">Reset</button>
  </div>
</form>"""


def render_token_chips(state, computed) -> str:
    """The tokens as clickable chips; the query chip is pressed."""
    toks = computed.tokens
    chips = "".join(
        f'<button type="button"{attr(class_="chip is-query" if i == state.query else "chip", data_event="set_query", data_token_index=i, aria_pressed="true" if i == state.query else "false")}>'
        f'<span class="chip-index">{i}</span>{esc(t)}</button>'
        for i, t in enumerate(toks))
    count = f"{len(toks)} token" + ("" if len(toks) == 1 else "s")
    return (f'<div class="chips" role="group" aria-label="Tokens: choose the query">{chips}</div>'
            f'<p class="token-count" data-token-count="{len(toks)}">{count} · query: '
            f'<strong>{esc(toks[state.query])}</strong> (position {state.query})</p>')
