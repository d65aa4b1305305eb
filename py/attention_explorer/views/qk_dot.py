"""Where a score comes from: Q_i·K_j taken apart, dimension by dimension, back to the input.

What it teaches: a raw score is a plain dot product, q_i·k_j = Σ_d q_i[d]·k_j[d]
over the head's d_k dimensions, and each q_i[d] (k_j[d]) is itself a sum over the
token's input dimensions, x_i[a]·W_Q[a, d]. Where the model names its input
dimensions (the designed model's features: "noun", "singular", ...), the reader
sees the score built from facts about the two words; then ÷ √d_k·T and the
softmax turn it into the weight, as in the affinity panel.

The key j is the reader's choice (state.key: a heatmap cell or an affinity bar,
hovered, focused or clicked) or, by default, the key the query attends to most.
Terms are the trace's own q and k multiplied elementwise by core.dot_product_terms;
the listed ones plus "all other dimensions" add up to the trace's score.

Hooks: [data-view="qk-dot"] with data-score (the trace's Q_i·K_j), data-i,
data-j, data-head, data-layer; one [data-term] row per listed dimension with
data-dim and data-value (q_i[d]·k_j[d]) and one [data-term][data-dim="other"]
for the rest, so the data-values add up to data-score.

A trained model's input dimensions have no names (ModelDescription.dim_names all
""): tracing q[d] back to "dim 217 0.31 + dim 40 −0.12 + …" would be numbers
without meaning, so there the table stops at the d_k terms and says why.

`why_line` is the one-sentence reason under the query: where it looks most, and
which dimensions (and so which input facts) carry that score. When the strongest
key is a special token of a trained model, it says what the trace shows about
that "sink": how short its value vector is, so how little the attention brings.
"""

from __future__ import annotations

import numpy as np

from .. import core
from . import math as m
from .attention_matrix import strongest_key
from .colors import signed_strength
from .explain import head_ref
from .markup import attr, clip_label, data_num, esc, num, pct

MAX_LISTED = 8  # dimensions listed by name; the rest are summed into one row
MIN_SHARE = 0.02  # ... and only those carrying at least 2 % of the total |terms|
MAX_SOURCES = 4  # input dimensions named per q or k entry
DOMINANT = 0.25  # the why line names a dimension's sources when it carries >= 25 % of |terms|


def chosen_key(state, trace, h: int) -> tuple[int, bool]:
    """(key j, chosen automatically?): the reader's key if it exists and is visible, else the strongest."""
    i, n = state.query, trace.n_tokens
    if 0 <= state.key < n and bool(trace.mask[i, state.key]):
        return state.key, False
    return strongest_key(trace.weights[h, i], trace.mask[i]), True


def listed_dims(terms) -> list[int]:
    """The dimensions worth naming: largest |term| first, each >= MIN_SHARE of the total, at most MAX_LISTED."""
    mags = np.abs(np.asarray(terms, dtype=np.float64))
    total = float(mags.sum())
    if total == 0:
        return []
    order = np.argsort(-mags, kind="stable")
    return [int(d) for d in order[:MAX_LISTED] if mags[d] >= MIN_SHARE * total]


def _dim_name(model, a: int) -> str:
    name = model.dim_names[a] if a < len(model.dim_names) else ""
    return name or f"dim {a}"


def sources(model, x_row, w, bias, col: int) -> tuple[list[tuple[str, float]], float]:
    """([(input dimension's name, x[a]·w[a, col]), ...] largest first, at most MAX_SOURCES), rest incl. bias."""
    parts = core.projection_terms(x_row, w, col)  # [d_model]
    nonzero = [int(a) for a in np.argsort(-np.abs(parts), kind="stable") if parts[a] != 0]
    named = [(_dim_name(model, a), float(parts[a])) for a in nonzero[:MAX_SOURCES]]
    rest = float(parts.sum() - sum(v for _, v in named)) + float(bias)
    return named, rest


def _sum_text(named, rest: float, total: float) -> str:
    """'noun 12.80 + singular 6.40 + other 0.10 = 19.30' (signed terms in parentheses)."""
    if not named and rest == 0:
        return "0 (no input dimension feeds it)"
    bits = [f"{name} {_signed(v)}" for name, v in named]
    if abs(rest) >= 5e-3:
        bits.append(f"other {_signed(rest)}")
    if len(bits) == 1 and named:
        return f"{named[0][0]} {num(total, 2)}"  # one source: the sum is that term
    return " + ".join(bits) + f" = {num(total, 2)}"


def _signed(x: float) -> str:
    s = num(x, 2)
    return f"({s})" if s.startswith("−") else s


def _term_bar(value: float, limit: float) -> str:
    sign, strength = signed_strength(value, limit)
    width = 0 if limit <= 0 else min(100.0, 100 * abs(value) / limit)
    return (
        f'<span class="qk-bar"><span class="qk-bar-fill is-{sign}" style="width:{width:.1f}%;'
        f'opacity:{0.35 + 0.65 * strength:.2f}"></span></span>'
    )


def _key_picker(tokens, mask_row, j: int, i: int) -> str:
    buttons = "".join(
        "<button"
        + attr(
            type="button",
            class_="chip qk-key is-key" if k == j else "chip qk-key",
            data_event="set_key",
            data_value=k,
            aria_pressed="true" if k == j else "false",
            disabled=not bool(mask_row[k]),
        )
        + f'><span class="chip-index">{k}</span>{esc(clip_label(t, 14))}</button>'
        for k, t in enumerate(tokens)
    )
    return (
        f'<div class="qk-keys" role="group" aria-label="Choose the key j whose score with query {i} is taken apart">'
        f'<span class="qk-keys-label">Key <var>j</var>:</span>{buttons}</div>'
    )


def render(state, computed) -> str:
    tr, p, model = computed.trace, computed.params, computed.model
    h, i, toks = state.head, state.query, computed.tokens
    d_k = tr.d_head
    j, auto = chosen_key(state, tr, h)
    q, k = tr.q[h, i], tr.k[h, j]  # [d_k] each
    terms = core.dot_product_terms(q, k)  # [d_k], sums to the score
    score = float(tr.scores[h, i, j])
    dims = listed_dims(terms)
    other = float(terms.sum() - sum(float(terms[d]) for d in dims))
    limit = float(np.abs(terms).max()) if len(terms) else 0.0
    col0 = h * d_k  # the head's first column in W_Q, W_K
    named = any(model.dim_names)  # input dims with names: trace each entry back to them
    rows = []
    for d in dims:
        tip = (
            f"dimension {d} of head {h + 1}:\nq_{i}[{d}] = {num(q[d], 3)}, k_{j}[{d}] = {num(k[d], 3)}\n"
            f"product = {num(terms[d], 3)}"
        )
        src = ""
        if named:
            q_src = sources(model, tr.x[i], p.w_q, p.b_q[col0 + d], col0 + d)
            k_src = sources(model, tr.x[j], p.w_k, p.b_k[col0 + d], col0 + d)
            src = (
                '<td class="qk-src">'
                f'<span class="qk-src-line"><var>q</var> = {esc(_sum_text(*q_src, float(q[d])))}</span>'
                f'<span class="qk-src-line"><var>k</var> = {esc(_sum_text(*k_src, float(k[d])))}</span></td>'
            )
        rows.append(
            f"<tr{attr(data_term=True, data_dim=d, data_value=data_num(terms[d]), tabindex=0, data_tip=tip)}>"
            f'<th scope="row">{d}</th><td class="num">{num(q[d], 2)}</td><td class="num">{num(k[d], 2)}</td>'
            f'<td class="num qk-product">{_term_bar(float(terms[d]), limit)}{num(terms[d], 2)}</td>{src}</tr>'
        )
    n_other = d_k - len(dims)
    if n_other:
        rest = (
            '<td class="qk-src muted">' + ("each under 2 % of the total" if dims else "all of them") + "</td>"
            if named
            else ""
        )
        rows.append(
            f'<tr{attr(data_term=True, data_dim="other", data_value=data_num(other))} class="qk-other">'
            f'<th scope="row" colspan="3">all other {n_other} dimensions together</th>'
            f'<td class="num qk-product">{_term_bar(other, limit)}{num(other, 2)}</td>{rest}</tr>'
        )
    why = "the key it attends to most" if auto else "your choice (hover, focus or click a cell or bar)"
    scaled, weight = float(tr.scaled_scores[h, i, j]), float(tr.weights[h, i, j])
    steps = m.math(
        m.row(
            m.indexed("q", str(i)),
            m.mo("·"),
            m.indexed("k", str(j)),
            m.mo("="),
            m.mn_num(score, 2),
            m.mo("→"),
            m.frac(m.mn_num(score, 2), m.row(m.mn_num(tr.scale, 2), m.mo("×"), m.mn_num(tr.temperature, 2))),
            m.mo("="),
            m.mn_num(scaled, 2),
            m.mo("→"),
            m.sub(m.mtext("softmax"), m.mi("j")),
            m.mo("="),
            m.mn(pct(weight)),
        ),
        display="block",
        label=f"q {i} dot k {j} equals {num(score, 2)}; divided by {num(tr.scale, 2)} times {num(tr.temperature, 2)} "
        f"gives {num(scaled, 2)}; after the softmax over the row the weight is {pct(weight)}",
    )
    head = head_ref(h, computed.heads[h])
    d_model = tr.x.shape[1]
    if named:
        trail = (
            "Each <var>q</var> and <var>k</var> entry is in turn a sum over the token's input vector <var>x</var> "
            "times one column of <var>W</var><sub>Q</sub> or <var>W</var><sub>K</sub>: the last column names the "
            "input dimensions it comes from."
        )
    else:
        carried = float(np.abs(terms[dims]).sum() / np.abs(terms).sum()) if dims else 0.0
        trail = (
            (f"The {len(dims)} listed carry {pct(carried, 0)} of the total size of the terms. " if dims else "")
            + f"Each <var>q</var> and <var>k</var> entry is in turn a sum over all {d_model} dimensions of the "
            f"token's input vector <var>x</var> (plus a bias), and in a trained model none of them has a name, "
            f"so the trail ends at these {d_k} terms: no single fact about the two words can be read off."
        )
    src_head = '<th scope="col">where <var>q</var> and <var>k</var> come from</th>' if named else ""
    return (
        "<div"
        + attr(
            class_="qk-dot",
            data_view="qk-dot",
            data_score=data_num(score),
            data_i=i,
            data_j=j,
            data_head=h,
            data_layer=state.layer,
            data_auto="true" if auto else "false",
        )
        + ">"
        f'<p class="qk-lede">Query <q class="tok">{esc(toks[i])}</q> ({i}) and key <q class="tok">{esc(toks[j])}</q> '
        f"({j}, {esc(why)}), {esc(head)}. The raw score is a sum of {d_k} products, "
        f"one per dimension of the head; these carry it. {trail}</p>"
        f"{_key_picker(toks, tr.mask[i], j, i)}"
        f'<div class="figure qk-table-wrap" tabindex="0" role="group" aria-label="The terms of the score">'
        f'<table class="qk-terms">'
        f'<caption class="sr-only">q_{i}·k_{j} of head {h + 1}, term by term</caption>'
        f'<thead><tr><th scope="col">dim <var>d</var></th><th scope="col"><var>q</var><sub>{i}</sub>[<var>d</var>]</th>'
        f'<th scope="col"><var>k</var><sub>{j}</sub>[<var>d</var>]</th><th scope="col">product</th>'
        f"{src_head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody>"
        f'<tfoot><tr><th scope="row" colspan="3">sum: <var>q</var><sub>{i}</sub>·<var>k</var><sub>{j}</sub></th>'
        f'<td class="num qk-product"><strong>{num(score, 2)}</strong></td>{"<td></td>" if named else ""}'
        "</tr></tfoot></table></div>"
        '<div class="figure qk-steps" tabindex="0" role="group" aria-label="From the score to the weight">'
        f"{steps}</div></div>"
    )


def why_line(state, computed) -> str:
    """One sentence under the query: where it looks most with this head, and what carries that score."""
    tr, p, model = computed.trace, computed.params, computed.model
    h, i, toks = state.head, state.query, computed.tokens
    j = strongest_key(tr.weights[h, i], tr.mask[i])
    head = head_ref(h, computed.heads[h])
    # one decimal: a sentence about one weight can say more than its heatmap cell's whole percentage;
    # both are the weight rounded on its own (markup.percent_label), never adjusted to make a row add up
    w = pct(float(tr.weights[h, i, j]), 1)
    start = f"With {head}, “{toks[i]}” looks most at “{toks[j]}” ({w})"
    if j in computed.run.special:
        reason = (
            _sink_reason(tr, h, i, j, computed.run.special, toks)
            if computed.embedding.learned
            else f": a special token, not a word. This head has nothing to look for in this sentence "
            f"for “{toks[i]}”, so it rests its attention there (no-op attention)."
        )
    else:
        terms = core.dot_product_terms(tr.q[h, i], tr.k[h, j])
        total = float(np.abs(terms).sum())
        d = int(np.argmax(np.abs(terms))) if total else -1
        if d < 0:
            reason = ": every score in this row is 0, so the weights are equal."
        elif abs(float(terms[d])) >= DOMINANT * total and any(model.dim_names):
            col = h * tr.d_head + d
            q_names = [n for n, v in sources(model, tr.x[i], p.w_q, 0.0, col)[0]]
            k_names = [n for n, v in sources(model, tr.x[j], p.w_k, 0.0, col)[0]]
            share = pct(abs(float(terms[d])) / total, 0)
            reason = (
                f". Its score Q·K = {num(float(tr.scores[h, i, j]), 1)} comes {share} from dimension {d}, "
                f"where the query reads {', '.join(q_names) or 'nothing'} and the key reads "
                f"{', '.join(k_names) or 'nothing'}."
            )
        elif abs(float(terms[d])) >= DOMINANT * total:  # no names to read: say how concentrated it is
            reason = (
                f". Its score Q·K = {num(float(tr.scores[h, i, j]), 1)} comes "
                f"{pct(abs(float(terms[d])) / total, 0)} from dimension {d} of the head's {tr.d_head}."
            )
        else:
            reason = (
                f". Its score Q·K = {num(float(tr.scores[h, i, j]), 1)} is spread over many dimensions "
                f"(the largest carries {pct(abs(float(terms[d])) / total, 0)})."
            )
    return f'<p class="query-why" data-view="query-why" data-j="{j}">{esc(start + reason)}</p>'


SHORT_VALUE = 0.5  # a special token's value vector this much shorter than the words' average makes it a "sink"


def _sink_reason(tr, h: int, i: int, j: int, special, toks) -> str:
    """Why a trained head's attention on a special token matters little, or that it does matter:
    the length of that token's value vector against the words' (what the attention brings back)."""
    norms = np.linalg.norm(tr.v[h], axis=1)  # [n] ‖v_j‖ of this head (display only)
    words = [k for k in range(len(toks)) if k not in special]
    mean = float(norms[words].mean()) if words else 0.0
    here = float(norms[j])
    lengths = f"‖v‖ = {num(here, 2)}, against {num(mean, 2)} on average for the words"
    if mean > 0 and here < SHORT_VALUE * mean:
        return (
            f": a special token, not a word. Its value vector is short here ({lengths}), so the attention "
            f"parked on it brings back little: a “sink”, close to a no-op. Trained heads often rest there when "
            f"what they look for is not in the sentence."
        )
    return (
        f": a special token, not a word. Trained heads often rest on it when what they look for is not in the "
        f"sentence, but here its value vector is not short ({lengths}), so it does hand something over."
    )
