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
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#x27;"))


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


def row_percents(weights) -> list[int]:
    """Whole percentages for one softmax row that add up to exactly 100 (largest remainder).

    Rounding each weight alone can make a row read 99 % or 102 %; here the floors are
    topped up, one point each, by the largest remainders. A row of zeros (fully masked)
    stays all 0.
    """
    raw = [100.0 * float(w) for w in weights]
    total = round(sum(raw))
    floors = [int(math.floor(r)) for r in raw]
    short = total - sum(floors)
    for k in sorted(range(len(raw)), key=lambda k: floors[k] - raw[k])[:max(0, short)]:
        floors[k] += 1
    return floors


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
    return (f'<details{attr(class_="numbers-table", data_keep=key, data_export_label="")}><summary>{esc(summary)}</summary>'
            f'<template data-on-open><div{attr(class_="table-scroll", tabindex=0, role="group", aria_label=summary)}>'
            f'{table}</div></template></details>')


def patch_op(sel: str, values, **kind) -> dict:
    """A patch operation (attention_matrix.render_patch describes them): values joined by "\n", or by
    "\x1f" (named in "sep") when one holds a newline (tooltips are several lines)."""
    values = [str(v) for v in values]
    sep = "\x1f" if any("\n" in v for v in values) else "\n"
    op = {"sel": sel, **kind, "values": sep.join(values)}
    if sep != "\n":
        op["sep"] = sep
    return op
