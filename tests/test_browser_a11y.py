"""Accessibility, checked by axe-core (pinned, verified) on the real page: any violation of any impact fails.

At 360 and 1280 px wide, light and dark: when Python is ready, and after each kind of
interaction that redraws the page (a new sentence, another head, another stage).
"""
from __future__ import annotations

import pytest

from conftest import axe_violations, open_page, wait_ready

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'


def _check(page, when: str):
    found = axe_violations(page)
    assert not found, f"axe-core found violations {when}:\n" + "\n".join(found)


@pytest.mark.parametrize("width,scheme", [(1280, "light"), (1280, "dark"), (360, "light"), (360, "dark")])
def test_no_axe_violations_at_ready_and_after_interactions(browser, base_url, width, scheme):
    # a tall window: every panel is drawn (the page defers panels far off screen)
    context, page, problems = open_page(browser, base_url, viewport={"width": width, "height": 9000},
                                        color_scheme=scheme)
    try:
        wait_ready(page)
        _check(page, "at ready")
        page.fill("#tokens", "The dogs chased the cat because they were hungry")
        page.wait_for_function(f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).includes('dogs')")
        _check(page, "after a new sentence")
        page.select_option("#head", "1")
        page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.head === '1'")
        _check(page, "after choosing another head")
        page.click('.step[data-value="3"]')
        page.wait_for_selector('[data-stage-detail="3"]')
        _check(page, "after choosing another stage")
        problems.assert_none()
    finally:
        context.close()
