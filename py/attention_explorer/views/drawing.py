"""Drawing helpers more than one view uses: the masked-cell hatching, the PNG masks that draw large
signed pictures in a few elements, and the legends of the colour scales.

    hatch_pattern           the hatch of a masked cell or bar (an SVG <pattern>; wrap it in <defs>)
    png_alpha, png_alpha16  an opacity image as PNG file bytes (8 bits a pixel, or 16 steps in 4 bits)
    mask_layers             a blue and an orange rect, each masked by such an image (the colours stay CSS)
    signed_heatmap_layers   a signed [h, w] array as mask_layers, one pixel per value
    weight_legend           the 0-100 % viridis bar under a heatmap (plus its "masked" swatch)
    legend_html             the signed scale as a bar: orange negative, transparent zero, blue positive
    scale_legend            the signed scale as swatches (colors.diverging's classes), for value strips
    gradient_legend         the signed scale as a CSS gradient (colors.diverging_rgba), for bar charts

Imports no view but colors and markup, so that every view may import it.
"""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np

from .colors import diverging, diverging_rgba, signed_strength, viridis
from .markup import attr, data_num, esc, num

# --------------------------------------------------------------------------
# hatching: what is masked
# --------------------------------------------------------------------------


def hatch_pattern(pattern_id: str, unit: float = 1.0) -> str:
    """The masked-cell hatch (as the main heatmap's), 6 px stripes; unit: the px per user unit of the
    shapes that use it (the painted grids are drawn in cells, scaled by the cell size)."""
    scale = f"scale({1 / unit:.6g}) " if unit != 1.0 else ""
    return (
        f'<pattern id="{pattern_id}" width="6" height="6" patternUnits="userSpaceOnUse" '
        f'patternTransform="{scale}rotate(45)"><rect width="6" height="6" class="masked-bg"/>'
        '<line x1="0" y1="0" x2="0" y2="6" class="masked-line"/></pattern>'
    )


# --------------------------------------------------------------------------
# PNG masks: a large picture as two tiny greyscale images
# --------------------------------------------------------------------------


def _chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, kind, data, CRC."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_alpha(levels: np.ndarray, effort: int = 9) -> bytes:  # [h, w] uint8 -> PNG file bytes: white, alpha = levels
    # effort: zlib's level; 9 packs a noisy picture tightest, a lower one is several times faster on large ones
    h, w = levels.shape
    pixels = np.stack([np.full_like(levels, 255), levels], axis=-1)  # [h, w, 2] grey + alpha
    raw = b"".join(b"\x00" + pixels[r].tobytes() for r in range(h))  # filter type 0 per scanline
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 4, 0, 0, 0))
        + _chunk(b"IDAT", zlib.compress(raw, effort))
        + _chunk(b"IEND", b"")
    )


def png_alpha16(levels: np.ndarray, effort: int = 9) -> bytes:  # [h, w] uint8 -> PNG file bytes, 4 bits a pixel
    """As png_alpha, with the opacity rounded to 16 steps: a palette of 16 whites whose transparency
    (tRNS) is 0, 17, …, 255, four bits a pixel. A quarter of png_alpha's raw data, so charts that are
    mostly flat runs (bars) pack small and fast; the steps are finer than the eye tells apart."""
    h, w = levels.shape
    index = np.round(np.asarray(levels, dtype=np.float64) / 17.0).astype(np.uint8)  # [h, w] 0..15
    if w % 2:
        index = np.concatenate([index, np.zeros((h, 1), np.uint8)], axis=1)
    packed = (index[:, 0::2] << 4) | index[:, 1::2]  # [h, ceil(w/2)] two pixels a byte, high nibble first
    raw = b"".join(b"\x00" + packed[r].tobytes() for r in range(h))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 4, 3, 0, 0, 0))
        + _chunk(b"PLTE", b"\xff\xff\xff" * 16)
        + _chunk(b"tRNS", bytes(range(0, 256, 17)))
        + _chunk(b"IDAT", zlib.compress(raw, effort))
        + _chunk(b"IEND", b"")
    )


def signed_masks(values, vmax: float) -> tuple[np.ndarray, np.ndarray]:  # [h, w] -> ([h, w], [h, w]) uint8
    """Opacity levels 0..255 of the positive and the negative cells (as colors.signed_strength, per pixel)."""
    v = np.asarray(values, dtype=np.float64)
    level = np.round(255 * np.clip(np.abs(v) / vmax, 0.0, 1.0)) if vmax > 0 else np.zeros_like(v)
    return (np.where(v > 0, level, 0).astype(np.uint8), np.where(v < 0, level, 0).astype(np.uint8))


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def mask_layers(masks, id_prefix: str, width: float, height: float, png=png_alpha) -> str:
    """SVG: a blue rect masked by masks[0] (opacity levels [h, w]) over an orange one masked by masks[1].

    The colours stay CSS variables (dark mode works); the masks act through their alpha channel
    (mask-type: alpha), so no colour-space conversion touches them. png: how a mask is written
    (png_alpha; png_alpha16 for large, mostly flat pictures)."""
    out = []
    for sign, levels in zip(("pos", "neg"), masks):
        mid = f"{id_prefix}-{sign}"
        out.append(
            f'<mask id="{mid}" maskUnits="userSpaceOnUse" x="0" y="0" width="{width}" height="{height}" '
            'style="mask-type: alpha">'
            f'<image class="pixelated" href="{_data_uri(png(levels))}" x="0" y="0" width="{width}" '
            f'height="{height}" preserveAspectRatio="none" data-sign="{sign}"/></mask>'
            f'<rect class="heat {sign}" x="0" y="0" width="{width}" height="{height}" mask="url(#{mid})"/>'
        )
    return "".join(out)


def signed_heatmap_layers(values, vmax: float, id_prefix: str, width: float, height: float) -> str:
    """SVG: a blue rect masked by |positive values| over an orange one masked by |negative values|,
    one pixel per cell (signed_masks on the scale ±vmax)."""
    return mask_layers(signed_masks(values, vmax), id_prefix, width, height)


# --------------------------------------------------------------------------
# legends of the colour scales
# --------------------------------------------------------------------------


def weight_legend(
    x: float,
    y: float,
    width: float,
    scale_id: str,
    masked_id: str | None,
    *,
    label: str = "weight A_ij",
    swatch: int = 56,
) -> str:
    """The 0-100 % viridis scale under a heatmap (plus the hatched "masked" swatch when masked_id is
    given); swatch: room for the "masked" label, wider for larger legend text."""
    stops = "".join(f'<stop offset="{k * 10}%" stop-color="{viridis(k / 10)}"/>' for k in range(11))
    bar_w = width - swatch - 14 if masked_id else width  # room for the "masked" swatch
    parts = [
        f'<g class="legend" aria-hidden="true"><defs><linearGradient id="{scale_id}">{stops}</linearGradient></defs>',
        f'<rect x="{x}" y="{y}" width="{bar_w}" height="10" fill="url(#{scale_id})"/>',
        f'<text x="{x}" y="{y + 24}" class="legend-label">0 %</text>',
        f'<text x="{x + bar_w / 2}" y="{y + 24}" text-anchor="middle" class="legend-label">{esc(label)}</text>',
        f'<text x="{x + bar_w}" y="{y + 24}" text-anchor="end" class="legend-label">100 %</text>',
    ]
    if masked_id:
        sx = x + width - swatch
        parts.append(
            f'<rect x="{sx}" y="{y - 2}" width="14" height="14" fill="url(#{masked_id})"/>'
            f'<text x="{sx + 18}" y="{y + 9}" class="legend-label">masked</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def legend_html(lo_label: str = "−1", hi_label: str = "+1") -> str:
    """The diverging scale's legend: orange negative, transparent zero, blue positive."""
    return (
        f'<div class="signed-legend" aria-hidden="true"><span>{esc(lo_label)}</span>'
        f'<span class="signed-legend-bar"></span>'
        f"<span>{esc(hi_label)}</span></div>"
    )


def scale_legend(limit: float, caption: str) -> str:
    """A small key for the diverging scale: −limit (orange) … 0 … +limit (blue)."""
    ramp = "".join(
        f"<span{attr(class_='dv-swatch ' + diverging(t, 1)[0], style=f'--strength:{diverging(t, 1)[1]:.2f}')}></span>"
        for t in np.linspace(-1, 1, 11)
    )
    return (
        f'<p class="dv-legend" aria-hidden="true"><span class="dv-legend-num">{num(-limit, 2)}</span>'
        f'<span class="dv-ramp">{ramp}</span><span class="dv-legend-num">{num(limit, 2)}</span>'
        f'<span class="dv-legend-caption">{esc(caption)}</span></p>'
    )


def gradient_legend(low: str, high: str, *, what: str) -> str:
    """A small HTML legend for the diverging scale, e.g. ("−max", "+max")."""
    stops = f"{diverging_rgba(-1)}, {diverging_rgba(-0.001)}, {diverging_rgba(0)}, {diverging_rgba(1)}"
    return (
        f'<div class="scale-legend" aria-hidden="true"><span>{esc(low)}</span>'
        f'<span class="scale-bar" style="background: linear-gradient(to right, {stops})"></span>'
        f'<span>{esc(high)}</span><span class="scale-what"'
        + attr(data_export_label=what.partition(" Hover or focus")[0] if " Hover or focus" in what else None)
        + f">{esc(what)}</span></div>"
    )


def soft(values):  # [...] -> [...] sign(v)·√|v|: colour strength of the learned pictures
    v = np.asarray(values, dtype=np.float64)
    return np.sign(v) * np.sqrt(np.abs(v))


def strip_svg(
    values,
    tips,
    *,
    label: str,
    vmax: float,
    grid_row: int | None = 0,
    cls: str = "",
    first_focus: int = 0,
    meta: dict | None = None,
    spans=None,
    strength=None,
) -> str:
    """A horizontal strip of cells, one per value ([k] -> markup), stretched to the container width.

    tips[c] is the tooltip of cell c (None: no tooltip, not focusable). With grid_row set, the
    strip is its own roving-tabindex grid (the svg is [data-grid]; cells are data-grid-cell with
    data-i=grid_row, data-j=c): one Tab stop, arrow keys walk the cells. spans, if given, is a list of
    (start, stop) cell ranges drawn as one wider cell each (runs of zeros); values/tips then index those runs.
    strength, if given, maps a value to its colour strength on the scale ±vmax (e.g. soft); data-value keeps
    the value itself.
    """
    spans = spans or [(c, c + 1) for c in range(len(values))]
    width = spans[-1][1] if spans else 0
    out = [
        "<svg"
        + attr(
            class_=("strip " + cls).strip(),
            viewBox=f"0 0 {width} 1",
            preserveAspectRatio="none",
            role="img",
            aria_label=label,
            data_grid=grid_row is not None,
            **(meta or {}),
        )
        + f'><rect class="strip-bg" x="0" y="0" width="{width}" height="1"/>'
    ]
    for c, ((start, stop), value, tip) in enumerate(zip(spans, values, tips)):
        sign, alpha = signed_strength(value if strength is None else strength(value), vmax)
        if tip is None and alpha == 0:
            continue  # invisible and silent: leave it out of the markup
        focus = None if tip is None else ("0" if c == first_focus else "-1")
        grid = tip is not None and grid_row is not None
        out.append(
            "<rect"
            + attr(
                class_=f"strip-cell {sign}",
                x=start,
                width=stop - start,
                height=1,
                fill_opacity=f"{alpha:.3f}",
                data_value=data_num(value),
                data_dims=f"{start}-{stop - 1}" if stop - start > 1 else None,
                data_tip=tip,
                tabindex=focus,
                data_grid_cell=grid,
                data_i=grid_row if grid else None,
                data_j=c if grid else None,
            )
            + "/>"
        )
    out.append("</svg>")
    return "".join(out)
