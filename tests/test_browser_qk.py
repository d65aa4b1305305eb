"""The Q·K breakdown live: hovering, focusing or clicking a cell or bar chooses the key it takes apart.

Expected scores are computed here from the model's embedding and weights (test_browser_panels'
independent_scores), never read from the views.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attention_explorer.models import designed as model
from test_browser_panels import MATRIX, independent_scores
from test_browser_skeleton import independent_weights, set_range

pytestmark = pytest.mark.browser
QK = '[data-view="qk-dot"]'


def qk_state(page) -> dict:
    return page.evaluate(f"""(() => {{ const el = document.querySelector('{QK}');
        return {{ i: +el.dataset.i, j: +el.dataset.j, auto: el.dataset.auto, score: +el.dataset.score,
                 terms: [...el.querySelectorAll('[data-term]')].map((t) => +t.dataset.value) }}; }})()""")


def wait_key(page, i: int, j: int):
    page.wait_for_function(f"""(() => {{ const el = document.querySelector('{QK}');
        return el && el.dataset.i === '{i}' && el.dataset.j === '{j}'; }})()""")


def check_breakdown(page, i: int, j: int, head: int = 0):
    got = qk_state(page)
    want = independent_scores(model.DEFAULT_TEXT, head)[i, j]
    assert got["score"] == pytest.approx(want, abs=1e-6)
    assert sum(got["terms"]) == pytest.approx(got["score"], rel=1e-9, abs=1e-9), "terms add up to the score"


def test_the_breakdown_opens_on_the_querys_strongest_key(fresh):
    i = model.DEFAULT_QUERY
    j = int(np.argmax(independent_scores(model.DEFAULT_TEXT, 0)[i]))  # no mask: the largest score wins
    wait_key(fresh, i, j)
    assert qk_state(fresh)["auto"] == "true"
    check_breakdown(fresh, i, j)
    why = fresh.inner_text('[data-view="query-why"]')
    tokens = json.loads(fresh.get_attribute(MATRIX, "data-tokens"))
    assert f"“{tokens[j]}”" in why and "Coreference" in why


def test_hovering_the_query_row_chooses_the_key(fresh):
    i = model.DEFAULT_QUERY
    for j in (0, 3):
        fresh.hover(f'{MATRIX} rect[data-i="{i}"][data-j="{j}"]')
        wait_key(fresh, i, j)
        assert qk_state(fresh)["auto"] == "false"
        check_breakdown(fresh, i, j)


def test_hovering_an_affinity_bar_chooses_the_key(fresh):
    i = model.DEFAULT_QUERY
    fresh.hover('[data-view="affinity"] g.bar[data-measure="weight"][data-j="2"]')
    wait_key(fresh, i, 2)
    check_breakdown(fresh, i, 2)


def test_clicking_a_cell_chooses_query_and_key(fresh):
    fresh.click(f'{MATRIX} rect[data-i="2"][data-j="1"]')
    fresh.wait_for_function(f"document.querySelector('{MATRIX}').dataset.query === '2'")
    wait_key(fresh, 2, 1)
    check_breakdown(fresh, 2, 1)


def test_arrow_keys_in_the_query_row_move_the_key(fresh):
    i = model.DEFAULT_QUERY
    start = fresh.locator(f'{MATRIX} [data-grid-cell][tabindex="0"]')
    start.focus()
    j = int(start.get_attribute("data-j"))
    wait_key(fresh, i, j)
    fresh.keyboard.press("ArrowLeft" if j > 0 else "ArrowRight")
    j2 = j - 1 if j > 0 else j + 1
    wait_key(fresh, i, j2)
    check_breakdown(fresh, i, j2)


def test_the_heatmap_lists_its_special_tokens(fresh):
    special = json.loads(fresh.get_attribute(MATRIX, "data-special"))
    tokens = json.loads(fresh.get_attribute(MATRIX, "data-tokens"))
    assert isinstance(special, list) and all(0 <= k < len(tokens) for k in special)
    marked = fresh.evaluate(
        f"[...document.querySelectorAll('{MATRIX} .row-label')]"
        ".map((el, k) => el.classList.contains('is-special') ? k : -1).filter((k) => k >= 0)"
    )
    assert marked == special


def test_a_live_affinity_bar_gets_its_derivation_from_python(fresh):
    """Drawn live (and then patched by a slider), the bars leave their derivations to the worker: hovering
    one shows A[query, j] with the weight at the new temperature, derived here independently."""
    i, j = model.DEFAULT_QUERY, 2
    bar = f'[data-view="affinity"] g.bar[data-measure="weight"][data-j="{j}"]'
    fresh.locator(bar).scroll_into_view_if_needed()
    for t in (0.5, 2.0):  # the first move redraws the panel live, the second patches it
        set_range(fresh, "#temperature", t)
        want = float(independent_weights(model.DEFAULT_TEXT, 0, t, float(model.CONFIG.d_head) ** 0.5)[i, j])
        fresh.wait_for_function(f"""(() => {{ const b = document.querySelector('{bar}');
            return b && b.hasAttribute('data-tip-src') && Math.abs(+b.dataset.weight - {want!r}) < 1e-9; }})()""")
    fresh.hover(bar)
    fresh.wait_for_selector("#tooltip:not([hidden])")
    text = fresh.inner_text("#tooltip")
    assert text.startswith(f"A[{i},{j}]: query"), text
    assert f"= {100 * want:.1f} %" in text, f"the tip derives the weight at T = 2: {text}"
