"""The attention weight matrix A of one head as an SVG heatmap, and all heads side by side.

What it teaches: row i is where query token i looks. Each row is a softmax, so
it sums to 100 %; colour is A_ij on a colour-blind-safe scale (viridis). A short
sentence's cells also print A_ij as a whole percentage, each rounded on its own
(markup.percent_label: "<1" above 0 but under 0.5 %), so equal weights read the
same; a note under the heatmap says that a row's numbers may then not add up to exactly 100. The
query row is outlined. Every cell is one hover or focus away from its
derivation: Q_i·K_j, divided by √d_k·T, exp(· − row max), divided by the row
sum. With a causal mask, cells right of the diagonal are hatched: a token may
not look at the future. render() wraps the svg in a div.figure (it scrolls sideways on a phone) and puts
the rounding note after it, p.rounding-note, where it wraps to the column.

Hooks (tests and the bridge rely on them): the heatmap is
svg[data-view="attention-matrix"] with data-head, data-temperature,
data-dk-scale, data-query; one rect per cell with data-i (query), data-j (key),
data-weight (the trace's number as a decimal); .query-outline[data-query-row];
row labels carry data-event="set_query" data-token-index=i. Cells form a
roving-tabindex grid (data-grid / data-grid-cell): arrow keys move, Tab leaves.
The svg also carries data-model, data-layer, data-tokens (JSON list, specials
included, in row/column order) and data-special (JSON list of the special tokens'
indices, [] when none). Clicking a cell sends pick_cell "i,j" (the cells' group
carries data-cell-event); hovering or focusing a cell of the query's row sends
set_key j (the Q·K breakdown's key: the group carries data-hover-event and
data-hover-row). Only the grid's tab stop has a tabindex: the
bridge gives one to the cell the arrow keys move to.

`render_small_multiples` draws every head's matrix as a compact button that
selects the head: "why several heads" at a glance.
"""

from __future__ import annotations

import json

import numpy as np

from .colors import HEAD_COLORS, text_on, viridis, viridis_many
from .drawing import hatch_pattern, weight_legend
from .markup import attr, clip_label, data_num, esc, num, pct, percent_labels, rounding_paragraph, table_on_request

CELL = 40  # px per cell in viewBox units (short sentences)
MIN_CELL = 18  # ... shrinking to this for 32 tokens, so the matrix fits one page column
GRID_BUDGET = 560  # viewBox units the cells may take before they shrink
LABEL = 96  # px reserved for row labels (left) and column labels (top)
LEGEND_H = 44  # px below the grid for the 0-100 % legend
MIN_SCALE = 0.9  # never draw smaller than 0.9 px per unit: 12-13 unit text stays >= 11 px (the
# figure scrolls sideways on a phone instead)
THUMB_LEVELS = 40  # small multiples: colour steps (weights rounded to 2.5 %, invisible at thumbnail size)


def cell_size(n: int) -> int:
    """Cell side for an n-token matrix: 40 up to 14 tokens, then shrinking to 18 at 32."""
    return max(MIN_CELL, min(CELL, GRID_BUDGET // max(n, 1)))


def shows_numbers(n: int, cell: int | None = None) -> bool:
    """Whether an n-token heatmap prints each cell's whole percentage: only where the number fits its cell.
    Its rounding note (markup.rounding_paragraph) goes with it."""
    return (cell or cell_size(n)) >= 30 and n <= 14


def size_style(width: float, height: float = 0) -> str:
    """Inline sizing for a viewBox `width` wide: fill the column, but keep text readable.

    min-width keeps text >= ~11 px on phones (the .figure scrolls); max-width stops
    a 3-token matrix from being blown up to poster size; --ar (width / height) lets the
    first screen's CSS keep the whole matrix within the window's height.
    """
    ar = f";--ar:{width / height:.3f}" if height else ""
    return f"min-width:{round(width * MIN_SCALE)}px;max-width:{round(width * 1.35)}px{ar}"


# --------------------------------------------------------------------------
# the softmax's pieces, for display
# --------------------------------------------------------------------------


def softmax_pieces(
    scaled_row, allowed_row, weights_row, *, check: bool = True
):  # [n], [n] bool, [n] -> (float, [n], float)
    """(row max m, exp(s_j − m) per key (0 where masked), their sum) for one row of the trace.

    Display only. core.softmax turns scaled scores into weights in one step and the
    trace keeps only its result; a tooltip that shows *how* a weight is made needs
    the intermediate pieces. So this takes the trace's own scaled scores, leaves out
    masked keys (core gives them −inf, i.e. exp = 0), calls np.exp, and asserts
    that piece / sum reproduces the trace's weights: the pieces shown can never
    disagree with the weights drawn. It computes no weight the page uses.
    """
    # a float32 trace (the trained model) agrees to float32's precision, a float64 one to float64's
    single = np.asarray(weights_row).dtype == np.float32 or np.asarray(scaled_row).dtype == np.float32
    rtol, atol = (2e-5, 1e-7) if single else (1e-9, 1e-12)
    scaled = np.asarray(scaled_row, dtype=np.float64)
    allowed = np.asarray(allowed_row, dtype=bool)
    weights = np.asarray(weights_row, dtype=np.float64)
    if not allowed.any():  # a fully masked row: core defines its weights as 0
        return 0.0, np.zeros_like(scaled), 0.0
    row_max = float(np.max(scaled[allowed]))
    shifted = np.where(allowed, scaled - row_max, 0.0)  # masked: 0 here, zeroed below (no overflow)
    exps = np.where(allowed, np.exp(shifted), 0.0)
    row_sum = float(np.sum(exps))
    # check=False: the weights came from the reader's own attention function (trace.custom); the pieces
    # are then the page's softmax, shown beside them for comparison
    # np.allclose's test, written out: np.allclose itself costs ~5x more for one short row, on every slider move
    assert not check or bool(np.all(np.abs(exps / row_sum - weights) <= atol + rtol * np.abs(weights))), (
        "softmax_pieces: exp(s − max) / sum does not reproduce the trace's weights"
    )
    return row_max, exps, row_sum


def _quoted(tok: str) -> str:
    return f"“{tok}”"


def row_tips(tokens, trace, h: int, i: int, pieces=None) -> list[str]:
    """Tooltip texts (plain, \\n line breaks) deriving A_ij of head h for every key j of row i.

    pieces: softmax_pieces(...) of row i, if the caller has it already. Strings that
    repeat across a row are formatted once: a 32-token matrix has 1024 of these.
    """
    n = len(tokens)
    custom = bool(getattr(trace, "custom", False))
    if pieces is None:
        pieces = softmax_pieces(trace.scaled_scores[h, i], trace.mask[i], trace.weights[h, i], check=not custom)
    row_max, exps, row_sum = pieces
    scores = trace.scores[h, i].tolist()  # [n] plain floats: faster to format than NumPy scalars
    scaled = trace.scaled_scores[h, i].tolist()  # [n]
    weights = trace.weights[h, i].tolist()  # [n]
    allowed = trace.mask[i].tolist()  # [n]
    exps = exps.tolist()
    query = f"A[{i},"
    head_tail = f"]: query {_quoted(tokens[i])} ({i}) → key "
    divide = f"÷ (√d_k·T) = ÷ ({num(float(trace.scale), 2)} × {num(float(trace.temperature), 2)}) = "
    dims = f"  (dot product of {trace.d_head}-dim vectors)"
    minus_max = f" − row max {num(row_max, 3)}) = "
    row_sum_s = f"÷ row sum {num(row_sum, 4)} = "
    tips = []
    for j in range(n):
        head = f"{query}{j}{head_tail}{_quoted(tokens[j])} ({j})"
        if not allowed[j]:
            tips.append(
                f"{head}\nmasked (future token): weight 0 %.\nThe causal mask drops keys after the "
                f"query before the softmax; its Q·K = {num(scores[j], 2)} goes unused."
            )
            continue
        s_j = num(scaled[j], 3)
        if custom:  # the reader's function made the weight; the page's softmax is shown for comparison
            tips.append(
                f"{head}\nQ·K = {num(scores[j], 2)}{dims}\n{divide}{s_j}\nyour attention function: "
                f"weight {num(weights[j], 4)} = {pct(weights[j])}\n(the page's softmax would give "
                f"{pct(exps[j] / row_sum if row_sum else 0.0)})"
            )
            continue
        tips.append(
            f"{head}\nQ·K = {num(scores[j], 2)}{dims}\n{divide}{s_j}\n"
            f"exp({s_j}{minus_max}{num(exps[j], 4)}\n{row_sum_s}{num(weights[j], 4)} = {pct(weights[j])}"
        )
    return tips


def matrix_tips(tokens, trace, h: int) -> list[list[str]]:
    """Derivation tooltips for every cell of head h: [n][n] strings."""
    return [row_tips(tokens, trace, h, i) for i in range(len(tokens))]


def strongest_key(weights_row, allowed_row) -> int:
    """The key with the largest weight in one row (first on ties); the query itself if all masked."""
    w = np.where(np.asarray(allowed_row, dtype=bool), np.asarray(weights_row, dtype=np.float64), -1.0)
    return int(np.argmax(w))


# --------------------------------------------------------------------------
# the heatmap
# --------------------------------------------------------------------------


def attention_matrix_svg(
    tokens,
    weights,
    mask,
    query: int,
    head_name: str,
    *,
    cell: int | None = None,
    label: int = LABEL,
    legend: bool = True,
    view: str = "attention-matrix",
    interactive: bool = True,
    meta: dict | None = None,
    tips: list[list[str]] | None = None,
    id_prefix: str | None = None,
    special=(),
    pinned=(),
) -> str:
    """weights [n, n] (rows sum to 1 or 0 when fully masked); mask [n, n] bool, True = allowed.

    special: indices of special tokens ([CLS], <s>): their labels are marked as not words.
    pinned: more selected query rows besides `query`: outlined (dashed), and their mean with the
    query's row drawn as one more row under the grid, labelled "mean of N" (cells: data-mean-j).

    tips: optional [n][n] tooltip texts (see matrix_tips); without them a cell's tip
    is just its percentage; "on-demand": cells carry data-tip-src instead, and the bridge
    asks the worker for the text (page.tip) when one is hovered or focused: a 32-token
    matrix then sends 1,024 fewer strings on every slider move. id_prefix: makes the SVG's defs ids unique when one
    page holds several instances (default: the view name).
    """
    n = len(tokens)
    cell = cell or cell_size(n)
    ids = id_prefix or view
    masked_id, scale_id = f"{ids}-masked", f"{ids}-weight-scale"
    size = n * cell
    any_masked = not bool(np.all(mask))
    rows = sorted({query, *pinned}) if pinned else []  # the selected queries, when more than one
    mean_h = cell + 10 if len(rows) > 1 else 0  # the mean row under the grid
    show_numbers = shows_numbers(n, cell)
    width = label + size + 8
    height = label + size + mean_h + (LEGEND_H if legend else 8)
    focus_j = strongest_key(weights[query], mask[query]) if n else 0
    out = [
        "<svg"
        + attr(
            data_view=view,
            viewBox=f"0 0 {width} {height}",
            role="img",
            class_="heatmap",
            data_n=n,
            data_query=query,
            aria_label=matrix_label(head_name),
            style=size_style(width, height),
            **(meta or {}),
        )
        + ">"
    ]
    out.append(f"<defs>{hatch_pattern(masked_id)}</defs>")
    # column labels (keys), rotated
    for j, tok in enumerate(tokens):
        x = label + j * cell + cell / 2
        cls = "col-label" + (" is-query" if j == query else "") + (" is-special" if j in special else "")
        what = " (special token, not a word)" if j in special else ""
        out.append(
            f'<text class="{cls}" transform="translate({x:.1f},{label - 6}) rotate(-55)">'
            f"<title>key {j}: {esc(tok)}{what}</title>{esc(clip_label(tok))}</text>"
        )
    # row labels (queries): clicking one makes it the query
    for i, tok in enumerate(tokens):
        y = label + i * cell + cell / 2
        cls = "row-label" + (" is-query" if i == query else "") + (" is-special" if i in special else "")
        what = ", a special token" if i in special else ""
        ev = attr(data_event="set_query", data_token_index=i) if interactive else ""
        out.append(
            f'<text{attr(class_=cls)}{ev} x="{label - 8}" y="{y:.1f}" text-anchor="end" '
            f'dominant-baseline="central"><title>query {i}: {esc(tok)}{what} (click to make it the query)</title>'
            f"{esc(clip_label(tok))}</text>"
        )
    # cells: a roving-tabindex grid; the query row's strongest key is the one Tab reaches
    # clicking a cell (or Enter on it) sends pick_cell "i,j": the bridge reads data-cell-event off this group,
    # so 1,024 cells need not each repeat it
    # hovering or focusing a cell of the query's row picks its key (the Q·K breakdown): the bridge reads
    # data-hover-event and data-hover-row off this group, so the row's cells need no attributes of their own
    out.append(
        "<g"
        + attr(
            class_="cells",
            data_grid=interactive,
            data_cell_event="pick_cell" if interactive else None,
            data_hover_event="set_key" if interactive else None,
            data_hover_row=query if interactive else None,
        )
        + ">"
    )
    for i in range(n):
        labels = percent_labels(weights[i]) if show_numbers else ()  # whole %, each weight rounded on its own
        for j in range(n):
            w = float(weights[i][j])
            allowed = bool(mask[i][j])
            x, y = label + j * cell, label + i * cell
            fill, light = cell_paint(w, allowed, masked_id)
            if tips == "on-demand":  # the bridge asks the worker for the derivation on hover (tip_src)
                tip = None
            else:
                tip = (
                    tips[i][j]
                    if tips
                    else f"query {_quoted(tokens[i])} → key {_quoted(tokens[j])}: "
                    + (pct(w) if allowed else "masked (future token)")
                )
            tab_stop = interactive and (i, j) == (query, focus_j)
            if tip is None:  # live redraws: the same markup as below, without escaping 1,000 numbers
                out.append(cell_rect(x, y, cell, fill, light, i, j, w, allowed, interactive, tab_stop))
            else:
                out.append(
                    "<rect"
                    + attr(
                        class_="cell is-light" if light else "cell",
                        x=x,
                        y=y,
                        width=cell,
                        height=cell,
                        fill=fill,
                        data_i=i,
                        data_j=j,
                        data_weight=data_num(w),
                        data_masked="true" if not allowed else None,
                        data_grid_cell=interactive,
                        tabindex=0 if tab_stop else None,
                        data_tip=tip,
                        data_tip_src=tip is None,
                    )
                    + "/>"
                )
            if show_numbers and allowed:
                shade = "on-light" if light else "on-dark"  # a class: CSS text fill beats attributes
                out.append(
                    f'<text class="cell-value {shade}" x="{x + cell / 2}" y="{y + cell / 2}" '
                    f'text-anchor="middle" dominant-baseline="central">{esc(labels[j])}</text>'
                )
    out.append("</g>")
    for i in rows:
        if i != query:
            out.append(
                f'<rect class="pinned-outline" data-pinned-row="{i}" x="{label - 2}" y="{label + i * cell - 1}" '
                f'width="{size + 4}" height="{cell + 2}" fill="none"/>'
            )
    out.append(
        f'<rect class="query-outline" data-query-row="{query}" x="{label - 2}" y="{label + query * cell - 1}" '
        f'width="{size + 4}" height="{cell + 2}" fill="none"/>'
    )
    if mean_h:
        out.append(_mean_row(tokens, weights, rows, label, label + size + 10, cell, show_numbers))
    if legend:
        out.append(weight_legend(label, label + size + mean_h + 14, size, scale_id, masked_id if any_masked else None))
    out.append("</svg>")
    return "".join(out)


def _mean_row(tokens, weights, rows, x0: float, y: float, cell: int, show_numbers: bool) -> str:
    """The mean of the selected query rows (weights [n, n], rows: indices), one row of cells under the
    grid: where the selected queries look on average. Its cells carry data-mean-j and data-weight."""
    mean = np.asarray(weights, dtype=np.float64)[rows].mean(axis=0)  # [n], sums to 1 (or less if masked)
    names = ", ".join(tokens[i] for i in rows)
    label = f"mean of {len(rows)}"
    out = [
        f'<g class="mean-row" data-rows="{"_".join(map(str, rows))}">',
        f'<text class="row-label mean-label" x="{x0 - 8}" y="{y + cell / 2:.1f}" text-anchor="end" '
        'dominant-baseline="central"><title>'
        f"mean attention of the selected queries: {esc(names)}</title>{label}</text>",
    ]
    labels = percent_labels(mean) if show_numbers else ()
    for j, w in enumerate(mean.tolist()):
        x = x0 + j * cell
        light = text_on(w) != "#fff"
        tip = f"mean of the selected queries ({names}) → key {_quoted(tokens[j])}: {pct(w)}"
        out.append(
            "<rect"
            + attr(
                class_="mean-cell",
                x=x,
                y=y,
                width=cell,
                height=cell,
                fill=viridis(w),
                data_mean_j=j,
                data_weight=data_num(w),
                data_tip=tip,
            )
            + "/>"
        )
        if show_numbers:
            shade = "on-light" if light else "on-dark"
            out.append(
                f'<text class="cell-value {shade}" x="{x + cell / 2}" y="{y + cell / 2}" text-anchor="middle" '
                f'dominant-baseline="central">{esc(labels[j])}</text>'
            )
    out.append("</g>")
    return "".join(out)


def matrix_label(head_name: str) -> str:
    return f"Attention weights of the {head_name} head: rows are queries, columns are keys"


def table_caption(head_name: str) -> str:
    return (
        f"Attention weights of the {head_name} head. Rows are queries, columns are keys; each row's weights "
        "sum to 100 %, but the numbers shown are rounded to 0.1 %, so a row may not add up to exactly 100."
    )


def cell_rect(
    x: int,
    y: int,
    cell: int,
    fill: str,
    light: bool,
    i: int,
    j: int,
    w: float,
    allowed: bool,
    interactive: bool,
    tab_stop: bool,
) -> str:
    """One cell whose tooltip the worker gives on demand, exactly as attr() would write it (every value
    is a number or a colour, nothing to escape): a 33 x 33 matrix is redrawn 3x faster this way."""
    return (
        f'<rect class="{"cell is-light" if light else "cell"}" x="{x}" y="{y}" width="{cell}" height="{cell}" '
        f'fill="{fill}" data-i="{i}" data-j="{j}" data-weight="{data_num(w)}"'
        + ("" if allowed else ' data-masked="true"')
        + (" data-grid-cell" if interactive else "")
        + (' tabindex="0"' if tab_stop else "")
        + " data-tip-src/>"
    )


def cell_paint(w: float, allowed: bool, masked_id: str) -> tuple[str, bool]:
    """(fill, light) of one cell: viridis, or the hatch pattern when masked; light cells get dark text."""
    if not allowed:
        return f"url(#{masked_id})", False
    return viridis(w), text_on(w) != "#fff"


def weights_table(tokens, weights, mask, query: int, head_name: str) -> str:
    """The matrix as a table, on request: the heatmap's numbers for screen readers and for anyone who
    wants them. Until opened it is an inert template (markup.table_on_request): its up-to 1,089 cells
    are no elements of the page, and a slider's patch does not touch them (see render_patch)."""
    head = "".join(f'<th scope="col">{esc(t)}</th>' for t in tokens)
    rows = []
    for i, tok in enumerate(tokens):
        cells = "".join(
            f"<td>{pct(float(weights[i][j])) if bool(mask[i][j]) else 'masked'}</td>" for j in range(len(tokens))
        )
        mark = " (selected query)" if i == query else ""
        rows.append(f'<tr><th scope="row">{esc(tok)}{mark}</th>{cells}</tr>')
    table = (
        f"<table><caption>{esc(table_caption(head_name))}</caption>"
        f'<thead><tr><th scope="col">query \\ key</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    return table_on_request("All weights as a table", table, key=TABLE_KEY)


TABLE_KEY = "weights-table"
TABLE = f'details[data-keep="{TABLE_KEY}"]'


def _matrix_meta(state, computed) -> dict:
    """The svg's hooks: which model, layer and head; T and √d_k; the tokens as the model sees them;
    which are special ([CLS], <s>)."""
    trace = computed.trace
    return {
        "data_head": state.head,
        "data_temperature": f"{trace.temperature:g}",
        "data_dk_scale": f"{trace.scale:g}",
        "data_model": state.model,
        "data_layer": state.layer,
        "data_tokens": json.dumps(list(computed.tokens), ensure_ascii=False),
        "data_special": json.dumps(list(computed.run.special)),
        "data_custom": "true" if getattr(state, "custom", False) else None,
    }  # the reader's attention function


# What a slider (T, √d_k; the activation, for layers after the first), another head, layer or query
# change in the live heatmap: its numbers, its name and which row is the query, not its cells or labels.
# page.py sends a patch (render_patch) instead of new markup when nothing else changed.
NUMBERS_ONLY = frozenset({"temperature", "dk_scale", "activation", "head", "layer", "query"})


def can_patch(state) -> bool:
    """A patch (render_patch) knows the query's one row: with pinned queries (a mean row that moves with
    every number) the heatmap is drawn anew instead."""
    return not state.pinned


def render_patch(state, computed, heads) -> list[dict]:
    """The live heatmap's new numbers (and head name) as patch operations for the bridge (no markup).

    Valid only over markup that render() drew live for a state differing in NUMBERS_ONLY fields:
    the same cells, labels and table, in the same document order. Each operation names elements
    by selector inside the panel and gives one value per element, in document order, joined by
    "\n": {"sel", "attr": name, "values"} sets an attribute, {"sel", "text": True, "values"} the
    text, {"sel", "toggle": class, "values": "0"/"1" per element} a class, {"sel", "remove": name}
    drops an attribute (tooltips cached by the bridge, now stale). A count that does not match
    makes the bridge ask for the whole panel instead, except that an operation with "unopened": key
    may find nothing when the <details data-keep=key> table was never opened: its template is then
    marked stale, and opening it later asks for the panel anew.
    """
    trace, h, n = computed.trace, state.head, len(computed.tokens)
    weights, mask = trace.weights[h], trace.mask  # [n, n], [n, n] bool
    focus = (state.query, strongest_key(weights[state.query], mask[state.query]))  # the grid's tab stop
    masked_id = "attention-matrix-masked"
    show_numbers = shows_numbers(n)  # as attention_matrix_svg decides
    flat_w, flat_mask = weights.ravel().tolist(), mask.ravel().tolist()  # [n*n] in document order
    # cell_paint, for every cell at once
    fills = [c if ok else f"url(#{masked_id})" for c, ok in zip(viridis_many(flat_w), flat_mask)]
    lights = ["1" if ok and text_on(w) != "#fff" else "0" for w, ok in zip(flat_w, flat_mask)]
    values, shades = [], []
    if show_numbers:
        for i in range(n):
            labels = percent_labels(weights[i])  # as attention_matrix_svg writes them
            for j in range(n):
                if flat_mask[i * n + j]:
                    values.append(labels[j])
                    shades.append(lights[i * n + j])
    cells = 'svg[data-view="attention-matrix"] rect[data-i]'
    svg = 'svg[data-view="attention-matrix"]'
    meta = _matrix_meta(state, computed)
    q, cell = state.query, cell_size(n)
    ops = [
        {"sel": svg, "attr": name.replace("_", "-"), "values": str(meta[name])}
        for name in ("data_head", "data_layer", "data_temperature", "data_dk_scale")
    ]
    # the query: its labels, its outline, the row whose cells pick a key, its mark in the table
    flags = "".join("1" if k == q else "0" for k in range(n))
    ops += [
        {"sel": svg, "attr": "data-query", "values": str(q)},
        {"sel": f"{svg} text.col-label", "toggle": "is-query", "values": flags},
        {"sel": f"{svg} text.row-label", "toggle": "is-query", "values": flags},
        {"sel": f"{svg} g.cells", "attr": "data-hover-row", "values": str(q)},
        {"sel": f"{svg} rect.query-outline", "attr": "data-query-row", "values": str(q)},
        {"sel": f"{svg} rect.query-outline", "attr": "y", "values": str(LABEL + q * cell - 1)},
        {
            "sel": f"{TABLE} tbody th",
            "text": True,
            "unopened": TABLE_KEY,
            "values": "\n".join(t + (" (selected query)" if k == q else "") for k, t in enumerate(computed.tokens)),
        },
    ]
    ops += [
        {"sel": svg, "attr": "aria-label", "values": matrix_label(heads[h].name)},
        {"sel": f"{TABLE} caption", "text": True, "unopened": TABLE_KEY, "values": table_caption(heads[h].name)},
        # one tab stop: the query's strongest key under the new weights (the rest stay reachable by arrows)
        {
            "sel": cells,
            "attr": "tabindex",
            "values": "\n".join("0" if (i, j) == focus else "-1" for i in range(n) for j in range(n)),
        },
        {"sel": cells, "attr": "fill", "values": "\n".join(fills)},
        {"sel": cells, "attr": "data-weight", "values": "\n".join(map(data_num, flat_w))},
        {"sel": cells, "toggle": "is-light", "values": "".join(lights)},
        {"sel": cells, "remove": "data-tip"},
    ]
    if show_numbers:
        flags = "".join(shades)
        ops += [
            {"sel": "text.cell-value", "text": True, "values": "\n".join(values)},
            {"sel": "text.cell-value", "toggle": "on-light", "values": flags},
            {"sel": "text.cell-value", "toggle": "on-dark", "values": flags.translate({48: "1", 49: "0"})},
        ]
    ops.append(
        {
            "sel": f"{TABLE} td",
            "text": True,
            "unopened": TABLE_KEY,
            "values": "\n".join(pct(w) if ok else "masked" for w, ok in zip(flat_w, flat_mask)),
        }
    )
    return ops


def render(state, computed, heads, *, tips_on_demand: bool = False) -> str:
    """The selected head's matrix with derivation tooltips, plus its screen-reader table.

    tips_on_demand: leave the tooltips out of the markup (the worker's live redraws); build.py's
    pre-rendered page keeps them inline, so it works before Python is ready."""
    trace = computed.trace
    h = state.head
    tokens = computed.tokens
    svg = attention_matrix_svg(
        tokens,
        trace.weights[h],
        trace.mask,
        state.query,
        heads[h].name,
        meta=_matrix_meta(state, computed),
        tips="on-demand" if tips_on_demand else matrix_tips(tokens, trace, h),
        special=computed.run.special,
        pinned=state.pinned,
    )
    note = rounding_paragraph() if shows_numbers(len(tokens)) else ""
    return f'<div class="figure">{svg}</div>{note}' + weights_table(
        tokens, trace.weights[h], trace.mask, state.query, heads[h].name
    )


# --------------------------------------------------------------------------
# all heads side by side
# --------------------------------------------------------------------------


def _thumbnail_svg(weights, mask, query: int, h: int, summary: str) -> str:
    """One head's matrix, compact: cells only (no numbers, labels or legend), the query row outlined.

    Cell (i, j) is the unit square at (j, i). Cells are grouped into one path per colour
    step (weights rounded to 1/THUMB_LEVELS, invisible at this size) so four 32×32
    thumbnails stay ~60 KB instead of 4096 separate rects.
    """
    n = len(weights)
    levels: dict[int, list[str]] = {}
    masked = []
    allowed = np.asarray(mask, dtype=bool).tolist()
    steps = np.rint(np.asarray(weights, dtype=np.float64) * THUMB_LEVELS).astype(int).tolist()  # [n, n]
    for i in range(n):
        for j in range(n):
            (levels.setdefault(steps[i][j], []) if allowed[i][j] else masked).append(f"M{j} {i}h1v1h-1z")
    out = [
        "<svg"
        + attr(
            data_view="attention-matrix-small",
            data_head=h,
            viewBox=f"-0.25 -0.25 {n + 0.5} {n + 0.5}",
            role="img",
            class_="head-thumb-svg",
            aria_label=summary,
        )
        + ">"
    ]
    for step in sorted(levels):
        out.append(
            f'<path class="thumb-cells" data-level="{step / THUMB_LEVELS:g}" fill="{viridis(step / THUMB_LEVELS)}" '
            f'd="{"".join(levels[step])}"/>'
        )
    if masked:
        out.append(f'<path class="thumb-cells is-masked" d="{"".join(masked)}"/>')
    out.append(
        f'<rect class="thumb-query-outline" x="-0.1" y="{query - 0.1}" width="{n + 0.2}" height="1.2" fill="none"/>'
    )
    out.append("</svg>")
    return "".join(out)


def render_small_multiples(state, computed, heads) -> str:
    """Every head's matrix as a small button that selects it (aria-pressed marks the selected one).

    Each carries the head's name and, in words, where the current query looks most
    in that head: the point of several heads is that these differ.
    """
    trace, tokens, q = computed.trace, computed.tokens, state.query
    buttons = []
    for h, info in enumerate(heads):
        w = trace.weights[h]
        j = strongest_key(w[q], trace.mask[q])
        looks = f"{_quoted(tokens[q])} looks most at {_quoted(tokens[j])} ({pct(float(w[q, j]), 0)})"
        summary = f"Head {h + 1}, {info.name}: attention matrix; {looks}"
        colour = HEAD_COLORS[h % len(HEAD_COLORS)]
        buttons.append(
            "<button"
            + attr(
                type="button",
                class_="head-thumb",
                data_event="set_head",
                data_value=h,
                aria_pressed="true" if h == state.head else "false",
                style=f"--head-colour:{colour}",
            )
            + f'><span class="head-thumb-name">Head {h + 1}: {esc(info.name)}</span>'
            f"{_thumbnail_svg(w, trace.mask, q, h, summary)}"
            f'<span class="head-thumb-looks">{esc(looks)}</span></button>'
        )
    return (
        f'<div class="head-multiples" role="group" aria-label="All {len(heads)} heads on this sentence: '
        f'choose one">{"".join(buttons)}</div>'
    )
