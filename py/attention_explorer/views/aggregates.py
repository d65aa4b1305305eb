"""Attention across heads and layers: the mean over a layer's heads, and attention rollout.

What it teaches: two common summaries of many attention matrices, and what they hide. The mean
over the heads of the selected layer puts the heads in one picture, but heads that disagree
cancel out. Attention rollout (Abnar & Zuidema 2020) multiplies the layers' head-averaged
attention, each mixed half-and-half with the identity for the residual connection:
Ã_l = ½·mean_h A_l + ½·I (rows renormalised), rollout = Ã_L ⋯ Ã_0, so row i reads "how much of
token i after layer L traces back to each input token", if attention weights were the only way
information moved. The prose under the maps says what that assumes and where it misleads. The
numbers come from core.head_mean and core.attention_rollout; this module only draws them.

Hooks: two heatmaps, svg[data-view="attention-mean"] and svg[data-view="attention-rollout"], each
with role="img", an aria-label, data-layer (0-based: the averaged layer / the last layer in the
rollout), data-model, data-n, data-query, data-selected (the selected query rows, "1_5"),
data-tokens and data-special (JSON lists). One rect.cell per matrix cell with data-i (row), data-j
(column), data-weight (decimal) and a short data-tip; cells form a roving-tabindex grid (data-grid /
data-grid-cell). Selected query rows are outlined as in the main heatmap: rect.query-outline
[data-query-row] and rect.pinned-outline[data-pinned-row]. With more than one selected query, a last
row (g.mean-row[data-rows="1_5"], labelled "mean of N") holds their mean: rect.mean-cell with
data-mean-j and data-weight, never data-i. Row labels carry data-event="set_query"
data-token-index=i. After each svg a table.sr-only holds the selected rows' numbers. The sentences
in words are p.aggregates-says[data-says="mean"|"rollout"] and, when heads up to the layer are
switched off, p.aggregates-ablated. When the cells print whole percentages (a short sentence), a
p.rounding-note under both maps says each is rounded on its own, so a row may not add up to 100.
Styles: site/css/aggregates.css (plus the heatmap's own).
"""

from __future__ import annotations

import json

import numpy as np

from .. import core
from .attention_matrix import LABEL, MIN_SCALE, cell_size, shows_numbers, size_style
from .colors import text_on, viridis, viridis_many
from .drawing import hatch_pattern, weight_legend
from .markup import attr, clip_label, data_num, esc, patch_op, pct, percent_labels, rounding_paragraph

MEAN_GAP = 30  # viewBox units between the matrix and the selected queries' mean row (its caption sits there)
LEGEND_H = 44  # below the last row: the 0-100 % scale
MIN_WIDTH = 320  # a short sentence's map still has room for the mean row's caption and the legend
SPECIAL_NOTE = 0.25  # say how much of the query's rollout row ends on special tokens from this share on


def _q(word: str) -> str:
    return f"“{word}”"


def _layer_name(layer: int, n_layers: int) -> str:
    return f"layer {layer + 1}" + (f" of {n_layers}" if n_layers > 1 else "")


def _map_width(n: int) -> int:
    """The viewBox width of an n-token map."""
    return max(LABEL + n * cell_size(n) + 8, MIN_WIDTH)


def _row_mean(matrix, rows):  # [n, n], selected row indices -> [n]: their mean, a summary row (not a token)
    return matrix[list(rows)].mean(axis=0)


# --------------------------------------------------------------------------
# one heatmap
# --------------------------------------------------------------------------


def _heatmap(
    view: str, tokens, matrix, mask, selected, query: int, *, aria: str, scale_label: str, meta: dict, special=()
) -> str:
    """matrix [n, n] (rows sum to 1) as a heatmap; mask [n, n] bool: a cell that is masked and 0 is hatched.

    selected: the query rows to outline, sorted (the query solid, the pinned dashed); with two or more, a last row
    holds their mean (data-mean-j, not data-i: it is not a token's row).
    """
    n = len(tokens)
    cell = cell_size(n)
    size = n * cell
    rows = np.asarray(matrix, dtype=np.float64).tolist()  # [n][n] plain floats
    allowed = np.asarray(mask, dtype=bool).tolist()  # [n][n]
    fills = viridis_many(rows)  # [n*n] in row order
    multi = len(selected) > 1
    mean = _row_mean(np.asarray(rows), selected).tolist() if multi else None  # [n]
    mean_y = LABEL + size + MEAN_GAP
    bottom = (mean_y + cell) if multi else (LABEL + size)
    width, height = _map_width(n), bottom + LEGEND_H
    show_numbers = shows_numbers(n)
    hatch, scale_id = f"{view}-masked", f"{view}-scale"
    any_hatched = any(not allowed[i][j] and rows[i][j] == 0.0 for i in range(n) for j in range(n))
    labels = [clip_label(t) for t in tokens]
    titles = [f"<title>{esc(t)}</title>" if c != t else "" for t, c in zip(tokens, labels)]  # clipped: the full text
    quoted = [_q(clip_label(t)) for t in tokens]  # for tooltips: short, attr() escapes them

    svg = attr(
        data_view=view,
        viewBox=f"0 0 {width} {height}",
        role="img",
        class_="heatmap aggregate-map",
        data_n=n,
        data_query=query,
        data_selected="_".join(map(str, selected)),
        aria_label=aria,
        style=size_style(width),
        **meta,
    )
    out = [f"<svg{svg}>"]
    if any_hatched:
        out.append(f"<defs>{hatch_pattern(hatch)}</defs>")
    for j in range(n):  # column labels, rotated
        cls = "col-label" + (" is-query" if j == query else "") + (" is-special" if j in special else "")
        out.append(
            f'<text class="{cls}" transform="translate({LABEL + j * cell + cell / 2:.1f},{LABEL - 6}) '
            f'rotate(-55)">{titles[j]}{esc(labels[j])}</text>'
        )
    for i in range(n):  # row labels: clicking one makes it the query
        cls = (
            "row-label"
            + (" is-query" if i == query else " is-pinned" if i in selected else "")
            + (" is-special" if i in special else "")
        )
        out.append(
            f'<text{attr(class_=cls, data_event="set_query", data_token_index=i)} x="{LABEL - 8}" '
            f'y="{LABEL + i * cell + cell / 2:.1f}" text-anchor="end" dominant-baseline="central">'
            f"{titles[i]}{esc(labels[i])}</text>"
        )

    # cells: one rect each; a roving-tabindex grid whose tab stop is the query row's largest cell.
    # Written as plain f-strings, not attr(): every value is a number or a colour, and the tooltip's
    # tokens are escaped once (esc_q), so a 64-token pair of maps (8,192 cells) is not 8,192 attr() calls.
    stop = (query, max(range(n), key=lambda j: rows[query][j])) if n else None
    esc_q = [esc(q) for q in quoted]
    out.append('<g class="cells" data-grid>')
    for i in range(n):
        percents = percent_labels(rows[i]) if show_numbers else ()
        y, tip_row = LABEL + i * cell, f"{esc_q[i]} → "
        for j in range(n):
            w = rows[i][j]
            x = LABEL + j * cell
            hatched = not allowed[i][j] and w == 0.0
            light = not hatched and text_on(w) != "#fff"
            fill = f"url(#{hatch})" if hatched else fills[i * n + j]
            out.append(
                f'<rect class="{"cell is-light" if light else "cell"}" x="{x}" y="{y}" width="{cell}" '
                f'height="{cell}" fill="{fill}" data-i="{i}" data-j="{j}" data-weight="{data_num(w)}"'
                + (' data-masked="true"' if hatched else "")
                + " data-grid-cell"
                + (' tabindex="0"' if (i, j) == stop else "")
                + f' data-tip="{tip_row}{esc_q[j]}: {"masked (future token)" if hatched else pct(w)}"/>'
            )
            if show_numbers and not hatched:
                shade = "on-light" if light else "on-dark"
                out.append(
                    f'<text class="cell-value {shade}" x="{x + cell / 2}" y="{y + cell / 2}" '
                    f'text-anchor="middle" dominant-baseline="central">{esc(percents[j])}</text>'
                )
    out.append("</g>")
    for i in selected:  # outlines last, over the cells: as the main heatmap draws them
        kind = "query-outline" if i == query else "pinned-outline"
        row = "data-query-row" if i == query else "data-pinned-row"
        out.append(
            f'<rect class="{kind}" {row}="{i}" x="{LABEL - 2}" y="{LABEL + i * cell - 1}" '
            f'width="{size + 4}" height="{cell + 2}" fill="none"/>'
        )

    if multi:  # the selected queries' mean: a summary row under the matrix, labelled as such
        what = f"mean of the {len(selected)} selected queries"
        out.append(
            f"<g{attr(class_='mean-row', data_rows='_'.join(map(str, selected)))}>"
            f'<text class="mean-caption" x="{LABEL}" y="{mean_y - 9}">{esc(what)}</text>'
            f'<text class="row-label mean-label" x="{LABEL - 8}" y="{mean_y + cell / 2:.1f}" '
            f'text-anchor="end" dominant-baseline="central"><title>{esc(what)}, not a token</title>'
            f"mean of {len(selected)}</text>"
        )
        percents = percent_labels(mean) if show_numbers else ()
        for j, w in enumerate(mean):
            x = LABEL + j * cell
            light = text_on(w) != "#fff"
            rect = attr(
                class_="mean-cell is-light" if light else "mean-cell",
                x=x,
                y=mean_y,
                width=cell,
                height=cell,
                fill=viridis(w),
                data_mean_j=j,
                data_weight=data_num(w),
                data_tip=f"{what} → {quoted[j]}: {pct(w)}",
            )
            out.append(f"<rect{rect}/>")
            if show_numbers:
                out.append(
                    f'<text class="cell-value {"on-light" if light else "on-dark"}" x="{x + cell / 2}" '
                    f'y="{mean_y + cell / 2}" text-anchor="middle" dominant-baseline="central">'
                    f"{esc(percents[j])}</text>"
                )
        out.append("</g>")
    out.append(
        weight_legend(
            LABEL,
            bottom + 14,
            max(size, MIN_WIDTH - LABEL - 8),
            scale_id,
            hatch if any_hatched else None,
            label=scale_label,
            swatch=72,
        )
    )  # 13 px legend text
    out.append("</svg>")
    return "".join(out)


def _table(tokens, matrix, selected, query: int, caption: str) -> str:
    """The selected query rows' numbers (and their mean, with two or more) for screen readers."""
    head = "".join(f'<th scope="col">{esc(t)}</th>' for t in tokens)
    rows = []
    for i in selected:
        mark = " (the query)" if i == query else " (pinned)"
        cells = "".join(f"<td>{pct(float(w))}</td>" for w in matrix[i])
        rows.append(f'<tr><th scope="row">{esc(tokens[i])}{mark}</th>{cells}</tr>')
    if len(selected) > 1:
        cells = "".join(f"<td>{pct(float(w))}</td>" for w in _row_mean(matrix, selected))
        rows.append(f'<tr><th scope="row">mean of the {len(selected)} selected queries</th>{cells}</tr>')
    return (
        f'<table class="sr-only"><caption>{esc(caption)}</caption><thead><tr><th scope="col">row \\ column</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


# --------------------------------------------------------------------------
# the sentences in words
# --------------------------------------------------------------------------


def _target(tokens, row, query: int, special, verb: str) -> str:
    """Where one row puts most, in words (plain text): "most to “dog” (34 %)".

    row [n]. When the largest share is on the token itself or on a special token ([CLS], <s>), the
    next ones follow up to the first other token of the sentence ("most to itself (53 %), then “[CLS]”
    (a special token, 12 %), then “dog” (10 %)"), so a bright diagonal or a bright special column is
    not read as the answer."""
    ranked = sorted(range(len(tokens)), key=lambda k: -row[k])  # stable: ties keep the first token
    parts = []
    for k in ranked:  # the leading non-words (itself, special tokens: at most 1 + len(special)), then a word
        share = pct(float(row[k]), 0)
        if k == query:
            parts.append(f"itself ({share})")
        elif k in special:
            parts.append(f"{_q(tokens[k])} (a special token, {share})")
        else:
            parts.append(f"{_q(tokens[k])} ({share})")
            break
    return f"most {verb} " + ", then ".join(parts)


def _mean_sentence(tokens, mean, query: int, n_heads: int, layer: int, n_layers: int, special) -> str:
    where = _target(tokens, mean[query].tolist(), query, special, "at")
    return f"Averaged over the {n_heads} heads of {_layer_name(layer, n_layers)}, {_q(tokens[query])} looks {where}."


def _rollout_sentence(tokens, rollout, query: int, layer: int, special) -> str:
    row = rollout[query].tolist()
    where = _target(tokens, row, query, special, "to")
    said = f"In the rollout up to layer {layer + 1}, {_q(tokens[query])} traces {where}."
    if max(range(len(row)), key=lambda k: row[k]) == query:
        said += " Rollout keeps half of every layer on the token itself, for the residual connection."
    on_special = float(sum(row[k] for k in special if k != query))
    if layer > 0 and on_special >= SPECIAL_NOTE:
        names = " and ".join(dict.fromkeys(tokens[k] for k in special if k != query))
        said += f" {pct(on_special, 0)} of its row has piled onto {names}: see below."
    return said


def _ablated_note(run, layer: int) -> str:
    """One line when heads up to the selected layer are switched off: they are still averaged in."""
    off = []
    for l in range(layer + 1):
        on = run.layers[l].head_on
        if on is not None:
            off += [(l, h) for h in range(len(on)) if not bool(on[h])]
    if not off:
        return ""
    names = ", ".join(f"layer {l + 1} head {h + 1}" for l, h in off)
    return (
        f'<p class="aggregates-ablated">Switched off: {esc(names)}. Both maps still average over every head '
        "of their layers, switched-off ones included (as rollout is defined): switching a head off zeroes its "
        "output, but its attention weights are still computed. What changes is the input of later layers, and "
        "so their attention.</p>"
    )


def _notes(n_layers: int, layer: int, n_heads: int, special_names: str) -> str:
    """What the mean hides, what rollout assumes, where it misleads (plain paragraphs, no headings).

    special_names: the model's special tokens, plain text (escaped here)."""
    if n_layers == 1:
        depth = (
            "This model has one layer, so its rollout is just ½·(the mean map) + ½·I: the same "
            "picture with every row pulled halfway onto its own token. There is nothing to multiply; it "
            "shows only what the residual-as-half assumption does."
        )
    elif layer == 0:
        depth = (
            "Up to layer 1 the rollout is ½·mean + ½·I of layer 1 alone; choose a later layer to see the "
            "layers multiply."
        )
    else:
        depth = f"Here it multiplies layers 1 to {layer + 1}: Ã<sub>{layer + 1}</sub> ⋯ Ã<sub>1</sub>."
    sinks = (
        f"special tokens such as {special_names}, the first tokens or separators"
        if special_names
        else "the first tokens or separators"
    )
    return (
        '<div class="aggregates-notes">'
        f"<p><strong>What the mean hides.</strong> The mean map averages the {n_heads} heads of the layer, and "
        "heads that disagree cancel out: if one head sends “it” to “cat” and another to “dog”, the mean shows a "
        "half-and-half row that no head draws, and one sharp head is diluted by the others. Look at the heads "
        "one by one (every head of every layer, above) before reading meaning into the mean.</p>"
        "<p><strong>What rollout assumes.</strong> Rollout (Abnar &amp; Zuidema 2020) follows attention through "
        "the layers: each layer becomes Ã = ½·mean<sub>h</sub> A + ½·I (rows renormalised to 100 %), and the "
        f"layers multiply. {depth} It assumes that the attention weights are the only way information "
        "moves between tokens and that the residual connection carries exactly half of every token; it ignores "
        "how large each value vector is and what W<sub>O</sub> does with it (a head can attend strongly and "
        "write almost nothing), ignores the feed-forward network and LayerNorm, and averages the heads as if "
        "they were alike.</p>"
        "<p><strong>Where it misleads.</strong> A product of many such matrices blurs with depth: its rows grow "
        f"alike, as if every token came from the same few places, and they tend to pile onto {esc(sinks)}, "
        "where heads park attention they do not use. Neither map explains the output: a large share says "
        "information could have flowed from there, not that the model used it. Jain &amp; Wallace (2019, "
        "“Attention is not Explanation”) found that very different attention weights can give the same "
        "prediction and that attention often disagrees with gradient-based importance (see also Wiegreffe &amp; "
        "Pinter 2019, “Attention is not not Explanation”). Switching heads off and watching what changes (the "
        "next panel) is a stronger test.</p>"
        "</div>"
    )


# --------------------------------------------------------------------------
# the panel
# --------------------------------------------------------------------------


def _summaries(computed):
    """(mean [n, n], rollout [n, n]) of the selected layer; they do not depend on the query."""
    weights = [t.weights for t in computed.run.layers]  # per layer [n_heads, n, n]
    mean = np.asarray(core.head_mean(weights[computed.layer]), dtype=np.float64)  # [n, n]
    rollout = np.asarray(core.attention_rollout(weights, upto=computed.layer), dtype=np.float64)  # [n, n]
    return mean, rollout


def _arias(n_heads: int, where: str, words: str, mean_row: str) -> tuple[str, str]:
    """The two maps' accessible names (mean, rollout)."""
    return (
        f"Heatmap: mean attention over the {n_heads} heads of {where}; rows are queries, columns are "
        f"keys, each row sums to 100 %. Outlined: {words}.{mean_row}",
        f"Heatmap: attention rollout up to {where} (Abnar & Zuidema 2020); row i is how much of token i "
        f"after that layer traces back to each input token, each row sums to 100 %. Outlined: "
        f"{words}.{mean_row}",
    )


# Another query changes which row is outlined and what the sentences say, not the maps: with no pinned
# queries (one outlined row, no mean row) it is a patch, not ~100 kB of markup for the trained model.
NUMBERS_ONLY = frozenset({"query"})


def can_patch(state) -> bool:
    """One selected row (the query's): pinned queries add outlines, table rows and a mean row."""
    return not state.pinned


def render_patch(state, computed) -> list[dict]:
    """Patch operations (attention_matrix.render_patch describes them) that bring live markup drawn for
    another query (and no pinned ones) to this state's."""
    run, tokens = computed.run, computed.tokens
    n, layer, q = len(tokens), computed.layer, state.query
    n_heads = int(run.layers[layer].weights.shape[0])
    mean, rollout = _summaries(computed)
    special = tuple(run.special)
    where = _layer_name(layer, len(run.layers))
    arias = _arias(n_heads, where, f"{_q(tokens[q])} ({q})", "")
    ops = []
    for view, matrix, aria in (("attention-mean", mean, arias[0]), ("attention-rollout", rollout, arias[1])):
        svg = f'svg[data-view="{view}"]'
        stop = max(range(n), key=lambda j: matrix[q][j])
        ops += [
            patch_op(svg, [q], attr="data-query"),
            patch_op(svg, [q], attr="data-selected"),
            patch_op(svg, [aria], attr="aria-label"),
            {"sel": f"{svg} text.col-label", "toggle": "is-query", "values": [str(int(j == q)) for j in range(n)]},
            {"sel": f"{svg} text.row-label", "toggle": "is-query", "values": [str(int(i == q)) for i in range(n)]},
            {"sel": f"{svg} rect.cell[tabindex]", "remove": "tabindex"},
            patch_op(f'{svg} rect.cell[data-i="{q}"][data-j="{stop}"]', ["0"], attr="tabindex"),
            patch_op(f"{svg} rect.query-outline", [q], attr="data-query-row"),
            patch_op(f"{svg} rect.query-outline", [LABEL + q * cell_size(n) - 1], attr="y"),
        ]
    ops += [
        patch_op("table.sr-only tbody th", [f"{tokens[q]} (the query)"] * 2, text=True),
        patch_op("table.sr-only td", [pct(float(w)) for m in (mean, rollout) for w in m[q]], text=True),
        patch_op(
            "p.aggregates-says",
            [
                _mean_sentence(tokens, mean, q, n_heads, layer, len(run.layers), special),
                _rollout_sentence(tokens, rollout, q, layer, special),
            ],
            text=True,
        ),
    ]
    return ops


def render(state, computed) -> str:
    """The selected layer's mean over heads next to the rollout up to it, their sentences and notes."""
    run, tokens = computed.run, computed.tokens
    n, layer, n_layers = len(tokens), computed.layer, len(run.layers)
    n_heads = int(run.layers[layer].weights.shape[0])
    mean, rollout = _summaries(computed)  # [n, n] each
    mask = computed.trace.mask  # [n, n] bool, the same for every layer
    query = state.query
    selected = tuple(i for i in state.queries if 0 <= i < n)
    special = tuple(run.special)
    words = ", ".join(f"{_q(tokens[i])} ({i})" for i in selected)  # with positions: a word can repeat
    meta = {
        "data_layer": layer,
        "data_model": state.model,
        "data_tokens": json.dumps(list(tokens), ensure_ascii=False),
        "data_special": json.dumps(list(special)),
    }
    mean_row = f" A last row is the mean of the {len(selected)} selected queries." if len(selected) > 1 else ""
    where = _layer_name(layer, n_layers)
    special_names = " and ".join(dict.fromkeys(tokens[k] for k in special))  # "[CLS] and [SEP]"

    mean_aria, roll_aria = _arias(n_heads, where, words, mean_row)
    mean_svg = _heatmap(
        "attention-mean",
        tokens,
        mean,
        mask,
        selected,
        query,
        aria=mean_aria,
        scale_label="mean weight",
        meta=meta,
        special=special,
    )
    roll_svg = _heatmap(
        "attention-rollout",
        tokens,
        rollout,
        mask,
        selected,
        query,
        aria=roll_aria,
        scale_label="share traced back",
        meta=meta,
        special=special,
    )
    mean_title = f"Mean over the {n_heads} heads of {where}"
    roll_title = f"Rollout up to {where}" if n_layers > 1 else "Rollout of the one layer: ½·mean + ½·I"
    mean_table = _table(tokens, mean, selected, query, f"{mean_title}: the selected query rows, in percent per key.")
    roll_table = _table(
        tokens,
        rollout,
        selected,
        query,
        f"{roll_title}: the selected rows, in percent traced back to each input token.",
    )
    mean_says = _mean_sentence(tokens, mean, query, n_heads, layer, n_layers, special)
    roll_says = _rollout_sentence(tokens, rollout, query, layer, special)
    says = (
        f'<p class="aggregates-says" data-says="mean">{esc(mean_says)}</p>'
        f'<p class="aggregates-says" data-says="rollout">{esc(roll_says)}</p>'
    )
    if len(selected) > 1:
        says += (
            f'<p class="aggregates-pinned">Outlined rows: {esc(words)}. The row under each map is the mean '
            f"of these {len(selected)} selected queries, not a token.</p>"
        )
    # side by side only when both fit at a readable size (the svg's min-width): each figure's flex-basis
    basis = f"flex-basis:{round(_map_width(n) * MIN_SCALE)}px"
    return (
        '<div class="aggregates">'
        '<div class="aggregates-maps">'
        f'<figure class="aggregates-map" style="{basis}"><figcaption>{esc(mean_title)}</figcaption>'
        f'<div class="figure">{mean_svg}</div>{mean_table}</figure>'
        f'<figure class="aggregates-map" style="{basis}"><figcaption>{esc(roll_title)}</figcaption>'
        f'<div class="figure">{roll_svg}</div>{roll_table}</figure>'
        "</div>"
        f"{rounding_paragraph() if shows_numbers(n) else ''}"  # one note for both maps: they share n
        f"{says}{_ablated_note(run, layer)}"
        f"{_notes(n_layers, layer, n_heads, special_names)}"
        "</div>"
    )
