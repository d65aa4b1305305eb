"""Query·key affinity for the selected query: one row of the attention matrix, taken apart.

What it teaches: a weight A_ij is made in three steps, drawn as three bands of
bars over the same keys j (the columns of the heatmap's query row):
  1. the literal dot product Q_i·K_j (trace.scores), signed;
  2. the same divided by √d_k·T (trace.scaled_scores), signed: a smaller
     spread makes a softer softmax;
  3. the softmax weight A_ij (trace.weights), 0-100 %.
Above them, the formula A_ij = softmax_j(Q_i·K_jᵀ / (√d_k·T)) with the real
numbers substituted for the selected query and its strongest key.

Each band has its own vertical scale (a zero line for the signed ones): the
numbers printed on the bars carry the magnitudes. Masked keys (causal mask,
keys after the query) are drawn hollow and labelled "masked".

A slider (T, √d_k) sends the live panel its new numbers as a patch (render_patch), not new markup.

Hooks: bars are g.bar[data-measure=score|scaled|weight] with data-i (query),
data-j (key), data-score, data-scaled, data-weight (decimals from the trace),
data-tip; each band is a roving-tabindex grid (arrow keys move along the keys).
"""

from __future__ import annotations

from . import math as m
from .attention_matrix import row_tips, size_style, softmax_pieces, strongest_key
from .colors import viridis
from .drawing import hatch_pattern
from .markup import attr, clip_label, data_num, esc, num, patch_op, pct, percent_labels, rounding_note

GUTTER = 44  # left margin: the axis labels ("0", "100 %")
COL = 52  # px per key column: fits "−265.4" at 11 px written across...
MIN_COL = 28  # ... down to this for 32 tokens, with the value labels written upright
COLS_BUDGET = 720  # viewBox units the columns may take before they narrow (one page column)
NARROW = 44  # below this column width the value labels turn vertical
MIN_WIDTH = 300  # the band titles need this much even for one token
TOKEN_H = 84  # rotated key labels at the top
TITLE_H = 22  # a band's title line
BAR_H = 80  # the bars' own height range
BAND_GAP = 10


def column_width(n: int) -> int:
    """Key column width for n tokens: 52 up to 13 tokens, narrowing to 28 (so 32 fit a page column)."""
    return max(MIN_COL, min(COL, COLS_BUDGET // max(n, 1)))


def label_pad(col: int) -> int:
    """Room above and below the bars for value labels: one text line, or a vertical label."""
    return 16 if col >= NARROW else 42


def band_height(col: int) -> int:
    return TITLE_H + 2 * label_pad(col) + BAR_H + BAND_GAP


MEASURES = ("score", "scaled", "weight")


def _band_titles(trace) -> tuple[str, str, str]:
    return (
        f"1 · Q·K: raw dot product ({trace.d_head} dims)",
        f"2 · ÷ √d_k·T = ÷ ({num(trace.scale, 2)} × {num(trace.temperature, 2)})",
        "3 · softmax: weight A (0–100 %)",
    )


def _value_label(measure: str, value: float, percent: int | None = None) -> str:
    """A bar's printed value; weights as whole percentages, each rounded on its own (markup.percent_label)."""
    if measure == "score":
        return num(value, 1)
    if measure == "scaled":
        return num(value, 2)
    return f"{percent} %"


def _scale(measure: str, values) -> tuple[float, float]:
    """A band's vertical range (lo, hi): 0-1 for weights, else the values' range with 0 in it."""
    if measure == "weight":
        return 0.0, 1.0
    lo, hi = min(0.0, min(values)), max(0.0, max(values))
    return (lo, lo + 1.0) if hi == lo else (lo, hi)


def _bar_look(measure: str, v: float, ok: bool, x: float, col: int, y, y0: float, percent) -> dict:
    """What a bar of value v shows: its fill rect (class, y, height, fill) and its value label
    (class, text, placement attributes), in the attribute order of the markup."""
    upright = col < NARROW
    cx = x + col / 2
    if measure == "weight" and not ok:  # a masked key's weight: a hatched box and the word "masked"
        place = (
            dict(
                transform=f"translate({cx:.1f},{y0 - 6:.1f}) rotate(-90)",
                text_anchor="start",
                dominant_baseline="central",
            )
            if upright
            else dict(x=cx, y=f"{y0 - 6:.1f}", text_anchor="middle")
        )
        return {"fill": None, "label_cls": "bar-value is-masked", "label": "masked", "place": place}
    yv = y(v)
    ry, rh = min(yv, y0), max(abs(yv - y0), 1.0)  # a zero still shows as a 1-unit tick
    if measure == "weight":
        fill_cls, fill = "bar-fill", viridis(v)
    else:
        fill_cls, fill = ("bar-fill is-pos" if v >= 0 else "bar-fill is-neg"), None
    if not ok:
        fill_cls += " is-masked"
    if upright:  # written bottom-to-top, starting just beyond the bar's end
        ly = yv - 4 if v >= 0 else yv + 4
        place = dict(
            transform=f"translate({cx:.1f},{ly:.1f}) rotate(-90)",
            text_anchor="start" if v >= 0 else "end",
            dominant_baseline="central",
        )
    else:
        place = dict(x=cx, y=f"{yv - 4 if v >= 0 else yv + 12:.1f}", text_anchor="middle")
    return {
        "fill": dict(class_=fill_cls, y=f"{ry:.2f}", height=f"{rh:.2f}", fill=fill),
        "label_cls": "bar-value is-masked" if not ok else "bar-value",
        "label": _value_label(measure, v, percent),
        "place": place,
    }


def _band_looks(measure: str, values, allowed, top: float, col: int) -> tuple[list[dict], float, object]:
    """Every bar's look (_bar_look) in one band, with the band's zero line height and y(value)."""
    n = len(values)
    percents = (
        percent_labels(values) if measure == "weight" else [None] * n
    )  # whole %, each rounded on its own ("<1": under 0.5 %)
    lo, hi = _scale(measure, values)
    bar_top = top + TITLE_H + label_pad(col)

    def y(v: float) -> float:
        return bar_top + (hi - v) / (hi - lo) * BAR_H

    y0 = y(0.0)
    looks = [
        _bar_look(measure, float(values[j]), bool(allowed[j]), GUTTER + j * col, col, y, y0, percents[j])
        for j in range(n)
    ]
    return looks, y0, y


def _bar_data(trace, h: int, query: int, j: int) -> dict:
    """A bar's numbers as data-* attributes (the same on the three bands' bars of key j)."""
    return dict(
        data_score=data_num(trace.scores[h, query, j]),
        data_scaled=data_num(trace.scaled_scores[h, query, j]),
        data_weight=data_num(trace.weights[h, query, j]),
    )


def _band(
    measure: str, values, allowed, top: float, col: int, query: int, focus_j: int, trace, h: int, tips, masked_id: str
) -> list[str]:
    """One band of bars: values [n] with their own scale; signed bands get a zero line."""
    n = len(values)
    pad = label_pad(col)
    looks, y0, y = _band_looks(measure, values, allowed, top, col)
    bar_top = top + TITLE_H + pad
    right = GUTTER + n * col
    out = [f'<text class="band-title" x="0" y="{top + 14}">{esc(_band_titles(trace)[MEASURES.index(measure)])}</text>']
    if measure == "weight":
        out.append(
            f'<line class="gridline" x1="{GUTTER}" x2="{right}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}"/>'
            f'<text class="axis-label" x="{GUTTER - 6}" y="{y(1.0):.1f}" text-anchor="end" '
            f'dominant-baseline="central">100 %</text>'
        )
    out.append(
        f'<line class="zero-line" x1="{GUTTER}" x2="{right}" y1="{y0:.1f}" y2="{y0:.1f}"/>'
        f'<text class="axis-label" x="{GUTTER - 6}" y="{y0:.1f}" text-anchor="end" '
        f'dominant-baseline="central">0</text>'
    )
    out.append(f"<g{attr(class_='band', data_band=measure, data_grid=True)}>")
    for j in range(n):
        ok = bool(allowed[j])
        x = GUTTER + j * col
        bx, bw = round(x + col * 0.16, 2), round(col * 0.68, 2)  # bars fill the middle 68 % of the column
        data = dict(
            data_measure=measure,
            data_i=query,
            data_j=j,
            **_bar_data(trace, h, query, j),
            data_masked="true" if not ok else None,
        )
        cls = "bar" if ok else "bar is-masked"
        look = looks[j]
        parts = [
            f'<rect class="bar-hit" x="{x + 2}" y="{top + TITLE_H}" width="{col - 4}" height="{pad * 2 + BAR_H}"/>'
        ]
        if look["fill"] is None:
            parts.append(
                f'<rect class="bar-masked" x="{bx}" y="{bar_top}" width="{bw}" height="{BAR_H}" '
                f'fill="url(#{masked_id})"/>'
            )
        else:
            fill = look["fill"]
            parts.append(
                "<rect"
                + attr(class_=fill["class_"], x=bx, y=fill["y"], width=bw, height=fill["height"], fill=fill["fill"])
                + "/>"
            )
        parts.append(f"<text{attr(class_=look['label_cls'], **look['place'])}>{esc(look['label'])}</text>")
        tabindex = 0 if j == focus_j else -1
        pick = dict(data_event="set_key", data_value=j, data_hover_event="set_key") if ok else {}  # -> Q·K breakdown
        tip = dict(data_tip=tips[j]) if tips is not None else dict(data_tip_src=True)  # None: asked on hover
        out.append(
            f"<g{attr(class_=cls, data_grid_cell=True, tabindex=tabindex, **tip, **pick, **data)}>{''.join(parts)}</g>"
        )
    out.append("</g>")
    return out


def affinity_svg(tokens, trace, h: int, query: int, head_name: str, tips, *, id_prefix: str = "affinity") -> str:
    """The three bands of bars for query `query` of head h; tips [n] tooltip texts per key, or None:
    the bars carry data-tip-src and the bridge asks the worker (page.tip) on hover or focus."""
    n = len(tokens)
    allowed = trace.mask[query]  # [n] bool
    scores = trace.scores[h, query]  # [n]
    scaled = trace.scaled_scores[h, query]  # [n]
    weights = trace.weights[h, query]  # [n]
    focus_j = strongest_key(weights, allowed)
    masked_id = f"{id_prefix}-masked"
    col = column_width(n)
    band_h = band_height(col)
    width = max(MIN_WIDTH, GUTTER + n * col + 8)
    height = TOKEN_H + 3 * band_h
    label = (
        f"Query·key affinity of query {tokens[query]!s} ({query}) in the {head_name} head: "
        f"raw dot products, scaled scores and softmax weights for each key"
    )
    out = [
        "<svg"
        + attr(
            data_view="affinity",
            data_head=h,
            data_query=query,
            viewBox=f"0 0 {width} {height}",
            role="img",
            class_="affinity-chart",
            aria_label=label,
            style=size_style(width),
        )
        + ">",
        f"<defs>{hatch_pattern(masked_id)}</defs>",
    ]
    # the strongest key's column, behind everything: it is the one the formula spells out
    out.append(
        f'<rect class="col-strongest" x="{GUTTER + focus_j * col + 1}" y="{TOKEN_H - 4}" width="{col - 2}" '
        f'height="{3 * band_h - BAND_GAP + 4}"/>'
    )
    for j, tok in enumerate(tokens):  # the shared key axis, on top (as the heatmap's columns)
        x = GUTTER + j * col + col / 2
        cls = "key-label is-query" if j == query else "key-label"
        out.append(
            f'<text class="{cls}" transform="translate({x:.1f},{TOKEN_H - 8}) rotate(-55)">'
            f"<title>key {j}: {esc(tok)}</title>{esc(clip_label(tok))}</text>"
        )
    for b, (measure, values) in enumerate(zip(MEASURES, (scores, scaled, weights))):
        out += _band(
            measure,
            [float(v) for v in values],
            allowed,
            TOKEN_H + b * band_h,
            col,
            query,
            focus_j,
            trace,
            h,
            tips,
            masked_id,
        )
    out.append("</svg>")
    return "".join(out)


def formula(tokens, trace, h: int, query: int, pieces) -> str:
    """A_ij = softmax_j(Q_i·K_jᵀ/(√d_k·T)) in MathML, then with the trace's numbers for (query, strongest key)."""
    i = query
    j = strongest_key(trace.weights[h, i], trace.mask[i])
    general = m.math(
        m.indexed("A", "i", "j"),
        m.mo("="),
        m.sub(m.mtext("softmax"), m.mi("j")),
        m.paren(
            m.frac(
                m.row(m.sub(m.mi("Q"), m.mi("i")), m.mo("·"), m.subsup(m.mi("K"), m.mi("j"), m.mo("⊤"))),
                m.row(m.sqrt_dk(), m.mo("·"), m.mi("T")),
            )
        ),
        display="block",
        label="A i j equals softmax over j of Q i dot K j transposed over square root of d k times T",
    )
    numbers, steps = formula_numbers(tokens, trace, h, i, pieces)
    return (
        f'<div class="affinity-formula">{general}'
        f'<div class="formula-numbers" data-formula-i="{i}" data-formula-j="{j}">{numbers}</div>'
        f'<p class="formula-steps">{esc(steps)}</p></div>'
    )


def formula_numbers(tokens, trace, h: int, query: int, pieces) -> tuple[str, str]:
    """The formula with the trace's numbers for (query, strongest key), as MathML, and its steps in
    words (plain text)."""
    i = query
    j = strongest_key(trace.weights[h, i], trace.mask[i])
    scale, temp = float(trace.scale), float(trace.temperature)
    score, scaled, w = (
        float(trace.scores[h, i, j]),
        float(trace.scaled_scores[h, i, j]),
        float(trace.weights[h, i, j]),
    )
    denom = m.row(m.mn_num(scale, 2), m.mo("·"), m.mn_num(temp, 2))
    # three pieces that wrap onto separate lines on a phone: A = exp(..)/Σ exp(..) | = exp(s)/Σ exp(s) | = w
    substituted = m.math(
        m.sub(m.mi("A"), m.row(m.mn(str(i)), m.mo(","), m.mn(str(j)))),
        m.mo("="),
        m.frac(
            m.row(m.mi("exp"), m.paren(m.frac(m.mn_num(score, 2), denom))),
            m.row(
                m.sub(m.mo("∑"), m.mi("j′")),
                m.mi("exp"),
                m.paren(
                    m.frac(
                        m.row(m.sub(m.mi("Q"), m.mn(str(i))), m.mo("·"), m.subsup(m.mi("K"), m.mi("j′"), m.mo("⊤"))),
                        denom,
                    )
                ),
            ),
        ),
        display="block",
        label=f"A {i},{j} equals exp of {num(score, 2)} over {num(scale, 2)} times {num(temp, 2)}, "
        f"divided by the sum over all keys j prime of exp of Q {i} dot K j prime over the same",
    )
    exped = m.math(
        m.mo("="),
        m.frac(
            m.row(m.mi("exp"), m.paren(m.mn_num(scaled, 3))),
            m.row(
                m.sub(m.mo("∑"), m.mi("j′")), m.mi("exp"), m.paren(m.sub(m.mi("s"), m.row(m.mn(str(i)), m.mi("j′"))))
            ),
        ),
        display="block",
        label=f"equals exp of {num(scaled, 3)} over the sum of exp of the scaled scores of row {i}",
    )
    result = m.math(m.mo("="), m.mn_num(w, 3), display="block", label=f"equals {num(w, 3)}")
    row_max, exps, row_sum = pieces
    n_masked = int((~trace.mask[i]).sum())
    masked_note = (
        f" The {n_masked} masked key{'s' if n_masked != 1 else ''} after the query "
        f"{'are' if n_masked != 1 else 'is'} left out of the sum (weight 0)."
        if n_masked
        else ""
    )
    steps = (
        f"Query {_q(tokens[i])} ({i}), strongest key {_q(tokens[j])} ({j}). In numbers: softmax first "
        f"subtracts the row's largest scaled score, m = {num(row_max, 3)} (it cancels out and keeps exp "
        f"from overflowing): exp({num(scaled, 3)} − {num(row_max, 3)}) = {num(float(exps[j]), 4)}, "
        f"divided by the row sum Σ exp(s − m) = {num(row_sum, 4)}, gives {num(w, 4)} = {pct(w)}."
        f"{masked_note}"
    )
    return substituted + exped + result, steps


def _q(tok: str) -> str:
    return f"“{tok}”"


def _table_cells(trace, h: int, query: int, j: int) -> list[str]:
    """Key j's row of the screen-reader table: its cells' texts (one cell for a masked key)."""
    if not bool(trace.mask[query, j]):
        return ["masked (future token)"]
    return [
        num(float(trace.scores[h, query, j]), 2),
        num(float(trace.scaled_scores[h, query, j]), 3),
        pct(float(trace.weights[h, query, j])),
    ]


def affinity_table(tokens, trace, h: int, query: int) -> str:
    """The bars as a visually hidden table (screen-reader equivalent)."""
    rows = []
    for j, tok in enumerate(tokens):
        texts = _table_cells(trace, h, query, j)
        cells = (
            "".join(f"<td>{esc(t)}</td>" for t in texts) if len(texts) == 3 else f'<td colspan="3">{esc(texts[0])}</td>'
        )
        rows.append(f'<tr><th scope="row">{esc(tok)} ({j})</th>{cells}</tr>')
    return (
        f'<table class="sr-only"><caption>Affinity of query {esc(tokens[query])} ({query}) with each key</caption>'
        f'<thead><tr><th scope="col">key</th><th scope="col">Q·K</th><th scope="col">÷ (√d_k·T)</th>'
        f'<th scope="col">weight</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


# What a slider (T, √d_k; the activation, for layers after the first) changes in the panel: numbers,
# bar heights and label places, not which elements there are (the same tokens, query, head and mask).
NUMBERS_ONLY = frozenset({"temperature", "dk_scale", "activation"})

CHART = "svg.affinity-chart"


def render_patch(state, computed, heads) -> list[dict]:
    """The new numbers of a live affinity panel as patch operations (attention_matrix.render_patch
    describes them), valid over markup render() drew for a state differing in NUMBERS_ONLY fields.
    One more kind: {"sel", "html": True, "values": markup} replaces the one matching element's content
    (the formula's numbers, MathML built by views.math)."""
    trace, tokens, h, i = computed.trace, computed.tokens, state.head, state.query
    n, col = len(tokens), column_width(len(tokens))
    allowed = trace.mask[i]  # [n] bool
    rows = (trace.scores[h, i], trace.scaled_scores[h, i], trace.weights[h, i])  # each [n]
    focus_j = strongest_key(rows[2], allowed)
    custom = bool(getattr(trace, "custom", False))
    pieces = softmax_pieces(rows[1], allowed, rows[2], check=not custom)
    bands = [
        _band_looks(measure, [float(v) for v in values], allowed, TOKEN_H + b * band_height(col), col)
        for b, (measure, values) in enumerate(zip(MEASURES, rows))
    ]  # (looks, y0, y) per band
    looks = [look for band in bands for look in band[0]]
    # zero lines move when Q·K itself changes (a trained model's later layers: T acts upstream too)
    zeros = [f"{y0:.1f}" for _, y0, _ in bands]
    axis_ys = zeros[:2] + [f"{bands[2][2](1.0):.1f}", zeros[2]]  # the weight band: "100 %", then "0"
    filled = [look["fill"] for look in looks if look["fill"] is not None]  # document order: band by band
    weight_fills = [look["fill"]["fill"] for look in looks[2 * n :] if look["fill"] is not None]
    places = [look["place"] for look in looks]
    data = [_bar_data(trace, h, i, j) for j in range(n)] * 3  # the three bands' bars of key j carry the same
    upright = col < NARROW

    ops = [
        patch_op(f"{CHART} text.band-title", _band_titles(trace), text=True),
        patch_op(f"{CHART} line.zero-line", zeros, attr="y1"),
        patch_op(f"{CHART} line.zero-line", zeros, attr="y2"),
        patch_op(f"{CHART} text.axis-label", axis_ys, attr="y"),
        patch_op(f"{CHART} rect.col-strongest", [GUTTER + focus_j * col + 1], attr="x"),
        patch_op(f"{CHART} g.bar", [0 if j == focus_j else -1 for _ in MEASURES for j in range(n)], attr="tabindex"),
        {"sel": f"{CHART} g.bar", "remove": "data-tip"},
    ]  # live bars ask for their tips (a hover cached one)
    ops += [
        patch_op(f"{CHART} g.bar", [d[name] for d in data], attr=name.replace("_", "-"))
        for name in ("data_score", "data_scaled", "data_weight")
    ]
    ops += [
        patch_op(f"{CHART} rect.bar-fill", [f[name] for f in filled], attr=name.rstrip("_"))
        for name in ("class_", "y", "height")
    ]
    ops += [
        patch_op(f'{CHART} g[data-band="weight"] rect.bar-fill', weight_fills, attr="fill"),
        patch_op(f"{CHART} text.bar-value", [look["label"] for look in looks], text=True),
    ]
    ops += [
        patch_op(f"{CHART} text.bar-value", [p[name] for p in places], attr=name.replace("_", "-"))
        for name in (("transform", "text_anchor") if upright else ("x", "y"))
    ]
    numbers, steps = formula_numbers(tokens, trace, h, i, pieces)
    ops += [
        patch_op("div.formula-numbers", [focus_j], attr="data-formula-j"),
        {"sel": "div.formula-numbers", "html": True, "values": numbers},
        patch_op("p.formula-steps", [steps], text=True),
        patch_op("table.sr-only td", [cell for j in range(n) for cell in _table_cells(trace, h, i, j)], text=True),
    ]
    return ops


def render(state, computed, heads, *, tips_on_demand: bool = False) -> str:
    """Formula with live numbers, the three bands of bars, a caption, and the screen-reader table.
    tips_on_demand: the bars' derivations are left to page.tip (the worker's live redraws: a slider's
    patches then carry no tooltips either); build.py's pre-render writes them out."""
    trace, tokens, h, i = computed.trace, computed.tokens, state.head, state.query
    custom = bool(getattr(trace, "custom", False))  # weights from the reader's own attention function
    pieces = softmax_pieces(trace.scaled_scores[h, i], trace.mask[i], trace.weights[h, i], check=not custom)
    # [n]: the same derivations as the heatmap's row i
    tips = None if tips_on_demand else row_tips(tokens, trace, h, i, pieces)
    rounded = rounding_note("Band 3's numbers", "they")  # before "Hover or focus": a saved figure keeps it
    caption = (
        "Each band has its own vertical scale; the numbers carry the sizes. Blue bars are positive, "
        f"orange negative. {rounded} Hover or focus a bar (arrow keys move along the keys, Tab to the "
        "next band) to see how its weight is made."
    )
    note = (
        '<p class="custom-badge" data-custom="true">Band 3 shows the weights your attention function '
        "made; the formula is the page's own softmax, shown for comparison.</p>"
        if custom
        else ""
    )
    return (
        f'<div class="affinity">{note}{formula(tokens, trace, h, i, pieces)}'
        f'<div class="figure affinity-figure">{affinity_svg(tokens, trace, h, i, heads[h].name, tips)}</div>'
        f'<p class="caption"{attr(data_export_label=caption.partition(" Hover or focus")[0])}>{esc(caption)}</p>'
        f"{affinity_table(tokens, trace, h, i)}</div>"
    )
