"""Context vector synthesis and multi-token routing: where the query's attention goes, and what it brings back.

Two pictures of one row of attention, for the selected query token i:

1. Routing (BertViz-style): queries in a left column, keys in a right column,
   a line from query i to every key j whose thickness and opacity are the
   weight A_ij. With `state.routing_all_heads` every head draws its own
   colour-coded lines, so readers see the heads route the same token to
   different places.
2. Synthesis: the selected head's value vectors V_j (d_head numbers each) as
   colour strips, each scaled by A_ij, stacked as "  A_i1·V_1 + A_i2·V_2 + … =
   Z_i". The sum Z_i is the trace's head output, not recomputed here: the
   strips above it are only display scaling of two trace numbers.

Signed vectors use a diverging scale centred on 0: blue positive, orange
negative (the Okabe–Ito pair, distinct for the common colour-vision
deficiencies, and the same mapping as the embedding panel); 0 is transparent,
so the card colour shows through in light and dark mode.
`value_strip` is shared with views.multihead, as are the scale (colors.diverging)
and its key (drawing.scale_legend).

Special tokens: trained heads often park much of their attention on [CLS] or
[SEP]. `sink_note` says what the trace shows about it: the share of the weight
on them, against their share of what the head brings back (A_ij·‖V_j‖), so a
bright line to [SEP] is not read as "the word looks at the end of the sentence".
"""

from __future__ import annotations

from itertools import groupby

import numpy as np

from . import math as m
from .colors import HEAD_COLORS, diverging
from .drawing import hatch_pattern, scale_legend
from .explain import head_ref, head_title
from .markup import attr, clip_label, data_num, esc, num, pct, percent_labels, rounding_note

# --- value strips on the diverging scale ----------------------------------------------------

STRIP_CELL = 4  # viewBox units per vector dimension (strips stretch to their box)
STRIP_H = 10  # viewBox height of a strip
TIP_DIMS = 4  # how many leading dimensions tooltips list
OPACITY_STEPS = 16  # colour levels per hue in a strip (finer is invisible, and costs markup)


def strip_limit(*vectors) -> float:
    """The shared ±limit of a set of strips: the largest |value| among them (1 if all are 0)."""
    peak = max((float(np.max(np.abs(v))) for v in vectors if np.size(v)), default=0.0)
    return peak if peak > 0 else 1.0


def head_of(values) -> str:
    """The first few numbers of a vector, for a tooltip: '0.12, −0.40, 0.03, 0.88, …'."""
    shown = ", ".join(num(float(x), 3) for x in values[:TIP_DIMS])
    return shown + (", …" if len(values) > TIP_DIMS else "")


def peak_of(values) -> str:
    """Where a vector is largest in magnitude: 'largest |value| 1.234 at dim 17'."""
    k = int(np.argmax(np.abs(values)))
    return f"largest |value| {num(abs(float(values[k])), 3)} at dim {k}"


def value_strip(values, limit: float, *, label: str, tip: str, cls: str = "", tabindex: int = 0, **attrs) -> str:
    """A vector [d] as a row of d coloured cells (an inline SVG that stretches to its box).

    `values` are drawn as-is: colour = diverging(values[k], limit), with the
    opacity rounded to OPACITY_STEPS levels so that the cells of one hue and
    level share a single <path> (a strip costs ~1 kB of markup, not 64 elements).
    The exact numbers ride along in data-values (space-separated plain
    decimals) for tests and scripts; the tooltip names the first few.
    """
    values = [float(x) for x in values]
    d = len(values)
    width = d * STRIP_CELL
    # one colour key per cell, then runs of equal keys become one rectangle of a path
    keys = [(hue, round(strength * OPACITY_STEPS)) for hue, strength in (diverging(x, limit) for x in values)]
    runs: dict[tuple[str, int], list[str]] = {}  # (hue, opacity level) -> path pieces
    start = 0
    for key, group in groupby(keys):
        length = len(list(group))
        if key[1]:  # level 0 is transparent: nothing to draw
            x0, w = start * STRIP_CELL, length * STRIP_CELL
            runs.setdefault(key, []).append(f"M{x0} 0h{w}v{STRIP_H}H{x0}z")
        start += length
    cells = "".join(
        f"<path{attr(class_=hue, fill_opacity=f'{level / OPACITY_STEPS:.2f}', d=''.join(pieces))}/>"
        for (hue, level), pieces in sorted(runs.items())
    )
    return (
        "<svg"
        + attr(
            class_=("vec-strip " + cls).strip(),
            viewBox=f"0 0 {width} {STRIP_H}",
            preserveAspectRatio="none",
            shape_rendering="crispEdges",
            role="img",
            aria_label=label,
            tabindex=tabindex,
            data_tip=tip,
            data_dims=d,
            data_values=" ".join(data_num(x) for x in values),
            **attrs,
        )
        + f'>{cells}<rect class="vec-strip-frame" x="0" y="0" width="{width}" height="{STRIP_H}"/></svg>'
    )


# --- the routing picture ----------------------------------------------------------------------

SVG_W = 348  # viewBox width: a 360 px phone shows it at ~0.9 scale, so 14-unit labels stay ≥ 12 px
ROW = 26  # viewBox units per token row
TOP = 32  # room for the column headings
Q_X = 104  # right edge of the query labels
LINE_X0, LINE_X1 = 110, 214  # where routing lines start (query side) and end (key side)
PCT_X = 250  # right edge of the weight label in front of each key
KEY_X = 256  # left edge of the key labels
LABEL_CHARS = 11  # token labels are clipped to this many characters (full token in the tooltip)


def _row_y(j: int) -> float:
    return TOP + j * ROW + ROW / 2


def _route(h: int, i: int, j: int, w: float, x1: float, offset: float, thickest: float, tip: str) -> str:
    """One line query i -> key j ending at x1: thickness (up to `thickest`) and opacity grow with w = A_ij."""
    y0, y1 = _row_y(i), _row_y(j) + offset
    mid = (LINE_X0 + x1) / 2
    d = f"M{LINE_X0},{y0:.1f} C{mid},{y0:.1f} {mid},{y1:.1f} {x1},{y1:.1f}"
    return (
        "<path"
        + attr(
            class_="route",
            d=d,
            stroke=HEAD_COLORS[h % len(HEAD_COLORS)],
            stroke_width=f"{0.6 + (thickest - 0.6) * w:.2f}",
            stroke_opacity=f"{0.15 + 0.85 * w:.3f}",
            data_h=h,
            data_i=i,
            data_j=j,
            data_weight=data_num(w),
            data_tip=tip,
        )
        + "/>"
    )


def routing_svg(tokens, weights, mask, query: int, heads, shown_heads, selected: int, special=()) -> str:
    """weights [H, n, n], mask [n, n] (True = may attend); lines from `query` for each head in shown_heads;
    special: indices of special tokens, whose labels are marked."""
    n = len(tokens)
    height = TOP + n * ROW + 6
    all_heads = len(shown_heads) > 1
    q_tok = tokens[query]
    aria = (
        f"Attention from query “{q_tok}” to every key, "
        + ("all heads colour-coded" if all_heads else f"head {selected + 1} ({heads[selected].name})")
        + ": thicker, darker lines carry more weight"
    )
    out = [
        "<svg"
        + attr(
            class_="routing",
            viewBox=f"0 0 {SVG_W} {height}",
            role="img",
            aria_label=aria,
            data_view="routing",
            data_grid=True,
            data_n=n,
            data_query=query,
            data_heads=" ".join(str(h) for h in shown_heads),
        )
        + ">",
        f"<defs>{hatch_pattern('routing-masked')}</defs>",
        f'<text class="col-head" x="{Q_X}" y="16" text-anchor="end">query i</text>',
        f'<text class="col-head" x="{KEY_X}" y="16">keys j</text>',
    ]
    if not all_heads:
        out.append(
            f'<text class="col-head" x="{PCT_X}" y="16" text-anchor="end">A<tspan class="sub" dy="3">ij</tspan></text>'
        )
    # query column: every token, the query highlighted; clicking one makes it the query
    for i, tok in enumerate(tokens):
        cls = ("q-label is-query" if i == query else "q-label") + (" is-special" if i in special else "")
        out.append(
            "<text"
            + attr(
                class_=cls,
                x=Q_X,
                y=f"{_row_y(i):.1f}",
                text_anchor="end",
                dominant_baseline="central",
                data_event="set_query",
                data_token_index=i,
            )
            + f"><title>{esc(f'token {i}: {tok} (click to make it the query)')}</title>"
            f"{esc(clip_label(tok, LABEL_CHARS))}</text>"
        )
    # lines: one per (shown head, allowed key), drawn before the key labels so labels stay on top
    # all heads: thinner lines, fanned out at the key end so heads agreeing on a key stay distinguishable
    # and, with no weight column to leave room for, run right up to the key labels
    spread, thickest = (3.0, 5.0) if all_heads else (0.0, 8.0)
    x1 = KEY_X - 6 if all_heads else LINE_X1
    for rank, h in enumerate(shown_heads):
        offset = (rank - (len(shown_heads) - 1) / 2) * spread
        for j, tok in enumerate(tokens):
            if not mask[query][j]:
                continue
            w = float(weights[h][query][j])
            tip = f"{head_ref(h, heads[h])}\nquery “{q_tok}” → key “{tok}”\nA_ij = {pct(w)}"
            out.append(_route(h, query, j, w, x1, offset, thickest, tip))
    # key column: one focusable group per key, with its weight(s) in the tooltip
    percents = percent_labels(weights[selected][query])  # whole %, each rounded on its own ("<1": under 0.5 %)
    for j, tok in enumerate(tokens):
        y = _row_y(j)
        allowed = bool(mask[query][j])
        w = float(weights[selected][query][j])
        if allowed:
            lines = [f"key {j}: “{tok}”", f"query {query}: “{q_tok}”"]
            lines += [f"{head_ref(h, heads[h])}: A_ij = {pct(float(weights[h][query][j]))}" for h in shown_heads]
        else:
            lines = [
                f"key {j}: “{tok}”",
                f"masked: a causal model lets query {query} see only keys 0…{query}",
                "this key is absent from the weighted sum",
            ]
        cls = "key is-masked" if not allowed else ("key is-query" if j == query else "key")
        tip = "\n".join(lines)
        # roving tabindex: the keys are one grid row (i = the query), ←/→ move between them
        out.append(
            "<g"
            + attr(
                class_=cls,
                tabindex=0 if j == 0 else -1,
                data_grid_cell=True,
                data_i=query,
                data_j=j,
                data_weight=data_num(w),
                data_masked="true" if not allowed else None,
                data_tip=tip,
            )
            + "><rect"
            + attr(
                class_="key-bg",
                x=x1 + 2,
                y=f"{y - ROW / 2 + 2:.1f}",
                width=SVG_W - x1 - 4,
                height=ROW - 4,
                rx=4,
                fill="url(#routing-masked)" if not allowed else None,
            )
            + "/>"
        )
        if allowed and not all_heads:
            out.append(
                "<text"
                + attr(class_="key-pct", x=PCT_X, y=f"{y:.1f}", text_anchor="end", dominant_baseline="central")
                + f">{esc(percents[j])}%</text>"
            )
        out.append(
            "<text"
            + attr(
                class_="key-label is-special" if j in special else "key-label",
                x=KEY_X,
                y=f"{y:.1f}",
                dominant_baseline="central",
            )
            + f">{esc(clip_label(tok, LABEL_CHARS))}</text></g>"
        )
    out.append("</svg>")
    return "".join(out)


def routing_table(tokens, weights, mask, query: int, heads, shown_heads) -> str:
    """The routing picture as a (visually hidden) table, for screen readers."""
    head_cells = "".join(f'<th scope="col">{esc(head_ref(h, heads[h]))}</th>' for h in shown_heads)
    rows = []
    for j, tok in enumerate(tokens):
        if mask[query][j]:
            cells = "".join(f"<td>{esc(pct(float(weights[h][query][j])))}</td>" for h in shown_heads)
        else:
            cells = f'<td colspan="{len(shown_heads)}">masked</td>'
        rows.append(f'<tr><th scope="row">{esc(f"{j}: {tok}")}</th>{cells}</tr>')
    # the sr-only class sits on a wrapper div: a table ignores width/overflow and would widen the page
    return (
        '<div class="sr-only"><table><caption>'
        f"{esc(f'Attention weights A_ij from query {query} ({tokens[query]}) to each key')}</caption>"
        f'<thead><tr><th scope="col">key</th>{head_cells}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


def _head_legend(heads, shown_heads, selected: int) -> str:
    """Which colour is which head; clicking a head selects it (its values are shown below)."""
    items = []
    for h in shown_heads:
        items.append(
            "<li><button"
            + attr(
                type="button",
                class_="head-key",
                data_event="set_head",
                data_value=h,
                aria_pressed="true" if h == selected else "false",
                style=f"--head-color:{HEAD_COLORS[h % len(HEAD_COLORS)]}",
            )
            + f'><span class="head-swatch" aria-hidden="true"></span>{esc(head_title(h, heads[h]))}</button></li>'
        )
    return f'<ul class="head-legend" aria-label="Head colours">{"".join(items)}</ul>'


# --- the synthesis: A_ij · V_j summed into Z_i -----------------------------------------------


def _z_formula() -> str:
    return m.math(
        m.row(
            m.indexed("Z", "i"),
            m.mo("="),
            m.sub(m.mo("∑"), m.mi("j")),
            m.indexed("A", "i", "j"),
            m.mo("·"),
            m.indexed("V", "j"),
        ),
        label="Z_i = sum over j of A_ij times V_j",
    )


SINK_WEIGHT = 0.3  # special tokens holding at least this share of a row's weight get a sentence


def sink_note(trace, h: int, query: int, tokens, special) -> str:
    """A sentence when special tokens hold SINK_WEIGHT or more of the query's attention in head h: their
    share of the weight against their share of what the head brings back, sum_j A_ij·‖V_j‖ (display
    only; "" otherwise). Short value vectors make such attention close to a no-op, a "sink"."""
    special = [j for j in special if trace.mask[query][j]]
    if not special:
        return ""
    weights = np.asarray(trace.weights[h][query], dtype=np.float64)  # [n]
    on_special = float(weights[special].sum())
    if on_special < SINK_WEIGHT:
        return ""
    brought = weights * np.linalg.norm(trace.v[h], axis=1)  # [n] A_ij·‖V_j‖
    share = float(brought[special].sum() / brought.sum()) if brought.sum() > 0 else 0.0
    names = " and ".join(dict.fromkeys(f"{tokens[j]}" for j in special))
    said = (
        f"{pct(on_special, 0)} of this head's attention rests on {names}, special tokens rather than words, "
        f"but their value vectors are short: they bring only {pct(share, 0)} of what the head gathers "
        f"(by the lengths of the A_ij·V_j). Attention parked there is close to a no-op, a “sink”: trained "
        f"heads often do this when what they look for is not in the sentence."
        if share < on_special / 2
        else f"{pct(on_special, 0)} of this head's attention rests on {names}, special tokens rather than words, "
        f"and they bring {pct(share, 0)} of what the head gathers (by the lengths of the A_ij·V_j): here "
        f"that attention is not a no-op."
    )
    return (
        "<p"
        + attr(class_="sink-note", data_sink_weight=data_num(on_special), data_sink_share=data_num(share))
        + f">{esc(said)}</p>"
    )


def synthesis(tokens, trace, query: int, h: int, head_name: str, special=()) -> str:
    """The selected head's A_ij·V_j strips for query i, then '=' the trace's Z_i = head_outputs[h, i].
    head_name: how the texts name the head ("head 1 (Coreference)"); special: indices of special tokens,
    whose rows are marked."""
    weights = trace.weights[h][query]  # [n]
    values = trace.v[h]  # [n, d_head]
    z = trace.head_outputs[h][query]  # [d_head], the sum, from the trace
    allowed = [j for j in range(len(tokens)) if trace.mask[query][j]]
    # display scaling only: each strip shows V_j with every entry multiplied by A_ij
    scaled = {j: [float(weights[j]) * float(x) for x in values[j]] for j in allowed}
    limit = strip_limit(z, *scaled.values())
    q_tok = tokens[query]
    rows = []
    for rank, j in enumerate(allowed):
        w, tok = float(weights[j]), tokens[j]
        tip = "\n".join(
            [
                f"key {j}: “{tok}”" + (", a special token" if j in special else "") + f"; {head_name}",
                f"A_ij = {pct(w)}",
                f"V_j = [{head_of(values[j])}] ({len(values[j])} numbers)",
                f"A_ij·V_j = [{head_of(scaled[j])}]",
                peak_of(scaled[j]),
            ]
        )

        # roving tabindex over the strips: one column, ↑/↓ move from row to row down to Z_i
        strip = value_strip(
            scaled[j],
            limit,
            label=f"{pct(w)} of the value vector of “{tok}”",
            tip=tip,
            tabindex=0 if rank == 0 else -1,
            data_grid_cell=True,
            data_i=rank,
            data_j=0,
            data_key=j,
        )
        op = "+" if rank else ""
        rows.append(
            "<li"
            + attr(class_="value-row is-special" if j in special else "value-row", data_j=j, data_weight=data_num(w))
            + f'><span class="op" aria-hidden="true">{op}</span>'
            f'<span class="value-weight">{esc(pct(w))}</span>'
            f'<span class="value-token"><span class="times" aria-hidden="true">× </span>'
            f"{m.math(m.indexed('V', str(j)))} <bdi>{esc(clip_label(tok, 14))}</bdi></span>{strip}</li>"
        )
    hidden = len(tokens) - len(allowed)
    if hidden:
        rows.append(
            f'<li class="value-row is-masked" data-masked-count="{hidden}"><span class="op" aria-hidden="true"></span>'
            f'<span class="value-masked">{hidden} future {"token is" if hidden == 1 else "tokens are"} masked: '
            f"{'it contributes' if hidden == 1 else 'they contribute'} nothing</span></li>"
        )
    z_tip = "\n".join(
        [
            f"Z_i for query {query}: “{q_tok}”; {head_name}",
            "the sum of the strips above, dimension by dimension",
            f"Z_i = [{head_of(z)}] ({len(z)} numbers)",
            peak_of(z),
        ]
    )
    z_strip = value_strip(
        z,
        limit,
        label=f"Z_i, the context vector of “{q_tok}”",
        tip=z_tip,
        cls="context",
        tabindex=-1 if allowed else 0,
        data_grid_cell=True,
        data_i=len(allowed),
        data_j=0,
        data_view="context-vector",
        data_query=query,
        data_head=h,
    )
    return (
        f"<div{attr(class_='synthesis', data_grid=True, data_head=h, data_query=query)}>"
        f'<p class="synthesis-title">{_z_formula()}</p>'
        f'<p class="synthesis-lede">Query <bdi class="q-name">{esc(clip_label(q_tok, 20))}</bdi>, {esc(head_name)}: '
        f"each value vector {m.math(m.indexed('V', 'j'))} ({len(z)} numbers, d_head) is scaled by its weight "
        f"{m.math(m.indexed('A', 'i', 'j'))}; the scaled vectors add up to the context vector "
        f"{m.math(m.indexed('Z', 'i'))}.</p>"
        f'<ol class="value-rows">{"".join(rows)}</ol>'
        f'<div class="value-row context-row"><span class="op" aria-hidden="true">=</span>'
        f'<span class="value-weight">{m.math(m.indexed("Z", "i"))}</span>'
        f'<span class="value-token">context vector</span>{z_strip}</div>'
        f"{scale_legend(limit, 'value of each dimension (0 = blank)')}</div>"
    )


def render(state, computed, heads) -> str:
    """The routing picture for state.query (one head or all), then the selected head's synthesis of Z_i."""
    trace, tokens = computed.trace, computed.tokens
    i, h = state.query, state.head
    shown = list(range(trace.n_heads)) if state.routing_all_heads else [h]
    a_ij = m.math(m.indexed("A", "i", "j"))
    ref = head_ref(h, heads[h])
    caption = (
        "Each head's lines in its own colour: the same query gathers from different keys in different heads."
        if state.routing_all_heads
        else f"{esc(ref[0].upper() + ref[1:])}: line thickness and opacity show the weight {a_ij}. "
        + esc(rounding_note("The numbers beside the keys", "they"))
    )  # one head: its weights are printed
    special = computed.run.special
    note = sink_note(trace, h, i, tokens, special) if computed.embedding.learned else ""
    if getattr(trace, "custom", False):
        from .. import custom_attention

        if not custom_attention.z_matches_weights(trace)[h]:  # the reader's function mixed the values its own way
            note += (
                '<p class="custom-badge" data-custom="true">Your attention function returned a Z that is not '
                "the weighted sum of the values drawn here: the sum below is what the weights would give, "
                "the multi-head stage uses your Z.</p>"
            )
    return (
        "<div"
        + attr(
            class_="routing-panel",
            data_query=i,
            data_head=h,
            data_all_heads="true" if state.routing_all_heads else "false",
        )
        + f">{_head_legend(heads, shown, h) if state.routing_all_heads else ''}"
        f'<div class="routing-body"><figure class="routing-figure">'
        f"{routing_svg(tokens, trace.weights, trace.mask, i, heads, shown, h, computed.run.special)}"
        f'<figcaption class="caption">{caption}</figcaption>'
        f"{routing_table(tokens, trace.weights, trace.mask, i, heads, shown)}</figure>"
        f"{synthesis(tokens, trace, i, h, ref, special)}{note}</div></div>"
    )
