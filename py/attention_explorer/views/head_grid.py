"""All heads at a glance: every layer × every head as a small attention matrix.

What it teaches: a model is many heads, and they look at the sentence in different
ways. Each small square is one head's weight matrix A (rows = queries, columns =
keys, brighter = more weight, viridis); rows of the grid are layers, columns are
heads (1 × 4 for the designed model, 6 × 12 for the trained one). The selected
queries' rows are outlined in every square (the query solid, pinned queries dashed),
so one glance shows which heads make that token look far, look back, or rest on
[CLS]. Each square is a button that selects its head (and layer) everywhere; its
name, and in words where the query looks most, are in its accessible name. Heads
switched off (ablation) are marked "off": their pattern is still computed, their
output is dropped.

Hooks: div.head-grid[data-view="head-grid"] with data-layers, data-heads (per layer),
data-levels (colour steps: a weight w is painted viridis(round(w · levels) / levels)),
data-query and data-rows (the selected queries, "1 5"); each thumbnail is
button.hg-thumb[data-event="pick_head"][data-value="l,h"] (0-based) with aria-pressed,
.is-off and a visible span.hg-off when switched off, span.hg-name its head's name; inside it
svg[data-view="head-thumb"][data-layer][data-head], viewBox "0 0 n n" (cell (i, j) is the unit
square at x = j, y = i): rect.hg-bg paints every cell in the thumbnail's most common colour step,
then one <path fill> per other step holds its cells as runs along a row ("M{j} {i}h{k}v1h-{k}z",
k = 1 for a single cell), masked cells one path.is-masked; the selected rows are
rect.thumb-row[data-row=i] (.is-query or .is-pinned). The grid scrolls sideways inside its own
.figure (bridge.js marks it .is-scrollable when it overflows; head-grid.css then shows a cue).
No ids. Markup: ~140 kB and ~1,400 elements for 6 × 12 heads at 16 tokens; another query, head
or layer is a patch of the texts, labels and outlined rows (render_patch), unless queries are pinned.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .colors import viridis
from .markup import attr, esc, patch_op, pct

LEVELS = 16  # colour steps: weights rounded to 1/16 (6.25 %); at thumbnail size finer steps are invisible
_FILLS = tuple(viridis(k / LEVELS) for k in range(LEVELS + 1))  # step -> "#rrggbb"
_MASKED = LEVELS + 1  # the step key of a masked cell


def _quoted(tok: str) -> str:
    return f"“{tok}”"


@lru_cache(maxsize=4)
def _run_parts(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Path pieces for n tokens, as object arrays (NumPy adds them elementwise as strings):
    [n*n] "M{j} {i}h" for cell (i, j) = (c // n, c % n), and [n+1] "{k}v1h-{k}z" for a run of k."""
    starts = np.array([f"M{j} {i}h" for i in range(n) for j in range(n)], dtype=object)
    tails = np.array([f"{k}v1h-{k}z" for k in range(n + 1)], dtype=object)
    return starts, tails


def _cell_paths(weights, masks):
    """The cells of every head of every layer as path data, grouped by colour step, in one pass.

    weights [L, H, n, n]; masks [L, n, n] bool (True = allowed). Returns (background, groups):
    background[t] is the most common step among thumbnail t's allowed cells (t = l * H + h), drawn
    as one rect under the rest, so its cells need no path; groups[t] is [(step, d), ...] in
    ascending step order (_MASKED last) for the other cells. Equal neighbours in a row are one
    run: cell (i, j) alone is "M{j} {i}h1v1h-1z", a run of k from (i, j) "M{j} {i}h{k}v1h-{k}z".
    Sorting and run-finding are NumPy over all 18,000 cells of a 6 × 12 grid at 16 tokens; Python
    only formats the runs (72 thumbnails would otherwise be ~240 kB of path data).
    """
    n_layers, n_heads, n, _ = weights.shape
    thumbs, stride = n_layers * n_heads, LEVELS + 2
    # np.intp: bincount wants the platform index type, int32 in Pyodide (wasm32), int64 here
    steps = np.rint(np.asarray(weights, dtype=np.float64) * LEVELS).astype(np.intp)  # [L, H, n, n]
    np.clip(steps, 0, LEVELS, out=steps)
    steps = np.where(np.asarray(masks, dtype=bool)[:, None], steps, _MASKED).reshape(thumbs, n, n)  # [T, n, n]
    # the background: each thumbnail's most common step (masked cells excluded)
    flat = steps.reshape(thumbs, n * n)
    offsets = np.arange(thumbs, dtype=np.intp)[:, None] * stride  # [T, 1]
    hist = np.bincount((flat + offsets).ravel(), minlength=thumbs * stride).reshape(thumbs, stride)  # [T, steps]
    hist[:, _MASKED] = -1
    background = hist.argmax(axis=1)  # [T]
    # runs: a cell starts one unless it continues its left neighbour's step
    starts = np.ones((thumbs, n, n), dtype=bool)
    starts[:, :, 1:] = steps[:, :, 1:] != steps[:, :, :-1]
    t_idx, i_idx, j_idx = np.nonzero(starts)  # [R] each, row-major
    flat_starts = (t_idx * n + i_idx) * n + j_idx  # [R] position in steps.ravel()
    # a run ends where the next one starts, or at its row's end
    next_start = np.append(flat_starts[1:], thumbs * n * n)
    row_end = (t_idx * n + i_idx + 1) * n
    length = np.minimum(next_start, row_end) - flat_starts  # [R]
    run_step = steps.ravel()[flat_starts]  # [R]
    keep = run_step != background[t_idx]
    t_idx, i_idx, j_idx, length, run_step = (a[keep] for a in (t_idx, i_idx, j_idx, length, run_step))
    order = np.argsort(t_idx * stride + run_step, kind="stable")  # by thumbnail, step; row-major
    counts = np.bincount(t_idx * stride + run_step, minlength=thumbs * stride).tolist()
    heads_, tails = _run_parts(n)
    pieces = (heads_[(i_idx * n + j_idx)[order]] + tails[length[order]]).tolist()  # [R'] "M{j} {i}h" + "{k}v1h-{k}z"
    groups, at = [], 0
    for t in range(thumbs):
        mine = []
        for step in range(stride):
            c = counts[t * stride + step]
            if c:
                mine.append((step, "".join(pieces[at : at + c])))
                at += c
        groups.append(mine)
    return background.tolist(), groups


def _thumb_svg(background: int, groups, n: int, layer: int, head: int, rows, query: int) -> str:
    """One head's matrix: its background step as a rect, a path per other colour step, the masked
    cells, and the selected rows outlined (the query's stronger), sticking out on both sides."""
    pad = round(max(0.25, n / 40), 2)  # viewBox units the row outline sticks out each side: ~2-3 px at any size
    out = [
        f'<svg data-view="head-thumb" data-layer="{layer}" data-head="{head}" viewBox="0 0 {n} {n}" '
        f'class="hg-svg" role="img" aria-label="attention matrix, layer {layer + 1} head {head + 1}">'
        f'<rect class="hg-bg" fill="{_FILLS[background]}" width="{n}" height="{n}"/>'
    ]
    for step, d in groups:
        if step == _MASKED:
            out.append(f'<path class="is-masked" d="{d}"/>')
        else:
            out.append(f'<path fill="{_FILLS[step]}" d="{d}"/>')
    for i in rows:
        kind = "is-query" if i == query else "is-pinned"
        out.append(
            f'<rect class="thumb-row {kind}" data-row="{i}" x="{-pad:g}" y="{i}" width="{n + 2 * pad:g}" height="1"/>'
        )
    out.append("</svg>")
    return "".join(out)


def _describe(state, computed):
    """What the grid says about the query, head by head: (rows, per-thumbnail dicts with name, off,
    pressed, label and table cell text, caption, table caption). Shared by render and render_patch."""
    run, model = computed.run, computed.model
    tokens = run.tokens
    n = len(tokens)
    q = state.query
    rows = tuple(i for i in state.queries if 0 <= i < n)
    weights = np.stack([t.weights for t in run.layers])  # [L, H, n, n]
    masks = np.stack([np.asarray(t.mask, dtype=bool) for t in run.layers])  # [L, n, n]
    n_layers, n_heads = weights.shape[:2]
    # where the query looks most in each head: its strongest allowed key (first on ties)
    q_rows = np.where(masks[:, None, q, :], np.asarray(weights[:, :, q, :], dtype=np.float64), -1.0)  # [L, H, n]
    best = q_rows.argmax(axis=-1).tolist()  # [L][H] key index
    best_w = np.take_along_axis(q_rows, q_rows.argmax(axis=-1)[..., None], -1)[..., 0].tolist()  # [L][H]
    on = [
        [True] * n_heads if t.head_on is None else np.asarray(t.head_on, dtype=bool).tolist() for t in run.layers
    ]  # [L][H]
    q_tok = _quoted(tokens[q])
    thumbs = []
    for l in range(n_layers):
        for h in range(n_heads):
            name = model.heads[l][h].name
            j = best[l][h]
            share = pct(max(best_w[l][h], 0.0), 0)
            looks = f"{q_tok} looks most at {_quoted(tokens[j])} ({share})"
            off = not on[l][h]
            thumbs.append(
                dict(
                    name=name,
                    off=off,
                    pressed="true" if (l, h) == (state.layer, state.head) else "false",
                    # the name must contain the button's visible text (its name, then "off"), in that order
                    label=f"Layer {l + 1}, head {h + 1}: {name}{' off (switched off)' if off else ''}. {looks}",
                    cell=f"{name}{' (off)' if off else ''}: {_quoted(tokens[j])} {share}",
                )
            )
    pinned = [i for i in rows if i != q]
    rows_text = f"The outlined row is the query {q_tok}"
    if pinned:
        rows_text += "; dashed rows are the pinned queries " + ", ".join(_quoted(tokens[i]) for i in pinned)
    any_off = not all(all(layer) for layer in on)
    caption = (
        "Each small square is one head's attention matrix on this sentence: rows are queries, "
        f"columns are keys, brighter means more weight. {rows_text}. Click a square to select "
        "that head everywhere."
        + (
            " Heads marked “off” are switched off: their pattern is still computed, but their output is dropped."
            if any_off
            else ""
        )
    )
    size = f"{n_layers} layer{'s' if n_layers != 1 else ''} × {n_heads} heads"
    table_caption = (
        f"Where the query {q_tok} looks most in each head ({size}): the head's name, the key "
        "with the largest weight, and that weight"
    )
    return dict(
        rows=rows,
        weights=weights,
        masks=masks,
        n_layers=n_layers,
        n_heads=n_heads,
        size=size,
        thumbs=thumbs,
        caption=caption,
        table_caption=table_caption,
    )


def render(state, computed) -> str:
    """Every layer (rows) × every head (columns) as a small matrix button, a caption, and an sr-only table."""
    d = _describe(state, computed)
    n, q, rows = len(computed.run.tokens), state.query, d["rows"]
    n_layers, n_heads = d["n_layers"], d["n_heads"]
    background, groups = _cell_paths(d["weights"], d["masks"])

    grid, table_rows = [], []
    head_cols = "".join(f"<span>H{h + 1}</span>" for h in range(n_heads))
    grid.append(f'<div class="hg-row hg-colheads" aria-hidden="true"><span></span>{head_cols}</div>')
    for l in range(n_layers):
        buttons, cells = [], []
        for h in range(n_heads):
            t = d["thumbs"][l * n_heads + h]
            buttons.append(
                f'<button type="button" class="hg-thumb{" is-off" if t["off"] else ""}" data-event="pick_head" '
                f'data-value="{l},{h}" aria-pressed="{t["pressed"]}"{attr(aria_label=t["label"], title=t["name"])}>'
                + _thumb_svg(background[l * n_heads + h], groups[l * n_heads + h], n, l, h, rows, q)
                + f'<span class="hg-name">{esc(t["name"])}</span>'
                + (' <span class="hg-off">off</span>' if t["off"] else "")
                + "</button>"
            )  # spaced: "name off"
            cells.append(f"<td>{esc(t['cell'])}</td>")
        grid.append(
            f'<div class="hg-row" role="group" aria-label="Layer {l + 1}">'
            f'<span class="hg-layer" aria-hidden="true">Layer {l + 1}</span>{"".join(buttons)}</div>'
        )
        table_rows.append(f'<tr><th scope="row">Layer {l + 1}</th>{"".join(cells)}</tr>')

    table_head = "".join(f'<th scope="col">Head {h + 1}</th>' for h in range(n_heads))
    table = (
        f'<table class="sr-only"><caption>{esc(d["table_caption"])}</caption>'
        f'<thead><tr><th scope="col">Layer</th>{table_head}</tr></thead>'
        f"<tbody>{''.join(table_rows)}</tbody></table>"
    )
    return (
        "<div"
        + attr(
            class_="head-grid",
            data_view="head-grid",
            data_layers=n_layers,
            data_heads=n_heads,
            data_levels=LEVELS,
            data_query=q,
            data_rows=" ".join(map(str, rows)),
        )
        + f'><div class="figure hg-scroll">'
        f'<div class="hg-grid" role="group" aria-label="Every head of every layer ({d["size"]}): choose one" '
        f'style="--heads:{n_heads}">{"".join(grid)}</div></div>'
        f'<p class="hg-caption">{esc(d["caption"])}</p>{table}</div>'
    )


# Another query, head or layer changes what the grid says and which rows are outlined, not one cell's
# colour: with no pinned queries (one outlined row a thumbnail) those are patched, not redrawn
# (72 thumbnails of the trained model: ~70 kB of markup and ~1,400 elements a click).
NUMBERS_ONLY = frozenset({"query", "head", "layer"})


def can_patch(state) -> bool:
    """One outlined row per thumbnail (the query's): pinned queries add rows, and the grid is redrawn."""
    return not state.pinned


def render_patch(state, computed) -> list[dict]:
    """The patch operations (attention_matrix.render_patch describes them) that bring live grid markup
    drawn for a state differing in NUMBERS_ONLY fields to this state's."""
    d = _describe(state, computed)
    q, thumbs = state.query, d["thumbs"]
    one = len(thumbs)

    op = patch_op
    return [
        op("div.head-grid", [q], attr="data-query"),
        op("div.head-grid", [" ".join(map(str, d["rows"]))], attr="data-rows"),
        op("rect.thumb-row", [q] * one, attr="y"),
        op("rect.thumb-row", [q] * one, attr="data-row"),
        op("button.hg-thumb", [t["pressed"] for t in thumbs], attr="aria-pressed"),
        op("button.hg-thumb", [t["label"] for t in thumbs], attr="aria-label"),
        op("p.hg-caption", [d["caption"]], text=True),
        op("table.sr-only caption", [d["table_caption"]], text=True),
        op("table.sr-only td", [t["cell"] for t in thumbs], text=True),
    ]
