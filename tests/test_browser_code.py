"""Your own attention function, live (issue 12): edit, Run, errors that keep the last good view, an
endless loop stopped, and a link that carries code without running it.

Expected weights are computed here from the designed model's embedding and weights
(test_browser_panels.independent_scores), with the softmax written out.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attention_explorer import custom_attention, permalink, state as st
from attention_explorer.models import designed as model
from conftest import open_page, scroll_to, wait_ready
from test_browser_panels import MATRIX, independent_scores

pytestmark = pytest.mark.browser
NO_SCALING = next(e for e in custom_attention.EDITS if e.id == "no-scaling").source
MESSAGE = "#attention-code-message"


@pytest.fixture(scope="module")
def coded(profile, base_url):
    context, page, problems = open_page(profile, base_url, viewport={"width": 1280, "height": 900})
    wait_ready(page)
    yield page, problems
    context.close()


def set_code(page, text: str):
    """Put text in the editor the way the page's own controls do (#attention-code's value + input)."""
    page.evaluate(
        """t => { const el = document.getElementById('attention-code'); el.value = t;
        el.dispatchEvent(new Event('input')); }""",
        text,
    )


def matrix_custom(page) -> str | None:
    return page.get_attribute(MATRIX, "data-custom")


def heatmap(page) -> np.ndarray:
    cells = page.eval_on_selector_all(
        f"{MATRIX} rect[data-i]", "els => els.map(e => [+e.dataset.i, +e.dataset.j, +e.dataset.weight])"
    )
    n = int(math.isqrt(len(cells)))
    out = np.zeros((n, n))
    for i, j, w in cells:
        out[i, j] = w
    return out


def back_to_top(page):
    page.evaluate("window.scrollTo(0, 0)")  # the heatmap on screen: it is redrawn there


def test_an_edit_runs_on_every_head_and_the_heatmap_says_so(coded):
    page, problems = coded
    scroll_to(page, "code-card")
    page.wait_for_selector("#code-card .code-mirror .cm-content")  # CodeMirror came with the card
    assert page.is_hidden("#attention-code")
    page.select_option("#code-edit", "no-scaling")
    assert page.input_value("#attention-code") == NO_SCALING, "a ready-made edit goes into the editor"
    assert page.get_attribute('[data-view="code-status"]', "data-custom") == "false", "choosing an edit runs nothing"
    assert page.inner_text("#code-look-for")
    page.click("#run-code")
    page.wait_for_selector('[data-view="code-status"][data-custom="true"]')
    back_to_top(page)
    page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.custom === 'true'")
    scores = independent_scores(model.DEFAULT_TEXT, 0)
    want = np.exp(scores - scores.max(axis=1, keepdims=True))  # softmax(QKᵀ / T), T = 1: no √d_k
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(heatmap(page), want, atol=1e-9)
    assert "your attention function" in page.inner_text('[data-panel="head-info"]').lower()
    # Reset brings the page's own function back, in the editor too
    scroll_to(page, "code-card")
    page.click("#reset-code")
    page.wait_for_selector('[data-view="code-status"][data-custom="false"]')
    assert page.input_value("#attention-code") == custom_attention.SOURCE
    # Ctrl+Enter in the editor runs it
    page.click("#code-card .cm-content")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector('[data-view="code-status"][data-custom="true"]')
    page.click("#reset-code")
    page.wait_for_selector('[data-view="code-status"][data-custom="false"]')
    problems.assert_none()


# NumPy's parts the page's start-up never loads (numpy_install leaves each extension module to load
# when first imported; lazy_linalg stands in for LAPACK's until first used): random, fft, lapack_lite
# and np.linalg.solve, used so that the weights stay exactly checkable (solving with I gives b back)
LAZY_PARTS = NO_SCALING.replace(
    "import numpy as np\n",
    """import numpy as np
import numpy.linalg.lapack_lite

rng = np.random.default_rng(0)
""",
).replace(
    "    scores = q @ k.T",
    "    scores = np.linalg.solve(np.eye(len(q)), np.fft.ifft(np.fft.fft(q @ k.T, axis=-1), axis=-1).real)"
    " + 0 * rng.random()",
)


def test_a_function_may_use_the_parts_of_numpy_the_page_never_loads(coded):
    """numpy.random, numpy.fft and numpy.linalg.lapack_lite are unpacked with NumPy but loaded only when a
    reader's function imports them, LAPACK's gufuncs when first called; they work, and the weights are
    those of QKᵀ (the FFT round trip, then a system solved with the identity)."""
    page, problems = coded
    assert "rng.random()" in LAZY_PARTS and "np.fft.ifft" in LAZY_PARTS and "np.linalg.solve" in LAZY_PARTS
    scroll_to(page, "code-card")
    set_code(page, LAZY_PARTS)
    page.click("#run-code")
    # it runs, or the message says why not (a part missing: "No module named 'numpy.random...'")
    page.wait_for_function(f"""document.querySelector('[data-view="code-status"]').dataset.custom === 'true'
                               || document.querySelector('{MESSAGE}').textContent.trim() !== ''""")
    assert not page.inner_text(MESSAGE).strip(), page.inner_text(MESSAGE)
    back_to_top(page)
    page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.custom === 'true'")
    scores = independent_scores(model.DEFAULT_TEXT, 0)
    want = np.exp(scores - scores.max(axis=1, keepdims=True))  # softmax(QKᵀ / T), T = 1, as no-scaling
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(heatmap(page), want, atol=1e-9)
    scroll_to(page, "code-card")
    page.click("#reset-code")
    page.wait_for_selector('[data-view="code-status"][data-custom="false"]')
    problems.assert_none()


def test_errors_say_what_is_wrong_and_keep_the_last_good_view(coded):
    page, problems = coded
    scroll_to(page, "code-card")
    set_code(page, NO_SCALING)
    page.click("#run-code")
    page.wait_for_selector('[data-view="code-status"][data-custom="true"]')
    broken = NO_SCALING.replace("return z, weights", "return z, weights +")
    set_code(page, broken)
    page.click("#run-code")
    page.wait_for_function(f"document.querySelector('{MESSAGE}').textContent.includes('line')")
    line = broken.splitlines().index(next(l for l in broken.splitlines() if "return z, weights +" in l)) + 1
    assert f"line {line}" in page.inner_text(MESSAGE)
    nan = NO_SCALING.replace("return z, weights", "return z, weights * np.nan")
    set_code(page, nan)
    page.click("#run-code")
    page.wait_for_function(f"document.querySelector('{MESSAGE}').textContent.includes('NaN')")
    assert page.get_attribute('[data-view="code-status"]', "data-custom") == "true", "the last good function stays"
    assert st.State().text  # the page is still live: another head draws with the last good function
    back_to_top(page)
    page.select_option("#head", "2")
    page.wait_for_function(
        f"document.querySelector('{MATRIX}').dataset.head === '2' "
        f"&& document.querySelector('{MATRIX}').dataset.custom === 'true'"
    )
    problems.assert_none()


def test_an_endless_loop_is_stopped_and_the_page_comes_back(coded):
    page, problems = coded
    scroll_to(page, "code-card")
    loop = custom_attention.SOURCE.replace(
        "    return z, weights", "    while True:\n        pass\n    return z, weights"
    )
    set_code(page, loop)
    page.click("#run-code")
    page.wait_for_function(f"document.querySelector('{MESSAGE}').textContent.includes('more than 2 s')", timeout=10_000)
    wait_ready(page)  # a new worker, started with the last good state
    # and the last good function run again in it: the message saying why Python restarted stays
    page.wait_for_function("window.attentionExplorer.idle()")
    assert "more than 2 s" in page.inner_text(MESSAGE)
    back_to_top(page)
    page.select_option("#head", "1")
    page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.head === '1'")
    # the function that ran before the loop (test above: no scaling) is in use again
    page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.custom === 'true'")
    scroll_to(page, "code-card")
    page.click("#reset-code")
    page.wait_for_selector('[data-view="code-status"][data-custom="false"]')
    problems.assert_none()


def test_a_function_that_hangs_on_a_later_change_is_switched_off(coded):
    """Fast at T = 1, endless above T = 2: the slider's change is stopped after 2 s, and Python comes
    back with the page's own function (running the hanging one again would hang again)."""
    page, problems = coded
    scroll_to(page, "code-card")
    trap = custom_attention.SOURCE.replace(
        "    return z, weights", "    while temperature > 2:\n        pass\n    return z, weights"
    )
    set_code(page, trap)
    page.click("#run-code")
    page.wait_for_selector('[data-view="code-status"][data-custom="true"]')
    back_to_top(page)
    page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.custom === 'true'")
    page.eval_on_selector(
        "#temperature", "el => { el.value = '3'; el.dispatchEvent(new Event('input', {bubbles: true})); }"
    )
    page.wait_for_function(f"document.querySelector('{MESSAGE}').textContent.includes('page\\'s own')", timeout=10_000)
    wait_ready(page)
    page.wait_for_function(f"!document.querySelector('{MATRIX}').dataset.custom")
    problems.assert_none()


def test_a_link_with_code_shows_it_and_runs_nothing(profile, base_url):
    code = NO_SCALING.replace("# ", "# from a link: ")
    fragment = permalink.encode(st.apply_event(st.State(), {"type": "run_code", "value": code}))
    context, page, problems = open_page(profile, base_url + "#" + fragment, viewport={"width": 1280, "height": 900})
    try:
        wait_ready(page)
        assert page.input_value("#attention-code") == code
        assert matrix_custom(page) is None, "a link never runs code"
        assert "was not run" in page.inner_text("#link-notice")
        scroll_to(page, "code-card")
        page.wait_for_selector('[data-view="code-status"][data-custom="false"]')
        assert "has not been run" in page.inner_text('[data-view="code-status"]')
        problems.assert_none()
    finally:
        context.close()
