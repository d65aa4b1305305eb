"""Token and positional embedding: how a word and its place become the vector x_i.

Teaches: before attention, token i is a vector. In the designed model
x_i = e(token_i) + PE(i): the token embedding e says *what* the word is (42
named 0/1 features from the model's lexicon), the sinusoidal positional
encoding PE says *where* it is, as sin/cos waves whose frequency falls along
the dimensions; the two live in different dimensions, so the sum is really a
side-by-side. A trained BERT-style model (embedding.learned) instead adds three
rows of tables it learned, word piece + position + token type, all over the
same unnamed dimensions, and normalises the sum with a LayerNorm:
x_i = γ ⊙ (s_i − μ_i)/σ_i + β. Its vectors are drawn as one-pixel-per-dimension
images (a strip each), its largest entries listed with their derivations, and
all of its numbers are in a folded text listing.

Numbers come from computed.embedding (token, position, x: each
[n, d_model]); nothing is recomputed here. Signed values use a diverging
blue (negative) / orange (positive) scale whose opacity is |value| / max, so
zero is the card's own background in light and dark mode.

The positions × dimensions heatmap is one small PNG (one pixel per cell, drawn
pixelated) rather than n × 128 SVG rects: for 32 tokens that is ~4 KB instead
of ~250 KB of markup per redraw. Its numbers are one click away: a row label
makes that token the query, and the query's row is drawn below as a strip
with a tooltip on every cell.
"""

from __future__ import annotations

import numpy as np

from . import math as m
from .drawing import legend_html, signed_heatmap_layers, soft, strip_svg
from .markup import attr, data_num, esc, num, subscript, table_on_request

# The hues themselves are CSS variables (site/css/why.css: --why-pos blue, --why-neg orange, the
# Okabe–Ito pair, with lighter dark-mode variants), so markup only says the sign and the opacity.


# --------------------------------------------------------------------------
# the panel
# --------------------------------------------------------------------------


def _formulas() -> str:
    pe_arg = m.frac(m.mi("pos"), m.sup(m.mn("10000"), m.row(m.mn("2"), m.mi("k"), m.mo("/"), m.mi("d"))))
    x_i = m.math(
        m.row(
            m.indexed("x", "i"),
            m.mo("="),
            m.mi("e"),
            m.paren(m.indexed("token", "i")),
            m.mo("+"),
            m.mi("PE"),
            m.paren(m.mi("i")),
        ),
        display="block",
        label="x_i equals e of token_i plus PE of i",
    )
    pe_sin = m.math(
        m.row(
            m.mi("PE"),
            m.paren(m.row(m.mi("pos"), m.mo(","), m.mn("2"), m.mi("k"))),
            m.mo("="),
            m.mi("sin"),
            m.paren(pe_arg),
        ),
        display="block",
        label="PE of pos, 2k equals sine of pos over 10000 to the power 2k over d",
    )
    pe_cos = m.math(
        m.row(
            m.mi("PE"),
            m.paren(m.row(m.mi("pos"), m.mo(","), m.mn("2"), m.mi("k"), m.mo("+"), m.mn("1"))),
            m.mo("="),
            m.mi("cos"),
            m.paren(pe_arg),
        ),
        display="block",
        label="PE of pos, 2k plus 1 equals cosine of the same angle",
    )
    return f'<div class="emb-formulas">{x_i}{pe_sin}{pe_cos}</div>'


def zero_runs(is_zero) -> list[tuple[int, int]]:
    """Cell spans over a row of columns: each column that is not zero alone, each run of zero columns
    as one span (a strip of 384 mostly-empty dims then costs a handful of elements).
    is_zero: one bool per column."""
    spans, run = [], None
    for c, zero in enumerate(is_zero):
        if zero:
            run = (run[0], c + 1) if run else (c, c + 1)
            continue
        if run:
            spans.append(run)
            run = None
        spans.append((c, c + 1))
    if run:
        spans.append(run)
    return spans


def _feature_strip(model, e_i, tok: str, vmax: float) -> str:
    # e(token_i) over the named feature dims (the model's "features" region, from dim 0)
    names = model.dim_names[: model.region("features").stop]
    tips = [f"e(“{tok}”) dim {d}: {name} = {num(e_i[d], 2)}" for d, name in enumerate(names)]
    return strip_svg(
        [e_i[d] for d in range(len(names))],
        tips,
        label=f"Token embedding of {tok}: {len(names)} named features",
        vmax=vmax,
        grid_row=0,
        cls="strip-features",
        meta={"data_strip": "token"},
    )


def _positional_heatmap(
    state,
    computed,
    vmax: float,
    start: int | None = None,
    *,
    values=None,
    aria: str | None = None,
    axis: tuple[str, str] | None = None,
) -> str:
    """Every token's position vector (dims start…) as one picture, one clickable label per row.

    values: what to draw per cell (default: the position code itself; a √-softened copy for a
    learned table); aria and axis: the words for a model whose positions are not sin/cos waves."""
    toks, pe = computed.tokens, computed.embedding.position  # pe [n, d_model]
    start = computed.model.region("position").start if start is None else start
    d_model = pe.shape[1]
    width, n, q = d_model - start, len(toks), state.query
    special = set(computed.run.special)
    aria = aria or (
        f"Positional encoding: {n} positions (rows) by {width} dimensions (columns), sin and cos "
        f"waves that slow down from left to right"
    )
    left, right = axis or (f"dim {start}: fastest wave", f"dim {d_model - 1}: slowest")
    labels = "".join(
        '<button type="button"'
        + attr(
            class_="emb-row-label" + (" is-query" if i == q else "") + (" is-special" if i in special else ""),
            data_event="set_query",
            data_token_index=i,
            aria_pressed="true" if i == q else "false",
            style=f"grid-row: {i + 1}",
            data_tip=f"position {i}: “{t}”"
            + (", a special token" if i in special else "")
            + ". Click to make it the query and see its row below.",
        )
        + f'><span class="chip-index">{i}</span><span class="emb-row-token">{esc(t)}</span></button>'
        for i, t in enumerate(toks)
    )
    cells = pe[:, start:] if values is None else values
    svg = (
        "<svg"
        + attr(
            class_="emb-heatmap",
            viewBox=f"0 0 {width} {n}",
            preserveAspectRatio="none",
            role="img",
            style=f"grid-row: 1 / {n + 1}",
            data_rows=n,
            data_cols=width,
            data_dim_start=start,
            aria_label=aria,
        )
        + f'><rect class="strip-bg" width="{width}" height="{n}"/>'
        f"{signed_heatmap_layers(cells, vmax, 'emb-pe', width, n)}"
        f'<rect class="emb-query-row" data-query-row="{q}" x="0" y="{q}" width="{width}" height="1" fill="none"/>'
        f"</svg>"
    )
    row_h = "1.5rem" if n <= 12 else "1.2rem"  # long sentences: keep the map within a screen
    return (
        f'<div class="emb-heatmap-grid" style="--rows: {n}; --row-h: {row_h}">{labels}{svg}</div>'
        f'<div class="emb-axis"><span>{esc(left)}</span><span>{esc(right)}</span></div>'
    )


def _x_strip(model, e_i, pe_i, x_i, tok: str, q: int, vmax: float) -> str:
    d_model = len(x_i)
    spans = zero_runs(e_i[d] == 0 and pe_i[d] == 0 and x_i[d] == 0 for d in range(d_model))
    names = model.dim_names
    start = model.region("position").start
    width = d_model - start
    values, tips = [], []
    for a, b in spans:
        if b - a > 1:  # a run of zero dims: say what they are for
            values.append(0.0)
            tips.append(f"dims {a}–{b - 1}: 0 in x_{q}. Empty on entry: {_purpose(model, a, b)}")
        elif a >= start:  # positional dims: say which wave
            c = a - start
            values.append(x_i[a])
            tips.append(
                f"x_{q}[{a}] = e + PE({q}, {c}) = {num(e_i[a], 3)} + {'sin' if c % 2 == 0 else 'cos'}"
                f"({q} / 10000^(2·{c // 2}/{width})) = {num(x_i[a], 3)}"
            )
        else:
            values.append(x_i[a])
            tips.append(f"x_{q}[{a}] ({names[a]}) = e + PE = {num(e_i[a], 3)} + {num(pe_i[a], 3)} = {num(x_i[a], 3)}")
    return strip_svg(
        values,
        tips,
        label=f"x_{q}: the input vector of {tok}, {d_model} numbers",
        vmax=vmax,
        grid_row=1,
        cls="strip-x",
        spans=spans,
        meta={"data_strip": "x"},
    )


def _purpose(model, a: int, b: int) -> str:
    """What the dims a..b-1 (empty on entry) are for: the purposes of the regions they overlap."""
    parts = [
        r.purpose for r in model.dim_regions if r.kind in ("head-slots", "detectors") and a < r.stop and b > r.start
    ]
    return "; ".join(parts) + "." if parts else "unused."


def _block_labels(model, d_model: int) -> str:
    # proportional labels under the x strip: the layout of the residual stream
    f, p = model.region("features").stop, model.region("position").start
    blocks = [
        (0, f, "what", "features", "feat"),
        (f, p, "empty", "heads and FFN write here later", "empty"),
        (p, d_model, "where", "position", "pos"),
    ]
    cols = " ".join(f"{b - a}fr" for a, b, *_ in blocks)
    cells = "".join(
        f'<span class="emb-block emb-block-{k}"><strong>{esc(word)}</strong>'
        f'<span class="emb-block-more">: {esc(more)}</span> '
        f'<span class="emb-block-dims">{a}–{b - 1}</span></span>'
        for a, b, word, more, k in blocks
    )
    return f'<div class="emb-blocks" style="grid-template-columns: {cols}">{cells}</div>'


def _numbers_table(model, tok, q, e_i, pe_i, x_i) -> str:
    """The non-zero dimensions of x_q with their parts, to 3 decimals: a table a reader opens on request."""
    rows = "".join(
        f"<tr><td>{d}</td><td>{esc(model.dim_names[d])}</td><td>{num(e_i[d], 3)}</td>"
        f"<td>{num(pe_i[d], 3)}</td><td>{num(x_i[d], 3)}</td></tr>"
        for d in range(len(x_i))
        if x_i[d] != 0 or e_i[d] != 0 or pe_i[d] != 0
    )
    table = (
        f"<table><caption>Non-zero dimensions of x{subscript(q)} for “{esc(tok)}”: "
        "token embedding plus positional encoding</caption>"
        '<thead><tr><th scope="col">dim</th><th scope="col">name</th>'
        f'<th scope="col">e</th><th scope="col">PE</th><th scope="col">x</th></tr></thead><tbody>{rows}</tbody></table>'
    )
    return table_on_request(f"The non-zero dimensions of x{subscript(q)} as a table", table, key="embedding-table")


def render(state, computed) -> str:
    """The query token's embedding, drawn for what the model has: named features and a sin/cos code
    (the designed model), or learned tables and a LayerNorm (a trained model; any other model too)."""
    model, emb = computed.model, computed.embedding
    if not emb.learned and model.region("features") is not None and model.region("position") is not None:
        return _render_designed(state, computed)
    return _render_learned(state, computed)


def _features_on(model, e_i) -> list[str]:
    """The names of the named features that are on in e_i, in dim order: the chips, and what their count counts.

    Not the run's token_tags: those summarise the word for other panels and leave out features that are on
    ("any token", "3rd person", "capitalised"), so "6 are on" once stood beside 5 chips."""
    return [model.dim_names[d] for d in range(model.region("features").stop) if e_i[d] != 0]


# The positional heatmap's note, the same in its text and in its export label (which ends it with plain text
# where the text has MathML): str.format fills in the dimensions of the position code and the query.
POSITION_NOTE = (
    "Every position gets a fingerprint of sin/cos waves (dims {first}–{last}, d = {d}). Attention itself is blind "
    "to word order (shuffle the vectors and each word pays the same attention to the same words): position codes "
    "are what tell “dog bites man” from “man bites dog”. Row {q} (outlined) is the right half of "
)


def _render_designed(state, computed) -> str:
    """The query token's embedding: feature strip, positional heatmap (its row outlined), and the sum x_i."""
    emb = computed.embedding
    q, tok = state.query, computed.tokens[state.query]
    e_i, pe_i, x_i = emb.token[q], emb.position[q], emb.x[q]  # each [d_model]
    vmax = max(1.0, float(np.abs(emb.token).max()), float(np.abs(emb.position).max()))  # shared colour scale
    model = computed.model
    n_features, pos_start = model.region("features").stop, model.region("position").start
    on = _features_on(model, e_i)
    chips = "".join(f'<li class="emb-tag">{esc(name)}</li>' for name in on)
    special = " It is a special token, not a word of the sentence." if q in computed.run.special else ""
    pe_note = POSITION_NOTE.format(first=pos_start, last=len(x_i) - 1, d=len(x_i) - pos_start, q=q)
    return f"""<div class="emb" data-view="embedding" data-query="{q}">
<p class="emb-lede">Before attention, token {q} <strong class="emb-token">{esc(tok)}</strong> becomes one vector
<math><msub><mi>x</mi><mn>{q}</mn></msub></math> of {len(x_i)} numbers: <em>what</em> the word is plus <em>where</em> \
it stands.</p>
{_formulas()}
<div class="emb-parts">
<section class="emb-part">
<h3>What: token embedding <math><mi>e</mi><mo>(</mo><mtext>{esc(tok)}</mtext><mo>)</mo></math></h3>
<p class="emb-note">{n_features} named yes/no features from the lexicon (dims 0–{n_features - 1}); {len(on)} are on \
for this token, named below.{special} A trained model learns such directions instead.</p>
{_feature_strip(model, e_i, tok, vmax)}
<ul class="emb-tags" aria-label="Features of {esc(tok)}">{chips}</ul>
</section>
<section class="emb-part">
<h3>Where: positional encoding <math><mi>PE</mi><mo>(</mo><mi>pos</mi><mo>,</mo><mi>dim</mi><mo>)</mo></math></h3>
<p class="emb-note" data-export-label="{esc(pe_note + f"x{subscript(q)} below.")}">{pe_note}\
<math><msub><mi>x</mi><mn>{q}</mn></msub></math> below; click a row to pick that token.</p>
{_positional_heatmap(state, computed, vmax)}
</section>
<section class="emb-part emb-part-wide">
<h3>Sum: <math><msub><mi>x</mi><mn>{q}</mn></msub><mo>=</mo><mi>e</mi><mo>+</mo><mi>PE</mi></math>, what enters the \
attention block</h3>
{_x_strip(model, e_i, pe_i, x_i, tok, q, vmax)}
{_block_labels(model, len(x_i))}
<p class="emb-note">Here the two parts sit in separate dimensions, so adding them places them side by side; in \
GPT-style models both fill all dimensions and really overlap.</p>
</section>
</div>
{legend_html()}
{_numbers_table(model, tok, q, e_i, pe_i, x_i)}
</div>"""


# --------------------------------------------------------------------------
# a trained model: three learned rows, summed, then a LayerNorm
# --------------------------------------------------------------------------

TOP_DIMS = 6  # entries of x_i listed with their derivation (a trained model's vector has hundreds)


def _largest(values, k: int) -> list[int]:
    """The k dims of largest |value|, largest first (ties: lower dim first)."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    return [int(d) for d in np.argsort(-v, kind="stable")[:k]]


def _vector_tip(name: str, values) -> str:
    v = np.asarray(values, dtype=np.float64)
    top = ", ".join(f"dim {d} = {num(v[d], 3)}" for d in _largest(v, 3))
    return f"{name}: {len(v)} numbers from {num(float(v.min()), 3)} to {num(float(v.max()), 3)}\nlargest: {top}"


def vector_image(values, vmax: float, id_prefix: str, *, label: str, tip: str, key: str) -> str:
    """One vector [d] as a strip of d pixels (a PNG mask pair, √-softened on the scale ±vmax): one
    element per picture rather than one per number; the strip's tooltip names its range and peaks."""
    v = np.asarray(values, dtype=np.float64)
    d = len(v)
    return (
        "<svg"
        + attr(
            class_="strip emb-vec-strip",
            viewBox=f"0 0 {d} 1",
            preserveAspectRatio="none",
            role="img",
            aria_label=label,
            tabindex="0",
            data_tip=tip,
            data_strip=key,
            data_vmax=f"{vmax:.6g}",
        )
        + f'><rect class="strip-bg" x="0" y="0" width="{d}" height="1"/>'
        f"{signed_heatmap_layers(soft(v)[None, :], float(np.sqrt(vmax)), id_prefix, d, 1)}</svg>"
    )


def _vec_row(op: str, name_html: str, note: str, values, vmax: float, key: str, tok: str, tip_name: str) -> str:
    return (
        f'<div class="emb-vec" data-vec="{key}"><span class="emb-vec-op" aria-hidden="true">{op}</span>'
        f'<span class="emb-vec-name">{name_html} <span class="emb-note">{esc(note)}</span></span>'
        + vector_image(
            values,
            vmax,
            f"emb-{key}",
            label=f"{tip_name} of “{tok}”: {len(values)} numbers",
            tip=_vector_tip(f"{tip_name} of “{tok}”", values),
            key=key,
        )
        + "</div>"
    )


def _learned_formulas(has_type: bool, has_ln: bool) -> str:
    e = lambda what, idx: m.row(m.sub(m.mi("E"), m.mtext(what)), m.mo("["), idx, m.mo("]"))  # noqa: E731
    rows = [e("tok", m.indexed("token", "i")), m.mo("+"), e("pos", m.mi("i"))]
    if has_type:
        rows += [m.mo("+"), e("type", m.mn("0"))]
    s_i = m.indexed("s", "i")
    x_i = m.indexed("x", "i")
    if not has_ln:
        return (
            '<div class="emb-formulas">'
            + m.math(
                m.row(x_i, m.mo("="), *rows), display="block", label="x_i equals the token row plus the position row"
            )
            + "</div>"
        )
    sum_ = m.math(
        m.row(s_i, m.mo("="), *rows),
        display="block",
        label="s_i equals the word-piece row plus the position row" + (" plus the token-type row" if has_type else ""),
    )
    ln = m.math(
        m.row(
            x_i,
            m.mo("="),
            m.mi("γ"),
            m.mo("⊙"),
            m.frac(m.row(s_i, m.mo("−"), m.indexed("μ", "i")), m.indexed("σ", "i")),
            m.mo("+"),
            m.mi("β"),
        ),
        display="block",
        label="x_i equals gamma times (s_i minus mu_i) over sigma_i plus beta",
    )
    return f'<div class="emb-formulas">{sum_}{ln}</div>'


def _piece_note(tok: str, q: int, special: bool) -> str:
    """What the query token is, as the model sees it: a special token, a word piece, a whole word."""
    if special:
        where = "first" if q == 0 else "last"
        return (
            f'<p class="emb-special" data-special="true"><strong>{esc(tok)}</strong> is a special token, not a word '
            f"of your sentence: the tokenizer puts it {where} in every input. It has its own learned row like any "
            "piece, and attention often rests on it when a head has nothing to look for (a “sink”, see stage 3).</p>"
        )
    if tok.startswith("##"):
        return (
            f'<p class="emb-note">“{esc(tok)}” is a word piece: <code>##</code> marks that it continues the word '
            "before it, so a rare word costs several tokens.</p>"
        )
    return ""


def _top_dims(emb, q: int, tok: str, parts) -> str:
    """The query's largest entries of x, each with its derivation (sum of rows, then the LayerNorm)."""
    x = emb.x[q]
    mu, sigma = float(emb.ln_mean[q]), float(emb.ln_std[q])
    items = []
    for k, d in enumerate(_largest(x, TOP_DIMS)):
        terms = " + ".join(f"{short} {num(float(v[d]), 3)}" for short, v in parts)
        s_d = float(emb.summed[q, d])
        z = (s_d - mu) / sigma  # display only: the normalised entry, between the trace's s and x
        tip = (
            f"x_{q}[{d}] for “{tok}”\n"
            f"s = {terms} = {num(s_d, 3)}\n"
            f"(s − μ) / σ = ({num(s_d, 3)} − {_par(mu)}) / {num(sigma, 4)} = {num(z, 2)}\n"
            f"× γ[{d}] {num(float(emb.ln_gamma[d]), 3)} + β[{d}] {_par(float(emb.ln_beta[d]))} = {num(float(x[d]), 3)}"
        )
        items.append(
            "<li"
            + attr(
                tabindex="0" if k == 0 else "-1",
                data_dim=d,
                data_value=data_num(x[d]),
                data_tip=tip,
                data_grid_cell=True,
                data_i=0,
                data_j=k,
            )
            + f">dim {d}: <strong>{num(float(x[d]), 2)}</strong></li>"
        )
    return (
        f'<p class="emb-note">The largest entries of <math><msub><mi>x</mi><mn>{q}</mn></msub></math> '
        f'(hover or focus one for how it is made; arrow keys move):</p><ol class="emb-top" data-grid>{"".join(items)}'
        "</ol>"
    )


def _par(x: float) -> str:
    s = num(x, 3)
    return f"({s})" if s.startswith("−") else s


def _numbers(rows, q: int, tok: str) -> str:
    """Every number of the drawn vectors, folded: text a screen reader can read, not one element per number."""
    body = "".join(
        f"<p><strong>{esc(name)}</strong>: {', '.join(num(float(v), 3) for v in values)}</p>" for name, values in rows
    )
    return (
        f'<details class="emb-numbers"><summary>All {len(rows[0][1])} numbers of each row for “{esc(tok)}” '
        f"(token {q}), dim 0 first</summary>{body}</details>"
    )


def _render_learned(state, computed) -> str:
    """A trained model's embedding of the query: word-piece, position and token-type rows, their sum,
    the embedding LayerNorm (μ, σ, γ, β) and x_i; every token's position row as a picture."""
    emb, model = computed.embedding, computed.model
    q, toks = state.query, computed.tokens
    tok, n, d = toks[q], len(toks), emb.x.shape[1]
    special = q in computed.run.special
    has_type, has_ln = emb.token_type is not None, emb.learned
    x_q = f"<math><msub><mi>x</mi><mn>{q}</mn></msub></math>"
    parts = [
        (
            "token",
            "E_tok",
            f"<var>E</var><sub>tok</sub>[“{esc(tok)}”]",
            emb.token[q],
            "the word piece's row: what it is",
        ),
        (
            "position",
            "E_pos",
            f"<var>E</var><sub>pos</sub>[{q}]",
            emb.position[q],
            f"position {q}'s row: where it stands",
        ),
    ]
    if has_type:
        parts.append(
            (
                "token-type",
                "E_type",
                "<var>E</var><sub>type</sub>[0]",
                emb.token_type[q],
                "the segment row: sentence A, the same for every token",
            )
        )
    s_q = emb.summed[q] if has_ln else emb.x[q]
    vmax_in = max(1e-12, max(float(np.abs(v).max()) for *_, v, _ in parts), float(np.abs(s_q).max()))
    rows = "".join(
        _vec_row("+" if k else "", html, note, v, vmax_in, key, tok, short)
        for k, (key, short, html, v, note) in enumerate(parts)
    )
    sum_name = "s" if has_ln else "x"
    rows += _vec_row(
        "=",
        f"<var>{sum_name}</var><sub>{q}</sub>",
        "their sum" + (", before the LayerNorm" if has_ln else ""),
        s_q,
        vmax_in,
        "sum" if has_ln else "x",
        tok,
        sum_name + f"_{q}",
    )
    named = any(model.dim_names)
    dims_note = (
        ""
        if named
        else f"The {d} dimensions have no names: training spread what a piece means over all of them, so no "
        f"single dimension stands for “noun” or “plural” (the designed model's named features do)."
    )
    pos_vals = emb.position  # [n, d]
    pos_vmax = max(1e-12, float(np.abs(pos_vals).max()))
    heatmap = _positional_heatmap(
        state,
        computed,
        float(np.sqrt(pos_vmax)),
        0,
        values=soft(pos_vals),
        aria=f"Learned position rows: {n} positions (rows) by {d} dimensions (columns), one row per position",
        axis=("dim 0", f"dim {d - 1}"),
    )
    sections = [
        f'<section class="emb-part emb-part-wide"><h3>What, where{", which sentence" if has_type else ""}: '
        f"{len(parts)} learned rows, added</h3>"
        f'<p class="emb-note">Each is a row of a table the model learned, {d} numbers long; the sum is taken '
        "dimension by "
        f"dimension. Colour strength grows with √|value|, on one scale for these rows (up to ±{num(vmax_in, 2)}). "
        f"{esc(dims_note)}</p>"
        f'<div class="emb-vecs">{rows}</div></section>',
        f'<section class="emb-part emb-part-wide"><h3>Where: a learned position table, not sine waves</h3>'
        f'<p class="emb-note">Every position has a row of its own, learned from data like the word pieces\' rows; '
        f"nothing makes it a wave. Here are rows 0–{n - 1}, one per token (scale ±{num(pos_vmax, 2)}, √|value|); "
        f"row {q} (outlined) is <var>E</var><sub>pos</sub>[{q}] above. Click a row to pick that token.</p>"
        f"{heatmap}</section>",
    ]
    listing = [(f"E_tok[{tok}]", emb.token[q]), (f"E_pos[{q}]", emb.position[q])]
    if has_type:
        listing.append(("E_type[0]", emb.token_type[q]))
    if has_ln:
        mu, sigma = float(emb.ln_mean[q]), float(emb.ln_std[q])
        gamma, beta = emb.ln_gamma, emb.ln_beta
        vmax_gb = max(1e-12, float(np.abs(gamma).max()), float(np.abs(beta).max()))
        vmax_x = max(1e-12, float(np.abs(emb.x[q]).max()))
        ln_rows = (
            _vec_row(
                "",
                "<var>γ</var>",
                "gain, per dimension (learned; the same for every token)",
                gamma,
                vmax_gb,
                "gamma",
                tok,
                "γ",
            )
            + _vec_row("", "<var>β</var>", "shift, per dimension (learned)", beta, vmax_gb, "beta", tok, "β")
            + _vec_row("=", x_q, f"what layer 1 reads (scale ±{num(vmax_x, 2)})", emb.x[q], vmax_x, "x", tok, f"x_{q}")
        )
        live = m.math(
            m.row(
                m.indexed("x", str(q)),
                m.mo("="),
                m.mi("γ"),
                m.mo("⊙"),
                m.frac(m.row(m.indexed("s", str(q)), m.mo("−"), m.mn_num(mu, 3)), m.mn_num(sigma, 4)),
                m.mo("+"),
                m.mi("β"),
            ),
            display="block",
            label=f"here: x_{q} equals gamma times (s_{q} minus {num(mu, 3)}) over {num(sigma, 4)} plus beta",
        )
        gain = 1.0 / sigma if sigma > 0 else 0.0
        sections.append(
            '<section class="emb-part emb-part-wide" data-ln="embedding"'
            + attr(data_mu=data_num(mu), data_sigma=data_num(sigma))
            + f"><h3>Then a LayerNorm: {x_q}, what enters layer 1</h3>"
            f'<p class="emb-note">The sum is re-centred on its own mean <var>μ</var> and divided by its own spread '
            f"<var>σ</var> over the {d} dimensions; then a learned gain <var>γ</var> and shift <var>β</var> (one per "
            f"dimension) are applied. For “{esc(tok)}”:</p>"
            '<p class="ln-stats"><span class="stat stat-mu" tabindex="0"'
            + attr(data_tip=f"μ = the mean of the {d} entries of s_{q}")
            + f">μ = {num(mu, 3)}</span> "
            '<span class="stat stat-sigma" tabindex="0"'
            + attr(data_tip=f"σ = √(variance + ε) of the {d} entries of s_{q}")
            + f">σ = {num(sigma, 4)}</span></p>"
            f'<div class="emb-formulas">{live}</div>'
            f'<p class="emb-note">Dividing by σ = {num(sigma, 4)} multiplies the centred sum by {num(gain, 1)}, so the '
            f"small rows above become entries of size about 1; γ (from {num(float(gamma.min()), 2)} to "
            f"{num(float(gamma.max()), 2)}) and β then reshape them. Each picture below has its own scale.</p>"
            f'<div class="emb-vecs">{ln_rows}</div>'
            f"{_top_dims(emb, q, tok, [(short, v) for _, short, _, v, _ in parts])}</section>"
        )
        listing += [(f"s_{q}", s_q), (f"x_{q}", emb.x[q])]
    else:
        listing.append((f"x_{q}", emb.x[q]))
    lede = (
        f'Before attention, token {q} <strong class="emb-token">{esc(tok)}</strong> becomes one vector {x_q} of '
        f"{d} numbers. A trained model looks up {'three rows' if has_type else 'two rows'} in tables it learned, "
        f"adds them" + (", and normalises the sum with a LayerNorm." if has_ln else ".")
    )
    return (
        f'<div class="emb emb-learned" data-view="embedding" data-query="{q}" '
        f'data-learned="{"true" if has_ln else "false"}">'
        f'<p class="emb-lede">{lede}</p>{_piece_note(tok, q, special)}'
        f"{_learned_formulas(has_type, has_ln)}"
        f'<div class="emb-parts">{"".join(sections)}</div>'
        f"{legend_html('−', '+')}{_numbers(listing, q, tok)}</div>"
    )
