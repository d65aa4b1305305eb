"""The feed-forward network, for the query token: widen, bend, narrow.

What the panel teaches: after attention has mixed information *between* tokens,
each token is processed on its own by a two-layer network: h (d_model numbers:
256 in the designed model, 384 in MiniLM) is projected up to d_ff hidden
pre-activations (1,024; 1,536), passed through a nonlinearity φ (ReLU, GELU, or
a SiLU-gated product for SwiGLU), and projected back down. The nonlinearity is
what lets the block compute more than a linear map; the picture shows it as a
curve with each hidden unit as a dot on it, and which units "fire".

Up to DOTS_MAX units each dot is its own focusable element with its numbers, except
that units whose numbers are all exactly 0 (nothing wired to them: 1,010 of the designed
model's 1,024) are one dot with their count.
A wider FFN (a trained model's 1,536 units, every one of them active) would
cost ~350 kB of markup that way; there all dots are one <path>, the units that
change the output most (|activation| × the length of the unit's row of W₂) are
focusable dots and a list, and the all-units grid is one PNG mask pair.

Every number comes from the trace, except the curve: it is the activation
function itself, sampled by calling core.relu / core.gelu / core.silu on a grid
(and, for SwiGLU, at each unit's gate value to put its dot on the SiLU curve).
"""

from __future__ import annotations

import numpy as np

from .. import core
from .colors import diverging_rgba
from .controls import ACTIVATION_LABELS
from .drawing import gradient_legend, signed_heatmap_layers
from .layernorm import heat_grid, symmetric_limit
from .markup import attr, clip_label, data_num, esc, num
from .math import math, mi, mn, mo, mtext, paren, row, sub

TOP_K = 8  # units listed as "most active"
GRID_COLUMNS = 64  # the all-units grid: 1024 units = 16 rows of 64
CURVE_SAMPLES = 241  # points on the activation curve
DOTS_MAX = 1024  # wider FFNs: the dots are one path, only the top units focusable, the grid an image


def small_num(x: float) -> str:
    """3 decimals, but a tiny non-zero value keeps its size visible (2.1e−05, not 0.000)."""
    x = float(x)
    if x == 0 or abs(x) >= 0.0005:
        return num(x, 3)
    return f"{x:.1e}".replace("-", "−")


# ---------------------------------------------------------------------------
# the activation: the function the curve shows, and what the dots are
# ---------------------------------------------------------------------------


def curve_function(activation: str):
    """The function drawn as the curve: φ for ReLU/GELU, the SiLU gate for SwiGLU (from core)."""
    return {"relu": core.relu, "gelu": core.gelu, "swiglu": core.silu}[activation]


def sample_curve(activation: str, lo: float, hi: float, n: int = CURVE_SAMPLES):  # -> (x [n], y [n])
    """The activation function on a grid: a display of core's function, not a re-implementation."""
    x = np.union1d(np.linspace(lo, hi, n), [0.0])  # include 0 so ReLU's corner is sharp
    return x, curve_function(activation)(x)


def unit_points(trace, i: int):  # -> (x [d_ff], y [d_ff]): each hidden unit's dot on the curve
    """relu/gelu: (pre-activation, activation) straight from the trace.

    swiglu: (gate, SiLU(gate)): the dot sits on the SiLU curve; the unit's
    activation (SiLU(gate) · up) is in the trace but is not on that curve.
    """
    if trace.activation == "swiglu":
        gate = trace.ffn_gate[i]
        return gate, core.silu(gate)
    return trace.ffn_pre[i], trace.ffn_act[i]


def _unit_tip(trace, names, i: int, u: int, gate_act: float) -> str:
    """Unit u's numbers (short: there are d_ff of these; the panel's formula says what z, g, u are).

    names: the model's name for each hidden unit ("" where it has none);
    gate_act: SiLU(gate) for swiglu (the dot's height), unused otherwise.
    """
    act, pre = float(trace.ffn_act[i, u]), float(trace.ffn_pre[i, u])
    name = names[u]
    head = f"unit {u}" + (f": {name}" if name else "")
    if trace.activation == "swiglu":
        return (
            f"{head}\ngate g = {small_num(trace.ffn_gate[i, u])}, SiLU(g) = {small_num(gate_act)}\n"
            f"up u = {small_num(pre)}\nSiLU(g)·u = {small_num(act)}"
        )
    return f"{head}\nz = {small_num(pre)}\n{ACTIVATION_LABELS[trace.activation]}(z) = {small_num(act)}"


# ---------------------------------------------------------------------------
# the 256 -> 1024 -> 256 diagram
# ---------------------------------------------------------------------------


def _column(x: float, y: float, w: float, h: float, key: str, n: int, tip: str, label: str) -> str:
    """One vector of the diagram as a box whose height is proportional to its length n (focusable, with a tip)."""
    return (
        "<rect"
        + attr(
            class_="vec-box",
            data_col=key,
            data_n=n,
            x=x,
            y=f"{y:.1f}",
            width=w,
            height=f"{h:.1f}",
            rx=2,
            tabindex=0,
            data_tip=tip,
            role="img",
            aria_label=label,
        )
        + "/>"
    )


def _diagram(trace, i: int) -> str:
    """h [d_model] -> W_1 -> pre [d_ff] -> φ -> act [d_ff] -> W_2 -> FFN(h) [d_model], heights to scale.

    A schematic: the live numbers are in the curve and the unit grid (a d_ff-long
    column here would put several values in each pixel).
    """
    d, dff = trace.d_model, trace.d_ff
    swiglu = trace.activation == "swiglu"
    name = ACTIVATION_LABELS[trace.activation]
    W, H = 360, 232
    tall = 160.0  # the d_ff columns
    short = tall * d / dff  # the d_model columns, to scale (256/1024 -> a quarter)
    top, mid = 16.0, 16.0 + tall / 2
    col_w = 14
    x_h, x_pre, x_act, x_out = 12, 128, 220, 334
    out = [
        "<svg"
        + attr(
            class_="ffn-diagram",
            viewBox=f"0 0 {W} {H}",
            role="img",
            aria_label=f"Feed-forward network: {d} numbers in, {dff} hidden units, {d} numbers out",
        )
        + ">",
        '<defs><marker id="ffn-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" '
        'orient="auto">'
        '<path class="arrow-head" d="M0 0L8 4L0 8z"/></marker></defs>',
    ]
    # up-projection: a trapezoid widening from d_model to d_ff
    pre_left = x_pre - (16 if swiglu else 0)
    out.append(
        f'<polygon class="weights" points="{x_h + col_w + 4},{mid - short / 2} {pre_left - 4},{top} '
        f'{pre_left - 4},{top + tall} {x_h + col_w + 4},{mid + short / 2}"/>'
    )
    w1 = ("W_gate", "and W₁") if swiglu else ("W₁ + b₁",)
    up_tip = (
        f"up-projection: {d} × {dff} weights"
        + (" twice (W_gate and W₁)" if swiglu else f" plus {dff} biases")
        + f"\nevery hidden unit is a weighted sum of all {d} entries of h"
    )
    out.append(
        f"<g{attr(tabindex=0, data_tip=up_tip)}>"
        + "".join(
            f'<text class="weights-label" x="{(x_h + col_w + pre_left) / 2}" y="{mid - 4 - 16 * (len(w1) - 1 - k)}" '
            f'text-anchor="middle">{esc(line)}</text>'
            for k, line in enumerate(w1)
        )
        + f'<text class="dim" x="{(x_h + col_w + pre_left) / 2}" y="{mid + 12}" text-anchor="middle">{d}×{dff}</text>'
        "</g>"
    )
    # down-projection: narrowing from d_ff to d_model
    out.append(
        f'<polygon class="weights" points="{x_act + col_w + 4},{top} {x_out - 4},{mid - short / 2} '
        f'{x_out - 4},{mid + short / 2} {x_act + col_w + 4},{top + tall}"/>'
    )
    down_tip = (
        f"down-projection: {dff} × {d} weights plus {d} biases\nmixes the {dff} activations back into {d} numbers"
    )
    out.append(
        f"<g{attr(tabindex=0, data_tip=down_tip)}>"
        f'<text class="weights-label" x="{(x_act + col_w + x_out) / 2}" y="{mid - 4}" text-anchor="middle">W₂ + b₂'
        "</text>"
        f'<text class="dim" x="{(x_act + col_w + x_out) / 2}" y="{mid + 12}" text-anchor="middle">{dff}×{d}</text></g>'
    )
    # the nonlinearity between the two hidden columns
    ax0, ax1 = x_pre + col_w + 6, x_act - 6
    out.append(f'<line class="arrow" x1="{ax0}" y1="{mid}" x2="{ax1}" y2="{mid}" marker-end="url(#ffn-arrow)"/>')
    phi = "SiLU(g)⊙u" if swiglu else name
    out.append(f'<text class="curve-name" x="{(ax0 + ax1) / 2}" y="{mid - 8}" text-anchor="middle">{esc(phi)}</text>')
    # the vectors: d_model-long ones a quarter the height of the d_ff-long ones
    out.append(
        _column(x_h, mid - short / 2, col_w, short, "h", d, f"h: the LayerNorm output, {d} numbers (stage 5)", "h")
    )
    if swiglu:
        out.append(_column(x_pre - 16, top, col_w, tall, "gate", dff, f"gate g = h·W_gate: {dff} numbers", "gate"))
        out.append(_column(x_pre, top, col_w, tall, "pre", dff, f"up u = h·W₁: {dff} numbers", "up"))
    else:
        out.append(
            _column(
                x_pre, top, col_w, tall, "pre", dff, f"pre-activations z = h·W₁ + b₁: {dff} numbers", "pre-activations"
            )
        )
    out.append(_column(x_act, top, col_w, tall, "act", dff, f"activations {phi}: {dff} numbers", "activations"))
    out.append(
        _column(
            x_out,
            mid - short / 2,
            col_w,
            short,
            "out",
            d,
            f"FFN(h): {d} numbers, added back to h (stage 5, second row)",
            "FFN output",
        )
    )
    # labels under the columns: name, then length
    y1, y2 = top + tall + 20, top + tall + 36
    labels = (
        (x_h, "start", "h", d),
        (x_pre + col_w / 2 - (8 if swiglu else 0), "middle", "g, u" if swiglu else "z", dff),
        (x_act + col_w / 2, "middle", "act", dff),
        (x_out + col_w, "end", "FFN(h)", d),
    )
    for x, anchor, text, n in labels:
        out.append(
            f'<text x="{x}" y="{y1}" text-anchor="{anchor}">{esc(text)}</text>'
            f'<text class="dim" x="{x}" y="{y2}" text-anchor="{anchor}">{n}</text>'
        )
    out.append("</svg>")
    return "".join(out)


# ---------------------------------------------------------------------------
# the activation curve with every hidden unit as a dot
# ---------------------------------------------------------------------------


def contributions(trace, w_2, i: int):  # -> [d_ff]: how much each unit changes FFN(h) for token i
    """|a_u| · ‖W₂[u, :]‖, the length of the vector unit u adds to the FFN's output (display only)."""
    return np.abs(trace.ffn_act[i]) * np.linalg.norm(np.asarray(w_2, dtype=np.float64), axis=1)


def top_units(trace, w_2, i: int, k: int = TOP_K) -> list[int]:
    """The k units whose contribution to FFN(h_i) is largest, largest first (ties: lower unit first)."""
    c = contributions(trace, w_2, i)
    return [int(u) for u in np.argsort(-c, kind="stable")[:k] if c[u] > 0]


def _curve(trace, names, i: int, w_2=None) -> str:
    """The activation curve with every unit as a dot; w_2 given (a wide FFN): the dots are one path
    and only the top units are focusable dots with their numbers."""
    activation = trace.activation
    xs, ys = unit_points(trace, i)  # [d_ff] each
    lo = min(float(np.min(xs)), -3.0)
    hi = max(float(np.max(xs)), 3.0)
    span = hi - lo
    lo, hi = lo - 0.04 * span, hi + 0.04 * span
    cx_s, cy_s = sample_curve(activation, lo, hi)
    y_lo = min(float(np.min(cy_s)), float(np.min(ys)), 0.0)
    y_hi = max(float(np.max(cy_s)), float(np.max(ys)), 0.0)
    y_span = (y_hi - y_lo) or 1.0
    y_lo, y_hi = y_lo - 0.05 * y_span, y_hi + 0.05 * y_span
    W, H = 360, 250
    L, R, T, B = 34, 350, 14, 214  # plot area

    def px(x):
        return L + (float(x) - lo) / (hi - lo) * (R - L)

    def py(y):
        return B - (float(y) - y_lo) / (y_hi - y_lo) * (B - T)

    name = ACTIVATION_LABELS[activation]
    curve_name = "SiLU (the gate)" if activation == "swiglu" else name
    x_title = "gate g = h·W_gate" if activation == "swiglu" else "pre-activation z = h·W₁ + b₁"
    wide = w_2 is not None
    picked = top_units(trace, w_2, i) if wide else []
    aria = f"The {curve_name} curve with the {len(xs)} hidden units of the query token as dots" + (
        f"; the {len(picked)} that change the output most are marked" if wide else ""
    )
    out = [
        "<svg"
        + attr(class_="act-curve", viewBox=f"0 0 {W} {H}", role="img", data_activation=activation, aria_label=aria)
        + ">"
    ]
    out.append(
        f'<line class="axis" x1="{L}" x2="{R}" y1="{py(0):.1f}" y2="{py(0):.1f}"/>'
        f'<line class="axis" x1="{px(0):.1f}" x2="{px(0):.1f}" y1="{T}" y2="{B}"/>'
    )
    d_path = "M" + "L".join(f"{px(x):.1f} {py(y):.1f}" for x, y in zip(cx_s, cy_s))
    out.append(f'<path class="curve" d="{d_path}"/>')
    out.append(f'<text class="curve-name" x="{L + 4}" y="{T + 12}">{esc(curve_name)}</text>')
    # ticks: the x range ends and 0, the y top and 0
    out.append(
        f'<text class="tick" x="{L}" y="{B + 16}" text-anchor="start">{esc(num(lo, 1))}</text>'
        f'<text class="tick" x="{px(0):.1f}" y="{B + 16}" text-anchor="middle">0</text>'
        f'<text class="tick" x="{R}" y="{B + 16}" text-anchor="end">{esc(num(hi, 1))}</text>'
        f'<text class="tick" x="{L - 4}" y="{T + 4}" text-anchor="end">{esc(num(y_hi, 1))}</text>'
        f'<text class="tick" x="{L - 4}" y="{py(0) + 4:.1f}" text-anchor="end">0</text>'
    )
    out.append(f'<text class="tick" x="{(L + R) / 2}" y="{H - 4}" text-anchor="middle">{esc(x_title)}</text>')
    if wide:  # every unit, as one path of round dots (half-unit grid, repeats drawn once)
        ux = np.round(2 * (L + (np.asarray(xs, dtype=np.float64) - lo) / (hi - lo) * (R - L))).astype(int)
        uy = np.round(2 * (B - (np.asarray(ys, dtype=np.float64) - y_lo) / (y_hi - y_lo) * (B - T))).astype(int)
        spots = sorted(set(zip(ux.tolist(), uy.tolist())))
        out.append(f'<path class="unit-cloud" transform="scale(0.5)" d="{"".join(f"M{a} {b}h0" for a, b in spots)}"/>')
    # the dots, left to right, as one keyboard grid (arrow keys walk along the curve)
    x_list, y_list = np.asarray(xs).tolist(), np.asarray(ys).tolist()
    pre, act = trace.ffn_pre[i].tolist(), trace.ffn_act[i].tolist()
    gates = trace.ffn_gate[i].tolist() if activation == "swiglu" else None
    # units whose every number is exactly 0 (nothing wired to them: most of the designed model's) are
    # one dot with their count, not hundreds of identical dots a keyboard would have to walk through
    zero = (trace.ffn_pre[i] == 0) & (trace.ffn_act[i] == 0)  # [d_ff] bool
    if activation == "swiglu":
        zero &= trace.ffn_gate[i] == 0
    silent = set() if wide else set(np.flatnonzero(zero).tolist())
    if len(silent) < 2:
        silent = set()
    order = [u for u in np.argsort(xs, kind="stable").tolist() if (not wide or u in picked) and u not in silent]
    if silent:  # the stack sits at x = 0, in its place along the curve
        order.insert(sum(1 for u in order if x_list[u] < 0), None)
    last = len(order) - 1
    dots = []
    for rank, u in enumerate(order):
        keys = f'data-grid-cell data-i="0" data-j="{rank}" tabindex="{0 if rank == last else -1}"'
        if u is None:
            n = len(silent)
            tip = (
                f"{n} units: {'g = 0 and u = 0' if gates else 'z = 0'} exactly (no weights reach them "
                f"for this token), so each one's activation is 0. They are drawn as this one dot."
            )
            dots.append(
                f'<circle class="unit-stack" cx="{px(0):.1f}" cy="{py(0):.1f}" r="4.5" data-silent-units="{n}" '
                f'data-pre="0" data-act="0" {keys}{attr(data_tip=tip)}/>'
            )
            continue
        # up to 1024 of these: numbers are written directly (nothing to escape), the tip text goes through attr
        gate = f' data-gate="{data_num(gates[u])}"' if gates else ""
        dots.append(
            f'<circle cx="{px(x_list[u]):.1f}" cy="{py(y_list[u]):.1f}" r="3" data-unit="{u}" '
            f'data-pre="{data_num(pre[u])}"{gate} data-act="{data_num(act[u])}" {keys}'
            f"{attr(data_tip=_unit_tip(trace, names, i, u, y_list[u]))}/>"
        )
    if silent:
        out.append(
            f'<text class="tick stack-count" x="{px(0) - 6:.1f}" y="{py(0) - 7:.1f}" text-anchor="end">'
            f"{len(silent)} units</text>"
        )
    out.append(f'<g class="unit-dots" data-grid>{"".join(dots)}</g></svg>')
    return "".join(out)


# ---------------------------------------------------------------------------
# which units fire
# ---------------------------------------------------------------------------


def _count_sentence(activation: str, n_pos: int, n_neg: int, n_zero: int, dff: int) -> str:
    """What the counts mean for this activation, naming only the groups that occur."""
    rest = []
    if n_neg:
        rest.append(f"{n_neg} slightly negative" if activation == "gelu" else f"{n_neg} negative")
    if n_zero:
        rest.append(f"{n_zero} exactly 0")
    tail = {
        "relu": "ReLU cuts every negative pre-activation to 0.",
        "gelu": "GELU lets negative pre-activations through as small negative values rather than a hard 0.",
        "swiglu": "The SiLU gate scales the up-projection u, so the sign of u survives.",
    }[activation]
    rest_text = (", " + " and ".join(rest)) if rest else ""
    verb = "unit fires" if n_pos == 1 else "units fire"
    return f"<strong>{n_pos}</strong> of {dff} {verb} (activation &gt; 0){esc(rest_text)}. {esc(tail)}"


def _firing(trace, names, i: int, w_2=None) -> str:
    """Counts, the top units, every unit as a grid; w_2 given (a wide FFN): the top units are the ones
    that change the output most, and the grid is one image."""
    act = trace.ffn_act[i]  # [d_ff]
    dff = len(act)
    n_pos = int(np.count_nonzero(act > 0))
    n_neg = int(np.count_nonzero(act < 0))
    n_zero = dff - n_pos - n_neg
    gate_act = unit_points(trace, i)[1]  # [d_ff] the SiLU(gate) dot heights (swiglu), else = act
    limit = symmetric_limit(act)
    wide = w_2 is not None
    if wide:
        contrib = contributions(trace, w_2, i)
        top = top_units(trace, w_2, i)
    else:
        top = [int(u) for u in np.argsort(-np.abs(act), kind="stable")[:TOP_K] if act[u] != 0]
    items = []
    for u in top:
        a = float(act[u])
        tip = _unit_tip(trace, names, i, u, gate_act[u])
        if wide:
            tip += (
                f"\nits row of W₂ has length {num(contrib[u] / abs(a), 3)}, so it adds a vector of length "
                f"{num(contrib[u], 3)} to FFN(h)"
            )
        items.append(
            "<li"
            + attr(
                tabindex=0,
                data_unit=u,
                data_act=data_num(a),
                data_contribution=data_num(contrib[u]) if wide else None,
                data_tip=tip,
            )
            + f'><span class="unit-name">#{u}</span>'
            f'<span class="unit-bar" style="width: {3.5 * abs(a) / limit:.2f}rem; background: '
            f'{diverging_rgba(a / limit)}"></span>'
            f'<span class="unit-value">{esc(small_num(a))}</span>'
            + (f'<span class="unit-what">{esc(names[u])}</span>' if names[u] else "")
            + (f'<span class="unit-what">adds a vector of length {num(contrib[u], 2)}</span>' if wide else "")
            + "</li>"
        )
    if wide:
        title = (
            f"The {TOP_K} units that change the output most: |activation| × the length of the unit's row of W₂ "
            "(what it adds to FFN(h)), largest first"
        )
    else:
        title = f"Non-zero units, largest |activation| first (at most {TOP_K}"
    top_list = (
        f'<p class="muted ffn-top-title" data-export-label="{esc(title)}{")" if not wide else ""}:">'
        f"{esc(title)}{'; ' if not wide else ' ('}hover or focus for the numbers):</p>"
        f'<ol class="top-units">{"".join(items)}</ol>'
        if top
        else '<p class="muted ffn-top-title">Every unit is exactly 0 for this token.</p>'
    )
    label = (
        f"All {dff} hidden activations as coloured squares, {GRID_COLUMNS} per row; "
        f"{n_pos} positive, {n_neg} negative, {n_zero} zero"
    )
    if wide:  # one pixel per unit, in a PNG mask pair (drawing.signed_heatmap_layers)
        rows = -(-dff // GRID_COLUMNS)
        cells = np.zeros(rows * GRID_COLUMNS)
        cells[:dff] = act
        grid = (
            "<svg"
            + attr(
                class_="unit-grid unit-image",
                viewBox=f"0 0 {GRID_COLUMNS} {rows}",
                role="img",
                aria_label=label,
                data_units=dff,
                data_columns=GRID_COLUMNS,
            )
            + f'><rect class="cell-base" width="{GRID_COLUMNS}" height="{rows}"/>'
            f"{signed_heatmap_layers(cells.reshape(rows, GRID_COLUMNS), limit, 'ffn-units', GRID_COLUMNS, rows)}</svg>"
        )
    else:
        grid = heat_grid(act, limit, columns=GRID_COLUMNS, id_prefix="ffn-units", css_class="unit-grid", label=label)
    return (
        f"<div{attr(class_='ffn-firing', data_positive=n_pos, data_negative=n_neg, data_zero=n_zero)}>"
        f'<h4 class="ffn-subtitle">Which units fire</h4>'
        f'<p class="ffn-count">{_count_sentence(trace.activation, n_pos, n_neg, n_zero, dff)}</p>'
        f"{top_list}"
        f'<p class="muted ffn-grid-title">All {dff} activations, unit 0 top left, {GRID_COLUMNS} per row '
        f"(scale ±{esc(num(limit, 2))}):</p>"
        f"{gradient_legend(num(-limit, 2), num(limit, 2), what='')}{grid}{_numbers(act, i) if wide else ''}</div>"
    )


def _numbers(act, i: int) -> str:
    """Every activation of a wide FFN, folded: one line of text, not one element per number."""
    return (
        f'<details class="ffn-numbers"><summary>All {len(act)} activations of token {i}, unit 0 first</summary>'
        f"<p>{', '.join(num(float(a), 2) for a in act)}</p></details>"
    )


# ---------------------------------------------------------------------------
# formula and panel
# ---------------------------------------------------------------------------


def _formula(activation: str, d: int, dff: int) -> str:
    h, w1, w2 = mi("h"), sub(mi("W"), mn("1")), sub(mi("W"), mn("2"))
    b1, b2 = sub(mi("b"), mn("1")), sub(mi("b"), mn("2"))
    lhs = row(mtext("FFN"), paren(h))
    if activation == "swiglu":
        wg = sub(mi("W"), mtext("gate"))
        rhs = row(paren(row(mtext("SiLU"), paren(row(h, wg)), mo("⊙"), h, w1)), w2, mo("+"), b2)
        label = "FFN of h equals (SiLU of h W gate, elementwise times h W 1) times W 2 plus b 2"
        phi_def = row(mtext("SiLU"), paren(mi("z")), mo("="), mi("z"), mo("·"), mi("σ"), paren(mi("z")))
        phi_note = "σ is the logistic sigmoid"
    else:
        rhs = row(mi("φ"), paren(row(h, w1, mo("+"), b1)), w2, mo("+"), b2)
        label = (
            f"FFN of h equals phi of (h W 1 plus b 1) times W 2 plus b 2, with phi = {ACTIVATION_LABELS[activation]}"
        )
        if activation == "relu":
            phi_def = row(
                mi("φ"),
                paren(mi("z")),
                mo("="),
                mtext("ReLU"),
                paren(mi("z")),
                mo("="),
                mtext("max"),
                paren(row(mn("0"), mo(","), mi("z"))),
            )
            phi_note = ""
        else:
            phi_def = row(
                mi("φ"),
                paren(mi("z")),
                mo("="),
                mtext("GELU"),
                paren(mi("z")),
                mo("="),
                mi("z"),
                mo("·"),
                mi("Φ"),
                paren(mi("z")),
            )
            phi_note = "Φ is the standard normal CDF"
    shapes = (
        f"h: 1 × {d}, "
        + ("W_gate and " if activation == "swiglu" else "")
        + f"W₁: {d} × {dff}, W₂: {dff} × {d}"
        + ("" if activation == "swiglu" else f", b₁: {dff}")
        + f", b₂: {d}"
    )
    note = f' <span class="muted">({esc(phi_note)})</span>' if phi_note else ""
    return (
        f'<div class="formula-row">{math(row(lhs, mo("="), rhs), display="block", label=label)}'
        f"{math(phi_def, display='block')}</div>"
        f'<p class="ln-where muted">{esc(shapes)}{note}</p>'
    )


def render(state, computed) -> str:
    """The query token's feed-forward network: diagram, activation curve with unit dots, firing units."""
    tr, names = computed.trace, computed.model.unit_names  # names: one per hidden unit, "" if none
    w_2 = computed.params.w_2 if tr.d_ff > DOTS_MAX else None  # a wide FFN: the light drawing
    i = state.query
    token = computed.tokens[i]
    d, dff = tr.d_model, tr.d_ff
    name = ACTIVATION_LABELS[tr.activation]
    heading = (
        f'<h3 class="ffn-heading">Query token <q class="tok">{esc(clip_label(token, 24))}</q> '
        f'<span class="muted">(position {i}, activation {esc(name)})</span></h3>'
    )
    intro = (
        '<p class="ffn-intro" data-export-label="">Attention moved information <em>between</em> tokens; '
        f"the feed-forward network now works on each token alone. It widens h from {d} to {dff} numbers, bends "
        f"each one with the nonlinearity {esc(name)}, and projects back to {d}. Without the bend, the two "
        "projections would collapse into one linear map.</p>"
    )
    xs, _ = unit_points(tr, i)
    at_zero = int(np.count_nonzero(xs == 0))
    stacked = (
        f" {at_zero} units have {'g' if tr.activation == 'swiglu' else 'z'} = 0 exactly and sit on top of "
        f"each other at the origin: one dot, labelled with their count."
        if at_zero > 1
        else ""
    )
    curve_caption = (
        "Each dot is one hidden unit of this token at its gate value g on the SiLU curve; its "
        "activation multiplies SiLU(g) by the up-projection u (hover a dot)." + stacked
        if tr.activation == "swiglu"
        else f"Each dot is one of the {dff} hidden units of this token, at (z, {name}(z))."
        + stacked
        + (
            f" The {TOP_K} that change the output most are ringed: hover or focus one; arrow keys move between them."
            if w_2 is not None
            else " Hover or focus a dot; arrow keys move along the curve."
        )
    )
    return (
        f"<div{attr(class_='ffn-panel', data_view='ffn', data_query=i, data_activation=tr.activation)}>"
        f"{heading}{intro}{_formula(tr.activation, d, dff)}"
        f'<div class="ffn-figures">'
        f'<figure>{_diagram(tr, i)}<figcaption data-export-label="{d} → {dff} → {d}: the boxes&#x27; heights are to '
        'scale.">'
        f"{d} → {dff} → {d}: the boxes' heights are to scale. "
        f"Hover or focus a box or a weight matrix.</figcaption></figure>"
        f"<figure>{_curve(tr, names, i, w_2)}<figcaption"
        + attr(
            data_export_label=curve_caption.replace(" (hover a dot)", "")
            .replace(" Hover or focus a dot; arrow keys move along the curve.", "")
            .split(" The " + str(TOP_K) + " that")[0]
        )
        + f">{esc(curve_caption)}</figcaption></figure></div>"
        f"{_firing(tr, names, i, w_2)}</div>"
    )
