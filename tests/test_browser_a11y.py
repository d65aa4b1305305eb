"""Accessibility, checked by axe-core (pinned, verified) on the real page: any violation of any impact fails.

At 360 and 1280 px wide, light and dark: when Python is ready, after each kind of
interaction that redraws the page (a new sentence, another head, another stage), and with
the trained model chosen; the research views with pinned queries, a head switched off and a
sentence pair, for both models.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import axe_violations, open_page, scroll_to, unfold_all, wait_ready

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'


def _looks(page, when: str, combos, context: str = "document"):
    """Check the page as it is now at each (width, colour scheme): layout and colours change, the
    markup does not (the same DOM, restyled), so one page load serves every combination. The two
    schemes differ in colours only (style.css sets colour properties for dark and nothing else), so at a
    width already checked in this state the other scheme is checked by axe's colour rules."""
    widths = set()
    for width, scheme in combos:
        page.set_viewport_size({"width": width, "height": 9000})
        page.emulate_media(color_scheme=scheme)
        found = axe_violations(page, context, colours_only=width in widths)
        widths.add(width)
        assert not found, f"axe-core found violations {when} at {width} px, {scheme}:\n" + "\n".join(found)


# What a dark-scheme block may set: colours (custom properties holding one, colour properties); nothing
# that moves a box.
COLOUR_ONLY = re.compile(
    r"--[a-z-]+:\s*(#[0-9a-f]{6}|rgba\([\d., ]+\))"
    r"|(color|background|background-color|border(-[a-z]+)?-color):\s*(#[0-9a-f]{3,6}|var\(--[a-z-]+\))"
)


def _dark_blocks(css: str) -> list[str]:
    """The text inside each `@media screen and (prefers-color-scheme: dark) { ... }` (nested braces
    included; screen only: a printout is light)."""
    blocks, start = [], 0
    while (at := css.find("@media screen and (prefers-color-scheme: dark)", start)) >= 0:
        depth, k = 0, css.index("{", at)
        for k in range(k, len(css)):
            depth += {"{": 1, "}": -1}.get(css[k], 0)
            if depth == 0:
                break
        blocks.append(css[css.index("{", at) + 1 : k])
        start = k
    return blocks


def test_the_dark_scheme_changes_colours_only():
    """What _looks relies on: the dark scheme's blocks (style.css and site/css/) set colours and nothing
    else (a layout rule added there would need every axe rule in both schemes again)."""
    site = Path(__file__).resolve().parents[1] / "site"
    declarations = []
    for path in (site / "style.css", *sorted((site / "css").glob("*.css"))):
        css = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8"), flags=re.S)
        blocks = _dark_blocks(css)
        assert css.count("prefers-color-scheme") == len(blocks), f"{path.name}: a dark block written otherwise"
        declarations += [
            (path.name, d.strip())
            for block in blocks
            for rule in re.findall(r"\{([^{}]*)\}", block)
            for d in rule.split(";")
            if d.strip()
        ]
    assert len(declarations) > 10
    others = [x for x in declarations if not COLOUR_ONLY.fullmatch(x[1])]
    assert not others, f"dark-scheme rules that are not colours: {others}"


RESEARCH = ("head-grid", "aggregates", "ablation", "pair")


def _research(page, fragment: str, model: str, when: str):
    """Pinned queries, a head switched off and a sentence pair, from a link; the research section's
    panels drawn live (they are drawn when they near the screen) and checked."""
    page.evaluate("h => { location.hash = h; }", fragment)
    page.wait_for_function("!!document.querySelector('[data-panel=\"token-chips\"] .is-pinned')")
    scroll_to(page, "research")
    page.wait_for_selector('[data-view="pair"][data-state="shown"]')
    for pid in RESEARCH:  # live markup for this model (not the pre-rendered designed one)
        page.wait_for_selector(f'[data-panel="{pid}"] > :not(template)')
    page.wait_for_selector(f'[data-view="head-grid"][data-layers="{6 if model == "minilm" else 1}"]')
    page.wait_for_selector('[data-view="ablation"] button[aria-pressed="true"]')
    _looks(page, when, [(1280, "light"), (360, "dark")], "document.getElementById('research')")


ALL = [(1280, "light"), (1280, "dark"), (360, "light"), (360, "dark")]


def test_no_axe_violations_at_ready_and_after_interactions(profile, base_url):
    # a tall window: every panel is drawn (the page defers panels far off screen)
    context, page, problems = open_page(profile, base_url, viewport={"width": 1280, "height": 9000})
    try:
        wait_ready(page)
        _looks(page, "at ready", ALL)
        unfold_all(page)  # every folded part open: each panel is checked
        _looks(page, "with every folded part open", [(1280, "light")])
        page.fill("#tokens", "The dogs chased the cat because they were hungry")
        page.wait_for_function(f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).includes('dogs')")
        _looks(page, "after a new sentence", [(360, "dark")])
        page.select_option("#head", "1")
        page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.head === '1'")
        _looks(page, "after choosing another head", [(360, "light")])
        page.click('.step[data-value="3"]')
        page.wait_for_selector('[data-stage-detail="3"]')
        for folded in ('[data-block="ln1"] details.numbers-table', '[data-panel="embedding"] details.numbers-table'):
            page.click(f"{folded} > summary")  # a table of numbers that joins the page on request
            page.wait_for_selector(f"{folded} table")
        _looks(page, "after choosing another stage and opening two tables of numbers", [(1280, "dark"), (360, "light")])
        # closed again: open, they keep ~9,000 px of the page above the research views until those panels
        # are redrawn for another model, and the views below would jump out of the window meanwhile
        page.evaluate(
            "() => { for (const d of document.querySelectorAll('details.numbers-table[open]')) d.open = false; }"
        )
        _research(
            page,
            "p=1_3&ab=0&s2=The+dog+chased+the+cat+because+it+was+small",
            "designed",
            "in the research views (pinned queries, a head off, a sentence pair)",
        )
        # your own attention function: the CodeMirror editor (loaded as it comes near), run
        scroll_to(page, "code-card")
        page.wait_for_selector("#code-card .code-mirror .cm-content")
        page.click("#run-code")
        page.wait_for_selector('[data-view="code-status"][data-custom="true"]')
        _looks(
            page,
            "with the code editor and your attention function in use",
            [(1280, "light"), (360, "dark")],
            "document.getElementById('your-attention')",
        )
        # the trained model: its download, then every panel drawn for it (word pieces, 12 heads, ...)
        page.evaluate("window.scrollTo(0, 0)")  # the heatmap on screen again, so that it is redrawn
        page.select_option("#model", "minilm")
        page.wait_for_selector(f'{MATRIX}[data-model="minilm"]', timeout=120_000)
        _looks(page, "with the trained model", [(1280, "light"), (360, "dark")])
        page.hover(f'{MATRIX} rect[data-i="1"][data-j="2"]')  # a cell's derivation, fetched from Python
        page.wait_for_selector("#tooltip:not([hidden])")
        # the page around it was checked in this state just above: the tooltip itself, over the page
        _looks(page, "with a tooltip shown", [(1280, "light")], "document.getElementById('tooltip')")
        _research(
            page,
            "m=minilm&l=3&p=2&ab=5_40&s2=The+cat+sat+on+the+mat.",
            "minilm",
            "in the research views of the trained model",
        )
        problems.assert_none()
    finally:
        context.close()
