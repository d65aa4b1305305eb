"""Stage 2, the projections: Q = X W_Q, K = X W_K, V = X W_V for the selected head, as pictures.

Teaches: a head never compares the token vectors x_i themselves. It first multiplies
each one by three weight matrices of its own, q_i = x_i W_Q (what token i looks for),
k_i = x_i W_K (what it offers to other tokens' queries), v_i = x_i W_V (what it hands
over when attended to), each d_k numbers wide. A row of W is one input dimension of x, a
column one of the head's d_k dimensions; where a model names its input dimensions (the
designed model's "noun", "refers: it", "position sin 3") the reader sees which facts
about a token each projection reads.

What is drawn, for head h of the selected layer (columns h·d_k … (h+1)·d_k of
params.w_q / w_k / w_v, each [d_model, d_k]):
  * each W as one heatmap (a PNG mask pair, drawing.signed_heatmap_layers), showing
    only its rows that hold a non-zero weight; the count of left-out all-zero rows is
    said. In a matrix with many rows, long runs of position-code or unnamed dims are
    drawn as one thinner band with one label, so the named rows stay readable. A
    trained model's W has no zero rows and no names (384 rows of noise to the eye,
    ~30 kB of PNG each): above PICK_ABOVE rows only the PICKED rows that add most to
    the query's own vector (|x_i[d]| · ‖W[d, :]‖) are drawn, in order, and the text
    says so.
    Row labels carry the row's weights as a tooltip; rows that are non-zero in the
    query's own x_i (the ones that make q_i) are marked.
  * each token's q, k, v (trace.q[h] / k[h] / v[h], [n, d_k]) as three n × d_k heatmaps,
    one PNG each; the query's row is outlined; a row label makes that token the query.
  * the query's q_i, k_i, v_i as strips (drawing.strip_svg) with a tooltip per
    column giving the trace's value and its derivation x_i · W[:, c] (+ b[c]) from
    core.projection_terms, and a visually hidden table of the same numbers.
Every printed value is read from the trace or the params; the view only picks,
sorts and formats. Colour: the signed scale of every view (blue +, orange −); each
picture is scaled to its own largest |value| (printed in its legend), and strength
grows with √|value|: in the designed model's W_K the content weights are some 30 times
its position weights, which a linear scale would paint as empty, telling the reader
that those keys ignore position when they do not.

Hooks: root [data-view="projections"] with data-head, data-layer, data-query; each
matrix svg [data-matrix="w_q"|"w_k"|"w_v"] with data-rows (JSON list of the input dims
shown, in order), data-cols (d_k) and, where the rows were picked for the query, data-picked="query";
each vectors svg [data-vectors="q"|"k"|"v"] with data-rows (n) and data-cols (d_k); the query strips
[data-strip="q"|"k"|"v"].
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from .. import core
from .drawing import legend_html, signed_heatmap_layers, soft, strip_svg
from .embedding import zero_runs
from .explain import head_ref
from .markup import attr, esc, num

# (letter, weight field, bias field, what the vector is, the reader's gloss)
PROJECTIONS = (
    ("q", "w_q", "b_q", "query", "what each token looks for"),
    ("k", "w_k", "b_k", "key", "what each token offers to queries"),
    ("v", "w_v", "b_v", "value", "what each token hands over when attended to"),
)

LETTERS = tuple(p[0] for p in PROJECTIONS)

BAND_FROM_ROWS = 32  # a matrix with more shown rows than this draws long runs as bands
BAND_MIN_RUN = 9  # ... runs of at least this many consecutive position-code or unnamed dims
BAND_MAX = 64  # ... at most this many dims per band, so long unnamed stretches still get labels
MAX_UNITS = 48  # target picture height in label rows; bands are drawn 1/4, 1/8 or 1/16 as tall
ROW_TIP_ENTRIES = 6  # weights listed in a row label's tooltip (largest |w| first)
TIP_TERMS = 4  # input dims listed in a q/k/v cell's tooltip (largest |x·w| first)
NAMED_IN_TEXT = 5  # rows named in the explanation when a matrix reads at most this many
PICK_ABOVE = 128  # a W with more non-zero rows than this (a trained model's) shows only ...
PICKED = 10  # ... this many: the rows that add most to the query's vector


# --------------------------------------------------------------------------
# picking: which rows, and how tall each is drawn
# --------------------------------------------------------------------------


def head_weights(params, name: str, h: int, d_k: int) -> np.ndarray:  # -> [d_model, d_k]
    """Head h's slice of a projection: the columns it owns (core's split, as nn.MultiheadAttention)."""
    return np.asarray(getattr(params, name))[:, h * d_k : (h + 1) * d_k]


def head_bias(params, name: str, h: int, d_k: int) -> np.ndarray:  # -> [d_k]
    b = getattr(params, name)
    return np.zeros(d_k) if b is None else np.asarray(b)[h * d_k : (h + 1) * d_k]


def shown_rows(w) -> list[int]:
    """The input dims whose row of w holds a non-zero weight (the others add nothing, whatever x is)."""
    return [int(d) for d in np.flatnonzero(np.any(np.asarray(w) != 0, axis=1))]


def drawn_rows(w, x_i, rows: list[int]) -> list[int]:
    """The rows a picture draws: all non-zero rows, or (more than PICK_ABOVE) the PICKED rows whose
    part of x_i·W is longest, |x_i[d]|·‖W[d, :]‖, in input-dim order."""
    if len(rows) <= PICK_ABOVE:
        return rows
    share = np.abs(np.asarray(x_i, dtype=np.float64)[rows]) * np.linalg.norm(
        np.asarray(w, dtype=np.float64)[rows], axis=1
    )
    return sorted(rows[k] for k in np.argsort(-share, kind="stable")[:PICKED])


def _region(model, d: int):
    return next((r for r in model.dim_regions if r.start <= d < r.stop), None)


def _dim_label(model, d: int) -> str:
    name = model.dim_names[d] if d < len(model.dim_names) else ""
    return name or f"dim {d}"


def _bandable(model, d: int) -> bool:
    """Dims read as a block rather than one by one: the position code, and dims without a name."""
    r = _region(model, d)
    return not model.dim_names[d] or (r is not None and r.kind == "position")


@dataclass(frozen=True)
class Band:
    """Consecutive input dims drawn as one labelled row or one thin band."""

    dims: tuple[int, ...]  # input dims, consecutive in the shown rows
    banded: bool  # drawn as one thin band with one label (else one labelled row)


def bands(model, rows: list[int]) -> list[Band]:
    """The shown rows, in order, as labelled rows and (in tall matrices) bands of like dims."""
    if len(rows) <= BAND_FROM_ROWS:
        return [Band((d,), False) for d in rows]
    out, i = [], 0
    while i < len(rows):
        j = i + 1
        if _bandable(model, rows[i]):
            while (
                j < len(rows)
                and rows[j] == rows[j - 1] + 1
                and _bandable(model, rows[j])
                and _region(model, rows[j]) is _region(model, rows[i])
            ):
                j += 1
        run = rows[i:j]
        if len(run) >= BAND_MIN_RUN:
            out += [Band(tuple(run[a : a + BAND_MAX]), True) for a in range(0, len(run), BAND_MAX)]
        else:
            out += [Band((d,), False) for d in run]
        i = j
    return out


def _thinning(bs: list[Band]) -> int:
    """Pixel rows per labelled row (a banded dim gets one): 1 without bands, else 4, 8 or 16."""
    single = sum(1 for b in bs if not b.banded)
    banded = sum(len(b.dims) for b in bs if b.banded)
    if not banded:
        return 1
    return next((r for r in (4, 8, 16) if single + banded / r <= MAX_UNITS), 16)


# --------------------------------------------------------------------------
# small pieces
# --------------------------------------------------------------------------


def _sub(letter: str, index) -> str:
    return f"<var>{letter}</var><sub>{esc(index)}</sub>"


def _w(letter: str) -> str:
    return f"<var>W</var><sub>{letter.upper()}</sub>"


def _legend(vmax: float) -> str:
    return legend_html(f"−{num(vmax, 2)}", f"+{num(vmax, 2)}")


def _vmax(values) -> float:
    a = np.abs(np.asarray(values, dtype=np.float64))
    return float(a.max()) if a.size and a.max() > 0 else 1.0


def _row_tip(model, W: str, w_row, d: int, i: int, tok: str, x_id: float, letter: str) -> str:
    """A row label's tooltip: the row's weights (largest first) and whether the query uses it."""
    nz = [int(c) for c in np.flatnonzero(w_row)]
    order = sorted(nz, key=lambda c: (-abs(float(w_row[c])), c))[:ROW_TIP_ENTRIES]
    listed = ", ".join(f"column {c}: {num(w_row[c], 2)}" for c in order)
    rest = len(w_row) - len(order)
    more = (
        f" (+{len(nz) - len(order)} more non-zero"
        + (f", {len(w_row) - len(nz)} zero)" if len(nz) < len(w_row) else ")")
        if len(nz) > len(order)
        else f" (the other {rest} columns are 0)"
        if rest
        else ""
    )
    use = (
        f"so {num(x_id, 2)} × this row is added into {letter}_{i}"
        if x_id != 0
        else f"so this row adds nothing to {letter}_{i}"
    )
    return (
        f"{W} row {d}, {_dim_label(model, d)}: {listed}{more}\nThe query “{tok}” has x_{i}[{d}] = {num(x_id, 2)}, {use}"
    )


def _band_tip(model, W: str, w_rows, dims, i: int, tok: str, x_i, letter: str) -> str:
    r = _region(model, dims[0])
    what = f"{r.label} " if r is not None and r.kind == "position" else ""
    names = f"{_dim_label(model, dims[0])} … {_dim_label(model, dims[-1])}"
    used = int(np.count_nonzero(x_i[list(dims)]))
    return (
        f"{W} rows {dims[0]}–{dims[-1]}: {len(dims)} {what}dims ({names}), drawn as one thin band\n"
        f"weights from {num(float(w_rows.min()), 2)} to {num(float(w_rows.max()), 2)}\n"
        f"The query “{tok}” is non-zero in {used} of them; hover {letter}_{i} below for the terms"
    )


# --------------------------------------------------------------------------
# the pictures
# --------------------------------------------------------------------------


def _matrix(model, letter: str, W: str, w, x_i, i: int, tok: str, rows: list[int], picked: bool) -> str:
    """W's rows (its non-zero ones, or those picked for the query) as one picture, with a label per
    row or band; w [d_model, d_k] -> markup."""
    d_model, d_k = w.shape
    bs = bands(model, rows)
    rep = _thinning(bs)
    vmax = _vmax(w[rows]) if rows else 1.0
    reps = [1 if b.banded else rep for b in bs for _ in b.dims]
    height = sum(reps)
    units = height / rep  # the picture's height in labelled rows
    labels = []
    for r, b in enumerate(bs):
        dims = list(b.dims)
        on = bool(np.any(x_i[dims] != 0))
        if b.banded:
            first, last = dims[0], dims[-1]
            reg = _region(model, first)
            name = f"{reg.label} " if reg is not None and reg.kind == "position" else "dims "
            text, tip, u = (
                f"{name}{first}–{last}",
                _band_tip(model, W, w[dims], dims, i, tok, x_i, letter),
                len(dims) / rep,
            )
        else:
            d = dims[0]
            text, u = _dim_label(model, d), 1
            tip = (
                _row_tip(model, W, w[d], d, i, tok, float(x_i[d]), letter)
                if not picked
                else f"{W} row {d}: {num(float(w[d].min()), 2)} to {num(float(w[d].max()), 2)}, length "
                f"{num(float(np.linalg.norm(w[d])), 2)}\nx_{i}[{d}] = {num(float(x_i[d]), 2)} scales it into "
                f"{letter}_{i}"
            )
        name = model.dim_names[dims[0]]
        cls = (
            "proj-rl"
            + (" is-band" if b.banded else "")
            + (" is-on" if on else "")
            + (" is-named" if not b.banded and name and str(dims[0]) not in name.split() else "")
        )  # "toy 3": no "3 toy 3"
        labels.append(
            "<span"
            + attr(
                class_=cls,
                style=f"--u: {u:g}",
                data_dim=None if b.banded else dims[0],
                data_dims=f"{dims[0]}-{dims[-1]}" if b.banded else None,
                data_tip=tip,
                tabindex="0" if r == 0 else "-1",
                data_grid_cell=True,
                data_i=r,
                data_j=0,
            )
            + f">{esc(text)}</span>"
        )
    left_out = d_model - len(rows)
    label = f"{W} of this head: {len(rows)} of {d_model} input dimensions (rows) by {d_k} columns; " + (
        f"the rows that add most to {letter}_{i} of “{tok}”" if picked else f"{left_out} all-zero rows left out"
    )
    if rows:
        heat = signed_heatmap_layers(
            soft(np.repeat(w[rows], reps, axis=0)), np.sqrt(vmax), f"proj-w{letter}", d_k, height
        )
        svg = (
            "<svg"
            + attr(
                class_="proj-map",
                viewBox=f"0 0 {d_k} {height}",
                preserveAspectRatio="none",
                role="img",
                aria_label=label,
                data_matrix=f"w_{letter}",
                data_rows=json.dumps(rows),
                data_cols=d_k,
                data_vmax=f"{vmax:.6g}",
                data_picked="query" if picked else None,
                style=f"--units: {units:g}",
            )
            + f'><rect class="strip-bg" width="{d_k}" height="{height}"/>{heat}</svg>'
        )
    else:
        svg = (
            "<svg"
            + attr(
                class_="proj-map is-empty",
                viewBox=f"0 0 {d_k} 1",
                preserveAspectRatio="none",
                role="img",
                aria_label=label,
                data_matrix=f"w_{letter}",
                data_rows="[]",
                data_cols=d_k,
                style="--units: 1",
            )
            + f'><rect class="strip-bg" width="{d_k}" height="1"/></svg>'
        )
        labels.append('<span class="proj-rl" style="--u: 1">(all zero)</span>')
    return (
        f'<div class="proj-labels" role="group" data-grid aria-label="Rows of {W}: input dimensions">'
        f"{''.join(labels)}</div>"
        f"{svg}"
    )


def _vectors(state, computed, letter: str, values, vmax: float, tips: bool = True) -> str:
    """Every token's vector (values [n, d_k]) as one picture; row labels pick the query (tips: a
    tooltip on each, left out where the panel is large)."""
    toks, q = computed.tokens, state.query
    n, d_k = values.shape
    special = set(computed.run.special)
    buttons = "".join(
        '<button type="button"'
        + attr(
            class_="proj-tok" + (" is-query" if i == q else "") + (" is-special" if i in special else ""),
            data_event="set_query",
            data_token_index=i,
            aria_pressed="true" if i == q else "false",
            tabindex="0" if i == q else "-1",
            data_grid_cell=True,
            data_i=i,
            data_j=0,
            data_tip=f"{letter}_{i} of “{t}”, token {i}. Click to make it the query." if tips else None,
        )
        + f">{esc(t)}</button>"
        for i, t in enumerate(toks)
    )
    label = (
        f"{letter.upper()} = X W_{letter.upper()}: {n} tokens (rows) by {d_k} columns; "
        f"row {q}, the query “{toks[q]}”, is outlined"
    )
    svg = (
        "<svg"
        + attr(
            class_="proj-map proj-vec",
            viewBox=f"0 0 {d_k} {n}",
            preserveAspectRatio="none",
            role="img",
            aria_label=label,
            data_vectors=letter,
            data_rows=n,
            data_cols=d_k,
            data_vmax=f"{vmax:.6g}",
            style=f"--rows: {n}",
        )
        + f'><rect class="strip-bg" width="{d_k}" height="{n}"/>'
        f"{signed_heatmap_layers(soft(values), np.sqrt(vmax), f'proj-{letter}', d_k, n)}"
        f'<rect class="proj-query-row" data-query-row="{q}" x="0" y="{q}" width="{d_k}" height="1" fill="none"/></svg>'
    )
    return (
        '<div class="proj-labels proj-toks" role="group" data-grid aria-label="Tokens: pick the query" '
        f'style="--rows: {n}">'
        f"{buttons}</div>{svg}"
    )


def _derivation(
    model,
    letter: str,
    W: str,
    B: str,
    i: int,
    tok: str,
    head: str,
    c: int,
    value: float,
    x_i,
    w,
    terms,
    bias: float,
    short: bool = False,
) -> str:
    """The tooltip of {letter}_i[c]: the trace's value, then its largest terms x_i[d]·W[d, c] and the bias.
    short (a wide matrix, 96 of these): the dot product and the bias as two numbers."""
    order = np.argsort(-np.abs(terms), kind="stable")  # largest |term| first, ties by input dim
    nz = [int(d) for d in order if terms[d] != 0]
    if short and nz:
        total = float(np.sum(terms))
        plus = f" + {B}[{c}] = {num(total, 3)} + {_par(bias)}" if bias != 0 else f" = {num(total, 3)}"
        return f"{letter}_{i}[{c}] = {num(value, 3)} = x_{i}·{W}[:, {c}]{plus}"
    lines = [f"{letter}_{i}[{c}] = {num(value, 3)}: “{tok}”, {head}, column {c}"]
    if not nz and bias == 0:
        lines.append(f"x_{i} meets no non-zero weight in column {c} of {W}")
        return "\n".join(lines)
    lines.append(f"= Σ over input dims d of x_{i}[d] · {W}[d, {c}]" + (f" + {B}[{c}]" if bias != 0 else "") + ":")
    for d in nz[:TIP_TERMS]:
        lines.append(f"  {_dim_label(model, d)}: {num(x_i[d], 2)} × {num(w[d, c], 2)} = {num(terms[d], 2)}")
    if len(nz) > TIP_TERMS:
        rest = nz[TIP_TERMS:]
        lines.append(f"  {len(rest)} more input dims: {num(float(np.sum(terms[rest])), 2)} together")
    if bias != 0:
        lines.append(f"  bias {B}[{c}] = {num(bias, 2)}")
    return "\n".join(lines)


def _par(x: float) -> str:
    s = num(x, 3)
    return f"({s})" if s.startswith("−") else s


def _strip(
    model,
    letter: str,
    W: str,
    B: str,
    w,
    b,
    x_i,
    values_i,
    i: int,
    tok: str,
    head: str,
    vmax: float,
    short: bool = False,
) -> str:
    """The query's {letter}_i as a strip of focusable cells (a roving grid), each with its derivation
    (short: in a few words, for a wide matrix)."""
    d_k = len(values_i)
    terms = [core.projection_terms(x_i, w, c) for c in range(d_k)]  # each [d_model]: x_i[d]·W[d, c]
    spans = zero_runs(v == 0 for v in values_i)
    vals, tips = [], []
    for a, z in spans:
        if z - a == 1:
            vals.append(float(values_i[a]))
            tips.append(
                _derivation(
                    model, letter, W, B, i, tok, head, a, float(values_i[a]), x_i, w, terms[a], float(b[a]), short
                )
            )
            continue
        silent = all(not np.any(terms[c]) and b[c] == 0 for c in range(a, z))
        vals.append(0.0)
        tips.append(
            f"{letter}_{i}[{a}] … {letter}_{i}[{z - 1}] = 0, {z - a} columns: "
            + (
                f"x_{i} (“{tok}”) meets no non-zero weight in these columns of {W}"
                if silent
                else "their terms cancel out"
            )
        )
    role = {p[0]: p[3] for p in PROJECTIONS}[letter]
    return strip_svg(
        vals,
        tips,
        label=f"{letter}_{i}, the {role} vector of “{tok}”: {d_k} numbers; arrow keys move between them",
        vmax=np.sqrt(vmax),
        cls="strip-proj",
        meta={"data_strip": letter, "data_query": i},
        spans=spans,
        strength=soft,
    )


def _sr_table(i: int, tok: str, head: str, vectors: dict) -> str:
    """The query's q, k, v for screen readers: one row per vector, its non-zero columns listed, zero runs named.

    One cell per vector rather than per number keeps the panel within the page's element budget
    (a dense head has 3 × 64 numbers); the strips above carry one focusable cell per column."""
    rows = []
    for letter, role in (("q", "query"), ("k", "key"), ("v", "value")):
        vec = vectors[letter]
        parts = [
            f"columns {a}–{z - 1}: 0" if z - a > 1 else f"column {a}: {num(vec[a], 3)}"
            for a, z in zero_runs(v == 0 for v in vec)
        ]
        rows.append(f'<tr><th scope="row">{letter}, the {role}</th><td>{"; ".join(parts)}</td></tr>')
    return (
        f'<div class="sr-only"><table><caption>The query “{esc(tok)}” (token {i}), {esc(head)}: its query, '
        f"key and value vectors, {len(vectors['q'])} numbers each</caption>"
        f'<thead><tr><th scope="col">vector</th><th scope="col">values by column</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


# --------------------------------------------------------------------------
# the words: generic, plus facts read off this head's weights
# --------------------------------------------------------------------------


def _describe_rows(model, rows: list[int]) -> str:
    """A few words for a set of input dims: their names when few and named, else counts per region."""
    if not rows:
        return "none"
    if len(rows) <= NAMED_IN_TEXT and all(model.dim_names[d] for d in rows):
        return ", ".join(model.dim_names[d] for d in rows)
    counts: dict[str, int] = {}
    for d in rows:
        r = _region(model, d)
        key = r.label if r is not None else "other"
        counts[key] = counts.get(key, 0) + 1
    parts = [f"{n} of the {label}" for label, n in counts.items()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def is_copy(w) -> bool:
    """True when w only copies: every non-zero row holds a single 1, each in a column of its own."""
    w = np.asarray(w)
    nz = w != 0
    return bool(nz.any() and np.all(w[nz] == 1) and np.all(nz.sum(axis=1) <= 1) and np.all(nz.sum(axis=0) <= 1))


def _reads_position(model, rows: list[int]) -> bool:
    return any((r := _region(model, d)) is not None and r.kind == "position" for d in rows)


def _lede(model, head: str, layer: int, d_k: int, rows: dict, biased: bool, picked: bool) -> str:
    x = _sub("x", "i")
    forms = (
        f"{_sub('q', 'i')} = {x}{_w('q')}, what token <var>i</var> looks for; "
        f"{_sub('k', 'i')} = {x}{_w('k')}, what it offers to other tokens' queries; "
        f"{_sub('v', 'i')} = {x}{_w('v')}, what it hands over when attended to"
    )
    bias = ", each plus a bias <var>b</var>" if biased else ""
    where = f" (here <var>x</var> is layer {layer + 1}'s input: the output of layer {layer})" if layer > 0 else ""
    d_model = len(model.dim_names)
    if all(len(r) == d_model for r in rows.values()) and not any(model.dim_names):
        feeds = (
            f"For <strong>{esc(head)}</strong>, every one of the <strong>{d_model}</strong> input dimensions "
            f"feeds {_w('q')}, {_w('k')} and {_w('v')}, and none has a name: a trained model spreads what it "
            "knows over all of them"
        )
        left = (
            f". The pictures draw the {PICKED} rows of each that add most to the query's own vector." if picked else "."
        )
    else:
        feeds = (
            f"For <strong>{esc(head)}</strong>, <strong>{len(rows['q'])} of {d_model}</strong> input "
            f"dimensions feed {_w('q')} ({esc(_describe_rows(model, rows['q']))}), {len(rows['k'])} feed {_w('k')} "
            f"and {len(rows['v'])} feed {_w('v')}"
        )
        left = (
            "; every other row is all zeros and is left out of the pictures."
            if any(len(r) < d_model for r in rows.values())
            else ": every row holds weights."
        )
        if picked:
            left += (
                f" Where a matrix has more than {PICK_ABOVE}, the picture draws the {PICKED} that add most to "
                "the query's vector."
            )
    return (
        f'<p class="proj-lede">A head never compares the token vectors <var>x</var> directly{where}. It multiplies '
        f"each one by three matrices of its own: {forms}{bias}. Each has <var>d</var><sub>k</sub> = {d_k} "
        f"numbers, its columns. {feeds}{left}</p>"
    )


def _notes(
    model, w: dict, b: dict, rows: dict, d_k: int, x_i, i: int, tok: str, layer: int, drawn: dict | None = None
) -> dict:
    """Sentences under each matrix, each read off these weights: which rows the query uses, then one fact.
    drawn: the rows each picture draws, where fewer than its non-zero rows (picked for the query)."""
    notes = {}
    for letter, rs in rows.items():
        used = [d for d in rs if x_i[d] != 0]
        plus = " with the bias" if np.any(b[letter] != 0) else ""
        if drawn and len(drawn[letter]) < len(rs):
            notes[letter] = (
                f"Drawn: the {len(drawn[letter])} of {len(rs)} rows that add most to "
                f"{_sub(letter, i)} for “{esc(tok)}” (largest |x<sub>{i}</sub>[d]| × the row's length); "
                f"“{esc(tok)}” is non-zero in {len(used)} of the {len(rs)} input dims, so "
                + ("every row adds a little" if len(used) == len(rs) else "those rows add a little")
                + f" to its <var>{letter}</var>"
                + (", plus the bias." if plus else ".")
            )
            continue
        if rs and len(used) == len(rs):
            notes[letter] = (
                f"“{esc(tok)}” is non-zero in all {len(rs)} rows (bold), so every row adds to its "
                f"<var>{letter}</var>{plus}."
            )
            continue
        names = (": " + ", ".join(_dim_label(model, d) for d in used)) if 0 < len(used) <= 4 else ""
        notes[letter] = (
            f"“{esc(tok)}” is non-zero in {len(used)} of these {len(rs)} rows (bold){esc(names)}; "
            f"only they make its <var>{letter}</var>{plus}."
        )
    cols_q = set(np.flatnonzero(np.any(w["q"] != 0, axis=0)).tolist())
    cols_k = set(np.flatnonzero(np.any(w["k"] != 0, axis=0)).tolist())
    both = len(cols_q & cols_k)
    if both < d_k:
        notes["k"] += (
            f" A score q·k adds q[c]·k[c] over the columns c, so only the {both} of {d_k} columns "
            f"where both {_w('q')} and {_w('k')} hold weights can count."
        )
    else:
        notes["k"] += f" A score q·k adds q[c]·k[c] over all {d_k} columns: column c of {_w('q')} meets column c here."
    for letter in ("q", "k"):
        if layer == 0 and _reads_position(model, rows[letter]):  # later layers' x is no longer the bare code
            only = all((r := _region(model, d)) is not None and r.kind == "position" for d in rows[letter])
            notes[letter] += (
                " It reads only the position code: where a token stands, not what it is."
                if only
                else " It reads the position code too, so where a token stands counts, not only what it is."
            )
    for letter in LETTERS:
        if is_copy(w[letter]):
            notes[letter] += (
                f" A plain copy: each row holds a single 1, in a column of its own, so "
                f"{_sub(letter, 'j')} holds token <var>j</var>'s own values of these "
                f"{len(rows[letter])} dims, unchanged."
            )
    return notes


# --------------------------------------------------------------------------
# the panel
# --------------------------------------------------------------------------


def _figure(state, computed, letter: str, role: str, gloss: str, w, b, rows, drawn, vecs, x_i, note: str) -> str:
    """One projection: W (its non-zero rows, or those drawn for the query), every token's vector, the
    query's vector in numbers."""
    model, i = computed.model, state.query
    tok, head, d_k = computed.tokens[i], head_ref(state.head, computed.heads[state.head]), w.shape[1]
    W, B, L = f"W_{letter.upper()}", f"b_{letter.upper()}", letter.upper()
    picked = len(drawn) < len(rows)
    vmax_w = _vmax(w[drawn]) if drawn else 1.0
    vmax_v = _vmax(vecs)
    left_out = w.shape[0] - len(rows)
    rows_text = (
        f"Rows: {len(drawn)} of the {len(rows)} input dims of <var>x</var> that feed it, the ones that add most "
        f"to {_sub(letter, i)}"
        if picked
        else f"Rows: the {len(rows)} input dims of <var>x</var> that feed it"
        + (f" ({left_out} all-zero rows left out)" if left_out else "")
    )
    return (
        f'<figure class="proj-fig" data-proj="{letter}">'
        f'<figcaption class="proj-cap"><strong>{_w(letter)} → <var>{letter}</var>'
        f"</strong>, the {role}: {gloss}</figcaption>"
        f'<p class="proj-sub">{rows_text}. Columns: the head\'s {d_k} dims.</p>'
        f'<div class="proj-block"><div class="proj-pair">{_matrix(model, letter, W, w, x_i, i, tok, drawn, picked)}'
        "</div>"
        f'<div class="proj-axis" aria-hidden="true"><span>0</span><span>column</span><span>{d_k - 1}</span></div>'
        f'<div class="proj-legend">{_legend(vmax_w)}<p class="proj-note">{note}</p></div></div>'
        f'<p class="proj-sub"><var>{L}</var> = <var>X</var>{_w(letter)}: each token\'s <var>{letter}</var>'
        ", one row each, same columns</p>"
        f'<div class="proj-pair">{_vectors(state, computed, letter, vecs, vmax_v, not picked)}</div>'
        f'<div class="proj-pair proj-strip-row"><span class="proj-strip-label">{_sub(letter, i)} '
        f'<span class="proj-strip-tok">{esc(tok)}</span></span>'
        f"{_strip(model, letter, W, B, w, b, x_i, vecs[i], i, tok, head, vmax_v, picked)}</div>"
        f'<div class="proj-legend">{_legend(vmax_v)}</div>'
        "</figure>"
    )


def render(state, computed) -> str:
    """W_Q, W_K, W_V of the selected head, every token's q, k, v, and the query's three vectors in numbers."""
    tr, params, model = computed.trace, computed.params, computed.model
    h, i, layer = state.head, state.query, computed.layer
    d_k, tok, info = tr.d_head, computed.tokens[state.query], computed.heads[state.head]
    head = head_ref(h, info)
    x_i = tr.x[i]  # [d_model] the layer's input for the query
    w = {p[0]: head_weights(params, p[1], h, d_k) for p in PROJECTIONS}  # each [d_model, d_k]
    b = {p[0]: head_bias(params, p[2], h, d_k) for p in PROJECTIONS}  # each [d_k]
    vecs = {"q": tr.q[h], "k": tr.k[h], "v": tr.v[h]}  # each [n, d_k]
    rows = {letter: shown_rows(w[letter]) for letter in w}
    drawn = {letter: drawn_rows(w[letter], x_i, rows[letter]) for letter in w}
    picked = any(len(drawn[letter]) < len(rows[letter]) for letter in w)
    biased = any(np.any(b[letter] != 0) for letter in b)
    notes = _notes(model, w, b, rows, d_k, x_i, i, tok, layer, drawn if picked else None)
    figs = "".join(
        _figure(
            state,
            computed,
            letter,
            role,
            gloss,
            w[letter],
            b[letter],
            rows[letter],
            drawn[letter],
            vecs[letter],
            x_i,
            notes[letter],
        )
        for letter, _, _, role, gloss in PROJECTIONS
    )
    query = f'<strong class="proj-query-tok">{esc(tok)}</strong>'
    all_on = all(x_i[d] != 0 for r in drawn.values() for d in r)
    bold = (
        f"Rows are labelled by input dimension; the query is {query}, non-zero in every one."
        if picked and all_on
        else f"Bold row labels: input dims where the query {query} is non-zero."
    )
    return (
        f'<div class="proj" data-view="projections" data-head="{h}" data-layer="{layer}" data-query="{i}">'
        f"{_lede(model, head, layer, d_k, rows, biased, picked)}"
        f'<p class="proj-how">{bold} Colour strength grows with √|value|, each picture up to its own '
        f"largest value (under it), so small weights stay visible beside large ones. Hover or focus a row label "
        f"for its weights, a cell of a strip for how it is made; click a token to make it the query.</p>"
        f'<div class="proj-figs">{figs}</div>'
        f"{_sr_table(i, tok, head, {letter: vecs[letter][i] for letter in vecs})}"
        "</div>"
    )
