"""Residual and LayerNorm, for the query token: add the attention output back, then normalise.

What the panel teaches: the attention sublayer does not replace a token's
vector, it adds to it (x + MHA(x), the residual connection); LayerNorm then
subtracts the sum's own mean μ, divides by its own standard deviation σ, and
applies a learned per-dimension scale γ and shift β. Every vector is drawn as a
bar chart over the d_model dimensions; μ and μ ± σ are lines on the sum's chart
and numbers in the formula. A compact second row repeats the story after the
feed-forward network (h + FFN(h), μ₂, σ₂, block output).

All numbers come from the trace. The normalised vector (r − μ)/σ before γ and β
is not in the trace; when the model's γ is all ones and β all zeros it *is* the
LayerNorm output, and the panel says so; otherwise it shows γ, β and the output.

A model wider than PER_DIM_MAX dimensions (a trained model's 384) would need
thousands of elements and ~300 kB of markup for per-dimension paths, hover
columns and tables; there each bar chart is one PNG mask pair, the dimensions
that stand out are listed with their derivations, and every number is in a
folded text listing instead.

Also home of the signed-vector drawing helpers (`bar_row`, `heat_grid`,
`symmetric_limit`) that the FFN panel shares; their colours are colors.diverging_paint's.
"""

from __future__ import annotations

import numpy as np

from .colors import MIN_ALPHA, diverging_paint
from .drawing import gradient_legend, mask_layers, png_alpha16
from .markup import attr, clip_label, data_num, esc, num, nums, subscript, table_on_request
from .math import frac, math, mi, mn, mn_num, mo, mtext, paren, row, sub

# ---------------------------------------------------------------------------
# signed values in colour steps (colors.diverging_paint: blue > 0, orange < 0, as in every other
# signed view of the page, the blue/orange axis surviving the common red-green deficiencies)
# ---------------------------------------------------------------------------

N_BINS = 21  # colour steps: marks of one step share a <path>, which keeps the markup small


def _bin(t: float) -> int:  # t in [-1, 1] -> 0..N_BINS-1
    return int(round((min(1.0, max(-1.0, t)) + 1.0) / 2.0 * (N_BINS - 1)))


def _paths_by_bin(segments: dict) -> str:
    out = []
    for k, segs in sorted(segments.items()):
        color, alpha = diverging_paint(2.0 * k / (N_BINS - 1) - 1.0)
        out.append(f'<path fill="{color}" fill-opacity="{alpha:.2f}" d="{"".join(segs)}"/>')
    return "".join(out)


def symmetric_limit(*vectors, floor: float = 1e-9) -> float:
    """The largest |value| over the vectors (axis scaling), never 0."""
    return max([floor] + [float(np.max(np.abs(v))) for v in vectors if np.size(v)])


# ---------------------------------------------------------------------------
# one signed vector as a bar chart
# ---------------------------------------------------------------------------

BAR_W = 3  # viewBox units per dimension (stretched to the card width)
ROW_H = 48  # viewBox units = CSS px: the row is drawn at its natural height
PAD = 3  # keep the tallest bar off the edge


def bar_masks(values, limit: float) -> tuple[np.ndarray, np.ndarray]:  # [d] -> ([ROW_H, d], [ROW_H, d]) uint8
    """The bars as two alpha masks, one pixel column per dimension: bar height in whole pixels
    (up from the middle for positive values, down for negative) and opacity as diverging_paint's."""
    t = np.clip(np.asarray(values, dtype=np.float64) / limit, -1.0, 1.0)  # [d]
    mid, half = ROW_H // 2, ROW_H / 2 - PAD
    height = np.round(np.abs(t) * half).astype(int)
    alpha = np.round(255 * (MIN_ALPHA + (1.0 - MIN_ALPHA) * np.abs(t))).astype(np.uint8)
    y = np.arange(ROW_H)[:, None]  # [ROW_H, 1]
    up = (t > 0) & (y >= mid - height) & (y < mid)
    down = (t < 0) & (y >= mid) & (y < mid + height)
    return np.where(up, alpha, 0).astype(np.uint8), np.where(down, alpha, 0).astype(np.uint8)


def _bar_images(values, limit: float, id_prefix: str, width: float) -> str:
    """SVG: blue bars masked by the positive mask over orange ones masked by the negative (CSS colours)."""
    return mask_layers(bar_masks(values, limit), id_prefix, width, ROW_H, png_alpha16)


def bar_row(values, limit: float, *, name: str, note: str, key: str, lines=(), image: bool = False) -> str:
    """values [d] as bars up/down from a zero line, coloured by sign and size.

    limit: the |value| that fills half the row (shared by rows that should be compared).
    lines: (value, css class, legend text) horizontal reference lines, e.g. μ and μ ± σ.
    image: draw the bars as one PNG mask pair (bar_masks) instead of paths, for long vectors.
    The SVG has no text (it stretches horizontally); name and note are HTML above it.
    """
    d = len(values)
    width, mid, half = d * BAR_W, ROW_H / 2, ROW_H / 2 - PAD
    segments: dict[int, list[str]] = {}
    if not image:  # one path segment per visible bar, grouped by colour step (_bin); arrays [d]
        t = np.asarray(values, dtype=float) / limit
        h = np.minimum(1.0, np.abs(t)) * half
        shown = np.flatnonzero(h >= 0.05)  # shorter ones are invisible anyway: no segment
        y = np.where(t > 0, mid - h, mid)
        bins = np.rint((np.clip(t, -1.0, 1.0) + 1.0) / 2.0 * (N_BINS - 1)).astype(int)  # _bin, for all at once
        for j, k, yj, hj in zip(shown.tolist(), bins[shown].tolist(), y[shown].tolist(), h[shown].tolist()):
            segments.setdefault(k, []).append(f"M{j * BAR_W} {yj:.1f}h{BAR_W}v{hj:.1f}h-{BAR_W}z")
    bars = _bar_images(values, limit, f"ln-{key}", width) if image else _paths_by_bin(segments)
    refs = "".join(
        "<line"
        + attr(
            class_=cls,
            x1=0,
            x2=width,
            y1=f"{mid - max(-1.0, min(1.0, value / limit)) * half:.2f}",
            y2=f"{mid - max(-1.0, min(1.0, value / limit)) * half:.2f}",
        )
        + ' vector-effect="non-scaling-stroke"/>'
        for value, cls, _ in lines
    )
    legend = "".join(f"<span{attr(class_='ref-key ' + cls)}>{esc(text)}</span>" for _, cls, text in lines if text)
    note_html = f' <span class="muted">({esc(note)})</span>' if note else ""
    return (
        f"<div{attr(class_='vec-row', data_row=key, data_scale=data_num(limit))}>"
        f'<div class="vec-label"><span class="vec-name">{esc(name)}{note_html}</span>'
        f'<span class="vec-range">{esc("scale ±" + num(limit, 2) if np.any(values) else "all 0")}</span>{legend}</div>'
        "<svg"
        + attr(
            class_="vec-bars",
            viewBox=f"0 0 {width} {ROW_H}",
            preserveAspectRatio="none",
            aria_hidden="true",
            focusable="false",
        )
        + f'><line class="zero-line" x1="0" x2="{width}" y1="{mid}" y2="{mid}" vector-effect="non-scaling-stroke"/>'
        f"{bars}{refs}</svg></div>"
    )


def dimension_hits(tips, *, label: str) -> str:
    """A transparent column per dimension laid over a stack of bar rows, each with its derivation tip.

    HTML, not SVG: flex columns need no coordinates, which keeps 256 of them small.
    One roving-tabindex grid (arrow keys walk the dimensions); this is the only
    per-dimension markup, so the bars themselves can be grouped by colour. A tip of None leaves
    that column's text to the worker (data-tip-src: the bridge asks for it on hover or focus).
    """
    # written out rather than through attr(): 256 of them on every redraw (the same markup attr() gives)
    cols = "".join(
        f'<i data-grid-cell data-i="0" data-j="{j}" tabindex="{0 if j == 0 else -1}"'
        + (" data-tip-src></i>" if tip is None else f' data-tip="{esc(tip)}"></i>')
        for j, tip in enumerate(tips)
    )
    return f"<div{attr(class_='dim-hits', data_grid=True, role='group', aria_label=label)}>{cols}</div>"


def heat_grid(
    values,
    limit: float,
    *,
    columns: int,
    id_prefix: str,
    cell: int = 10,
    gap: int = 1,
    css_class: str = "heat-grid",
    label: str = "",
) -> str:
    """values [n] as a grid of coloured squares, row-major (unit u at row u // columns).

    A pattern draws every square's neutral base in one element; the values are
    tinted squares on top, grouped by colour step. id_prefix keeps the pattern id unique.
    """
    n = len(values)
    rows = -(-n // columns)
    segments: dict[int, list[str]] = {}
    s = cell - gap
    for u, v in enumerate(np.asarray(values, dtype=float).tolist()):
        x, y = (u % columns) * cell, (u // columns) * cell
        k = _bin(v / limit)
        if k != N_BINS // 2:  # |value| under half a colour step: leave the neutral base showing
            segments.setdefault(k, []).append(f"M{x} {y}h{s}v{s}h-{s}z")
    pid = f"{id_prefix}-cells"
    base = (
        f'<defs><pattern id="{pid}" width="{cell}" height="{cell}" patternUnits="userSpaceOnUse">'
        f'<rect class="cell-base" width="{s}" height="{s}"/></pattern></defs>'
        f'<rect x="0" y="0" width="{columns * cell}" height="{(n // columns) * cell}" fill="url(#{pid})"/>'
        + (
            f'<rect x="0" y="{(n // columns) * cell}" width="{(n % columns) * cell}" height="{cell}" '
            f'fill="url(#{pid})"/>'
            if n % columns
            else ""
        )
    )
    return (
        "<svg"
        + attr(
            class_=css_class, viewBox=f"0 0 {columns * cell - gap} {rows * cell - gap}", role="img", aria_label=label
        )
        + f">{base}{_paths_by_bin(segments)}</svg>"
    )


# ---------------------------------------------------------------------------
# the panel
# ---------------------------------------------------------------------------


def _is_identity_affine(gamma, beta) -> bool:
    """γ = 1 and β = 0 everywhere: then (r − μ)/σ is exactly the LayerNorm output."""
    return bool(np.all(np.asarray(gamma) == 1.0) and np.all(np.asarray(beta) == 0.0))


def _signed(x: float, digits: int = 3) -> str:
    """A number for the inside of a sum: negative ones in parentheses."""
    s = num(x, digits)
    return f"({s})" if s.startswith("−") else s


def _formula(mu: float, sigma: float, n: str) -> str:
    """LayerNorm(r) = γ ⊙ (r − μ)/σ + β  = γ ⊙ (r − 0.27)/0.47 + β, live (n: the block's subscript).

    Two <math> blocks in a wrapping row, so a phone shows them one above the other.
    """

    def s(name):  # μ -> μ₁
        return sub(mi(name), mn(n))

    r = mi("r")
    mu_val = paren(mn_num(mu, 3)) if num(mu, 3).startswith("−") else mn_num(mu, 3)
    symbolic = row(
        row(mtext("LayerNorm"), paren(r)),
        mo("="),
        s("γ"),
        mo("⊙"),
        frac(row(r, mo("−"), s("μ")), s("σ")),
        mo("+"),
        s("β"),
    )
    live = row(mo("="), s("γ"), mo("⊙"), frac(row(r, mo("−"), mu_val), mn_num(sigma, 3)), mo("+"), s("β"))
    return (
        '<div class="formula-row">'
        + math(symbolic, display="block", label="LayerNorm of r equals gamma times (r minus mu) over sigma plus beta")
        + math(live, display="block", label=f"here: gamma times (r minus {num(mu, 3)}) over {num(sigma, 3)} plus beta")
        + "</div>"
    )


def _ln_tips(first, second, total, out, mu, sigma, gamma, beta, names, identity, labels, dims=None) -> list[str]:
    """Per-dimension derivations, every number read from the trace (or the parameters).

    labels: the model's name for each dimension ("noun", "position sin 3"; "" when it has none);
    dims: the dimensions to describe (default: all, in order).
    """
    a, b, r = names
    tips = []
    for j in range(len(total)) if dims is None else dims:
        what = f" · {labels[j]}" if labels[j] else ""
        affine = "" if identity else f"\nγ = {num(gamma[j], 3)}, β = {num(beta[j], 3)}"
        tips.append(
            f"dimension {j}{what}\n"
            f"{a} + {b} = {num(first[j], 3)} + {_signed(second[j])} = {num(total[j], 3)}\n"
            f"LayerNorm: γ·({num(total[j], 3)} − {_signed(mu)}) / {num(sigma, 3)} + β = {num(out[j], 3)}{affine}"
        )
    return tips


PER_DIM_MAX = 256  # wider vectors: bars as images, the standing-out dims listed, the numbers folded
TOP_DIMS = 8  # ... how many dims are listed
OUTLIER_SIGMAS = 4  # ... a dim at least this many σ from μ is called out as an outlier


def _standing_out(total, mu: float, sigma: float, tips, dims, r_name: str, mu_s: str, sigma_s: str) -> str:
    """The dims of r farthest from μ, each with its derivation (the wide model's stand-in for hover columns),
    and, when some are OUTLIER_SIGMAS·σ or more from μ, what that does to the others."""
    z = [(float(total[j]) - mu) / sigma for j in dims]  # display only: how many σ from μ
    # one Tab stop, arrow keys inside (a roving grid, as the hover columns of a narrower model)
    items = "".join(
        f"<li{attr(tabindex=0 if k == 0 else -1, data_dim=j, data_tip=tip, data_grid_cell=True, data_i=0, data_j=k)}>"
        f"dim {j}: <strong>{num(float(total[j]), 2)}</strong> "
        f'<span class="muted">({num(zj, 1)} {sigma_s})</span></li>'
        for k, (j, tip, zj) in enumerate(zip(dims, tips, z))
    )
    far = [(j, zj) for j, zj in zip(dims, z) if abs(zj) >= OUTLIER_SIGMAS]
    note = ""
    if far:
        which = ", ".join(f"dim {j}" for j, _ in far)
        note = (
            f'<p class="muted ln-note">{len(far)} {"dimension is" if len(far) == 1 else "dimensions are"} '
            f"{OUTLIER_SIGMAS} or more {sigma_s} from {mu_s} ({esc(which)}): a few such outlier dimensions are "
            f"common in trained transformers. They make {sigma_s} larger, so dividing by it shrinks every other "
            f"entry; γ and β then rescale each dimension on its own.</p>"
        )
    return (
        f'<p class="muted ln-note">The {len(dims)} entries of {esc(r_name)} farthest from {mu_s} (hover or focus '
        f'one for its numbers; arrow keys move):</p><ol class="ln-top" data-grid>{items}</ol>{note}'
    )


def _numbers(caption: str, headers, columns) -> str:
    """Every number of a wide block, folded: one line of text per vector (2 decimals), not one element per number."""
    body = "".join(
        f"<p><strong>{esc(h)}</strong>: {', '.join(num(float(v), 2) for v in col)}</p>"
        for h, col in zip(headers, columns)
    )
    return f'<details class="ln-numbers"><summary>{esc(caption)}, dim 0 first</summary>{body}</details>'


def _table(caption: str, headers, columns, labels, *, key: str) -> str:
    """The numbers behind a chart, printed to 3 decimals: a table a reader opens on request."""
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in headers)
    texts = [nums(np.asarray(c, dtype=float), 3) for c in columns]  # [column][dimension]
    body = "".join(
        f"<tr><th>{j} {esc(labels[j])}</th>{''.join(f'<td>{t[j]}</td>' for t in texts)}</tr>"
        for j in range(len(columns[0]))
    )
    table = (
        f'<table><caption>{esc(caption)}</caption><thead><tr><th scope="col">dimension</th>'
        f"{head}</tr></thead><tbody>{body}</tbody></table>"
    )
    return table_on_request(f"The {len(columns[0])} dimensions as a table", table, key=key)


def _stats(mu: float, sigma: float, d: int, r_name: str, n: str, eps: float) -> str:
    k = subscript(n)
    mu_tip = f"μ{k}: the mean of the {d} entries of {r_name}; LayerNorm subtracts it"
    sigma_tip = (
        f"σ{k} = √(variance + ε), ε = {eps:g}: the spread of the {d} entries of {r_name}; LayerNorm divides by it"
    )
    return (
        '<p class="ln-stats">'
        "<span"
        + attr(class_="stat stat-mu", tabindex=0, data_tip=mu_tip, data_mu=data_num(mu))
        + f">μ{k} = {esc(num(mu, 3))}</span> "
        "<span"
        + attr(class_="stat stat-sigma", tabindex=0, data_tip=sigma_tip, data_sigma=data_num(sigma))
        + f">σ{k} = {esc(num(sigma, 3))}</span></p>"
    )


def _axis(d: int, regions) -> str:
    """Under the bars: what each stretch of dimensions holds in the model (its DimRegions), and the dimension
    numbers."""
    spans = "".join(
        "<span"
        + attr(
            class_="dim-region", style=f"flex: {r.stop - r.start} 1 0", title=f"dims {r.start}–{r.stop - 1}: {r.label}"
        )
        + f">{esc(r.label)}</span>"
        for r in regions
    )
    return (
        f'<div class="vec-axis" aria-hidden="true"><div class="dim-regions">{spans}</div>'
        f'<div class="dim-ends"><span>dim 0</span><span>dim {d - 1}</span></div></div>'
    )


def _block(
    *,
    key: str,
    n: str,
    title: str,
    intro: str,
    summands,
    total,
    mu: float,
    sigma: float,
    out,
    gamma,
    beta,
    out_name: str,
    eps: float,
    model,
    listed_above: bool = False,
    tips_on_demand: bool = False,
) -> str:
    """One residual + LayerNorm: the two summands, their sum with μ/σ lines, and the normalised output.

    summands: ((values [d], name, note), (values [d], name, note)); total [d] is their sum
    (from the trace), out [d] the LayerNorm output, n the block's number ("1" or "2");
    model: the ModelDescription (names and regions of the dimensions); listed_above: the first summand's
    numbers are the previous block's output (a wide model's folded listing leaves them out here);
    tips_on_demand: the per-dimension tips are left to dimension_tip (the worker's live redraws).
    """
    (first, a, a_note), (second, b, b_note) = summands
    # plain Python floats: formatting 2 x 1,500 numbers is several times faster than from np.float64
    first, second, total, out, gamma, beta = (
        np.asarray(v, dtype=float).tolist() for v in (first, second, total, out, gamma, beta)
    )
    r_name = f"{a} + {b}"
    d = len(total)
    wide = d > PER_DIM_MAX  # bars as images, standing-out dims listed, numbers folded
    identity = _is_identity_affine(gamma, beta)
    mu_s, sigma_s = "μ" + subscript(n), "σ" + subscript(n)
    limit_in = symmetric_limit(first, second, total, np.array([abs(mu) + sigma]))  # μ ± σ stays in view
    charts = [
        bar_row(first, limit_in, name=a, note=a_note, key=f"{key}-a", image=wide),
        bar_row(second, limit_in, name=b, note=b_note, key=f"{key}-b", image=wide),
        bar_row(
            total,
            limit_in,
            name=r_name,
            note="their sum, same scale",
            key=f"{key}-sum",
            image=wide,
            lines=(
                (mu, "ref-mu", f"— {mu_s} = {num(mu, 3)}"),
                (mu + sigma, "ref-sigma", f"┄ {mu_s} ± {sigma_s}"),
                (mu - sigma, "ref-sigma", ""),
            ),
        ),
    ]
    limit_out = symmetric_limit(out, np.array([1.0]))
    if identity:
        charts.append(
            bar_row(
                out,
                limit_out,
                name=f"({r_name} − {mu_s}) / {sigma_s} = {out_name}",
                note="mean 0, spread 1; γ = 1 and β = 0 in this model",
                key=f"{key}-out",
                image=wide,
                lines=((0.0, "ref-mu", "— 0"), (1.0, "ref-sigma", "┄ ±1"), (-1.0, "ref-sigma", "")),
            )
        )
        note = ""
    else:
        learned = " (learned; the same for every token)" if wide else ""
        charts += [
            bar_row(
                gamma,
                symmetric_limit(gamma),
                name="γ",
                note="scale, per dimension" + learned,
                key=f"{key}-gamma",
                image=wide,
            ),
            bar_row(
                beta,
                symmetric_limit(beta),
                name="β",
                note="shift, per dimension" + learned,
                key=f"{key}-beta",
                image=wide,
            ),
            bar_row(
                out,
                limit_out,
                name=f"{out_name} = γ ⊙ ({r_name} − {mu_s}) / {sigma_s} + β",
                note="",
                key=f"{key}-out",
                image=wide,
            ),
        ]
        note = (
            '<p class="muted ln-note">The normalised vector before γ and β is not drawn: the trace records '
            "only the LayerNorm output.</p>"
        )
    names = (a, b, r_name)
    headers, columns = [a, b, r_name, out_name], [first, second, total, out]
    if wide:
        far = [int(j) for j in np.argsort(-np.abs(np.asarray(total) - mu), kind="stable")[:TOP_DIMS]]
        tips = _ln_tips(first, second, total, out, mu, sigma, gamma, beta, names, identity, model.dim_names, far)
        hover = _standing_out(total, mu, sigma, tips, far, r_name, mu_s, sigma_s)
        skip = 1 if listed_above else 0  # h is the first block's output, listed there
        table = _numbers(
            f"All {d} numbers of "
            + (
                f"{b}, {r_name} and {out_name} ({a} is listed above)" if skip else f"{a}, {b}, their sum and {out_name}"
            ),
            headers[skip:],
            columns[skip:],
        )
    else:
        tips = (
            [None] * d
            if tips_on_demand
            else _ln_tips(first, second, total, out, mu, sigma, gamma, beta, names, identity, model.dim_names)
        )
        hover = dimension_hits(tips, label=f"{d} dimensions of {r_name}: arrow keys step through them")
        table = _table(f"{title}: the {d} dimensions", headers, columns, model.dim_names, key=f"{key}-table")
    stack = f'<div class="vec-stack">{"".join(charts)}{"" if wide else hover}</div>'
    return (
        "<section"
        + attr(class_="ln-block", data_block=key, data_mu=data_num(mu), data_sigma=data_num(sigma), data_d=d)
        + f'><h4 class="ln-title">{esc(title)}</h4><p class="ln-intro" data-export-label="">{intro}</p>'
        f"{_formula(mu, sigma, n)}"
        f'<p class="ln-where muted">where r = {esc(r_name)}; {mu_s} and {sigma_s} are the mean and standard '
        f"deviation of its {d} entries.</p>"
        f"{_stats(mu, sigma, d, r_name, n, eps)}"
        f"{stack}{_axis(d, model.dim_regions)}{hover if wide else ''}{note}{table}</section>"
    )


def _x_note(computed) -> str:
    """What x is in the selected layer: the embedding (designed: token + position; trained: after its
    LayerNorm) or the previous layer's output."""
    if computed.layer > 0:
        return f"layer {computed.layer}'s output"
    return "the embedding, after its LayerNorm" if computed.embedding.learned else "token + position embedding"


def _blocks(computed, i: int) -> tuple[dict, dict]:
    """The two residual + LayerNorm blocks of token i, as _block's arguments (render draws them,
    dimension_tip describes one dimension of one)."""
    tr, p = computed.trace, computed.params
    return (
        dict(
            key="ln1",
            n="1",
            title="After attention: h = LayerNorm(x + MHA(x))",
            intro=(
                "Attention does not replace the token's vector: its output MHA(x) is <em>added</em> to x "
                "(the residual connection), so the token keeps what it was and gains what it gathered, and a "
                "stack of many layers can be trained: each only adds a correction. LayerNorm then re-centres "
                "the sum on 0 and rescales it to unit spread, so the signal keeps its scale from layer to layer."
            ),
            summands=((tr.x[i], "x", _x_note(computed)), (tr.attn_out[i], "MHA(x)", "attention output")),
            total=tr.resid1[i],
            mu=float(tr.ln1_mean[i]),
            sigma=float(tr.ln1_std[i]),
            out=tr.ln1[i],
            gamma=p.ln1_gamma,
            beta=p.ln1_beta,
            out_name="h",
            eps=tr.eps,
            model=computed.model,
        ),
        dict(
            key="ln2",
            n="2",
            title="After the feed-forward network: out = LayerNorm(h + FFN(h))",
            intro="The same again around the feed-forward network: its output is added to h and the sum is normalised.",
            summands=((tr.ln1[i], "h", "from above"), (tr.ffn_out[i], "FFN(h)", "feed-forward output")),
            total=tr.resid2[i],
            mu=float(tr.ln2_mean[i]),
            sigma=float(tr.ln2_std[i]),
            out=tr.out[i],
            gamma=p.ln2_gamma,
            beta=p.ln2_beta,
            out_name="out",
            eps=tr.eps,
            model=computed.model,
            listed_above=True,
        ),
    )


def dimension_tip(computed, i: int, key: str, j: int) -> str:
    """The tip of dimension j of block key ("ln1" or "ln2") for token i: what a live redraw left out
    (the same text render() writes inline). "" for a block or dimension that does not exist."""
    kw = next((kw for kw in _blocks(computed, i) if kw["key"] == key), None)
    if kw is None or not 0 <= j < len(kw["total"]):
        return ""
    (first, a, _), (second, b, _) = kw["summands"]
    vectors = [
        np.asarray(v, dtype=float).tolist() for v in (first, second, kw["total"], kw["out"], kw["gamma"], kw["beta"])
    ]
    identity = _is_identity_affine(vectors[4], vectors[5])
    first, second, total, out, gamma, beta = vectors
    return _ln_tips(
        first,
        second,
        total,
        out,
        kw["mu"],
        kw["sigma"],
        gamma,
        beta,
        (a, b, f"{a} + {b}"),
        identity,
        computed.model.dim_names,
        [j],
    )[0]


def render(state, computed, *, tips_on_demand: bool = False) -> str:
    """The query token's residual sum and LayerNorm, after attention (in full) and after the FFN (the same, again).

    tips_on_demand: leave the per-dimension tips out of the markup (the worker's live redraws, ~65 kB
    and most of the panel's Python time); build.py's pre-rendered page keeps them inline."""
    tr = computed.trace
    i = state.query
    token = computed.tokens[i]
    heading = (
        f'<h3 class="ln-heading">Query token <q class="tok">{esc(clip_label(token, 24))}</q> '
        f'<span class="muted">(position {i}, d_model = {tr.d_model})</span></h3>'
    )
    first, second = (_block(**kw, tips_on_demand=tips_on_demand) for kw in _blocks(computed, i))
    hover = (
        "Hover or focus the bars (arrow keys move) for each dimension's numbers."
        if tr.d_model <= PER_DIM_MAX
        else f"Each chart shows all {tr.d_model} dimensions, left to right; the ones that stand out are listed "
        "under each block with their numbers, and every number is in the folded listing."
    )
    legend = gradient_legend(
        "−",
        "+",
        what="bar height and colour: negative (orange), 0, positive (blue); each row's "
        f"scale is printed next to its name. {hover}",
    )
    # the second sum and LayerNorm work as the first: folded, one click away (data-keep: open across redraws)
    again = (
        f"<details{attr(class_='more-inline', data_keep='ln-after-ffn')}><summary>The same after the "
        "feed-forward network: out = LayerNorm(h + FFN(h))</summary>"
        f"{second}</details>"
    )
    return f"<div{attr(class_='ln-panel', data_view='layernorm', data_query=i)}>{heading}{legend}{first}{again}</div>"
