"""Ablation: switch any head off and see what it contributed.

What it teaches: a head's only way to change the residual stream is its output
z, which W_O mixes into the attention output. Switching a head off sets its z
to 0 before W_O (core.transformer_block's head_mask; its attention weights are
still computed). Comparing the run with the head off against the intact run
shows what the head carried:

* every token's change in the model's output (the last layer's block output),
  as a bar per token: ‖out_off[i] − out_on[i]‖ / ‖out_on[i]‖, the share of the
  token's output vector that changed;
* for a model with named residual dims (the designed model), the query token's
  named dims that changed most, read in the residual stream before LayerNorm
  (x + attention output) and in the feed-forward output: switching off the
  Coreference head shows “it” losing its noun's features;
* for a model with several layers (the trained model), how the selected later
  head's attention changed: ΔA = A_off − A_on, a diverging heatmap.

Hooks: the panel is div[data-view="ablation"] with data-off (the switched-off
flat head indices, "_"-joined, "" when none). Each head switch is a
<button type="button" data-event="set_ablated" data-toggle="{flat index}"
aria-pressed="true|false"> (pressed = switched off), named by its layer, head and
head name (several layers: a compact grid, rows div.ab-layer[role=group] per layer,
the selected head .is-selected); when any is off, p.ab-status lists them and holds
the "switch all back on" button, data-event="set_ablated" data-value="".
Nothing off: p.ab-empty and no chart.
The change chart is svg[data-view="ablation-change"], one rect.ab-bar per token
with data-token (index) and data-change (the relative change, a decimal; 0.25 =
25 %). The named dims are ul[data-view="ablation-dims"] (data-token, data-stage
= "resid1" | "ffn_out") with li[data-dim] carrying data-before, data-after. The
difference heatmap is svg[data-view="ablation-diff"] (data-layer, data-head,
data-limit) with one rect per cell: data-i (query), data-j (key), data-delta
(A_off − A_on); each row's cells sit in g.ab-diff-row[data-i] whose data-tip
names the row's largest changes. When no switched-off head is in an earlier layer, a note
(p.ab-later) offers buttons data-event="set_layer" data-value="{layer}".
Styles: site/css/ablation.css.
"""

from __future__ import annotations

import numpy as np

from .attention_matrix import LABEL, cell_size, size_style
from .markup import attr, clip_label, data_num, esc, num, pct

BAR_ROW = 22  # px per token row of the change chart (viewBox units)
BAR_LABEL = 96  # px for the token labels left of the bars
BAR_WIDTH = 170  # px for the longest bar (the chart fits a 360 px phone without scrolling)
BAR_VALUE = 60  # px for the value right of a bar
MIN_SCALE = 0.10  # the change chart's axis ends at 10 % at least: a 0.4 % change stays a sliver
TOP_DIMS = 6  # named dims listed for the query token
DIM_MIN_CHANGE = 0.01  # ... and only those that moved by at least this much
TOP_CELLS = 3  # largest attention changes named in words under the heatmap


def _q(token: str) -> str:
    """A token in typographic quotes, escaped for markup."""
    return f"‘{esc(token)}’"


def _flat(model, layer: int, head: int) -> int:
    """(layer, head) -> the flat index the state's "ablated" field holds (layer-major, as state.flat_head)."""
    return sum(len(h) for h in model.heads[:layer]) + head


def _head_label(model, layer: int, head: int) -> str:
    """'Layer 2, head 5: previous token, 0.85' (plain text); 'Head 1: Coreference' for a one-layer model."""
    name = model.heads[layer][head].name
    return f"Layer {layer + 1}, head {head + 1}: {name}" if model.n_layers > 1 else f"Head {head + 1}: {name}"


def switched_off(run) -> list[tuple[int, int]]:
    """The (layer, head) pairs whose output z this run set to 0, read from the traces' head_on."""
    return [
        (l, h)
        for l, t in enumerate(run.layers)
        if t.head_on is not None
        for h in range(t.n_heads)
        if not bool(t.head_on[h])
    ]


def output_change(computed, intact) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # -> ([n], [n], [n])
    """Per token: (relative change, ‖out_off − out_on‖, ‖out_on‖) of the last layer's block output
    (the model's output, [n, d_model]); norms are L2 over d_model, in float64."""
    off = np.asarray(computed.run.layers[-1].out, dtype=np.float64)  # [n, d_model]
    on = np.asarray(intact.run.layers[-1].out, dtype=np.float64)  # [n, d_model]
    delta = np.linalg.norm(off - on, axis=1)  # [n]
    size = np.linalg.norm(on, axis=1)  # [n]
    rel = np.divide(delta, size, out=np.zeros_like(delta), where=size > 0)
    return rel, delta, size


# --------------------------------------------------------------------------- the head switches


def _switches(state, model) -> str:
    """A toggle per head (pressed = switched off): one row per layer, compact when there are several."""
    off = set(state.ablated)
    compact = model.n_layers > 1
    rows = []
    for l, heads in enumerate(model.heads):
        buttons = []
        for h, info in enumerate(heads):
            k = _flat(model, l, h)
            label = _head_label(model, l, h)
            is_off = k in off
            sel = l == state.layer and h == state.head
            cls = "ab-switch" + (" is-selected" if sel and compact else "")
            pressed = "true" if is_off else "false"
            switch = {
                "type": "button",
                "class_": cls,
                "data_event": "set_ablated",
                "data_toggle": k,
                "aria_pressed": pressed,
            }
            if compact:  # the number only (72 of them: kept light); its name is the label and the tooltip
                buttons.append(f"<button{attr(**switch, aria_label=label, data_tip=label)}>{h + 1}</button>")
            else:
                state_word = "off" if is_off else "on"
                action = "Switched off: click to switch it back on." if is_off else "On: click to switch it off."
                buttons.append(
                    f"<button{attr(**switch, data_tip=f'{label}. {action}')}>"
                    f'<span class="ab-switch-name">{esc(label)}</span>'
                    f'<span class="ab-switch-state" aria-hidden="true">{state_word}</span></button>'
                )
        if compact:
            rows.append(
                f'<div class="ab-layer" role="group"{attr(aria_label=f"Layer {l + 1}")}>'
                f'<span class="ab-layer-name" aria-hidden="true">L{l + 1}</span>{"".join(buttons)}</div>'
            )
        else:
            rows.append(f'<div class="ab-layer is-wide">{"".join(buttons)}</div>')
    n_heads = max(len(h) for h in model.heads)
    how = "Press a head to switch it off (pressed = off); press it again to switch it back on." + (
        " Rows are layers; the outlined head is the selected one, whose attention change is drawn below."
        if compact
        else ""
    )
    out = [
        f'<p class="ab-how" data-export-label="">{esc(how)}</p>',
        "<div"
        + attr(
            class_="ab-switches" + (" is-compact" if compact else ""),
            role="group",
            aria_label="Heads to switch off",
            style=f"--heads:{n_heads}",
            data_export_label="",
        )
        + f">{''.join(rows)}</div>",
    ]
    if off:
        names = [_head_label(model, l, h) for l, h in _pairs(model, sorted(off))]
        out.append(
            f'<p class="ab-status">Switched off ({len(names)}): {esc("; ".join(names))}. '
            "<button"
            + attr(type="button", class_="ab-all-on", data_event="set_ablated", data_value="", data_export_label="")
            + ">Switch all back on</button></p>"
        )
    return "".join(out)


def _pairs(model, flat) -> list[tuple[int, int]]:
    """Flat head indices -> (layer, head) pairs."""
    sizes = [len(h) for h in model.heads]
    out = []
    for k in flat:
        l = 0
        while l < len(sizes) - 1 and k >= sizes[l]:
            k -= sizes[l]
            l += 1
        out.append((l, k))
    return out


# --------------------------------------------------------------------------- change per token


def _change_chart(computed, intact, query: int) -> str:
    """One horizontal bar per token: how much of its output vector changed (relative L2 norm)."""
    toks = computed.tokens
    special = set(computed.run.special)
    rel, delta, size = output_change(computed, intact)
    n = len(toks)
    top = float(rel.max()) if n else 0.0
    limit = max(MIN_SCALE, np.ceil(top * 20 - 1e-9) / 20)  # the next 5 % step, at least 10 %
    width = BAR_LABEL + BAR_WIDTH + BAR_VALUE
    head = 26
    height = head + n * BAR_ROW + 6
    last = computed.model.n_layers
    where = f"layer {last}'s output, the model's output" if last > 1 else "the block's output"
    j = int(np.argmax(rel)) if n else 0
    aria = (
        f"Bar chart: for each of the {n} tokens, the share of its output vector ({where}) that changed "
        f"when the heads were switched off. Largest: “{toks[j]}”, {pct(float(rel[j]))}."
    )
    out = [
        "<svg"
        + attr(
            data_view="ablation-change",
            viewBox=f"0 0 {width} {height}",
            role="img",
            class_="ab-change",
            aria_label=aria,
            data_limit=data_num(limit),
            style=size_style(width),
        )
        + ">"
    ]
    x0 = BAR_LABEL
    out.append(
        f'<text class="ab-axis" x="{x0}" y="14">0 %</text>'
        f'<text class="ab-axis" x="{x0 + BAR_WIDTH}" y="14" text-anchor="end">{esc(pct(limit, 0))}</text>'
        f'<line class="ab-zero" x1="{x0}" y1="{head - 4}" x2="{x0}" y2="{height - 4}"/>'
    )
    for i, tok in enumerate(toks):
        y = head + i * BAR_ROW
        r = float(rel[i])
        w = BAR_WIDTH * min(1.0, r / limit)
        cls = "ab-token" + (" is-query" if i == query else "") + (" is-special" if i in special else "")
        tip = (
            f"“{tok}” (token {i}): its output changed by {pct(r)}: ‖out with the heads off − out intact‖ = "
            f"{num(float(delta[i]), 3)}, ‖out intact‖ = {num(float(size[i]), 3)}, ratio {num(r, 4)}."
        )
        out.append(
            f'<text{attr(class_=cls)} x="{x0 - 8}" y="{y + BAR_ROW / 2:.1f}" text-anchor="end" '
            f'dominant-baseline="central">{esc(clip_label(tok))}</text>'
        )
        out.append(
            "<rect"
            + attr(
                class_="ab-bar" + (" is-query" if i == query else ""),
                x=x0,
                y=y + 3,
                width=f"{w:.2f}",
                height=BAR_ROW - 6,
                data_token=i,
                data_change=data_num(r),
                data_tip=tip,
            )
            + "/>"
        )
        out.append(
            f'<text class="ab-value" x="{x0 + w + 6:.2f}" y="{y + BAR_ROW / 2:.1f}" '
            f'dominant-baseline="central">{esc(pct(r))}</text>'
        )
    out.append("</svg>")
    rows = "".join(
        f'<tr><th scope="row">{esc(t)}{" (query)" if i == query else ""}</th><td>{esc(pct(float(rel[i])))}</td>'
        f"<td>{esc(num(float(delta[i]), 3))}</td><td>{esc(num(float(size[i]), 3))}</td></tr>"
        for i, t in enumerate(toks)
    )
    table = (
        f'<table class="sr-only"><caption>Change in every token\'s output ({esc(where)}) with the heads '
        'switched off</caption><thead><tr><th scope="col">token</th><th scope="col">share changed</th>'
        '<th scope="col">length of the change</th><th scope="col">length of the intact output</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )
    lede = (
        f"<p class=\"ab-lede\"><strong>Change in every token's output</strong>, as the % of the token's output "
        f"vector that changed: ‖out<sub>off</sub> − out<sub>intact</sub>‖ ÷ ‖out<sub>intact</sub>‖, lengths over "
        f"its {computed.model.d_model} numbers ({esc(where)}).</p>"
    )
    return lede + f'<div class="figure ab-figure">{"".join(out)}</div>' + table


# --------------------------------------------------------------------------- named dims (designed model)


def _dim_list(names, before, after, token: str, q: int, stage: str) -> str:
    """The named dims of one vector that changed most, before → after (markup)."""
    named = [d for d, name in enumerate(names) if name]
    moved = sorted(
        (d for d in named if abs(after[d] - before[d]) >= DIM_MIN_CHANGE), key=lambda d: (-abs(after[d] - before[d]), d)
    )[:TOP_DIMS]
    if not moved:
        return (
            f'<p class="ab-dims-none" data-stage="{stage}">No named dim of {_q(token)} moved by '
            f"{num(DIM_MIN_CHANGE)} or more.</p>"
        )
    items = "".join(
        f"<li{attr(data_dim=d, data_before=data_num(before[d]), data_after=data_num(after[d]))}>"
        f'{_q(token)}: <span class="ab-dim">{_q(names[d])}</span> '
        f'<span class="ab-num">{esc(num(before[d]))} → {esc(num(after[d]))}</span></li>'
        for d in moved
    )
    return f"<ul{attr(class_='ab-dims', data_view='ablation-dims', data_token=q, data_stage=stage)}>{items}</ul>"


def _named_dims(computed, intact, query: int) -> str:
    """What the query token lost, in the model's named dims: after attention (before LayerNorm) and in the
    feed-forward output, of the last layer."""
    model = computed.model
    names = model.dim_names
    L = model.n_layers - 1
    t_off, t_on = computed.run.layers[L], intact.run.layers[L]
    tok = computed.tokens[query]
    where = f" of layer {L + 1}" if model.n_layers > 1 else ""
    # which switched-off heads of this layer were looking where, for this token (their weights are still traced)
    looked = []
    for l, h in switched_off(computed.run):
        if l != L:
            continue
        row = np.asarray(t_off.weights[h, query], dtype=np.float64)
        j = int(np.argmax(row))
        info = model.heads[l][h]
        slot = f"{info.short}: "
        into = (
            f" (into the dims named {_q(slot + '…')})"
            if info.short and any(name.startswith(slot) for name in names)
            else ""
        )
        key = _q(computed.tokens[j])
        who = f"Layer {l + 1}, head {h + 1} ({info.name})" if model.n_layers > 1 else f"Head {h + 1} ({info.name})"
        share = esc(pct(float(row[j])))
        if j in computed.run.special:  # a resting head: little to lose
            looked.append(
                f" {esc(who)} has {_q(tok)} rest most of its attention on {key} ({share}), a special token "
                f"that passes on almost nothing: switched off, the head takes away only the little it "
                f"carried from the other tokens{into}."
            )
        else:
            looked.append(
                f" {esc(who)} still has {_q(tok)} look most at {key} ({share}): its attention is computed "
                f"as before, but switched off it passes nothing on, so what it carries from {key}{into} no "
                f"longer reaches {_q(tok)}."
            )
    found = "".join(looked)
    r_on = np.asarray(t_on.resid1[query], dtype=np.float64).tolist()
    r_off = np.asarray(t_off.resid1[query], dtype=np.float64).tolist()
    f_on = np.asarray(t_on.ffn_out[query], dtype=np.float64).tolist()
    f_off = np.asarray(t_off.ffn_out[query], dtype=np.float64).tolist()
    return (
        f'<div class="ab-named" data-token="{query}">'
        f'<p class="ab-lede"><strong>What {_q(tok)} lost</strong>, in the named dims{esc(where)}.{found}</p>'
        f'<p class="ab-sub">After attention: x + attention output, before LayerNorm (intact → head off)</p>'
        f"{_dim_list(names, r_on, r_off, tok, query, 'resid1')}"
        f'<p class="ab-sub">Then what the feed-forward layer wrote (its output)</p>'
        f"{_dim_list(names, f_on, f_off, tok, query, 'ffn_out')}"
        "<p class=\"caption\">Read before LayerNorm: the block's output is LayerNorm'ed, which subtracts the "
        "token's mean, so a feature that drops to 0 would show there as a negative number.</p></div>"
    )


# --------------------------------------------------------------------------- attention difference (several layers)


def _diff_heatmap(state, computed, intact) -> str:
    """ΔA = A_off − A_on of the selected layer and head, blue where attention grew, orange where it shrank."""
    model = computed.model
    layer, h = state.layer, state.head
    toks = computed.tokens
    n = len(toks)
    off_layers = sorted({l for l, _ in switched_off(computed.run)})
    name = _head_label(model, layer, h)
    if not any(l < layer for l in off_layers):
        later = [l for l in range(min(off_layers) + 1, model.n_layers)] if off_layers else []
        buttons = "".join(
            f"<button{attr(type='button', class_='ab-layer-pick', data_event='set_layer', data_value=l)}>"
            f"Layer {l + 1}</button>"
            for l in later
        )
        text = (
            f"The attention of layer {layer + 1} is only changed by heads switched off in earlier layers: "
            "choose a later layer."
        )
        if not later:
            text += " (No layer comes after the earliest switched-off head: switch off a head in an earlier layer.)"
        return (
            f'<p class="ab-lede"><strong>How a later head\'s attention changes</strong></p>'
            f'<p class="ab-later" data-view="ablation-diff-none">{esc(text)} {buttons}</p>'
        )
    a_off = np.asarray(computed.run.layers[layer].weights[h], dtype=np.float64)  # [n, n]
    a_on = np.asarray(intact.run.layers[layer].weights[h], dtype=np.float64)  # [n, n]
    delta = a_off - a_on  # [n, n]
    limit = float(np.abs(delta).max()) if n else 0.0
    scale = limit if limit > 0 else 1.0
    cell = min(cell_size(n), 26)
    size = n * cell
    width, height = LABEL + size + 8, LABEL + size + 44
    order = sorted(((i, j) for i in range(n) for j in range(n)), key=lambda c: (-abs(delta[c]), c))[:TOP_CELLS]
    biggest = [
        f"“{toks[i]}” → “{toks[j]}” {_points(delta[i, j])} ({pct(a_on[i, j])} → {pct(a_off[i, j])})"
        for i, j in order
        if delta[i, j] != 0
    ]
    aria = (
        f"Change in the attention weights of {name} after switching heads off: rows are queries, columns "
        f"are keys; blue = more attention than with every head on, orange = less. "
        + (f"Largest: {biggest[0]}." if biggest else "No weight changed.")
    )
    out = [
        "<svg"
        + attr(
            data_view="ablation-diff",
            data_layer=layer,
            data_head=h,
            data_limit=data_num(limit),
            viewBox=f"0 0 {width} {height}",
            role="img",
            class_="heatmap ab-diff",
            aria_label=aria,
            style=size_style(width),
        )
        + ">"
    ]
    for j, tok in enumerate(toks):
        cls = "col-label" + (" is-query" if j == state.query else "")
        out.append(
            f'<text class="{cls}" transform="translate({LABEL + j * cell + cell / 2:.1f},{LABEL - 6}) '
            f'rotate(-55)">{esc(clip_label(tok))}</text>'
        )
    for i, tok in enumerate(toks):
        cls = "row-label" + (" is-query" if i == state.query else "")
        out.append(
            f'<text class="{cls}" x="{LABEL - 8}" y="{LABEL + i * cell + cell / 2:.1f}" text-anchor="end" '
            f'dominant-baseline="central">{esc(clip_label(tok))}</text>'
        )
    out.append(f'<rect class="ab-diff-bg" x="{LABEL}" y="{LABEL}" width="{size}" height="{size}"/>')
    # cells in a group scaled to one unit per cell: cell (i, j) is the unit square at (j, i)
    out.append(f'<g class="ab-cells" transform="translate({LABEL} {LABEL}) scale({cell})">')
    rows = delta.tolist()
    for i in range(n):
        # one tooltip per row (the bridge shows the nearest data-tip): its largest changes, in words
        top = sorted(range(n), key=lambda j: (-abs(rows[i][j]), j))[:4]
        tip = f"Query “{toks[i]}”: attention with the heads off − intact. " + "; ".join(
            f"“{toks[j]}” {_points(rows[i][j])} ({pct(a_on[i, j])} → {pct(a_off[i, j])})" for j in top
        )
        out.append(f"<g{attr(class_='ab-diff-row', data_i=i, data_tip=tip)}>")
        for j in range(n):
            d = rows[i][j]
            out.append(
                f'<rect class="{"up" if d >= 0 else "dn"}" x="{j}" y="{i}" width="1" height="1" '
                f'fill-opacity="{min(1.0, abs(d) / scale):.2f}" data-i="{i}" data-j="{j}" '
                f'data-delta="{data_num(d)}"/>'
            )
        out.append("</g>")
    out.append("</g>")
    q = state.query
    out.append(
        f'<rect class="query-outline" x="{LABEL - 2}" y="{LABEL + q * cell - 1}" width="{size + 4}" '
        f'height="{cell + 2}" fill="none"/>'
    )
    out.append(_diff_legend(LABEL, LABEL + size + 14, size, limit))
    out.append("</svg>")
    qrow = "".join(
        f'<tr><th scope="row">{esc(toks[j])}</th><td>{esc(pct(a_on[q, j]))}</td>'
        f"<td>{esc(pct(a_off[q, j]))}</td><td>{esc(_points(delta[q, j]))}</td></tr>"
        for j in range(n)
    )
    table = (
        f'<table class="sr-only"><caption>{esc(name)}: where “{esc(toks[q])}” looks, intact and with the '
        'heads switched off</caption><thead><tr><th scope="col">key</th><th scope="col">intact</th>'
        '<th scope="col">heads off</th><th scope="col">change</th></tr></thead>'
        f"<tbody>{qrow}</tbody></table>"
    )
    words = (
        "Largest changes: " + "; ".join(esc(b) for b in biggest) + "."
        if biggest
        else "No attention weight of this head changed."
    )
    return (
        f'<p class="ab-lede"><strong>How a later head\'s attention changes</strong>: {esc(name)}, '
        "ΔA = A<sub>off</sub> − A<sub>intact</sub>. Blue: more attention than with every head on; "
        f"orange: less; the stronger the colour, the bigger the change.</p>"
        # focusable: on a phone the heatmap scrolls sideways, and the keyboard must be able to scroll it
        f'<div class="figure ab-figure" tabindex="0" role="group"{attr(aria_label=f"Change in attention of {name}")}>'
        f"{''.join(out)}</div>{table}"
        f'<p class="ab-biggest">{words}</p>'
    )


def _points(d: float) -> str:
    """A change of attention weight in percentage points: '+12.3 points', '−0.4 points'."""
    d = float(d) * 100
    return ("+" if d > 0 and f"{d:.1f}" != "0.0" else "") + f"{num(d, 1)} points"


def _diff_legend(x: float, y: float, width: float, limit: float) -> str:
    """orange (−limit) … transparent (0) … blue (+limit), in percentage points."""
    stops = (
        '<stop offset="0%" class="dn"/><stop offset="50%" class="dn" stop-opacity="0"/>'
        '<stop offset="50%" class="up" stop-opacity="0"/><stop offset="100%" class="up"/>'
    )
    lim = f"{num(limit * 100, 1)}"
    return (
        f'<g class="legend" aria-hidden="true"><defs><linearGradient id="ablation-diff-scale">{stops}'
        f'</linearGradient></defs><rect class="ab-legend-bar" x="{x}" y="{y}" width="{width}" height="10" '
        f'fill="url(#ablation-diff-scale)"/>'
        f'<text x="{x}" y="{y + 24}" class="legend-label">−{lim}</text>'
        f'<text x="{x + width / 2}" y="{y + 24}" text-anchor="middle" class="legend-label">0 points</text>'
        f'<text x="{x + width}" y="{y + 24}" text-anchor="end" class="legend-label">+{lim}</text></g>'
    )


# --------------------------------------------------------------------------- the panel

CAPTION = (
    "Switching a head off (ablation) sets its output z to 0 before W_O: it still computes its attention "
    "(the pictures above still show it), but passes nothing on. The other heads and the residual stream "
    "still carry information, so the effect of one head can be small: other heads may carry the same "
    "information, and later layers can make up for what is missing. A small change does not prove a head "
    "useless, and a large one does not mean it does the job alone."
)


def render(state, computed, intact) -> str:
    """The panel: head switches, then (when any head is off) the change per token, what the query lost
    (named dims) and how a later head's attention changed (several layers). computed: the run with the
    state's heads off (the intact run when none is); intact: the same state's run with every head on."""
    model = computed.model
    off = switched_off(computed.run)
    out = [
        f"<div{attr(class_='ablation', data_view='ablation', data_off='_'.join(str(k) for k in state.ablated))}>",
        _switches(state, model),
    ]
    if not off:
        out.append('<p class="ab-empty">Switch a head off to see what it contributes.</p>')
    else:
        q = state.query if 0 <= state.query < len(computed.tokens) else 0
        out.append(_change_chart(computed, intact, q))
        if any(model.dim_names):
            out.append(_named_dims(computed, intact, q))
        if model.n_layers > 1:
            out.append(_diff_heatmap(state, computed, intact))
        else:
            out.append(
                '<p class="caption ab-one-layer">With one layer, no attention weight changes: every head '
                "reads the block's input, which no head has written to yet. Only what the heads pass on "
                "changes.</p>"
            )
    out.append(f'<p class="caption ab-caption">{esc(CAPTION)}</p></div>')
    return "".join(out)
