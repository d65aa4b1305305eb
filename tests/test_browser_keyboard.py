"""The keyboard never loses its place: after a redraw the focus stays on the control that caused it,
and arrow keys walk the stepper through every stage.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'


@pytest.fixture
def page(laptop):
    """The shared 1280×800 page; each test also fails on any page problem."""
    page, problems = laptop
    yield page
    problems.assert_none()


def focused(page) -> dict:
    return page.evaluate("""(() => { const el = document.activeElement;
        return { tag: el.localName, event: el.dataset.event || null, index: el.dataset.tokenIndex || null,
                 value: el.dataset.value || null, i: el.dataset.i || null, j: el.dataset.j || null,
                 current: el.getAttribute('aria-current') }; })()""")


def test_choosing_a_token_with_enter_keeps_the_focus_on_it(page):
    chip = page.locator('[data-panel="token-chips"] button[data-token-index="2"]')
    chip.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.query === '2'")
    page.wait_for_function("document.activeElement && document.activeElement.dataset.tokenIndex === '2'")
    assert focused(page)["event"] == "set_query"
    assert page.get_attribute('[data-panel="token-chips"] button[data-token-index="2"]', "aria-pressed") == "true"


def test_picking_a_heatmap_cell_with_enter_keeps_the_focus_on_that_cell(page):
    start = page.locator(f'{MATRIX} [data-grid-cell][tabindex="0"]')
    start.focus()
    page.keyboard.press("ArrowDown")
    cell = focused(page)
    page.keyboard.press("Enter")  # on a focused SVG cell the bridge treats Enter as a click
    page.wait_for_function(f"document.querySelector('{MATRIX}').dataset.query === '{cell['i']}'")
    page.wait_for_function(
        f"document.activeElement.dataset.i === '{cell['i']}' && document.activeElement.dataset.j === '{cell['j']}'"
    )


def test_arrow_keys_walk_the_stepper_through_all_six_stages(page):
    page.locator('.step[data-value="0"]').click()
    page.wait_for_selector('[data-stage-detail="0"]')
    page.focus('.step[data-value="0"]')
    for k in range(1, 6):
        page.keyboard.press("ArrowRight")
        page.wait_for_selector(f'[data-stage-detail="{k}"]')
        page.wait_for_function(
            f"document.activeElement.getAttribute('aria-current') === 'step'"
            f" && document.activeElement.dataset.value === '{k}'"
        )
    for k in range(4, -1, -1):
        page.keyboard.press("ArrowLeft")
        page.wait_for_selector(f'[data-stage-detail="{k}"]')
        page.wait_for_function(f"document.activeElement.dataset.value === '{k}'")


def _scrolled_by_hand(page, section_id: str):
    """Scroll as a reader does, with the mouse wheel, until the section's top is near the screen's top."""
    page.mouse.move(4, 400)  # the page's margin: no figure there to take the wheel for its own scrolling
    for _ in range(3):  # a wheel scroll may land a little short while panels above are drawn
        top = page.evaluate("id => document.getElementById(id).getBoundingClientRect().top", section_id)
        if abs(top) < 40:
            return
        page.mouse.wheel(0, top)
        _scrolling_stopped(page)


# In the page: resolves once scrollY has not changed for 10 frames in a row (a wheel scroll has settled).
STOPPED_JS = """() => new Promise((resolve) => {
  let last = -1, still = 0;
  const frame = () => { still = scrollY === last ? still + 1 : 0; last = scrollY;
                        if (still >= 10) resolve(true); else requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
})"""


def _scrolling_stopped(page):
    page.evaluate(STOPPED_JS)


def test_the_stepper_follows_the_readers_scrolling(page):
    for k, section in ((2, "stage-attention"), (4, "stage-layernorm"), (1, "stage-projections")):
        _scrolled_by_hand(page, section)
        page.wait_for_selector(f'.stepper .step[data-value="{k}"][aria-current="step"]')
        page.wait_for_selector(f'[data-stage-detail="{k}"]')
        assert page.locator('.stepper [aria-current="step"]').count() == 1


def _stage_at_reading_line(page) -> int:
    """Independently of the bridge: the last stage whose section's top is above a third of the screen."""
    tops = page.evaluate("""[...document.querySelectorAll('.stepper .step[aria-controls]')]
        .map((b) => document.getElementById(b.getAttribute('aria-controls')).getBoundingClientRect().top)""")
    line = page.evaluate("innerHeight / 3")
    return max(k for k, top in enumerate(tops) if top <= line)


def test_the_readers_scroll_cutting_the_pages_own_short_is_followed(page):
    """A wheel while the page scrolls to a chosen stage ends the page's scroll at once (a scrollend before
    the reader's scroll has moved anything), then the reader's scroll ends in a scrollend of its own: the
    stepper follows that one (it used to follow the first and then stay, wherever the reader went)."""
    _scrolled_by_hand(page, "stage-input")
    page.wait_for_selector('.stepper .step[data-value="0"][aria-current="step"]')
    start = page.evaluate("scrollY")
    page.locator('.step[data-value="2"]').click()  # a smooth scroll down to the attention section
    page.wait_for_function(f"scrollY > {start + 40}")  # under way
    page.mouse.move(4, 400)
    page.mouse.wheel(0, page.evaluate("document.getElementById('stage-layernorm').getBoundingClientRect().top"))
    _scrolling_stopped(page)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    want = _stage_at_reading_line(page)
    assert want != 0, "this test no longer moves the page away from the first stage"
    page.wait_for_selector(f'.stepper .step[data-value="{want}"][aria-current="step"]')


def test_choosing_a_stage_is_not_undone_by_the_scroll_it_starts(page):
    _scrolled_by_hand(page, "stage-input")
    page.wait_for_selector('.stepper .step[data-value="0"][aria-current="step"]')
    page.evaluate(
        "() => { window.scrollEnded = false;"
        " window.addEventListener('scrollend', () => { window.scrollEnded = true; }, { once: true }); }"
    )
    sent_before = page.evaluate("attentionExplorer.sent.length")
    page.locator('.step[data-value="3"]').click()  # a smooth scroll past stage 2's and 3's sections
    page.wait_for_function("window.scrollEnded")  # the page's own scroll has ended
    # the bridge decides on "scrollend" too: two frames on, its reaction (if any) has been sent
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    top = page.evaluate("document.getElementById('stage-multihead').getBoundingClientRect().top")
    assert -2 <= top <= 200, f"the chosen stage's section is brought to the top (top {top})"
    sent = page.evaluate("n => attentionExplorer.sent.slice(n)", sent_before)
    assert "set_stage:follow" not in sent, f"the stepper followed its own scroll: {sent}"
    page.wait_for_selector('[data-stage-detail="3"]')
    assert page.get_attribute('.stepper [aria-current="step"]', "data-value") == "3"


def test_a_scroll_the_reader_did_not_make_leaves_the_stepper_alone(page):
    """Scroll anchoring as panels appear above, or a script (a host page's, a test's): not the reader."""
    _scrolled_by_hand(page, "stage-input")
    page.wait_for_selector('.stepper .step[data-value="0"][aria-current="step"]')
    sent_before = page.evaluate("attentionExplorer.sent.length")
    page.evaluate("""() => new Promise((resolve) => {
        window.addEventListener('scrollend', () => requestAnimationFrame(() => requestAnimationFrame(resolve)),
                                { once: true });
        window.scrollTo({ top: scrollY + document.getElementById('stage-layernorm').getBoundingClientRect().top,
                          behavior: 'instant' }); })""")
    assert abs(page.evaluate("document.getElementById('stage-layernorm').getBoundingClientRect().top")) < 40
    sent = page.evaluate("n => attentionExplorer.sent.slice(n)", sent_before)
    assert "set_stage:follow" not in sent, f"the stepper followed a scroll the reader did not make: {sent}"
    assert page.get_attribute('.stepper [aria-current="step"]', "data-value") == "0"
    _scrolled_by_hand(page, "stage-attention")  # and the reader's own scroll from there is followed
    page.wait_for_selector('.stepper .step[data-value="2"][aria-current="step"]')


def _script_scroll(page, dy: int):
    """A scroll by a script (not the reader), waited out: its scrollend, then two frames for the bridge."""
    page.evaluate(
        """(dy) => new Promise((resolve) => {
        window.addEventListener('scrollend', () => requestAnimationFrame(() => requestAnimationFrame(resolve)),
                                { once: true });
        window.scrollBy({ top: dy, behavior: 'instant' }); })""",
        dy,
    )


def test_pressing_a_control_is_not_taken_for_the_reader_scrolling(page):
    """A click on a button while a scroll ends (the page's own, from a stage chosen just before) leaves the
    stepper alone; a press on the page itself (text, a scrollbar) may begin a scroll and counts."""
    _scrolled_by_hand(page, "stage-input")
    page.wait_for_selector('.stepper .step[data-value="0"][aria-current="step"]')
    top = page.evaluate("document.getElementById('stage-layernorm').getBoundingClientRect().top")
    _script_scroll(page, round(top))  # not followed (the test above): the stepper stays on the first stage
    sent_before = page.evaluate("attentionExplorer.sent.length")
    page.dispatch_event("#reset", "pointerdown")  # pressed, not clicked: the state stays as it is
    _script_scroll(page, 5)
    sent = page.evaluate("n => attentionExplorer.sent.slice(n)", sent_before)
    assert "set_stage:follow" not in sent, f"a press on a button was taken for scrolling: {sent}"
    assert page.get_attribute('.stepper [aria-current="step"]', "data-value") == "0"
    page.dispatch_event('[data-panel="layernorm"] p', "pointerdown")  # on text: the reader may be scrolling
    _script_scroll(page, 5)
    page.wait_for_selector('.stepper .step[data-value="4"][aria-current="step"]')


def test_a_press_while_the_page_scrolls_to_a_stage_is_never_moved_from_under_the_pointer(page):
    """The page finishes its own scroll to a chosen stage when panels drawn above moved the section (a
    correction jump once the scroll ends short). Not once the reader has pressed something: the jump
    between press and release took the control from under the pointer and the click was lost (seen on a
    phone-sized page, a stage chosen while the scroll to the one before still ran). Here the page's
    scroll is cut short by a script right after a press, and the page must stay where it was left."""
    _scrolled_by_hand(page, "stage-input")
    page.wait_for_selector('.stepper .step[data-value="0"][aria-current="step"]')
    start = page.evaluate("scrollY")
    page.locator('.step[data-value="5"]').click()  # a long smooth scroll to the FFN section
    page.wait_for_function(f"scrollY > {start + 40}")  # the page's own scroll is under way
    # where the page was left: the FFN section's top, scrollY, and what the reader sees: the first heading or
    # panel whose top is on screen (both stay in the page when Python redraws a panel: only their insides change)
    left_at = page.evaluate("""() => new Promise((resolve) => {
        document.getElementById('temperature').dispatchEvent(new PointerEvent('pointerdown', { bubbles: true }));
        window.scrollTo({ top: scrollY + 10, behavior: 'instant' });
        const marks = [...document.querySelectorAll('section[id^="stage-"] h2, [data-panel]')];
        const seen = marks.findIndex((m) => { const top = m.getBoundingClientRect().top;
                                              return top >= 0 && top < innerHeight; });
        window.seenMark = marks[seen];  // the element itself: found again below whatever the page adds
        const left = [document.getElementById('stage-ffn').getBoundingClientRect().top, scrollY, seen,
                      seen < 0 ? null : marks[seen].getBoundingClientRect().top];
        window.addEventListener('scrollend', () => requestAnimationFrame(() => requestAnimationFrame(
            () => resolve(left))), { once: true }); })""")
    _scrolling_stopped(page)
    ffn_top, scroll_y, seen, seen_top = left_at
    assert ffn_top > page.viewport_size["height"], "this test no longer cuts the page's scroll short"
    assert seen >= 0, "no heading or panel had its top on screen where the page was left"
    # What the reader sees stays put. Panels drawn above may change scrollY (scroll anchoring keeps the
    # content on screen where it is: on a busy machine by more than a screen, as panels the scroll passed
    # were drawn late); a jump moves the content, and brings the FFN up.
    now = page.evaluate("""() => { const mark = window.seenMark;
        return { ffnTop: document.getElementById('stage-ffn').getBoundingClientRect().top, scrollY,
                 top: mark.getBoundingClientRect().top, connected: mark.isConnected,
                 name: mark.dataset.panel || mark.textContent.trim().slice(0, 40) }; }""")
    assert now["connected"], f"{now['name']!r}, on screen where the page was left, is no longer in the page"
    assert abs(now["top"] - seen_top) < 100 and now["ffnTop"] > page.viewport_size["height"], (
        f"the page moved after the reader pressed a control: {now['name']!r}'s top {seen_top} -> {now['top']} px "
        f"(scrollY {scroll_y} -> {now['scrollY']}), the FFN section's top {ffn_top} -> {now['ffnTop']}"
    )
    assert page.get_attribute('.stepper [aria-current="step"]', "data-value") == "5"
