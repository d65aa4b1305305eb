"""No `:has()` in our style sheets that makes WebKit restyle the whole page on every change.

WebKit (Safari, every browser on an iPhone) can limit which DOM changes re-check a `:has()` rule only by
what the argument's last compound selector names: a tag, classes, ids, attributes. When it names
none of them (`:has(* > *)`, `:has(> *)`, `:has(:hover)`), any change anywhere, a number in the heatmap
or the temperature's <output>, restyles and lays out the whole page: measured in WebKitGTK 2.50, a
`.card-notes:not(:has(* > *))` rule made each slider move's frame 40-65 ms late (issue 36,
docs/performance.md). Chromium and Firefox did not show it, so only this check would see it come back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# our own sheets and the ones built into pages; vendor code (CodeMirror) is not ours to restyle
SHEETS = sorted(p for p in (ROOT / "site").rglob("*.css") if "vendor" not in p.parts)
# what keys a compound: a tag name, .class, #id or [attribute]
KEYED = re.compile(r"^[a-zA-Z][\w-]*|[.#][\w-]|\[")


def has_arguments(css: str) -> list[str]:
    """Every `:has(...)` argument in css, its parentheses balanced (comments removed first)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out = []
    for m in re.finditer(r":has\(", css):
        depth, i = 1, m.end()
        while depth and i < len(css):
            depth += {"(": 1, ")": -1}.get(css[i], 0)
            i += 1
        out.append(css[m.end() : i - 1])
    return out


def last_compounds(argument: str) -> list[str]:
    """The last compound selector of each comma-separated selector in a `:has()` argument:
    "* > *" -> ["*"], "#a, .b li" -> ["#a", "li"], "> template[x]" -> ["template[x]"]."""
    parts, depth, cur = [], 0, ""
    for ch in argument:  # split at top-level commas only (":is(a, b)" stays whole)
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for sel in parts:
        # drop what is inside parentheses, so that the combinators found are the top level's
        flat = re.sub(r"\([^()]*\)", "()", re.sub(r"\([^()]*\)", "()", sel))
        out.append(re.split(r"\s*[>+~]\s*|\s+", flat.strip())[-1])
    return out


def unkeyed(css: str) -> list[str]:
    """The `:has()` arguments in css with a last compound WebKit cannot key its invalidation on."""
    return [a for a in has_arguments(css) if any(not KEYED.search(c.lstrip("*")) for c in last_compounds(a))]


def test_the_check_sees_the_rule_that_was_slow_and_passes_keyed_ones():
    assert unkeyed(".card-notes:not(:has(* > *)) { display: none; }") == ["* > *"]
    assert unkeyed("a:has(> *) {} b:has(:hover) {} c:has(.x, *) {}") == ["> *", ":hover", ".x, *"]
    assert (
        unkeyed(
            "[data-panel]:has(> template[data-prerendered])::before {} .steps li:has(.is-current) {}"
            " .field:not(:has(#temperature, #dk-scale)) {} x:has(> li:is(.a, .b)) {} /* :has(*) */"
        )
        == []
    )


@pytest.mark.parametrize("sheet", SHEETS, ids=lambda p: str(p.relative_to(ROOT / "site")))
def test_every_has_names_what_it_looks_for(sheet):
    bad = unkeyed(sheet.read_text(encoding="utf-8"))
    assert not bad, (
        f"{sheet.relative_to(ROOT)}: :has() ending in a selector with no tag, class, id or attribute: "
        f"{bad}; WebKit restyles the whole page on every DOM change for it (see this module's docstring)"
    )


def test_the_sheets_were_found():
    assert (ROOT / "site" / "style.css") in SHEETS and len(SHEETS) > 5
