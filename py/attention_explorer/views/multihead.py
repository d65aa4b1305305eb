"""Multi-head output: the heads' answers side by side, concatenated, then mixed by W^O.

For the selected query token i, each head h has produced its own context
vector head_h = Z_i^(h) (d_head numbers, trace.head_outputs[h, i]). Laid end
to end they ARE the concatenation [head_1; …; head_H] (trace.concat[i],
H · d_head = d_model numbers): no arithmetic happens there, only placement.
The output projection W^O (d_model × d_model) then mixes the heads, so every
output dimension can draw on every head: MultiHead(Q, K, V) =
Concat(head_1, …, head_h) W^O (+ b^O here), trace.attn_out[i].

Every strip's numbers come from the trace; the view only places and colours them.
"""

from __future__ import annotations

import numpy as np

from . import math as m
from .colors import HEAD_COLORS
from .drawing import scale_legend
from .explain import head_name, head_title
from .markup import attr, clip_label, esc
from .routing import head_of, peak_of, strip_limit, value_strip

MANY_HEADS = 6  # more heads than this (a trained model's 12) wrap their segments on narrow screens


def multihead_formula(has_bias: bool) -> str:
    """MultiHead(Q,K,V) = Concat(head_1,…,head_h) W^O  [+ b^O], typeset.

    Two <math> pieces (left side with '=', right side) in a wrapping box, so a
    360 px phone breaks the line at the '=' instead of clipping the formula.
    """
    heads = m.row(m.indexed("head", "1"), m.mo(","), m.mo("…"), m.mo(","), m.indexed("head", "h"))
    rhs = [m.mi("Concat"), m.paren(heads), m.sup(m.mi("W"), m.mi("O"))]
    if has_bias:
        rhs += [m.mo("+"), m.sup(m.mi("b"), m.mi("O"))]
    lhs = m.math(
        m.row(m.mi("MultiHead"), m.paren(m.row(m.mi("Q"), m.mo(","), m.mi("K"), m.mo(","), m.mi("V"))), m.mo("=")),
        label="MultiHead(Q, K, V) equals",
    )
    rhs_label = "Concat(head_1, …, head_h) W^O" + (" + b^O" if has_bias else "")
    return f'<p class="mh-formula">{lhs} {m.math(m.row(*rhs), label=rhs_label)}</p>'


def _shape(*dims) -> str:
    """A shape label such as [1 × 256], typeset."""
    parts = []
    for k, d in enumerate(dims):
        if k:
            parts.append(m.mo("×"))
        parts.append(m.mn(str(d)))
    return m.math(m.row(m.mo("["), *parts, m.mo("]")), label=" by ".join(str(d) for d in dims))


def _head_segment(h: int, info, values, limit: float, query_token: str, d_head: int) -> str:
    """One head's output for the query: a strip of d_head numbers, outlined in the head's colour."""
    lo, hi = h * d_head, (h + 1) * d_head - 1
    tip = "\n".join(
        [
            head_title(h, info),
            f"its context vector for “{query_token}”",
            f"d_head = {d_head} numbers → concat dims {lo}–{hi}",
            f"[{head_of(values)}]",
            peak_of(values),
        ]
    )
    strip = value_strip(values, limit, label=f"head {h + 1} output, {d_head} numbers", tip=tip, data_h=h)
    return (
        f"<div{attr(class_='mh-seg', data_h=h, style=f'--head-color:{HEAD_COLORS[h % len(HEAD_COLORS)]}')}>"
        f'<span class="mh-seg-name">{m.math(m.indexed("head", str(h + 1)))} <span class="mh-seg-title">'
        f"{esc(head_name(h, info))}</span></span>"
        f'{strip}<span class="mh-dims"><span class="mh-wide">d_head = {d_head} · dims </span>{lo}–{hi}</span></div>'
    )


def _w_o_picture(rows: int, cols: int, n_heads: int, d_head: int) -> str:
    """W^O as a square whose row bands are coloured by the head whose dimensions they read."""
    size = 60
    band = size / n_heads
    bands = "".join(
        "<rect"
        + attr(x=0, y=f"{h * band:.2f}", width=6, height=f"{band:.2f}", fill=HEAD_COLORS[h % len(HEAD_COLORS)])
        + "/>"
        for h in range(n_heads)
    )
    label = (
        f"the output projection W^O, {rows} rows by {cols} columns; rows {d_head}·h to {d_head}·(h+1)−1 read head h+1"
    )
    return (
        f"<svg{attr(class_='mh-wo', viewBox=f'-1 -1 {size + 2} {size + 2}', role='img', aria_label=label)}>"
        f'<rect class="mh-wo-body" x="0" y="0" width="{size}" height="{size}" rx="2"/>{bands}'
        f'<text class="mh-wo-label" x="{size / 2 + 3}" y="{size / 2}" text-anchor="middle" '
        'dominant-baseline="central">Wᴼ</text></svg>'
    )


def _concat_step(trace, i: int, heads, q_tok: str) -> str:
    """head_1 … head_H for query i side by side: the concatenation, labelled with its dimensions."""
    n_heads, d_head = trace.n_heads, trace.d_head
    d_model = trace.concat.shape[1]  # = n_heads · d_head
    head_vectors = trace.head_outputs[:, i]  # [H, d_head]; side by side = trace.concat[i]
    limit = strip_limit(trace.concat[i])
    segments = "".join(_head_segment(h, heads[h], head_vectors[h], limit, q_tok, d_head) for h in range(n_heads))
    concat = m.math(
        m.mi("Concat"),
        m.paren(m.row(m.indexed("head", "1"), m.mo(","), m.mo("…"), m.mo(","), m.indexed("head", str(n_heads)))),
    )
    return (
        f'<div class="mh-step"><span class="mh-step-label">{concat} {_shape(1, d_model)}</span>'
        "<div"
        + attr(
            class_="mh-concat",
            data_view="concat",
            data_query=i,
            data_d_model=d_model,
            role="group",
            aria_label=f"concatenation of {n_heads} head outputs, {d_model} numbers",
        )
        + f">{segments}</div>"
        f'<p class="mh-brace" aria-hidden="true"><span>d_model = {d_model} = {n_heads} heads × d_head = {d_head}'
        "</span></p>"
        f"{scale_legend(limit, 'head outputs: value per dimension')}</div>"
    )


def mixing_sentence(w_o, n_heads: int, d_head: int) -> str:
    """What W^O does with the heads, read from its entries: does an output column mix several heads?"""
    rows, cols = np.shape(w_o)  # [n_heads·d_head, d_model]
    reads = np.abs(np.asarray(w_o)).reshape(n_heads, d_head, cols).max(axis=1) > 0  # [n_heads, cols]
    per_col = reads.sum(axis=0)  # [cols]: how many heads write each column
    if per_col.max() <= 1:
        empty = int(np.count_nonzero(per_col == 0))
        return (
            f"in this model each output column takes at most one head ({empty} of {cols} take none): "
            f"every head writes into its own slot. In trained models every column mixes all heads."
        )
    if (per_col == n_heads).all():
        return f"each output column mixes all {n_heads} heads."
    return f"{int(np.count_nonzero(per_col > 1))} of {cols} output columns mix more than one head."


def _projection_step(params, n_heads: int, d_head: int, has_bias: bool) -> str:
    """× W^O, its shape read from the parameters, and which rows read which head."""
    rows, cols = np.shape(params.w_o)  # [d_model, d_model]
    bias = (
        f' <span class="mh-op">+</span> {m.math(m.sup(m.mi("b"), m.mi("O")))} {_shape(np.shape(params.b_o)[0])}'
        if has_bias
        else ""
    )
    return (
        '<div class="mh-step mh-project"><span class="mh-op" aria-hidden="true">×</span>'
        f"{_w_o_picture(rows, cols, n_heads, d_head)}"
        f'<span class="mh-step-label">{m.math(m.sup(m.mi("W"), m.mi("O")))} {_shape(rows, cols)} '
        f'<span class="muted">d_model × d_model: rows 0–{d_head - 1} read head 1, rows {d_head}–{2 * d_head - 1} '
        "head 2, …; "
        f"{esc(mixing_sentence(params.w_o, n_heads, d_head))}</span>{bias}</span></div>"
    )


def _output_step(trace, i: int, q_tok: str, has_bias: bool) -> str:
    """= the attention output for query i, trace.attn_out[i] (d_model numbers)."""
    out = trace.attn_out[i]  # [d_model]
    d_model = len(out)
    limit = strip_limit(out)
    tip = "\n".join(
        [
            f"attention output for “{q_tok}”",
            "Concat(…) W^O" + (" + b^O" if has_bias else ""),
            f"d_model = {d_model} numbers",
            f"[{head_of(out)}]",
            peak_of(out),
        ]
    )
    strip = value_strip(
        out,
        limit,
        label=f"attention output for “{q_tok}”, {d_model} numbers",
        tip=tip,
        cls="mh-out-strip",
        data_view="attn-out",
        data_query=i,
    )
    return (
        f'<div class="mh-step"><span class="mh-step-label"><span class="mh-op" aria-hidden="true">=</span> '
        f'{m.math(m.mi("MultiHead"))} output for <bdi class="q-name">{esc(clip_label(q_tok, 20))}</bdi>'
        f" {_shape(1, d_model)}</span>"
        f'{strip}<p class="mh-brace" aria-hidden="true"><span>d_model = {d_model}</span></p>'
        f"{scale_legend(limit, 'attention output: value per dimension')}</div>"
    )


def render(state, computed, heads) -> str:
    """Head outputs for state.query side by side (= the concat), × W^O, = the attention output."""
    trace, params, tokens = computed.trace, computed.params, computed.tokens
    i = state.query
    n_heads, d_head = trace.n_heads, trace.d_head
    d_model = trace.concat.shape[1]
    has_bias = params.b_o is not None and bool(np.any(np.asarray(params.b_o) != 0))
    q_tok = tokens[i]
    many = n_heads > MANY_HEADS  # the head segments wrap onto several rows on a narrow screen
    return (
        "<div"
        + attr(
            class_="multihead mh-many" if many else "multihead",
            data_query=i,
            data_n_heads=n_heads,
            data_d_head=d_head,
            data_d_model=d_model,
        )
        + f">{multihead_formula(has_bias)}"
        f'<p class="mh-lede">For the query <bdi class="q-name">{esc(clip_label(q_tok, 20))}</bdi>'
        f": each of the {n_heads} heads "
        f"returns its own context vector of d_head = {d_head} numbers, and side by side they are the "
        f"concatenation, {n_heads} × {d_head} = d_model = {d_model} numbers. Why not one head of {d_model}? "
        f"One softmax gives one row of weights, a single blend; {n_heads} heads, each in its own {d_head} "
        f"dimensions, look {n_heads} ways at once for the same cost.</p>"
        f"{_concat_step(trace, i, heads, q_tok)}"
        f"{_projection_step(params, n_heads, d_head, has_bias)}"
        f"{_output_step(trace, i, q_tok, has_bias)}</div>"
    )
