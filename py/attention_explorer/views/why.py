"""Two "why" panels: attention as a soft database lookup, and why scores are divided by √d_k.

render_qkv_lookup teaches the Q/K/V vocabulary on the reader's own sentence: the
query token asks, every token answers with a key (how well it matches) and a
value (what it hands over). A dictionary lookup returns the value of the single
best key; attention returns a blend of all values, weighted by the softmax of
the match scores. Numbers come from the trace (scores, scaled_scores, weights,
v, head_outputs).

render_scale_demo teaches why softmax(QKᵀ/√d_k): for random unit-variance q and
k, Var(q·k) = d_k, so unscaled scores spread wider as d_k grows and the softmax
saturates to one key; dividing by √d_k keeps the variance at 1. Its numbers come
from demos.scale_demo (pure NumPy, deterministic); this module only draws them.
"""

from __future__ import annotations

import math

import numpy as np

from .. import demos
from ..fields import BY_NAME
from . import math as m
from .drawing import legend_html, strip_svg
from .explain import head_ref
from .markup import attr, data_num, esc, num, pct, percent_labels, rounding_note, rounding_paragraph, subscript
from .routing import sink_note, value_strip

# ==========================================================================
# Query / Key / Value as a (soft) database lookup
# ==========================================================================


def _top_entries(vec, k: int = 6) -> str:
    """The k largest |entries| of a vector as 'col c: value' text (picking, not maths)."""
    order = sorted(range(len(vec)), key=lambda c: -abs(float(vec[c])))[:k]
    shown = [f"col {c}: {num(vec[c], 2)}" for c in order if vec[c] != 0]
    nz = int(np.count_nonzero(vec))
    if not shown:
        return "all 0"
    more = f" (+{nz - len(shown)} more non-zero)" if nz > len(shown) else ""
    return ", ".join(shown) + more


def _lookup_formula() -> str:
    return m.math(
        m.row(
            m.indexed("o", "i"),
            m.mo("="),
            m.under(m.mo("∑"), m.mi("j")),
            m.indexed("A", "i", "j"),
            m.indexed("v", "j"),
            m.mtext(",\u2003"),
            m.indexed("A", "i", "j"),
            m.mo("="),
            m.sub(m.mtext("softmax"), m.mi("j")),
            m.paren(
                m.frac(
                    m.row(m.indexed("q", "i"), m.mo("·"), m.indexed("k", "j")), m.row(m.sqrt_dk(), m.mo("·"), m.mi("T"))
                )
            ),
        ),
        display="block",
        label="o_i equals the sum over j of A_ij v_j, where A_ij is the softmax over j of q_i dot k_j over root d_k "
        "times T",
    )


DENSE_VALUES = 0.5  # value vectors with more non-zero entries than this share are drawn as grouped paths


def _value_picture(values, vmax: float, *, dense: bool, label: str, meta: dict) -> str:
    """A value vector as a strip: one rect per non-zero entry (sparse, the designed model's), or, for a
    dense vector (a trained model's), cells of one colour step sharing a path (routing.value_strip)."""
    if dense:
        return value_strip(
            values,
            vmax,
            label=label,
            tip=meta.pop("data_tip"),
            cls="strip-value",
            tabindex=int(meta.pop("tabindex")),
            **meta,
        )
    return strip_svg(
        list(values), [None] * len(values), label=label, vmax=vmax, grid_row=None, cls="strip-value", meta=meta
    )


def render_qkv_lookup(state, computed, heads) -> str:
    """A table: the query asks, each key scores a match, the softmax weights blend the values."""
    tr, toks = computed.trace, computed.tokens
    h, i = state.head, state.query
    n, head = len(toks), heads[h]
    ref = head_ref(h, head)  # "head 1 (Coreference)"
    special = set(computed.run.special)
    scores, scaled, weights = tr.scores[h, i], tr.scaled_scores[h, i], tr.weights[h, i]  # each [n]
    allowed = tr.mask[i]  # [n] bool
    v, out = tr.v[h], tr.head_outputs[h, i]  # [n, d_head], [d_head]
    visible = [j for j in range(n) if allowed[j]]
    best = max(visible, key=lambda j: (float(scores[j]), -j)) if visible else None  # the hard lookup's pick
    vmax = max(float(np.abs(v).max()), float(np.abs(out).max()), 1e-12)  # colour scale of value strips
    qtok = toks[i]
    denom = f"{num(tr.scale, 2)}·{num(tr.temperature, 2)}"
    dense = np.count_nonzero(v) > DENSE_VALUES * v.size

    rows = []
    for j, tok in enumerate(toks):
        w = float(weights[j])
        tags = ", ".join(computed.run.token_tags[j])
        if not allowed[j]:
            rows.append(
                f"<tr{attr(class_='qkv-row is-masked', data_j=j, data_masked='true', data_weight=data_num(w))}>"
                f'<th scope="row"><span class="chip-index">{j}</span> <span class="qkv-token">{esc(tok)}</span></th>'
                f'<td class="qkv-masked-note" colspan="2">hidden: a future token (causal mask)</td>'
                f'<td class="qkv-hard"></td><td class="qkv-value"></td></tr>'
            )
            continue
        score_tip = (
            f"match score of key “{tok}” for the query “{qtok}”, {ref}:\n"
            f"q_{i}·k_{j} = {num(scores[j], 3)}\n"
            f"scaled: {num(scores[j], 3)} / ({denom}) = {num(scaled[j], 3)}"
        )
        weight_tip = (
            f"soft lookup takes {pct(w, 2)} of the value of “{tok}”\n"
            f"A_{i},{j} = softmax over the {len(visible)} visible keys of the scaled scores "
            f"(this one {num(scaled[j], 3)})"
        )
        hard = j == best
        value_tip = f"value v_{j} of “{tok}” ({len(v[j])} numbers): {_top_entries(v[j])}"
        key_tip = f"key {j}: “{tok}” ({tags})" if tags else f"key {j}: “{tok}”"
        rows.append(
            "<tr"
            + attr(
                class_="qkv-row" + (" is-best" if hard else "") + (" is-special" if j in special else ""),
                data_j=j,
                data_score=data_num(scores[j]),
                data_scaled=data_num(scaled[j]),
                data_weight=data_num(w),
                data_hard="1" if hard else "0",
            )
            + f'><th scope="row"{attr(data_tip=key_tip, tabindex="0")}><span class="chip-index">{j}</span> '
            f'<span class="qkv-token">{esc(tok)}</span>{" <span class=qkv-self>(itself)</span>" if j == i else ""}</th>'
            f'<td class="qkv-score num"{attr(data_tip=score_tip, tabindex="0")}>{num(scores[j], 2)}</td>'
            f'<td class="qkv-weight"{attr(data_tip=weight_tip, tabindex="0")}><span class="qkv-pct">{pct(w)}</span>'
            f'<span class="qkv-bar" style="--w: {100 * w:.2f}%"></span></td>'
            f'<td class="qkv-hard num">{"100 %" if hard else "0 %"}</td>'
            '<td class="qkv-value">'
            + _value_picture(
                v[j], vmax, dense=dense, label=f"value vector of {tok}", meta={"data_tip": value_tip, "tabindex": "0"}
            )
            + "</td>"
            "</tr>"
        )

    soft_tip = f"o_{i} = Σ_j A_{i},j v_j, the head's output for “{qtok}” ({len(out)} numbers): {_top_entries(out)}"
    hard_row = ""
    if best is not None:
        hard_tip = f"a dictionary would return v_{best} of “{toks[best]}” alone: {_top_entries(v[best])}"
        hard_row = (
            f'<tr class="qkv-result"><th scope="row" colspan="3">Hard lookup returns only the value of '
            f'<strong>{esc(toks[best])}</strong> (best score)</th><td class="qkv-hard"></td>'
            '<td class="qkv-value">'
            + _value_picture(
                v[best],
                vmax,
                dense=dense,
                label=f"value vector of {toks[best]}",
                meta={"data_tip": hard_tip, "tabindex": "0", "data_result": "hard"},
            )
            + "</td></tr>"
        )
    soft_row = (
        f'<tr class="qkv-result"><th scope="row" colspan="3">Soft lookup returns the blend '
        f'<math><msub><mi>o</mi><mn>{i}</mn></msub></math> (the head output)</th><td class="qkv-hard"></td>'
        '<td class="qkv-value">'
        + _value_picture(
            out,
            vmax,
            dense=dense,
            label=f"head output for {qtok}",
            meta={"data_tip": soft_tip, "tabindex": "0", "data_result": "soft"},
        )
        + "</td></tr>"
    )

    ranked = sorted(visible, key=lambda j: -float(weights[j]))
    ranked = ranked[:1] + [j for j in ranked[1:3] if weights[j] >= 0.005]  # the top key, then any others ≥ 0.5 %
    top = ", ".join(f"<strong>{esc(toks[j])}</strong> {pct(float(weights[j]))}" for j in ranked)
    first_sentence = head.explanation.split(". ")[0].rstrip(".") + "."
    sink = sink_note(tr, h, i, toks, computed.run.special) if computed.embedding.learned else ""
    return f"""<div class="qkv" data-view="qkv-lookup" data-head="{h}" data-query="{i}">
<p class="qkv-lede">Think of one head as a lookup in a little table. The token <strong \
class="qkv-asker">{esc(qtok)}</strong>
sends a <em>query</em>: the question this head asks. Every token answers with a <em>key</em>, a label saying what it is,
and holds a <em>value</em>, what it hands over if chosen.</p>
<div class="qkv-table-wrap">
<table class="qkv-table">
<caption>Query <strong>{esc(qtok)}</strong> (position {i}) looks up every key, {esc(ref)}</caption>
<thead><tr><th scope="col">key</th><th scope="col">score</th><th scope="col">soft lookup</th>
<th scope="col" class="qkv-hard">hard lookup</th><th scope="col">value \
<math><msub><mi>v</mi><mi>j</mi></msub></math></th></tr></thead>
<tbody>{"".join(rows)}</tbody>
<tfoot>{soft_row}{hard_row}</tfoot>
</table>
</div>
{legend_html("negative", "positive")}
<details class="more-inline" data-keep="qkv-more"><summary>Hard or soft lookup, the formula, and this head in plain \
words</summary>
<p class="qkv-plain">In plain words, <strong class="qkv-head">{esc(ref)}</strong>: {esc(first_sentence)}</p>
<div class="qkv-compare">
<div class="qkv-card"><h3>Dictionary: hard lookup</h3><p><code>table[query]</code> returns the value of the one key \
that matches best, nothing of the others.</p></div>
<div class="qkv-card"><h3>Attention: soft lookup</h3><p>Every key matches a little (score \
<math><msub><mi>q</mi><mi>i</mi></msub><mo>·</mo><msub><mi>k</mi><mi>j</mi></msub></math>); a softmax turns scores \
into weights that sum to 100 %, and the answer is the weighted blend of all values.</p></div>
</div>
{_lookup_formula()}
<p class="qkv-note" data-export-label="Match scores are the raw q{subscript(i)}·kⱼ; they are divided by √dₖ·T = \
{denom} before the softmax.">Match scores are the raw \
<math><msub><mi>q</mi><mn>{i}</mn></msub><mo>·</mo><msub><mi>k</mi><mi>j</mi></msub></math>;
they are divided by √d<sub>k</sub>·T = {denom} before the softmax. Hover or focus a number for its derivation.</p>
<p class="qkv-summary">The soft lookup takes most from {top}. A hard lookup would return only
<strong>{esc(toks[best]) if best is not None else "nothing"}</strong>. The soft weights change smoothly with the scores
(none jumps from 0 to 100 % as a hard pick does), so a small change in a query or key changes the answer a little:
that is what lets a model learn its queries and keys by gradient descent.</p>
{sink}</details></div>"""


# ==========================================================================
# Why divide by √d_k
# ==========================================================================

MODEL_DK_ID = "demo-dk-model"  # the hint's d_k: controls.model_form sends the model's own when the model changes


def render_scale_demo_controls(state, d_k: int) -> str:
    """The demo's d_k slider: static markup placed outside the re-rendered panel.

    It is drawn once, for the model the page opens with; the model's own d_k in its hint sits in an element
    of its own (MODEL_DK_ID) that the bridge refills from controls.model_form, or it would keep that first
    model's number (the designed model's 64) beside the trained model's 32."""
    lo, hi = BY_NAME["demo_dk"].limits
    return (
        f'<div class="field demo-dk-field">'
        f'<label for="demo-dk">Dimension of the random vectors <var>d<sub>k</sub></var> = '
        f'<output id="demo-dk-out" for="demo-dk">{state.demo_dk}</output></label>'
        "<input"
        + attr(
            id="demo-dk",
            type="range",
            data_event="set_demo_dk",
            min=lo,
            max=hi,
            step=1,
            value=state.demo_dk,
            aria_describedby="demo-dk-hint",
        )
        + f'><span id="demo-dk-hint" class="hint">Drag to change d<sub>k</sub> from {lo} to {hi}; '
        f'the model itself uses d<sub>k</sub> = <span id="{MODEL_DK_ID}">{d_k}</span>.</span></div>'
    )


# --- chart geometry (viewBox units; the SVGs scale to the container) ---
VW = 360  # every demo chart is 360 units wide: at a 300 px phone column, 14-unit text is ≥ 11 px
PAD_L, PAD_R = 46, 14


DK_SVG = 'd<tspan class="sub" baseline-shift="sub" font-size="75%">k</tspan>'  # d_k inside SVG <text>
DK_TXT = "dₖ"  # d_k in plain-text tooltips


def _fmt_var(x: float) -> str:
    return num(x, 1) if abs(x) >= 10 else num(x, 2)


def _log_ticks(hi: int) -> list[int]:
    return [2**p for p in range(0, int(math.log2(hi)) + 1)]


def _variance_chart(demo) -> str:
    """Var(q·k) and Var(q·k/√d_k) against d_k on log–log axes: theory lines, empirical curves, current d_k."""
    top, bottom = 14, 206
    lo_y, hi_y = -1.0, 10.0  # log2 variance axis: 0.5 .. 1024
    max_dk = len(demo.var_curve)
    span_x = math.log2(max_dk)

    def x(dk):
        return PAD_L + (VW - PAD_L - PAD_R) * math.log2(dk) / span_x

    def y(var):
        t = (min(max(math.log2(max(var, 2**lo_y)), lo_y), hi_y) - lo_y) / (hi_y - lo_y)
        return bottom - (bottom - top) * t

    parts = [
        "<svg"
        + attr(
            class_="why-chart",
            viewBox=f"0 0 {VW} 250",
            role="img",
            data_chart="variance",
            aria_label=f"Variance of q·k against {DK_TXT} on log scales. Unscaled it follows the line variance = "
            f"{DK_TXT}; divided by √{DK_TXT} it stays at 1. At {DK_TXT} = {demo.d_k}: "
            f"{_fmt_var(demo.var_dots)} and {_fmt_var(demo.var_scaled)}.",
        )
        + ">"
    ]
    for dk in _log_ticks(max_dk):  # vertical grid
        parts.append(f'<line class="grid" x1="{x(dk):.1f}" x2="{x(dk):.1f}" y1="{top}" y2="{bottom}"/>')
        if dk in (1, 4, 16, 64, 256) or dk == max_dk:
            parts.append(f'<text class="tick" x="{x(dk):.1f}" y="{bottom + 16}" text-anchor="middle">{dk}</text>')
    for p in range(0, 11, 2):  # horizontal grid at 1, 4, 16 ... 1024
        yy = y(2**p)
        parts.append(
            f'<line class="grid" x1="{PAD_L}" x2="{VW - PAD_R}" y1="{yy:.1f}" y2="{yy:.1f}"/>'
            f'<text class="tick" x="{PAD_L - 5}" y="{yy + 4:.1f}" text-anchor="end">{2**p}</text>'
        )
    parts.append(
        f'<text class="axis-title" x="{(PAD_L + VW - PAD_R) / 2}" y="{bottom + 36}" text-anchor="middle">'
        f"{DK_SVG} (log scale)</text>"
        f'<text class="axis-title" transform="translate(13,{(top + bottom) / 2}) rotate(-90)" text-anchor="middle">'
        "variance (log scale)</text>"
    )
    # theory: Var = d_k and Var = 1
    parts.append(
        f'<line class="theory" x1="{x(1):.1f}" y1="{y(1):.1f}" x2="{x(max_dk):.1f}" y2="{y(max_dk):.1f}"/>'
        f'<line class="theory" x1="{x(1):.1f}" y1="{y(1):.1f}" x2="{x(max_dk):.1f}" y2="{y(1):.1f}"/>'
    )
    # empirical curves at ~60 log-spaced d_k (which points to draw: picking, not maths)
    dks = sorted({max(1, min(max_dk, round(2 ** (span_x * s / 60)))) for s in range(61)})
    for cls, curve in (("raw", demo.var_curve), ("scaled", demo.var_curve_scaled)):
        pts = " ".join(f"{x(dk):.1f},{y(float(curve[dk - 1])):.1f}" for dk in dks)
        parts.append(f'<polyline class="empirical {cls}" points="{pts}"/>')
    # labels in the empty corners: above the diagonal (top left) and just above the flat line
    parts.append(
        f'<text class="line-label raw" x="{x(1) + 8:.1f}" y="{y(2**8.5):.1f}">q·k: grows like {DK_SVG}</text>'
        f'<text class="line-label scaled" x="{x(1) + 8:.1f}" y="{y(1) - 10:.1f}">q·k / √{DK_SVG}: stays at 1</text>'
    )
    # the current d_k
    cx = x(demo.d_k)
    parts.append(f'<line class="current" x1="{cx:.1f}" x2="{cx:.1f}" y1="{top}" y2="{bottom}"/>')
    for cls, var, theory, what in (
        ("raw", demo.var_dots, demo.d_k, "q·k"),
        ("scaled", demo.var_scaled, 1, f"q·k / √{DK_TXT}"),
    ):
        tip = (
            f"{DK_TXT} = {demo.d_k}: Var({what}) over {len(demo.dots)} random pairs = {_fmt_var(var)}\ntheory: {theory}"
        )
        parts.append(
            "<circle"
            + attr(
                class_=f"marker {cls}",
                cx=f"{cx:.1f}",
                cy=f"{y(var):.1f}",
                r=6,
                tabindex="0",
                data_tip=tip,
                data_variance=data_num(var),
                data_series=cls,
            )
            + "/>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _histogram_chart(demo) -> str:
    """The 2000 raw and scaled dot products as two histograms on one shared axis."""
    edges = demo.hist_edges  # [B+1]
    lim = float(edges[-1])
    x0, x1 = PAD_L - 20, VW - PAD_R - 14  # room for the overflow bars outside
    n_bins = len(edges) - 1
    bw = (x1 - x0) / n_bins
    row_h, bar_h = 104, 62

    def x(val):
        return x0 + (x1 - x0) * (val + lim) / (2 * lim)

    parts = [
        "<svg"
        + attr(
            class_="why-chart",
            viewBox=f"0 0 {VW} 244",
            role="img",
            data_chart="histogram",
            aria_label=f"Histograms of {len(demo.dots)} dot products, unscaled and divided by √{DK_TXT}, on a shared "
            f"axis from −{lim:g} to {lim:g}.",
        )
        + ">"
    ]
    for r, (cls, (counts, below, above), values, name, std) in enumerate(
        (
            ("raw", demo.hist_dots, demo.dots, "q·k", demo.std_dots),
            ("scaled", demo.hist_scaled, demo.scaled_dots, f"q·k / √{DK_TXT}", demo.std_scaled),
        )
    ):
        base = 20 + r * row_h + bar_h + 16
        peak = max(int(max(counts)), below, above, 1)  # bar heights per row, as a share of its tallest bar
        var = demo.var_dots if cls == "raw" else demo.var_scaled
        row_tip = f"{name}: {len(values)} samples, variance {_fmt_var(var)}, standard deviation {num(std, 2)}" + (
            f"\n{below} below −{lim:g}, {above} above {lim:g} (end bars)" if below or above else ""
        )
        parts.append(
            "<g"
            + attr(
                class_=f"hist {cls}",
                data_series=cls,
                tabindex="0",
                data_tip=row_tip,
                data_below=below,
                data_above=above,
            )
            + f'><text class="row-title {cls}" x="{x0}" y="{base - bar_h - 6}">'
            f"{esc(name).replace(DK_TXT, DK_SVG)}: spread ±{num(std, 1)} (1 s.d.)</text>"
            f'<rect class="hist-hit" x="{x0 - 14}" y="{base - bar_h}" width="{x1 - x0 + 28}" height="{bar_h}"/>'
        )
        for b, c in enumerate(counts):
            if c == 0:
                continue
            hgt = bar_h * int(c) / peak
            lo, hi = float(edges[b]), float(edges[b + 1])
            parts.append(
                "<rect"
                + attr(
                    class_=f"bar {cls}",
                    x=f"{x0 + b * bw:.2f}",
                    y=f"{base - hgt:.2f}",
                    width=f"{bw:.2f}",
                    height=f"{hgt:.2f}",
                    data_count=int(c),
                    data_tip=f"{int(c)} of {len(values)} values of {name} in [{num(lo, 0)}, {num(hi, 0)})",
                )
                + "/>"
            )
        for side, cnt, xx, edge in (("below", below, x0 - 12, -lim), ("above", above, x1 + 4, lim)):
            if cnt:
                hgt = bar_h * cnt / peak
                parts.append(
                    "<rect"
                    + attr(
                        class_=f"bar overflow {cls}",
                        x=xx,
                        y=f"{base - hgt:.2f}",
                        width=8,
                        height=f"{hgt:.2f}",
                        data_count=cnt,
                        data_tip=f"{cnt} values of {name} {side} {num(edge, 0)}, off the axis",
                    )
                    + "/>"
                )
        parts.append(f'<line class="baseline" x1="{x0 - 14}" x2="{x1 + 14}" y1="{base}" y2="{base}"/></g>')
    axis_y = 20 + 2 * row_h
    for t in (-lim, -lim / 2, 0.0, lim / 2, lim):
        parts.append(
            f'<line class="grid" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{axis_y - 2 * row_h + 6}" y2="{axis_y - 6}"/>'
            f'<text class="tick" x="{x(t):.1f}" y="{axis_y + 10}" text-anchor="middle">{num(t, 0)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _softmax_chart(demo) -> str:
    """Softmax of the same 8 scores, without and with the division: one bar near 100 % vs a spread."""
    n = len(demo.scores)
    x0, x1 = 16, VW - 16
    slot = (x1 - x0) / n
    bw = slot * 0.62
    row_h, bar_h = 124, 62
    rows = (
        ("raw", demo.weights_unscaled, demo.scores, "unscaled: softmax(q·k)", demo.max_unscaled, demo.entropy_unscaled),
        (
            "scaled",
            demo.weights_scaled,
            demo.scaled_scores,
            f"scaled: softmax(q·k / √{DK_SVG})",
            demo.max_scaled,
            demo.entropy_scaled,
        ),
    )
    parts = [
        "<svg"
        + attr(
            class_="why-chart",
            viewBox=f"0 0 {VW} {2 * row_h + 4}",
            role="img",
            data_chart="softmax",
            data_grid=True,
            aria_label=f"Softmax of {n} random scores: without scaling the largest weight is "
            f"{pct(demo.max_unscaled)}, with scaling {pct(demo.max_scaled)}.",
        )
        + ">"
    ]
    for r, (cls, w, s, title, wmax, ent) in enumerate(rows):
        top = 8 + r * row_h
        base = top + 22 + bar_h + 16
        parts.append(
            f'<text class="row-title {cls}" x="{x0}" y="{top + 14}">{title}</text>'
        )  # fixed text, no reader input
        parts.append(f'<line class="baseline" x1="{x0}" x2="{x1}" y1="{base}" y2="{base}"/>')
        percents = percent_labels(w)  # whole %, each rounded on its own ("<1": under 0.5 %)
        for j in range(n):
            cx = x0 + j * slot + slot / 2
            hgt = bar_h * float(w[j])
            if cls == "raw":
                tip = (
                    f"key {j + 1}: score q·k = {num(demo.scores[j], 2)}\nweight = softmax of the raw scores = "
                    f"{pct(float(w[j]), 2)}"
                )
            else:
                tip = (
                    f"key {j + 1}: scaled score = {num(demo.scores[j], 2)} / √{demo.d_k} = {num(demo.scores[j], 2)} "
                    f"/ {num(demo.sqrt_dk, 2)} = {num(s[j], 2)}\n"
                    f"weight = softmax of the scaled scores = {pct(float(w[j]), 2)}"
                )
            parts.append(
                f'<rect class="bar-slot" x="{cx - bw / 2:.1f}" y="{base - bar_h}" width="{bw:.1f}" height="{bar_h}"/>'
            )
            parts.append(
                "<rect"
                + attr(
                    class_=f"bar {cls}",
                    x=f"{cx - bw / 2:.1f}",
                    y=f"{base - hgt:.2f}",
                    width=f"{bw:.1f}",
                    height=f"{max(hgt, 0.0):.2f}",
                    data_weight=data_num(w[j]),
                    data_score=data_num(s[j]),
                    data_tip=tip,
                    tabindex="0" if (r, j) == (0, 0) else "-1",
                    data_grid_cell=True,
                    data_i=r,
                    data_j=j,
                )
                + "/>"
            )
            parts.append(
                f'<text class="bar-pct" x="{cx:.1f}" y="{base - hgt - 4:.1f}" text-anchor="middle">{esc(percents[j])}'
                "</text>"
            )
            parts.append(f'<text class="tick" x="{cx:.1f}" y="{base + 14}" text-anchor="middle">k{j + 1}</text>')
        parts.append(
            "<text"
            + attr(
                class_="row-note",
                x=x1,
                y=top + 14,
                text_anchor="end",
                data_tip=f"entropy of these weights: {num(ent, 2)} bits (0 = all on one key, "
                f"{num(demo.entropy_uniform, 0)} = spread evenly over {n})",
            )
            + f">{num(ent, 2)} bits</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _scale_formula() -> str:
    qk = m.row(m.mi("q"), m.mo("·"), m.mi("k"))
    d_k = m.sub(m.mi("d"), m.mi("k"))

    def var(x):
        return m.row(m.mtext("Var"), m.paren(x))

    total = m.subsup(m.mo("∑"), m.row(m.mi("m"), m.mo("="), m.mn("1")), d_k)
    grows = m.math(
        m.row(
            var(qk),
            m.mo("="),
            total,
            var(m.row(m.sub(m.mi("q"), m.mi("m")), m.sub(m.mi("k"), m.mi("m")))),
            m.mo("="),
            d_k,
        ),
        display="block",
        label="Var(q·k) = sum over m from 1 to d_k of Var(q_m k_m) = d_k",
    )
    fixed = m.math(
        m.row(var(m.frac(qk, m.sqrt_dk())), m.mo("="), m.frac(d_k, d_k), m.mo("="), m.mn("1")),
        display="block",
        label="Var(q·k / √d_k) = d_k / d_k = 1",
    )
    return f'<div class="why-formulas">{grows}{fixed}</div>'


def _scale_tables(demo) -> str:
    dks = _log_ticks(len(demo.var_curve))
    if demo.d_k not in dks:
        dks = sorted(dks + [demo.d_k])
    var_rows = "".join(
        f"<tr><td>{dk}</td><td>{dk}</td><td>{_fmt_var(float(demo.var_curve[dk - 1]))}</td>"
        f"<td>{_fmt_var(float(demo.var_curve_scaled[dk - 1]))}</td></tr>"
        for dk in dks
    )
    sm_rows = "".join(
        f"<tr><td>k{j + 1}</td><td>{num(demo.scores[j], 2)}</td><td>{pct(float(demo.weights_unscaled[j]))}</td>"
        f"<td>{num(demo.scaled_scores[j], 2)}</td><td>{pct(float(demo.weights_scaled[j]))}</td></tr>"
        for j in range(len(demo.scores))
    )
    # the wrapper, not the table, is .sr-only: a table ignores width: 1px and would widen the page
    return (
        f'<div class="sr-only"><table><caption>Variance of q·k over {len(demo.dots)} random pairs</caption>'
        f"<thead><tr><th>{DK_TXT}</th><th>theory</th><th>Var(q·k)</th><th>Var(q·k/√{DK_TXT})</th></tr></thead>"
        f"<tbody>{var_rows}</tbody></table>"
        f"<table><caption>Softmax of {len(demo.scores)} random scores at {DK_TXT} = {demo.d_k}</caption>"
        "<thead><tr><th>key</th><th>score</th><th>weight unscaled</th><th>scaled score</th><th>weight scaled</th>"
        "</tr></thead>"
        f"<tbody>{sm_rows}</tbody></table></div>"
    )


def render_scale_demo(state, computed=None) -> str:
    """Variance chart, histograms and the two softmax rows for d_k = state.demo_dk (the slider is elsewhere)."""
    demo = demos.scale_demo(int(state.demo_dk))
    n_keys = len(demo.scores)
    uniform_bits = demo.entropy_uniform
    if demo.d_k == 1:
        verdict = (
            "at <var>d<sub>k</sub></var> = 1 dividing by √1 changes nothing, so both rows are the same; "
            "move <var>d<sub>k</sub></var> up to watch the unscaled one collapse onto one key"
        )
    elif demo.max_unscaled >= 0.9:
        verdict = (
            "the unscaled softmax has all but collapsed onto one key: nearly a hard argmax, whose gradient "
            "for the other keys is almost zero, so they stop learning"
        )
    else:
        verdict = (
            "the unscaled softmax is already more peaked than the scaled one; move <var>d<sub>k</sub></var> "
            "up to watch it collapse onto one key"
        )
    own = ""
    if computed is not None:  # the model on the page: its heads' own d_k and the scale it divides by
        d_k = computed.model.d_k
        root = f"{math.sqrt(d_k):.0f}" if math.isqrt(d_k) ** 2 == d_k else f"≈ {num(math.sqrt(d_k), 2)}"
        own = (
            f' The model on this page has <var>d<sub>k</sub></var> = <span data-num="model-dk">{d_k}</span> per '
            f"head, so it divides its scores by √{d_k} {'= ' if not root.startswith('≈') else ''}{root}."
        )
    return f"""<div class="why-scale" data-view="scale-demo" data-dk="{demo.d_k}">
<p class="why-lede">Take two random vectors <var>q</var> and <var>k</var> with <var>d<sub>k</sub></var> entries, each \
of mean 0 and
variance 1. Their dot product adds up <var>d<sub>k</sub></var> independent products of variance 1, so its variance is
<var>d<sub>k</sub></var>: the scores spread out like <math>{m.sqrt_dk()}</math>. Dividing by \
<math>{m.sqrt_dk()}</math> puts the variance back to 1, whatever <var>d<sub>k</sub></var>.</p>
{_scale_formula()}
<p class="why-numbers">At <var>d<sub>k</sub></var> = <strong data-num="dk">{demo.d_k}</strong>, over {len(demo.dots)} \
random pairs:
<span class="why-raw">Var(q·k) = <strong data-num="var-dots">{_fmt_var(demo.var_dots)}</strong></span> (theory \
{demo.d_k}),
<span class="why-scaled">Var(q·k / √d<sub>k</sub>) = <strong \
data-num="var-scaled">{_fmt_var(demo.var_scaled)}</strong></span> (theory 1).
Softmax over {n_keys} keys: unscaled, the top key gets <strong data-num="max-unscaled">{pct(demo.max_unscaled)}</strong>
(entropy <span data-num="entropy-unscaled">{num(demo.entropy_unscaled, 2)}</span> bits of at most \
{num(uniform_bits, 0)});
scaled, <strong data-num="max-scaled">{pct(demo.max_scaled)}</strong> (<span \
data-num="entropy-scaled">{num(demo.entropy_scaled, 2)}</span> bits).
So {verdict}.{own}</p>
<div class="why-legend" aria-hidden="true"><span><span class="swatch raw"></span> unscaled q·k</span>
<span><span class="swatch scaled"></span> scaled q·k / √d<sub>k</sub></span><span><span class="swatch theory"></span> \
theory</span></div>
<div class="why-charts">
<figure class="why-fig"><figcaption>Variance grows with <var>d<sub>k</sub></var> unless \
scaled</figcaption>{_variance_chart(demo)}</figure>
<figure class="why-fig"><figcaption>{len(demo.dots)} dot products at <var>d<sub>k</sub></var> = \
{demo.d_k}</figcaption>{_histogram_chart(demo)}</figure>
<figure class="why-fig"><figcaption>One query, {n_keys} keys: softmax weights in %</figcaption>{_softmax_chart(demo)}
{rounding_paragraph(rounding_note("The numbers over the bars", "a row"))}</figure>
</div>
{_scale_tables(demo)}
</div>"""
