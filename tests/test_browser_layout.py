"""The first screen is the workspace: input, settings and the heatmap, on a laptop and on a phone.

Positions are layout facts (not timings): at 1280×800 the heatmap starts on the first screen, at
360×740 within two screens; the page never scrolls sideways; the sticky stepper stays small.
"""
from __future__ import annotations

import pytest

from conftest import open_page, wait_ready

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'


def _layout(page) -> dict:
    return page.evaluate(f"""(() => {{
        const m = document.querySelector('{MATRIX}').getBoundingClientRect();
        const bar = document.querySelector('.stepper-bar').getBoundingClientRect();
        return {{ matrixTop: m.top + scrollY, pageWidth: document.documentElement.scrollWidth,
                 barHeight: bar.height, h1: document.querySelector('h1').textContent }}; }})()""")


@pytest.mark.parametrize("width,height,max_top", [(1280, 800, 680), (360, 740, 2 * 740)])
def test_the_heatmap_is_on_the_first_screen(browser, base_url, width, height, max_top):
    context, page, problems = open_page(browser, base_url, viewport={"width": width, "height": height})
    try:
        wait_ready(page)
        got = _layout(page)
        assert got["matrixTop"] <= max_top, f"the heatmap starts {got['matrixTop']:.0f} px down at {width}×{height}"
        assert got["pageWidth"] <= width, f"the page scrolls sideways: {got['pageWidth']} px wide at {width}"
        assert got["barHeight"] <= 0.15 * height, f"the sticky stepper takes {got['barHeight']:.0f} px"
        assert got["h1"] == "How Transformers Work: Interactive Self-Attention & Architecture Explorer"
        problems.assert_none()
    finally:
        context.close()


def test_a_figure_that_scrolls_sideways_says_so(browser, base_url):
    context, page, problems = open_page(browser, base_url, viewport={"width": 360, "height": 740})
    try:
        wait_ready(page)
        scrolls = page.evaluate("(() => { const f = document.querySelector('[data-panel=\"attention-matrix\"]');"
                                " return [f.scrollWidth > f.clientWidth + 1, f.classList.contains('is-scrollable')]; })()")
        assert scrolls[0] == scrolls[1], "a heatmap wider than the screen is marked (and shows a cue), else not"
        problems.assert_none()
    finally:
        context.close()
