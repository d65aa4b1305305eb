"""Token and positional embedding: how a word and its place become the vector x_i.

Teaches: before attention, token i is a vector x_i = e(token_i) + PE(i). The
token embedding e says *what* the word is (here: 42 named 0/1 features from
the model's lexicon); the sinusoidal positional encoding PE says *where* it
is, as sin/cos waves whose frequency falls along the dimensions. In this model
the two live in different dimensions, so the sum is really a side-by-side.

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

import base64
import struct
import zlib

import numpy as np

from . import math as m
from .colors import signed_strength
from .markup import attr, data_num, esc, num

# The hues themselves are CSS variables (site/css/why.css: --why-pos blue, --why-neg orange, the
# Okabe–Ito pair, with lighter dark-mode variants), so markup only says the sign and the opacity.


# --------------------------------------------------------------------------
# shared pieces: the signed colour scale and a strip of cells (also used by why.py)
# --------------------------------------------------------------------------

def signed_fill(value: float, vmax: float) -> tuple[str, float]:
    """(class "pos"/"neg", opacity) for a signed value on a symmetric scale [−vmax, vmax]."""
    return signed_strength(value, vmax)


def strip_svg(values, tips, *, label: str, vmax: float, grid_row: int | None = 0, cls: str = "",
              first_focus: int = 0, meta: dict | None = None, spans=None) -> str:
    """A horizontal strip of cells, one per value ([k] -> markup), stretched to the container width.

    tips[c] is the tooltip of cell c (None: no tooltip, not focusable). With grid_row set, the
    strip is its own roving-tabindex grid (the svg is [data-grid]; cells are data-grid-cell with
    data-i=grid_row, data-j=c): one Tab stop, arrow keys walk the cells. spans, if given, is a list of (start, stop) cell ranges drawn
    as one wider cell each (runs of zeros); values/tips then index those runs.
    """
    spans = spans or [(c, c + 1) for c in range(len(values))]
    width = spans[-1][1] if spans else 0
    out = [f'<svg{attr(class_=("strip " + cls).strip(), viewBox=f"0 0 {width} 1", preserveAspectRatio="none", role="img", aria_label=label, data_grid=grid_row is not None, **(meta or {}))}>'
           f'<rect class="strip-bg" x="0" y="0" width="{width}" height="1"/>']
    for c, ((start, stop), value, tip) in enumerate(zip(spans, values, tips)):
        sign, alpha = signed_fill(value, vmax)
        if tip is None and alpha == 0:
            continue  # invisible and silent: leave it out of the markup
        focus = None if tip is None else ("0" if c == first_focus else "-1")
        grid = tip is not None and grid_row is not None
        out.append(f'<rect{attr(class_=f"strip-cell {sign}", x=start, width=stop - start, height=1, fill_opacity=f"{alpha:.3f}", data_value=data_num(value), data_dims=f"{start}-{stop - 1}" if stop - start > 1 else None, data_tip=tip, tabindex=focus, data_grid_cell=grid, data_i=grid_row if grid else None, data_j=c if grid else None)}/>')
    out.append("</svg>")
    return "".join(out)


def legend_html(lo_label: str = "−1", hi_label: str = "+1") -> str:
    """The diverging scale's legend: orange negative, transparent zero, blue positive."""
    return (f'<div class="signed-legend" aria-hidden="true"><span>{esc(lo_label)}</span>'
            f'<span class="signed-legend-bar"></span>'
            f'<span>{esc(hi_label)}</span></div>')


# --------------------------------------------------------------------------
# the positions × dimensions heatmap as two tiny greyscale PNG masks
# --------------------------------------------------------------------------

def png_alpha(levels: np.ndarray) -> bytes:  # [h, w] uint8 -> PNG file bytes: white, alpha = levels
    h, w = levels.shape
    pixels = np.stack([np.full_like(levels, 255), levels], axis=-1)  # [h, w, 2] grey + alpha
    raw = b"".join(b"\x00" + pixels[r].tobytes() for r in range(h))  # filter type 0 per scanline

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 4, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def signed_masks(values, vmax: float) -> tuple[np.ndarray, np.ndarray]:  # [h, w] -> ([h, w], [h, w]) uint8
    """Opacity levels 0..255 of the positive and the negative cells (as signed_fill, per pixel)."""
    v = np.asarray(values, dtype=np.float64)
    level = np.round(255 * np.clip(np.abs(v) / vmax, 0.0, 1.0)) if vmax > 0 else np.zeros_like(v)
    return (np.where(v > 0, level, 0).astype(np.uint8), np.where(v < 0, level, 0).astype(np.uint8))


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def signed_heatmap_layers(values, vmax: float, id_prefix: str, width: float, height: float) -> str:
    """SVG: a blue rect masked by |positive values| over an orange one masked by |negative values|.

    The colours stay CSS variables (dark mode works); the masks are one pixel per cell and act
    through their alpha channel (mask-type: alpha), so no colour-space conversion touches them.
    """
    out = []
    for sign, levels in zip(("pos", "neg"), signed_masks(values, vmax)):
        mid = f"{id_prefix}-{sign}"
        out.append(f'<mask id="{mid}" maskUnits="userSpaceOnUse" x="0" y="0" width="{width}" height="{height}" style="mask-type: alpha">'
                   f'<image class="pixelated" href="{_data_uri(png_alpha(levels))}" x="0" y="0" width="{width}" '
                   f'height="{height}" preserveAspectRatio="none" data-sign="{sign}"/></mask>'
                   f'<rect class="heat {sign}" x="0" y="0" width="{width}" height="{height}" mask="url(#{mid})"/>')
    return "".join(out)


# --------------------------------------------------------------------------
# the panel
# --------------------------------------------------------------------------

def _formulas() -> str:
    pe_arg = m.frac(m.mi("pos"), m.sup(m.mn("10000"), m.row(m.mn("2"), m.mi("k"), m.mo("/"), m.mi("d"))))
    x_i = m.math(m.row(m.indexed("x", "i"), m.mo("="), m.mi("e"), m.paren(m.indexed("token", "i")), m.mo("+"),
                       m.mi("PE"), m.paren(m.mi("i"))), display="block",
                 label="x_i equals e of token_i plus PE of i")
    pe_sin = m.math(m.row(m.mi("PE"), m.paren(m.row(m.mi("pos"), m.mo(","), m.mn("2"), m.mi("k"))), m.mo("="),
                          m.mi("sin"), m.paren(pe_arg)), display="block",
                    label="PE of pos, 2k equals sine of pos over 10000 to the power 2k over d")
    pe_cos = m.math(m.row(m.mi("PE"), m.paren(m.row(m.mi("pos"), m.mo(","), m.mn("2"), m.mi("k"), m.mo("+"), m.mn("1"))),
                          m.mo("="), m.mi("cos"), m.paren(pe_arg)), display="block",
                    label="PE of pos, 2k plus 1 equals cosine of the same angle")
    return f'<div class="emb-formulas">{x_i}{pe_sin}{pe_cos}</div>'


def _zero_runs(e, pe, x, start: int, stop: int):
    """Cell spans over dims start..stop−1: each non-zero dim alone, each run of all-zero dims as one."""
    spans, run = [], None
    for d in range(start, stop):
        if e[d] == 0 and pe[d] == 0 and x[d] == 0:
            run = (run[0], d + 1) if run else (d, d + 1)
            continue
        if run:
            spans.append(run)
            run = None
        spans.append((d, d + 1))
    if run:
        spans.append(run)
    return spans


def _feature_strip(model, e_i, tok: str, vmax: float) -> str:
    # e(token_i) over the named feature dims (the model's "features" region, from dim 0)
    names = model.dim_names[:model.region("features").stop]
    tips = [f"e(“{tok}”) dim {d}: {name} = {num(e_i[d], 2)}" for d, name in enumerate(names)]
    return strip_svg([e_i[d] for d in range(len(names))], tips, label=f"Token embedding of {tok}: {len(names)} named features",
                     vmax=vmax, grid_row=0, cls="strip-features", meta={"data_strip": "token"})


def _positional_heatmap(state, computed, vmax: float) -> str:
    toks, pe = computed.tokens, computed.embedding.position  # pe [n, d_model]
    start, d_model = computed.model.region("position").start, pe.shape[1]
    width, n, q = d_model - start, len(toks), state.query
    labels = "".join(
        f'<button type="button"{attr(class_="emb-row-label is-query" if i == q else "emb-row-label", data_event="set_query", data_token_index=i, aria_pressed="true" if i == q else "false", style=f"grid-row: {i + 1}", data_tip=f"position {i}: “{t}”. Click to make it the query and see its row below.")}>'
        f'<span class="chip-index">{i}</span><span class="emb-row-token">{esc(t)}</span></button>'
        for i, t in enumerate(toks))
    svg = (f'<svg{attr(class_="emb-heatmap", viewBox=f"0 0 {width} {n}", preserveAspectRatio="none", role="img", style=f"grid-row: 1 / {n + 1}", data_rows=n, data_cols=width, data_dim_start=start, aria_label=f"Positional encoding: {n} positions (rows) by {width} dimensions (columns), sin and cos waves that slow down from left to right")}>'
           f'<rect class="strip-bg" width="{width}" height="{n}"/>'
           f'{signed_heatmap_layers(pe[:, start:], vmax, "emb-pe", width, n)}'
           f'<rect class="emb-query-row" data-query-row="{q}" x="0" y="{q}" width="{width}" height="1" fill="none"/>'
           f"</svg>")
    row_h = "1.5rem" if n <= 12 else "1.2rem"  # long sentences: keep the map within a screen
    return (f'<div class="emb-heatmap-grid" style="--rows: {n}; --row-h: {row_h}">{labels}{svg}</div>'
            f'<div class="emb-axis"><span>dim {start}: fastest wave</span><span>dim {d_model - 1}: slowest</span></div>')


def _x_strip(model, e_i, pe_i, x_i, tok: str, q: int, vmax: float) -> str:
    d_model = len(x_i)
    spans = _zero_runs(e_i, pe_i, x_i, 0, d_model)
    names = model.dim_names
    start = model.region("position").start
    width = d_model - start
    values, tips = [], []
    for a, b in spans:
        if b - a > 1:  # a run of zero dims: say what they are for
            values.append(0.0)
            tips.append(f"dims {a}–{b - 1}: 0 in x_{q}. Empty on entry: "
                        f"{_purpose(model, a, b)}")
        elif a >= start:  # positional dims: say which wave
            c = a - start
            values.append(x_i[a])
            tips.append(f"x_{q}[{a}] = e + PE({q}, {c}) = {num(e_i[a], 3)} + {'sin' if c % 2 == 0 else 'cos'}"
                        f"({q} / 10000^(2·{c // 2}/{width})) = {num(x_i[a], 3)}")
        else:
            values.append(x_i[a])
            tips.append(f"x_{q}[{a}] ({names[a]}) = e + PE = {num(e_i[a], 3)} + {num(pe_i[a], 3)} = {num(x_i[a], 3)}")
    return strip_svg(values, tips, label=f"x_{q}: the input vector of {tok}, {d_model} numbers", vmax=vmax,
                     grid_row=1, cls="strip-x", spans=spans, meta={"data_strip": "x"})


def _purpose(model, a: int, b: int) -> str:
    """What the dims a..b-1 (empty on entry) are for: the purposes of the regions they overlap."""
    parts = [r.purpose for r in model.dim_regions
             if r.kind in ("head-slots", "detectors") and a < r.stop and b > r.start]
    return "; ".join(parts) + "." if parts else "unused."


def _block_labels(model, d_model: int) -> str:
    # proportional labels under the x strip: the layout of the residual stream
    f, p = model.region("features").stop, model.region("position").start
    blocks = [(0, f, "what", "features", "feat"), (f, p, "empty", "heads and FFN write here later", "empty"),
              (p, d_model, "where", "position", "pos")]
    cols = " ".join(f"{b - a}fr" for a, b, *_ in blocks)
    cells = "".join(f'<span class="emb-block emb-block-{k}"><strong>{esc(word)}</strong><span class="emb-block-more">: {esc(more)}</span> '
                    f'<span class="emb-block-dims">{a}–{b - 1}</span></span>'
                    for a, b, word, more, k in blocks)
    return f'<div class="emb-blocks" style="grid-template-columns: {cols}">{cells}</div>'


def _sr_table(model, tok, q, e_i, pe_i, x_i) -> str:
    rows = "".join(f"<tr><td>{d}</td><td>{esc(model.dim_names[d])}</td><td>{num(e_i[d], 3)}</td>"
                   f"<td>{num(pe_i[d], 3)}</td><td>{num(x_i[d], 3)}</td></tr>"
                   for d in range(len(x_i)) if x_i[d] != 0 or e_i[d] != 0 or pe_i[d] != 0)
    # the wrapper, not the table, is .sr-only: a table ignores width: 1px and would widen the page
    return (f'<div class="sr-only"><table><caption>Non-zero dimensions of x_{q} for “{esc(tok)}”: '
            f'token embedding plus positional encoding</caption><thead><tr><th>dim</th><th>name</th>'
            f"<th>e</th><th>PE</th><th>x</th></tr></thead><tbody>{rows}</tbody></table></div>")


def render(state, computed) -> str:
    """The query token's embedding: feature strip, positional heatmap (its row outlined), and the sum x_i."""
    emb = computed.embedding
    q, tok = state.query, computed.tokens[state.query]
    e_i, pe_i, x_i = emb.token[q], emb.position[q], emb.x[q]  # each [d_model]
    vmax = max(1.0, float(np.abs(emb.token).max()), float(np.abs(emb.position).max()))  # shared colour scale
    model = computed.model
    n_features, pos_start = model.region("features").stop, model.region("position").start
    tags = computed.run.token_tags[q]
    chips = "".join(f'<li class="emb-tag">{esc(t)}</li>' for t in tags)
    n_on = int(np.count_nonzero(e_i[:n_features]))
    return f"""<div class="emb" data-view="embedding" data-query="{q}">
<p class="emb-lede">Before attention, token {q} <strong class="emb-token">{esc(tok)}</strong> becomes one vector
<math><msub><mi>x</mi><mn>{q}</mn></msub></math> of {len(x_i)} numbers: <em>what</em> the word is plus <em>where</em> it stands.</p>
{_formulas()}
<div class="emb-parts">
<section class="emb-part">
<h3>What: token embedding <math><mi>e</mi><mo>(</mo><mtext>{esc(tok)}</mtext><mo>)</mo></math></h3>
<p class="emb-note">{n_features} named yes/no features from the lexicon (dims 0–{n_features - 1}); {n_on} are on for this token. A trained model learns such directions instead.</p>
{_feature_strip(model, e_i, tok, vmax)}
<ul class="emb-tags" aria-label="Features of {esc(tok)}">{chips}</ul>
</section>
<section class="emb-part">
<h3>Where: positional encoding <math><mi>PE</mi><mo>(</mo><mi>pos</mi><mo>,</mo><mi>dim</mi><mo>)</mo></math></h3>
<p class="emb-note" data-export-label="{esc(f"Every position gets a fingerprint of sin/cos waves (dims {pos_start}–{len(x_i) - 1}, d = {len(x_i) - pos_start}). Left columns wiggle fast, right ones barely move. Row {q} (outlined) is the right half of x{str(q).translate(str.maketrans('0123456789', '₀₁₂₃₄₅₆₇₈₉'))} below.")}">Every position gets a fingerprint of sin/cos waves (dims {pos_start}–{len(x_i) - 1}, d = {len(x_i) - pos_start}). Left columns wiggle fast, right ones barely move. Row {q} (outlined) is the right half of <math><msub><mi>x</mi><mn>{q}</mn></msub></math> below; click a row to pick that token.</p>
{_positional_heatmap(state, computed, vmax)}
</section>
<section class="emb-part emb-part-wide">
<h3>Sum: <math><msub><mi>x</mi><mn>{q}</mn></msub><mo>=</mo><mi>e</mi><mo>+</mo><mi>PE</mi></math>, what enters the attention block</h3>
{_x_strip(model, e_i, pe_i, x_i, tok, q, vmax)}
{_block_labels(model, len(x_i))}
<p class="emb-note">Here the two parts sit in separate dimensions, so adding them places them side by side; in GPT-style models both fill all dimensions and really overlap.</p>
</section>
</div>
{legend_html()}
{_sr_table(model, tok, q, e_i, pe_i, x_i)}
</div>"""
