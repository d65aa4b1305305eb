"""The page's colour scales: viridis for weights in [0, 1], a hue per head, and the diverging scale for
signed values (as CSS classes, or as fixed colours for markup that paints them itself).

Viridis is perceptually uniform and readable with the common colour-vision
deficiencies and in greyscale. Eleven anchors from matplotlib's table,
linearly interpolated.
"""

from __future__ import annotations

import numpy as np

_VIRIDIS = (  # (r, g, b) at 0.0, 0.1, ..., 1.0
    (68, 1, 84),
    (72, 36, 117),
    (65, 68, 135),
    (53, 95, 141),
    (42, 120, 142),
    (33, 145, 140),
    (34, 168, 132),
    (68, 191, 112),
    (122, 209, 81),
    (189, 223, 38),
    (253, 231, 37),
)


def viridis(t: float) -> str:
    """CSS hex colour for t in [0, 1] (clamped)."""
    t = min(1.0, max(0.0, float(t))) * (len(_VIRIDIS) - 1)
    i = min(int(t), len(_VIRIDIS) - 2)
    f = t - i
    a, b = _VIRIDIS[i], _VIRIDIS[i + 1]
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


_HEX = tuple(f"{v:02x}" for v in range(256))
_ANCHORS = np.array(_VIRIDIS, dtype=np.float64)  # [11, 3]


def viridis_many(ts) -> list[str]:
    """viridis(t) for every t of an array, in order: the same strings, computed in one NumPy pass
    (a 33 × 33 heatmap per slider move). Same float64 steps and round-half-even as viridis()."""
    t = np.clip(np.asarray(ts, dtype=np.float64).ravel(), 0.0, 1.0) * (len(_VIRIDIS) - 1)  # [k]
    i = np.minimum(t.astype(np.int64), len(_VIRIDIS) - 2)  # [k] lower anchor
    f = (t - i)[:, None]  # [k, 1]
    a, b = _ANCHORS[i], _ANCHORS[i + 1]  # [k, 3]
    rgb = np.rint(a + (b - a) * f).astype(np.int64).tolist()
    return ["#" + _HEX[r] + _HEX[g] + _HEX[bl] for r, g, bl in rgb]


def text_on(t: float) -> str:
    """Readable label colour on top of viridis(t): dark on the light end, light on the dark end."""
    return "#111" if t >= 0.55 else "#fff"


# Distinct, colour-blind-safe hues for heads (Okabe & Ito 2008).
HEAD_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")


# Signed values (vectors, scores) on a diverging scale centred on 0, the same in every view:
# blue for positive, orange for negative (Okabe & Ito; distinct for the common colour-vision
# deficiencies), magnitude as opacity so 0 fades into the background in light and dark mode.
# CSS: var(--sign-pos) / var(--sign-neg) (site/style.css); markup with fixed colours: these.
SIGN_POS_RGB = (0, 114, 178)  # #0072b2
SIGN_NEG_RGB = (230, 159, 0)  # #e69f00


def signed_strength(value: float, limit: float) -> tuple[str, float]:
    """("pos" | "neg", opacity in [0, 1]) for a value on a symmetric scale [−limit, limit]."""
    value, limit = float(value), float(limit)
    if not (limit > 0) or value != value:  # no scale, or NaN
        return "pos", 0.0
    return ("neg" if value < 0 else "pos"), min(1.0, abs(value) / limit)


def diverging(value: float, limit: float) -> tuple[str, float]:
    """(css class, opacity) for a signed value on a scale of ±limit, centred on 0.

    The class picks the hue (dv-pos blue, dv-neg orange; their exact colours
    switch with the colour scheme in css/routing.css); the opacity is |value| /
    limit, clamped to [0, 1], so 0 is fully transparent.
    """
    sign, strength = signed_strength(value, limit)
    return "dv-" + sign, strength


# The same scale with fixed colours, for markup that paints them itself (the LayerNorm and FFN panels'
# bars and grids): one hue per sign, magnitude as opacity, fading into whatever is behind, so 0 is the
# card colour in light *and* dark mode. Both hues keep a contrast of about 4:1 against white and
# against the dark card.
MIN_ALPHA = 0.08  # a value of exactly 0 is still a faint mark


def diverging_paint(t: float) -> tuple[str, float]:
    """(hex colour, opacity) for t in [-1, 1] (clamped): the colour says the sign, the opacity the size."""
    t = min(1.0, max(-1.0, float(t)))
    rgb = SIGN_POS_RGB if t >= 0 else SIGN_NEG_RGB
    return "#" + "".join(f"{c:02x}" for c in rgb), MIN_ALPHA + (1.0 - MIN_ALPHA) * abs(t)


def diverging_rgba(t: float) -> str:
    """The same as a CSS colour, rgba(...), for HTML backgrounds."""
    t = min(1.0, max(-1.0, float(t)))
    r, g, b = SIGN_POS_RGB if t >= 0 else SIGN_NEG_RGB
    return f"rgba({r}, {g}, {b}, {MIN_ALPHA + (1.0 - MIN_ALPHA) * abs(t):.2f})"
