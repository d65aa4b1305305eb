"""Two sentences, one head: the same head's attention on a sentence and on a second one beside it.

What it teaches: attention follows the words, not what they mean. A Winograd pair
("...because it was too big" / "...too small") flips a reader's answer to "what
is 'it'?"; the pictures show whether the head's attention flips too, and the
difference map shows how much each shared cell moved. The verdict says in words
where the query looks in each sentence and, for a ready-made pair, whether that
is the word a reader would pick: plainly "the model gets this one wrong" when not.

Hooks: the section is div[data-view="pair"] with data-state ("empty" | "shown" |
"unavailable"), and when shown: data-preset (the matching preset's id, or ""),
data-query-a / data-query-b (the query's token index in each sentence; B's is the
token aligned with A's query, "" when the edit changed it), data-look-a /
data-look-b (the strongest word key of the query's row, pairs.strongest_word;
"" when none) and data-verdict-a / data-verdict-b ("right" | "wrong" | "": no
expectation to compare with). The heatmaps are svg[data-view="pair-a"] and
svg[data-view="pair-b"]: role="img", an aria-label, one rect.cell per (query i,
key j) with data-i, data-j, data-weight (the trace's number), a roving-tabindex
grid (data-grid / data-grid-cell) whose cells show their number on focus, the
query row outlined (.query-outline[data-query-row]). The difference is
svg[data-view="pair-diff"] over the aligned tokens only: rect.diff-cell with
data-i / data-j (the row and column in the difference grid, so arrow keys
walk it), data-a-i, data-a-j, data-b-i, data-b-j (the token indices in A and
B) and data-delta = A[a_i, a_j] − B[b_i, b_j]. One table.sr-only gives the
query row's numbers. Ready-made pairs are buttons data-event="pair_preset"
data-value="<id>" (aria-pressed on the one shown). Styles: site/css/pairs.css.
"""

from __future__ import annotations

import math

from .. import pairs
from .attention_matrix import LABEL, cell_paint, cell_size, size_style
from .colors import viridis
from .drawing import hatch_pattern, weight_legend
from .markup import attr, clip_label, data_num, esc, num, pct

MAX_CELL = 26  # px per cell in viewBox units: two maps side by side fit a laptop's column
LEGEND_MIN = 230  # the legends' width at least: their end labels must not overlap on a short sentence
LEVELS = 40  # colour steps of the painted matrices (2.5 % of weight each: finer is invisible)
LEGEND_H = 44  # room under the grid for the legend
MIN_LIMIT = 0.1  # the difference scale spans at least ±10 points: a 0.1-point wobble stays pale
FAINT = 0.1  # a strongest word below this share of the row is no pick ("rests on <s>", "spreads thinly")
SPECIAL_NOTE = 0.2  # say how much of the query's row rests on special tokens when it is at least this
SAME = 0.005  # largest |difference| below which the two sentences count as "the same attention"


def _q(word: str) -> str:
    """A token or word in curly quotes, escaped for element text."""
    return f"“{esc(word)}”"


def _points(delta: float) -> str:
    """A difference of two weights in percentage points, signed: '+12.3 pts', '−4.0 pts'."""
    s = num(100 * delta, 1)
    return ("+" + s if not s.startswith("−") and s != "0.0" else s) + " pts"


def _head_words(state, computed) -> str:
    """'layer 4 of 6, head 2 ([CLS], 0.47)' or 'head 1 (Coreference)': the head both pictures show."""
    name = computed.heads[state.head].name
    where = f"layer {state.layer + 1} of {computed.model.n_layers}, " if computed.model.n_layers > 1 else ""
    return f"{where}head {state.head + 1} ({name})"


# ---------------------------------------------------------------------------------------------------
# the pictures
# ---------------------------------------------------------------------------------------------------


def _cell(n: int) -> int:
    return min(MAX_CELL, cell_size(n))


def _runs(levels, i: int) -> str:
    """Path data for row i of a unit grid, one 'M j i h w v1 h-w z' per run of equal keys:
    levels[j] is the key of cell (i, j); runs keyed None are left out. Returns {key: path data}."""
    out: dict = {}
    j, n = 0, len(levels)
    while j < n:
        k = j
        while k + 1 < n and levels[k + 1] == levels[j]:
            k += 1
        if levels[j] is not None:
            out[levels[j]] = out.get(levels[j], "") + f"M{j} {i}h{k - j + 1}v1h-{k - j + 1}z"
        j = k + 1
    return out


def _painted(keys) -> dict:
    """{key: path data} for a [n][m] grid of keys (None: not drawn), cell (i, j) = unit square at (j, i)."""
    paths: dict = {}
    for i, row in enumerate(keys):
        for key, d in _runs(row, i).items():
            paths[key] = paths.get(key, "") + d
    return paths


def _heatmap(tokens, weights, mask, query, special, view: str, sentence: str, aria: str, events=None) -> str:
    """One sentence's matrix of the head: weights [n, n] on viridis, mask [n, n] (True = allowed).

    The matrix is one <path> per colour step (weights rounded to 1/LEVELS: finer steps are invisible),
    so three matrices of 64 word pieces stay light; the query's row is drawn again as real cells
    (rect.cell, data-i, data-j, data-weight, a tooltip, walkable with the arrow keys). query: the row
    to outline (None: no query in this sentence). events: {row i: A's token index} for row labels that
    make that token the query (set_query), when the row's token is in sentence A."""
    n = len(tokens)
    cell = _cell(n)
    size = n * cell
    width, height = LABEL + max(size, LEGEND_MIN) + 8, LABEL + size + LEGEND_H
    masked_id = f"{view}-masked"
    rows = [[float(w) for w in row] for row in weights]  # [n][n] plain floats
    allowed = [[bool(m) for m in row] for row in mask]  # [n][n]
    any_masked = not all(all(r) for r in allowed)
    out = [
        "<svg"
        + attr(
            data_view=view,
            viewBox=f"0 0 {width} {height}",
            role="img",
            class_="heatmap pair-map",
            data_n=n,
            data_query=query if query is not None else "",
            data_levels=LEVELS,
            aria_label=aria,
            style=size_style(width),
        )
        + ">"
    ]
    if any_masked:
        out.append(f"<defs>{hatch_pattern(masked_id)}{hatch_pattern(masked_id + '-unit', cell)}</defs>")
    out.append(_labels(tokens, query, special, cell, events or {}))
    keys = [[round(w * LEVELS) if ok else "masked" for w, ok in zip(r, a)] for r, a in zip(rows, allowed)]
    out.append(f'<g class="pair-cells" transform="translate({LABEL} {LABEL}) scale({cell})">')
    for key, d in sorted(_painted(keys).items(), key=lambda kv: (kv[0] == "masked", str(kv[0]).zfill(4))):
        if key == "masked":  # a hatch drawn in unit squares: the pattern is in user units, scaled too
            out.append(f'<path class="pair-level is-masked" fill="url(#{masked_id}-unit)" d="{d}"/>')
        else:
            out.append(
                f'<path class="pair-level" data-level="{key / LEVELS:g}" fill="{viridis(key / LEVELS)}" d="{d}"/>'
            )
    out.append("</g>")
    if query is not None:
        stop = max(range(n), key=lambda j: rows[query][j])
        out.append('<g class="cells" data-grid>')
        for j in range(n):
            w, ok = rows[query][j], allowed[query][j]
            fill, light = cell_paint(w, ok, masked_id)
            tip = f"{sentence}: “{tokens[query]}” → “{tokens[j]}”: " + (pct(w) if ok else "masked (future token)")
            out.append(
                "<rect"
                + attr(
                    class_="cell is-light" if light else "cell",
                    x=LABEL + j * cell,
                    y=LABEL + query * cell,
                    width=cell,
                    height=cell,
                    fill=fill,
                    data_i=query,
                    data_j=j,
                    data_weight=data_num(w),
                    data_masked="true" if not ok else None,
                    data_grid_cell=True,
                    tabindex=0 if j == stop else None,
                    data_tip=tip,
                )
                + "/>"
            )
        out.append("</g>")
        out.append(
            f'<rect class="query-outline" data-query-row="{query}" x="{LABEL - 2}" '
            f'y="{LABEL + query * cell - 1}" width="{size + 4}" height="{cell + 2}" fill="none"/>'
        )
    out.append(
        weight_legend(
            LABEL, LABEL + size + 14, max(size, LEGEND_MIN), f"{view}-scale", masked_id if any_masked else None
        )
    )
    out.append("</svg>")
    return "".join(out)


def _labels(tokens, query, special, cell: int, events: dict) -> str:
    """Column labels (keys, rotated) and row labels (queries); the query's in the query colour. A row
    label in `events` makes its token (A's index) the query when clicked."""
    out = []
    for j, tok in enumerate(tokens):
        cls = "col-label" + (" is-query" if j == query else "") + (" is-special" if j in special else "")
        out.append(
            f'<text class="{cls}" transform="translate({LABEL + j * cell + cell / 2:.1f},{LABEL - 6}) '
            f'rotate(-55)">{esc(clip_label(tok))}</text>'
        )
    for i, tok in enumerate(tokens):
        cls = "row-label" + (" is-query" if i == query else "") + (" is-special" if i in special else "")
        ev = attr(data_event="set_query", data_token_index=events[i]) if i in events else ""
        out.append(
            f'<text class="{cls}"{ev} x="{LABEL - 8}" y="{LABEL + i * cell + cell / 2:.1f}" '
            f'text-anchor="end" dominant-baseline="central">{esc(clip_label(tok))}</text>'
        )
    return "".join(out)


def diff_limit(deltas) -> float:
    """The ± end of the difference scale: the largest |A − B|, rounded up to 5 points, at least
    MIN_LIMIT (so that identical attention stays blank instead of noise filling the scale)."""
    peak = max((abs(d) for d in deltas), default=0.0)
    return max(MIN_LIMIT, math.ceil(peak * 20 - 1e-9) / 20)


def diff_key(delta: float, allowed: bool, limit: float):
    """The difference map's colour step of one cell: ("pos" | "neg", step 1..LEVELS), "masked", or None
    (blank: |delta| rounds to 0)."""
    if not allowed:
        return "masked"
    step = min(LEVELS, round(abs(delta) / limit * LEVELS))
    return None if step == 0 else ("neg" if delta < 0 else "pos", step)


def _diff_heatmap(
    tokens_a, special_a, aligned, pairs_ab, deltas, allowed, query_row, gaps, aria: str, limit: float
) -> str:
    """A − B over the aligned tokens: cell (r, c) = A[a_r, a_c] − B[b_r, b_c]; blue where A attends
    more, orange where B does, opacity |delta| / limit. pairs_ab [k][k] of (A's weight, B's weight),
    deltas [k][k] their differences, allowed [k][k] (False: masked in both). gaps: {position r: text}
    where changed tokens were left out (a dashed line there). Painted like _heatmap: one path per
    (sign, step), the query's row again as real cells with data-delta."""
    k = len(aligned)
    cell = _cell(k)
    size = k * cell
    width, height = LABEL + max(size, LEGEND_MIN) + 8, LABEL + size + LEGEND_H
    words = [tokens_a[a] for a, _ in aligned]
    out = [
        "<svg"
        + attr(
            data_view="pair-diff",
            viewBox=f"0 0 {width} {height}",
            role="img",
            class_="heatmap pair-map pair-diff",
            data_n=k,
            data_limit=data_num(limit),
            data_levels=LEVELS,
            aria_label=aria,
            style=size_style(width),
        )
        + ">"
    ]
    if not all(all(r) for r in allowed):
        out.append(f"<defs>{hatch_pattern('pair-diff-masked')}{hatch_pattern('pair-diff-masked-unit', cell)}</defs>")
    special = {r for r, (a, _) in enumerate(aligned) if a in special_a}
    out.append(_labels(words, query_row, special, cell, {r: a for r, (a, _) in enumerate(aligned)}))
    out.append(f'<rect class="diff-bg" x="{LABEL}" y="{LABEL}" width="{size}" height="{size}"/>')
    keys = [[diff_key(d, ok, limit) for d, ok in zip(dr, ar)] for dr, ar in zip(deltas, allowed)]
    out.append(f'<g class="pair-cells" transform="translate({LABEL} {LABEL}) scale({cell})">')
    for key, d in sorted(_painted(keys).items(), key=lambda kv: str(kv[0])):
        if key == "masked":
            out.append(f'<path class="pair-level is-masked" fill="url(#pair-diff-masked-unit)" d="{d}"/>')
        else:
            sign, step = key
            out.append(
                f'<path class="pair-level diff-level is-{sign}" data-sign="{sign}" data-level="{step / LEVELS:g}" '
                f'fill-opacity="{step / LEVELS:.3f}" d="{d}"/>'
            )
    out.append("</g>")
    for p, text in gaps.items():  # where a changed word was left out: dashed lines between rows and columns
        at = LABEL + p * cell
        out.append(
            f'<path class="diff-gap" d="M{LABEL - 4} {at}h{size + 8}M{at} {LABEL - 4}v{size + 8}">'
            f"<title>{esc(text)}</title></path>"
        )
    if query_row is not None:
        row = deltas[query_row]
        stop = max(range(k), key=lambda c: abs(row[c]))
        out.append('<g class="cells" data-grid>')
        for c, (aj, bj) in enumerate(aligned):
            ai, bi = aligned[query_row]
            d, ok = row[c], allowed[query_row][c]
            a, b = pairs_ab[query_row][c]
            sign = "is-neg" if d < 0 else "is-pos"
            tip = f"“{words[query_row]}” → “{words[c]}”: " + (
                f"A {pct(a)} − B {pct(b)} = {_points(d)}" if ok else "masked in both sentences"
            )
            opacity = min(1.0, abs(d) / limit) if ok else 0.0
            out.append(
                "<rect"
                + attr(
                    class_=f"cell diff-cell {sign}",
                    x=LABEL + c * cell,
                    y=LABEL + query_row * cell,
                    width=cell,
                    height=cell,
                    fill_opacity=f"{opacity:.3f}",
                    data_i=query_row,
                    data_j=c,
                    data_a_i=ai,
                    data_a_j=aj,
                    data_b_i=bi,
                    data_b_j=bj,
                    data_delta=data_num(d),
                    data_masked="true" if not ok else None,
                    data_grid_cell=True,
                    tabindex=0 if c == stop else None,
                    data_tip=tip,
                )
                + "/>"
            )
        out.append("</g>")
        out.append(
            f'<rect class="query-outline" data-query-row="{query_row}" x="{LABEL - 2}" '
            f'y="{LABEL + query_row * cell - 1}" width="{size + 4}" height="{cell + 2}" fill="none"/>'
        )
    out.append(_diff_legend(LABEL, LABEL + size + 14, max(size, LEGEND_MIN), limit))
    out.append("</svg>")
    return "".join(out)


def _diff_legend(x: float, y: float, width: float, limit: float) -> str:
    """Orange (B attends more) through blank (no difference) to blue (A attends more)."""
    end = num(100 * limit, 0)
    return (
        f'<g class="legend" aria-hidden="true"><defs><linearGradient id="pair-diff-scale">'
        '<stop offset="0%" class="pair-stop-neg"/><stop offset="50%" class="pair-stop-neg" stop-opacity="0"/>'
        '<stop offset="50%" class="pair-stop-pos" stop-opacity="0"/><stop offset="100%" class="pair-stop-pos"/>'
        f'</linearGradient></defs><rect class="diff-legend-bar" x="{x}" y="{y}" width="{width}" height="10"/>'
        f'<rect x="{x}" y="{y}" width="{width}" height="10" fill="url(#pair-diff-scale)"/>'
        f'<text x="{x}" y="{y + 24}" class="legend-label">−{end} pts: B more</text>'
        f'<text x="{x + width}" y="{y + 24}" text-anchor="end" class="legend-label">A more: +{end} pts</text></g>'
    )


# ---------------------------------------------------------------------------------------------------
# words
# ---------------------------------------------------------------------------------------------------


def _changes_text(tokens_a, tokens_b, changes) -> str:
    """'“big” → “small”', one per changed span (markup, escaped)."""

    def span(toks, a, b):
        return _q(" ".join(toks[a:b])) if b > a else "nothing"

    return "; ".join(f"{span(tokens_a, c.a_start, c.a_stop)} → {span(tokens_b, c.b_start, c.b_stop)}" for c in changes)


def _gaps(aligned, changes, tokens_a, tokens_b) -> dict:
    """{position in the difference grid: 'left out: “big” → “small”'} for each changed span."""
    out = {}
    for c in changes:
        p = sum(1 for a, _ in aligned if a < c.a_start)
        before = " ".join(tokens_a[c.a_start : c.a_stop]) or "nothing"
        after = " ".join(tokens_b[c.b_start : c.b_stop]) or "nothing"
        out[p] = (out[p] + "; " if p in out else "left out here: ") + f"“{before}” → “{after}”"
    return out


def _reading(name, comp, head, query, expect, other_word=None):
    """What the query does in one sentence: (sentence markup, verdict, the word it picks or None).

    It picks the strongest word key (pairs.strongest_word) when that word gets at least FAINT of the
    row; below that the head picks nothing ("rests on <s>", "spreads thinly"). verdict: "right" (it
    picks the word a reader would) | "wrong" (it picks another, or none) | "" (no expectation)."""
    toks, special = comp.tokens, comp.run.special
    row = comp.trace.weights[head][query]  # [n]
    j = pairs.strongest_word(row, toks, special, query)
    q = _q(toks[query])
    rest = sum(float(row[s]) for s in special)
    resting = esc(", ".join(toks[s] for s in special))
    wrong = f", but a reader would pick {_q(expect)}: the model gets this one wrong." if expect else "."
    if j is None or float(row[j]) < FAINT:
        if j is None:
            text = f"In sentence {name}, {q} puts no attention on any other word"
        elif rest >= 0.5:
            text = (
                f"In sentence {name}, {q} rests {pct(rest, 0)} of its attention on {resting}, the head's "
                f"“nothing to do here”: no word gets more than {pct(float(row[j]), 0)}"
            )
        else:
            text = (
                f"In sentence {name}, {q} spreads its attention thinly: no word gets more than {pct(float(row[j]), 0)}"
            )
        return text + wrong, "wrong" if expect else "", None
    word = pairs.word_at(toks, j)
    still = "still " if other_word is not None and pairs.same_word(word, other_word) else ""
    share = pct(float(row[j]), 0) + (f"; {pct(rest, 0)} rests on {resting}" if rest >= SPECIAL_NOTE else "")
    text = f"In sentence {name}, {q} {still}looks most at {_q(toks[j])} ({share})"
    if len(word) != len(toks[j]):
        text += f", a piece of {_q(word)}"
    if not expect:
        return text + ".", "", j
    if pairs.same_word(word, expect):
        return text + ", the word a reader would pick: right.", "right", j
    return text + wrong, "wrong", j


def _preset_buttons(presets, active) -> str:
    if not presets:
        return ""
    buttons = "".join(
        "<button"
        + attr(
            type="button",
            class_="pair-preset",
            data_event="pair_preset",
            data_value=p.id,
            aria_pressed="true" if active is not None and p.id == active.id else "false",
        )
        + f'>{esc(p.title)}<span class="pair-preset-change">{_word_change(p)}</span></button>'
        for p in presets
    )
    return (
        f'<div class="pair-presets" role="group" aria-label="Ready-made sentence pairs: each sets both '
        f'sentences, the query and the head">{buttons}</div>'
    )


def _word_change(p) -> str:
    """The words a preset changes, from its text ('big → small'): a hint on its button."""
    a = [w.strip(".,;:!?") for w in p.first.split()]
    b = [w.strip(".,;:!?") for w in p.second.split()]
    return esc(
        ", ".join(
            f"{' '.join(a[c.a_start : c.a_stop])} → {' '.join(b[c.b_start : c.b_stop])}"
            for c in pairs.substitutions(a, b)
        )
    )


def _numbers_table(tokens_a, tokens_b, row_a, row_b, aligned, changes, query_word, head_words) -> str:
    """The query's row in both sentences, one line per key token; A − B where the tokens align."""
    rows = []
    b_of = dict(aligned)
    spans = sorted(
        [(a, a + 1, b_of[a], b_of[a] + 1, True) for a, _ in aligned]
        + [(c.a_start, c.a_stop, c.b_start, c.b_stop, False) for c in changes]
    )
    for a1, a2, b1, b2, same in spans:
        if same:
            wa = float(row_a[a1])
            wb = float(row_b[b1]) if row_b is not None else None
            rows.append(
                f'<tr><th scope="row">{esc(tokens_a[a1])}</th><td>{pct(wa)}</td>'
                f"<td>{pct(wb) if wb is not None else '—'}</td>"
                f"<td>{_points(wa - wb) if wb is not None else '—'}</td></tr>"
            )
            continue
        for a in range(a1, a2):
            rows.append(
                f'<tr><th scope="row">{esc(tokens_a[a])} (only in A)</th><td>{pct(float(row_a[a]))}</td>'
                "<td>—</td><td>—</td></tr>"
            )
        for b in range(b1, b2):
            wb = pct(float(row_b[b])) if row_b is not None else "—"
            rows.append(
                f'<tr><th scope="row">{esc(tokens_b[b])} (only in B)</th><td>—</td><td>{wb}</td><td>—</td></tr>'
            )
    return (
        f'<table class="sr-only pair-numbers"><caption>Where {_q(query_word)} looks in each sentence, '
        f"{esc(head_words)}: its weight on every key token, and A minus B where the tokens align.</caption>"
        '<thead><tr><th scope="col">key token</th><th scope="col">sentence A</th><th scope="col">sentence B</th>'
        f'<th scope="col">A − B</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


# ---------------------------------------------------------------------------------------------------
# the panel
# ---------------------------------------------------------------------------------------------------

INTRO = (
    "Type a second sentence above (the first with a word or two changed) to see it beside the first, "
    "read by the same head, and where their attention differs. Or pick a ready-made pair: each replaces "
    "both sentences."
)


def render(state, computed, other, presets) -> str:
    """The pair panel. computed: the state's sentence (A); other: the same model on state.pair_text (B),
    or None when there is no second sentence; presets: pairs.presets(computed.model)."""
    active = pairs.matching_preset(computed.model, state.text, state.pair_text)
    if other is None:
        return (
            f"<div{attr(class_='pair-view', data_view='pair', data_state='empty')}>"
            f'<p class="pair-intro">{esc(INTRO)}</p>{_preset_buttons(presets, active)}</div>'
        )
    h, qa = state.head, state.query
    ta, tb = computed.tokens, other.tokens
    wa, wb = computed.trace.weights[h], other.trace.weights[h]  # [n_a, n_a], [n_b, n_b]
    aligned = pairs.align(ta, tb)
    changes = pairs.substitutions(ta, tb)
    qb = pairs.counterpart(aligned, qa)
    head_words = _head_words(state, computed)
    qword = ta[qa]

    text_a, verdict_a, look_a = _reading("A", computed, h, qa, active.expect_first if active else "")
    if qb is not None:
        first_word = pairs.word_at(ta, look_a) if look_a is not None else None
        text_b, verdict_b, look_b = _reading("B", other, h, qb, active.expect_second if active else "", first_word)
    else:
        text_b, verdict_b, look_b = (
            f"{_q(qword)} has no counterpart in sentence B: the edit changed it. Pick a "
            "token the two sentences share to compare them.",
            "",
            None,
        )
    summary = _summary(ta, tb, look_a, look_b, active, changes, qword, (verdict_a, verdict_b))

    out = [
        "<div"
        + attr(
            class_="pair-view",
            data_view="pair",
            data_state="shown",
            data_preset=active.id if active else "",
            data_query_a=qa,
            data_query_b=qb if qb is not None else "",
            data_look_a=look_a if look_a is not None else "",
            data_look_b=look_b if look_b is not None else "",
            data_verdict_a=verdict_a,
            data_verdict_b=verdict_b,
        )
        + ">"
    ]
    if active is not None:
        note = f'<p class="pair-note"><strong>{esc(active.title)}.</strong> What to look for: {esc(active.note)}'
        if (state.layer, state.head) != (active.layer, active.head):
            where = f"layer {active.layer + 1}, " if computed.model.n_layers > 1 else ""
            note += f" (The note is about {esc(where)}head {active.head + 1}; the pictures show {esc(head_words)}.)"
        out.append(note + "</p>")
    out.append(f'<p class="pair-verdict">{text_a} {text_b}{summary}</p>')
    changed = (
        f"Changed: {_changes_text(ta, tb, changes)}." if changes else "The two sentences are the same, token for token."
    )
    out.append(
        f'<p class="pair-what">Both pictures: {esc(head_words)}. {changed} Click a row\'s label to make '
        "that token the query.</p>"
    )

    out.append('<div class="pair-maps">')
    to_a = {"A": {i: i for i in range(len(ta))}, "B": {b: a for a, b in aligned}}  # row label -> A's token
    for name, view, comp, query, sentence in (
        ("A", "pair-a", computed, qa, state.text),
        ("B", "pair-b", other, qb, state.pair_text),
    ):
        look = look_a if name == "A" else look_b
        looks = (
            f" Query “{comp.tokens[query]}” (outlined) looks most at “{comp.tokens[look]}”."
            if query is not None and look is not None
            else (" No query row: the query's token is not in this sentence." if query is None else "")
        )
        aria = f"Sentence {name}, attention weights of {head_words}: rows are queries, columns are keys.{looks}"
        out.append(
            f'<figure class="pair-fig"><figcaption>Sentence {name}: <span class="pair-sentence">'
            f"“{esc(sentence)}”</span></figcaption>"
            + _heatmap(
                comp.tokens,
                comp.trace.weights[h],
                comp.trace.mask,
                query,
                comp.run.special,
                view,
                f"Sentence {name}",
                aria,
                to_a[name],
            )
            + "</figure>"
        )
    out.append("</div>")

    if aligned:
        pairs_ab = [[(float(wa[ai][aj]), float(wb[bi][bj])) for aj, bj in aligned] for ai, bi in aligned]  # [k][k]
        deltas = [[a - b for a, b in row] for row in pairs_ab]  # [k][k] A − B
        allowed = [
            [bool(computed.trace.mask[ai][aj]) and bool(other.trace.mask[bi][bj]) for aj, bj in aligned]
            for ai, bi in aligned
        ]
        limit = diff_limit(d for r in deltas for d in r)
        row = next((r for r, (ai, _) in enumerate(aligned) if ai == qa), None)
        peak = max(abs(d) for r in deltas for d in r)
        if peak < SAME:
            moved = (
                "Where the tokens align, the two pictures are the same (no weight moves by as much as "
                f"{_points(SAME).lstrip('+')}): the head's attention does not see the change."
            )
        else:
            moved = (
                f"The largest change is {_points(peak).lstrip('+')}; blue cells: more attention in A, "
                "orange: more in B."
            )
            if row is not None:
                c = max(range(len(aligned)), key=lambda c: abs(deltas[row][c]))
                moved += (
                    f" In the query's row the largest is on {_q(ta[aligned[c][0]])}: {esc(_points(deltas[row][c]))}."
                )
        aria = (
            f"Difference of the attention weights, sentence A minus sentence B, {head_words}, over the "
            f"{len(aligned)} tokens the sentences share: rows are queries, columns are keys. "
            + (
                "The two are the same everywhere."
                if peak < SAME
                else f"The largest difference is {_points(peak).lstrip('+')}."
            )
        )
        gaps = _gaps(aligned, changes, ta, tb)
        out.append(
            f'<figure class="pair-fig pair-diff-fig"><figcaption>A − B where the tokens align '
            f'<span class="pair-sub">(changed tokens left out: dashed lines mark where)</span></figcaption>'
            f"{_diff_heatmap(ta, computed.run.special, aligned, pairs_ab, deltas, allowed, row, gaps, aria, limit)}"
            f'<p class="pair-moved">{moved}</p></figure>'
        )
    else:
        out.append('<p class="pair-moved">The two sentences share no token, so there is nothing to subtract.</p>')
    out.append(_numbers_table(ta, tb, wa[qa], wb[qb] if qb is not None else None, aligned, changes, qword, head_words))
    out.append(_preset_buttons(presets, active))
    out.append("</div>")
    return "".join(out)


def _summary(ta, tb, look_a, look_b, active, changes, qword, verdicts) -> str:
    """One closing sentence (markup): same word both times, or moved; for a preset, what that means.
    verdicts: _reading's for A and B."""
    if look_a is None or look_b is None:
        return ""
    wa, wb = pairs.word_at(ta, look_a), pairs.word_at(tb, look_b)
    if not pairs.same_word(wa, wb):
        if active and verdicts == ("right", "right"):
            return f" The head's answer moves from {_q(wa)} to {_q(wb)}, as a reader's answer does."
        if active and pairs.same_word(active.expect_first, active.expect_second):
            return (
                f" The head's answer moves from {_q(wa)} to {_q(wb)}, though for a reader {_q(qword)} "
                f"means {_q(active.expect_first)} both times."
            )
        return f" The head's answer moves from {_q(wa)} to {_q(wb)}."
    if active and not pairs.same_word(active.expect_first, active.expect_second):
        return (
            f" The head picks {_q(wa)} both times, but the change of {_changes_text(ta, tb, changes)} "
            f"changes what {_q(qword)} means: that takes the meaning of the words, and this head's "
            "attention does not follow it."
        )
    return f" Both times it picks {_q(wa)}."


def unavailable(message: str) -> str:
    """The second sentence cannot be read by this model (a link made with another one): say why."""
    return (
        f"<div{attr(class_='pair-view', data_view='pair', data_state='unavailable')}>"
        f'<p class="pair-intro">{esc(message)} Change the second sentence above, or empty it to close the '
        "pair.</p></div>"
    )
