"""Accessibility, checked by axe-core (pinned, verified) on the real page: any violation of any impact fails.

At 360 and 1280 px wide, light and dark: when Python is ready, after each kind of
interaction that redraws the page (a new sentence, another head, another stage), and with
the trained model chosen.
"""
from __future__ import annotations

import pytest

from conftest import axe_violations, open_page, wait_ready

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'


def _check(page, when: str):
    found = axe_violations(page)
    assert not found, f"axe-core found violations {when}:\n" + "\n".join(found)


def _looks(page, when: str, combos):
    """Check the page as it is now at each (width, colour scheme): layout and colours change, the
    markup does not (the same DOM, restyled), so one page load serves every combination."""
    for width, scheme in combos:
        page.set_viewport_size({"width": width, "height": 9000})
        page.emulate_media(color_scheme=scheme)
        _check(page, f"{when} at {width} px, {scheme}")


ALL = [(1280, "light"), (1280, "dark"), (360, "light"), (360, "dark")]


def test_no_axe_violations_at_ready_and_after_interactions(browser, base_url):
    # a tall window: every panel is drawn (the page defers panels far off screen)
    context, page, problems = open_page(browser, base_url, viewport={"width": 1280, "height": 9000})
    try:
        wait_ready(page)
        _looks(page, "at ready", ALL)
        page.fill("#tokens", "The dogs chased the cat because they were hungry")
        page.wait_for_function(f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).includes('dogs')")
        _looks(page, "after a new sentence", [(360, "dark")])
        page.select_option("#head", "1")
        page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.head === '1'")
        _looks(page, "after choosing another head", [(360, "light")])
        page.click('.step[data-value="3"]')
        page.wait_for_selector('[data-stage-detail="3"]')
        _looks(page, "after choosing another stage", ALL)
        # the trained model: its download, then every panel drawn for it (word pieces, 12 heads, ...)
        page.select_option("#model", "minilm")
        page.wait_for_selector(f'{MATRIX}[data-model="minilm"]', timeout=120_000)
        _looks(page, "with the trained model", ALL)
        page.hover(f'{MATRIX} rect[data-i="1"][data-j="2"]')  # a cell's derivation, fetched from Python
        page.wait_for_selector("#tooltip:not([hidden])")
        _looks(page, "with a tooltip shown", [(1280, "light")])
        problems.assert_none()
    finally:
        context.close()
