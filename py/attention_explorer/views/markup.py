"""Escaping and number formatting: the one place text becomes markup.

Every string that came from a reader, a URL or the model's lexicon passes through
`esc` (element text) or `attr` (attribute values) before it reaches markup; views
never build markup from raw text any other way.
"""

from __future__ import annotations

import math


def esc(text) -> str:
    """Escape text for element content (quotes too, so it is also safe in attributes).

    What html.escape(text, quote=True) does, written out: importing `html` (and its table of
    entities) took ~70 ms of the worker's start-up in Pyodide, for these five replacements."""
    return (
        str(text)
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#x27;")
    )


def attr(**attrs) -> str:
    """' name="value"' pairs, escaped; None and False are left out, True gives a bare name.

    Underscores in names become hyphens (data_i -> data-i); a trailing one is
    dropped (class_ -> class).
    """
    parts = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        name = name.rstrip("_").replace("_", "-")
        parts.append(f" {name}" if value is True else f' {name}="{esc(value)}"')
    return "".join(parts)


def num(x: float, digits: int = 2) -> str:
    """A number as readers see it: fixed decimals, a real minus sign, no '-0.00'."""
    if not math.isfinite(x):
        return "−∞" if x < 0 else ("∞" if x > 0 else "NaN")
    s = f"{x:.{digits}f}"
    if float(s) == 0:
        s = s.lstrip("-")
    return s.replace("-", "−")


def nums(values, digits: int = 2) -> list[str]:
    """num() of each value, for long vectors (a table's column): the same text, without a call per value."""
    fmt = f"{{:.{digits}f}}".format
    negative_zero = "-" + fmt(0.0)
    out = []
    for x in values.tolist() if hasattr(values, "tolist") else values:
        if not math.isfinite(x):
            out.append(num(x, digits))
            continue
        s = fmt(x)
        out.append(s[1:] if s == negative_zero else s.replace("-", "−"))
    return out


def data_num(x: float) -> str:
    """A number for a data-* attribute: plain decimal (no exponent), enough digits to check."""
    return f"{float(x):.12f}"


def pct(w: float, digits: int = 1) -> str:
    return f"{100 * w:.{digits}f} %"


def percent_label(w: float) -> str:
    """A weight (0..1) as the whole percentage printed on a cell or bar: 100·w rounded half up, on its own.

    "<1" for a weight above 0 that rounds to 0 (under 0.5 %): a key that gets a little is not shown
    as getting nothing. "0" only for a weight of exactly 0 (a masked key, or exp underflowed to 0; also
    the tiny negative rounding error, above −0.5 %, a reader's own attention function may leave).
    Nothing is adjusted to make a row's labels add up to 100: equal weights get equal labels, so a
    row of labels may add up to a little more or less than 100 (rounding_note says so).

    The rounding is of the weight's exact value (as decimal.Decimal(w) or fractions.Fraction(w) see it),
    not of 100·w in floating point, which can land on the wrong side of a half: 100 * 0.015 is 1.5
    in floats, but the float 0.015 is 0.01499999999999999944… (label 1), and 100 * 0.004999999999999999
    + 0.5 rounds up to 1.0 (label "<1"). Near a half, the sign of 100·w − (k ± ½) is found exactly:
    100·w = 64w + 32w + 4w, each product exact (powers of two), and math.fsum rounds their exact sum
    (with −(k ± ½), also exact) correctly, so the sign it gives is the true sign.
    """
    w = float(w)
    x = 100.0 * w
    k = math.floor(x + 0.5)  # half up; right unless x is within float error of a half
    if abs(x - math.floor(x) - 0.5) < 1e-9:
        terms = [64.0 * w, 32.0 * w, 4.0 * w]
        if math.fsum([*terms, -(k - 0.5)]) < 0:  # 100·w is below k − ½: one less
            k -= 1
        elif math.fsum([*terms, -(k + 0.5)]) >= 0:  # 100·w reaches k + ½: one more
            k += 1
    if k == 0:
        return "<1" if w > 0 else "0"
    return str(k).replace("-", "−")


def percent_labels(weights) -> list[str]:
    """percent_label of each weight of a row (or any vector), in order: each rounded on its own."""
    return [percent_label(w) for w in (weights.tolist() if hasattr(weights, "tolist") else weights)]


def rounding_note(numbers: str = "Numbers in the cells", whole: str = "a row") -> str:
    """What every picture printing percent_labels must say (plain text): they are rounded one by one, so
    `whole` (the labels of one row) may add up to a little more or less than 100."""
    # a no-break space: a narrow column never wraps "%" away from its number
    return (
        f"{numbers} are percentages, each rounded on its own (<1: above 0 but under 0.5\u00a0%), "
        f"so {whole} may not add up to exactly 100."
    )


ROUNDING_NOTE = rounding_note()


def rounding_paragraph(text: str = ROUNDING_NOTE) -> str:
    """A rounding note (default: a heatmap's) as HTML after, never inside, the .figure that scrolls sideways:
    it then wraps to the column, read on a 360 px phone without scrolling; a saved figure writes it too."""
    return f'<p class="rounding-note">{esc(text)}</p>'


_SUBSCRIPT_DIGITS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def subscript(n) -> str:
    """n's digits as Unicode subscripts, for plain text (x₆, μ₁); MathML uses <msub> instead."""
    return str(n).translate(_SUBSCRIPT_DIGITS)


def clip_label(text: str, width: int = 12) -> str:
    """Shorten a token for an axis label; the full token stays in the <title>."""
    return text if len(text) <= width else text[: width - 1] + "…"


def table_on_request(summary: str, table: str, *, key: str) -> str:
    """A long table of numbers that becomes part of the page only when a reader opens it.

    The table (markup already escaped by the caller) waits in an inert <template> inside a
    <details>: a 256-row table is ~1,500 elements that every layout, redraw and accessibility
    check would otherwise walk. The bridge moves the template's content into the page when the
    <details> opens; key (data-keep) keeps it open, and so filled, across redraws.
    """
    # a wide table scrolls sideways in its box, which the keyboard can then reach (focusable, named);
    # data-export-label="": a saved figure leaves the table out (export.js)
    return (
        f"<details{attr(class_='numbers-table', data_keep=key, data_export_label='')}><summary>{esc(summary)}</summary>"
        f"<template data-on-open><div{attr(class_='table-scroll', tabindex=0, role='group', aria_label=summary)}>"
        f"{table}</div></template></details>"
    )


def patch_op(sel: str, values, **kind) -> dict:
    """A patch operation (attention_matrix.render_patch describes them): values joined by "\n", or by
    "\x1f" (named in "sep") when one holds a newline (tooltips are several lines)."""
    values = [str(v) for v in values]
    sep = "\x1f" if any("\n" in v for v in values) else "\n"
    op = {"sel": sel, **kind, "values": sep.join(values)}
    if sep != "\n":
        op["sep"] = sep
    return op
