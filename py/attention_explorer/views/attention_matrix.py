"""The attention weight matrix A of one head as an SVG heatmap.

Rows are queries i, columns are keys j, colour is A_ij from 0 to 100 % on a
colour-blind-safe scale. The query row is outlined. Every cell carries data-i,
data-j and data-weight (the trace's number) so tests and tooltips can read it.
"""
from __future__ import annotations

from .colors import text_on, viridis
from .markup import attr, clip_label, data_num, esc, num, pct

CELL = 40          # px per cell in viewBox units
LABEL = 96         # px reserved for row labels (left) and column labels (top)
LEGEND_H = 44      # px below the grid for the 0-100 % legend


def attention_matrix_svg(tokens, weights, mask, query: int, head_name: str, *, cell: int = CELL,
                         label: int = LABEL, legend: bool = True, view: str = "attention-matrix",
                         interactive: bool = True) -> str:
    """weights [n, n] (rows sum to 1 or 0 when fully masked); mask [n, n] bool, True = allowed."""
    n = len(tokens)
    size = n * cell
    width, height = label + size + 8, label + size + (LEGEND_H if legend else 8)
    show_numbers = cell >= 30 and n <= 14
    out = [f'<svg{attr(data_view=view, viewBox=f"0 0 {width} {height}", role="img", class_="heatmap", data_n=n, data_query=query, aria_label=f"Attention weights of the {head_name} head: rows are queries, columns are keys")}>']
    # column labels (keys), rotated
    for j, tok in enumerate(tokens):
        x = label + j * cell + cell / 2
        out.append(f'<text class="col-label" transform="translate({x:.1f},{label - 6}) rotate(-55)">'
                   f'<title>key {j}: {esc(tok)}</title>{esc(clip_label(tok))}</text>')
    # row labels (queries): clicking one makes it the query
    for i, tok in enumerate(tokens):
        y = label + i * cell + cell / 2
        cls = "row-label is-query" if i == query else "row-label"
        ev = attr(data_event="set_query", data_token_index=i) if interactive else ""
        out.append(f'<text{attr(class_=cls)}{ev} x="{label - 8}" y="{y:.1f}" text-anchor="end" '
                   f'dominant-baseline="central"><title>query {i}: {esc(tok)}</title>{esc(clip_label(tok))}</text>')
    for i in range(n):
        for j in range(n):
            w = float(weights[i][j])
            allowed = bool(mask[i][j])
            x, y = label + j * cell, label + i * cell
            fill = viridis(w) if allowed else "url(#masked)"
            title = (f"query {esc(tokens[i])} → key {esc(tokens[j])}: {pct(w)}" if allowed
                     else f"query {esc(tokens[i])} → key {esc(tokens[j])}: masked (future token)")
            out.append(f'<rect{attr(class_="cell", x=x, y=y, width=cell, height=cell, fill=fill, data_i=i, data_j=j, data_weight=data_num(w), data_masked="true" if not allowed else None)}>'
                       f"<title>{title}</title></rect>")
            if show_numbers and allowed:
                out.append(f'<text class="cell-value" x="{x + cell / 2}" y="{y + cell / 2}" fill="{text_on(w)}" '
                           f'text-anchor="middle" dominant-baseline="central">{num(100 * w, 0)}</text>')
    out.append(f'<rect class="query-outline" data-query-row="{query}" x="{label - 2}" y="{label + query * cell - 1}" '
               f'width="{size + 4}" height="{cell + 2}" fill="none"/>')
    if legend:
        out.append(_legend(label, label + size + 14, size))
    out.append('<defs><pattern id="masked" width="6" height="6" patternUnits="userSpaceOnUse" '
               'patternTransform="rotate(45)"><rect width="6" height="6" class="masked-bg"/>'
               '<line x1="0" y1="0" x2="0" y2="6" class="masked-line"/></pattern></defs>')
    out.append("</svg>")
    return "".join(out)


def _legend(x: float, y: float, width: float) -> str:
    stops = "".join(f'<stop offset="{k * 10}%" stop-color="{viridis(k / 10)}"/>' for k in range(11))
    return (f'<g class="legend" aria-hidden="true"><defs><linearGradient id="weight-scale">{stops}</linearGradient></defs>'
            f'<rect x="{x}" y="{y}" width="{width}" height="10" fill="url(#weight-scale)"/>'
            f'<text x="{x}" y="{y + 24}" class="legend-label">0 %</text>'
            f'<text x="{x + width / 2}" y="{y + 24}" text-anchor="middle" class="legend-label">weight A_ij</text>'
            f'<text x="{x + width}" y="{y + 24}" text-anchor="end" class="legend-label">100 %</text></g>')


def render(state, computed, heads) -> str:
    """The selected head's matrix, with a heading naming the head."""
    trace = computed.trace
    h = state.head
    return attention_matrix_svg(computed.tokens, trace.weights[h], trace.mask, state.query, heads[h].name)
