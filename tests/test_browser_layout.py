"""The first screen is the workspace: input, settings and the heatmap, on a laptop and on a phone; panels
below it are drawn as the reader scrolls to them.

Positions are layout facts (not timings): at 1280×800 the heatmap starts on the first screen, at
360×740 within two screens; the page never scrolls sideways; the sticky stepper stays small. The phone
page is a load of its own, so it is a first visit at that width, served from the sub-path like every page.
"""

from __future__ import annotations

import pytest

from attention_explorer.models import designed as model
from conftest import LAPTOP, SUBPATH, PageProblems, cut_choices, ready_page, unfold_all, wait_ready
from test_browser_panels import independent_scores
from test_browser_skeleton import set_range, wait_matrix

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'
PHONE = {"width": 360, "height": 740}


@pytest.fixture(scope="module")
def phone(profile, base_url):
    """A page loaded at 360×740 and ready: (page, problems)."""
    yield from ready_page(profile, base_url, PHONE)


def _layout(page) -> dict:
    return page.evaluate(f"""(() => {{
        const m = document.querySelector('{MATRIX}').getBoundingClientRect();
        const bar = document.querySelector('.stepper-bar').getBoundingClientRect();
        return {{ matrixTop: m.top + scrollY, pageWidth: document.documentElement.scrollWidth,
                 barHeight: bar.height, h1: document.querySelector('h1').textContent }}; }})()""")


@pytest.mark.parametrize("window,max_top", [("laptop", 680), ("phone", 2 * PHONE["height"])])
def test_the_heatmap_is_on_the_first_screen(request, window, max_top):
    page, problems = request.getfixturevalue(window)
    width, height = page.viewport_size["width"], page.viewport_size["height"]
    got = _layout(page)
    assert got["matrixTop"] <= max_top, f"the heatmap starts {got['matrixTop']:.0f} px down at {width}×{height}"
    assert got["pageWidth"] <= width, f"the page scrolls sideways: {got['pageWidth']} px wide at {width}"
    assert got["barHeight"] <= 0.15 * height, f"the sticky stepper takes {got['barHeight']:.0f} px"
    assert got["h1"] == "How Transformers Work: Interactive Self-Attention & Architecture Explorer"
    problems.assert_none()


@pytest.mark.parametrize("window", ["laptop", "phone"])
def test_the_status_line_keeps_its_height_from_loading_to_ready(request, window):
    """Its text changes a few dozen times on the way to ready (megabytes counting, each step's name), and
    at ready its bar goes: a change of height would move the whole page under the reader (Lighthouse
    counted it as layout shift).
    Its height is measured by the page's status log (conftest) at every change the bridge makes (the log's
    first entry, from the end of parsing, may come before the stylesheet applies: nothing is painted then)."""
    page, problems = request.getfixturevalue(window)
    log = page.evaluate("window.__statusLog")
    loading = [(text, height) for text, _, _, height in log[1:]]
    assert len(loading) >= 5 and any(text.startswith("Downloading Python:") for text, _ in loading), log
    assert loading[-1][0].startswith("Python is running"), log
    heights = {round(height, 1) for _, height in loading}
    assert len(heights) == 1, f"the status line changed height while loading at {window} width: {loading}"
    problems.assert_none()


def test_a_figure_that_scrolls_sideways_says_so(phone):
    """On a phone the heatmap is marked when (and only when) it is wider than the screen, and then says,
    above itself, that it scrolls sideways: where a reader looking at its cut-off right edge reads it first.
    The note that its numbers are rounded is not in what scrolls: it wraps to the screen, read whole."""
    page, problems = phone
    look = """(() => { const f = document.querySelector('[data-panel="attention-matrix"] .figure');
        return [f.scrollWidth > f.clientWidth + 1, f.classList.contains('is-scrollable'),
                getComputedStyle(f, '::before').content]; })()"""
    # the rounding note: [its box's left and right, in a box that scrolls sideways, cut off inside itself]
    note = """(() => { const p = document.querySelector('[data-panel="attention-matrix"] p.rounding-note');
        if (!p) return null;
        const r = p.getBoundingClientRect();
        let scrolls = false;
        for (let e = p.parentElement; e; e = e.parentElement)
            scrolls ||= ['auto', 'scroll'].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1;
        return [r.left, r.right, scrolls, p.scrollWidth > p.clientWidth + 1, p.textContent]; })()"""
    long = "The old man who lived by the sea told the children a story about the storm that broke the pier"
    for text in (model.DEFAULT_TEXT, long):
        page.fill("#tokens", text)
        page.wait_for_function(
            f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).length === {len(text.split()) + 1}"
        )
        wide, marked, cue = page.evaluate(look)
        assert wide == marked, f"{len(text.split())} words: wider than the screen {wide}, marked {marked}"
        assert ("Scroll sideways" in cue) == wide, cue
        if text == model.DEFAULT_TEXT:  # its cells print numbers, so the note is there
            left, right, scrolls, cut, words = page.evaluate(note)
            assert "rounded on its own" in words
            assert 0 <= left and right <= PHONE["width"] and not scrolls and not cut, (left, right, scrolls, cut)
    assert wide, "20 words fit a 360 px screen: this test no longer shows the cue"
    page.fill("#tokens", model.DEFAULT_TEXT)
    page.wait_for_function(
        f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).length"
        f" === {len(model.DEFAULT_TEXT.split()) + 1}"
    )
    problems.assert_none()


# In the page: each box drawn that scrolls sideways (overflow-x auto or scroll) and is wider than itself:
# [its panel and classes, marked .is-scrollable, the text above it (its ::before)]
SIDEWAYS_JS = """() => [...document.querySelectorAll('*')].filter((e) => {
    const style = getComputedStyle(e);
    return ['auto', 'scroll'].includes(style.overflowX) && e.scrollWidth > e.clientWidth + 1
      && e.getClientRects().length > 0; })
  .map((e) => [`${(e.closest('[data-panel]') || e).dataset.panel} ${e.className}`,
               e.classList.contains('is-scrollable'), getComputedStyle(e, '::before').content])"""


def test_on_a_phone_nothing_scrolls_sideways_without_saying_so(phone):
    """Every box wider than the phone's column that scrolls sideways inside it says so above itself, in
    words that fit it: a table cut off at the right edge (the score's terms, with where each comes from)
    otherwise reads as complete. The score's panel and the affinity bars are drawn first (scrolled to)."""
    page, problems = phone
    unfold_all(page)  # the affinity bars are in the stage's folded part
    for panel, drawn in (("qk-dot", ".qk-terms"), ("affinity", "g.bar")):
        page.wait_for_function(
            """([panel, drawn]) => { const p = document.querySelector(`[data-panel="${panel}"]`);
            p.scrollIntoView(); return p.querySelector(drawn); }""",
            arg=[panel, drawn],
        )
    page.wait_for_function("attentionExplorer.idle()")
    wide = page.evaluate(SIDEWAYS_JS)
    silent = [(where, cue) for where, marked, cue in wide if not (marked and "Scroll sideways" in cue)]
    assert not silent, f"these scroll sideways at 360 px and do not say so: {silent}"
    cues = {tuple(where.split()): cue for where, _, cue in wide}  # (panel, class, ...) -> cue

    def cue_of(panel, cls):
        return next((cue for (p, *classes), cue in cues.items() if p == panel and cls in classes), "")

    assert "every column" in cue_of("qk-dot", "qk-table-wrap"), (
        f"the score's terms fit a 360 px screen or say nothing of columns: this test no longer shows them {wide}"
    )
    assert "every key" in cue_of("attention-matrix", "figure"), wide
    # and what fits is not marked: the figures of the score's panel at a laptop's width are not wide
    page.set_viewport_size(LAPTOP)
    try:
        page.wait_for_function("""() => [...document.querySelectorAll('[data-panel="qk-dot"] .figure')]
            .every((f) => f.classList.contains('is-scrollable') === (f.scrollWidth > f.clientWidth + 1))""")
        assert not page.evaluate(
            "[...document.querySelectorAll('[data-panel=\"qk-dot\"] .figure.is-scrollable')].length"
        )
    finally:
        page.set_viewport_size(PHONE)
    page.evaluate("window.scrollTo(0, 0)")
    problems.assert_none()


def test_on_a_phone_the_stepper_stays_one_row_and_every_stage_keeps_its_name(phone):
    """At 360 px the stage buttons show numbers, the current one its name too; choosing any stage keeps
    the sticky bar one row (its height would otherwise jump the page below it), no button covers
    another, and each button's accessible name still names its stage."""
    from attention_explorer.views.stepper import STAGES

    page, problems = phone
    one_row = page.evaluate("document.querySelector('.stepper-bar').getBoundingClientRect().height")
    for k, name in enumerate(STAGES):
        page.click(f'.step[data-value="{k}"]')
        page.wait_for_selector(f'.step.is-current[data-value="{k}"]')
        bar, boxes = page.evaluate("""() => [document.querySelector('.stepper-bar').getBoundingClientRect().height,
            [...document.querySelectorAll('.stepper button')].map((b) => b.getBoundingClientRect().toJSON())]""")
        assert bar == one_row, f"with stage {k + 1} current the stepper is {bar:.0f} px high, not {one_row:.0f}"
        for left, right in zip(boxes, boxes[1:]):
            assert left["right"] <= right["left"] and right["top"] < left["bottom"], (k, left, right)  # side by side
        assert boxes[-1]["right"] <= PHONE["width"]
    for k, name in enumerate(STAGES):
        assert page.get_by_role("button", name=f"{k + 1} {name}", exact=True).count() == 1, name
    page.click('.step[data-value="0"]')
    page.wait_for_selector('.step.is-current[data-value="0"]')
    problems.assert_none()


def test_on_a_laptop_every_picker_shows_its_choice_whole(laptop):
    """At 1280 px each select of the settings card (preset, model, layer, head, activation) shows any of
    its choices whole once chosen: "Head 1: Corefere…" told a reader less than the head's name."""
    page, problems = laptop
    assert page.locator("#settings-card select").count() >= 5
    assert cut_choices(page) == []
    problems.assert_none()


def test_panels_off_screen_catch_up_when_scrolled_into_view(laptop):
    """At a laptop's height, a slider redraws what is on screen at once; a panel far below
    shows the new numbers by the time the reader scrolls to it."""
    page, problems = laptop
    unfold_all(page)  # the affinity bars are in the stage's folded part
    page.locator('[data-panel="attention-matrix"]').scroll_into_view_if_needed()
    page.select_option("#activation", "relu")
    set_range(page, "#temperature", 3.0)
    wait_matrix(page, temperature="3")
    # panels below the first screen appear as they come near, which moves what is below them:
    # keep scrolling to the panel until it shows the new numbers
    page.wait_for_function("""(() => { const p = document.querySelector('[data-panel="ffn"]');
        p.scrollIntoView(); return p.querySelector('[data-view="ffn"][data-activation="relu"]'); })()""")
    units = page.eval_on_selector_all(
        '[data-panel="ffn"] circle[data-unit]', "els => els.map(e => [+e.dataset.pre, +e.dataset.act])"
    )
    assert units and all(act == pytest.approx(max(0.0, pre), abs=1e-9) for pre, act in units)
    page.evaluate("document.querySelector('[data-panel=\"affinity\"]').scrollIntoView()")
    scores = independent_scores(model.DEFAULT_TEXT, 0)[model.DEFAULT_QUERY]
    page.wait_for_function(
        '(want) => { const b = document.querySelector(\'[data-panel="affinity"] g.bar[data-j="1"]\');'
        " if (!b) document.querySelector('[data-panel=\"affinity\"]').scrollIntoView();"
        " return b && Math.abs(+b.dataset.scaled - want) < 1e-9; }",
        arg=scores[1] / (8.0 * 3.0),
    )
    problems.assert_none()


def test_without_the_prerendered_panels_the_page_says_so_and_python_draws_them(browser, base_url):
    """The panels below the first screen come from prerendered.json: if it cannot be downloaded, a
    panel the reader scrolls to says why, and Python draws it once it is ready."""
    context = browser.new_context(viewport=LAPTOP)
    try:
        page = context.new_page()
        problems = PageProblems(page, (base_url.split(SUBPATH)[0] + "/",))
        page.route("**/prerendered.json", lambda route: route.fulfill(status=404, body="gone"))
        page.goto(base_url)
        page.evaluate("document.querySelector('[data-panel=\"ffn\"]').scrollIntoView()")
        note = page.locator('[data-panel="ffn"] .panel-note')
        note.wait_for()  # the 404 comes back in milliseconds, Python takes seconds
        assert "could not be downloaded (prerendered.json: HTTP 404)" in note.inner_text()
        wait_ready(page)
        page.wait_for_selector('[data-panel="ffn"] [data-view="ffn"]')
        assert note.count() == 0 and page.locator('[data-panel="ffn"] circle[data-unit]').count() > 0
        # a panel the reader scrolls back up to is drawn by Python too
        page.evaluate("document.querySelector('[data-panel=\"embedding\"]').scrollIntoView()")
        page.wait_for_selector('[data-panel="embedding"] [data-view]')
        assert page.locator('[data-panel="embedding"] .panel-note').count() == 0
        # the browser reports the 404 it was given as a console error: that one, and only once
        gone = "console error: Failed to load resource: the server responded with a status of 404 (Not Found)"
        assert problems.items.count(gone) == 1, problems.items
        problems.items.remove(gone)
        problems.assert_none()
    finally:
        context.close()


# ---------------------------------------------------------------- print

NEW_TEXT = "The dog ran home because it was hungry"  # the default sentence with its nouns and verbs changed
OLD_WORD, NEW_WORD = "tired", "hungry"  # the default's last word, and this one's


def _panels_showing_the_default_sentence(bundle) -> list[str]:
    """Panels below the first screen whose default picture shows the default sentence's last word
    (from the build's prerendered.json): after a new sentence, their picture must show the new one."""
    import json

    import build

    assert OLD_WORD in model.DEFAULT_TEXT.split() and OLD_WORD not in NEW_TEXT.split()
    markup = json.loads((bundle / build.PRERENDERED).read_text(encoding="utf-8"))
    return sorted(panel for panel, html in markup.items() if OLD_WORD in html)


def _type_new_sentence(page):
    from conftest import reset_page

    reset_page(page)
    page.fill("#tokens", NEW_TEXT)
    page.press("#tokens", "Enter")
    page.wait_for_function(f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).includes('{NEW_WORD}')")


# What the page holds when the browser would print it (window.print replaced by a recorder)
RECORD_PRINT = """() => { window.__printed = []; window.print = () => window.__printed.push({
    pending: [...document.querySelectorAll('[data-panel]')]
        .filter((p) => p.querySelector(':scope > template[data-prerendered]'))
        .map((p) => p.dataset.panel),
    outdated: [...document.querySelectorAll('[data-panel][data-outdated]')].map((p) => p.dataset.panel),
    text: Object.fromEntries([...document.querySelectorAll('[data-panel]')]
        .map((p) => [p.dataset.panel, p.textContent])),
}); }"""


@pytest.mark.parametrize("how", ["Ctrl+P", "button"])
def test_print_draws_every_panel_for_the_sentence_first(laptop, bundle, how):
    """Ctrl+P (or the footer's Print button) prints every panel drawn for the reader's sentence, though
    most were off screen when it was typed; afterwards Python again draws only what is on screen."""
    page, problems = laptop
    showing = _panels_showing_the_default_sentence(bundle)
    assert len(showing) >= 5, showing
    _type_new_sentence(page)
    behind = page.eval_on_selector_all(
        "[data-panel]",
        """els => els.filter((p) => p.dataset.outdated !== undefined
        || p.querySelector(':scope > template[data-prerendered]')).map((p) => p.dataset.panel)""",
    )
    assert len(set(showing) & set(behind)) >= 3, f"hardly anything to draw before printing: {behind}"
    page.evaluate(RECORD_PRINT)
    if how == "Ctrl+P":
        page.keyboard.press("Control+P")
    else:
        page.click("#print-all")
    page.wait_for_function("window.__printed.length === 1")
    printed = page.evaluate("window.__printed[0]")
    assert printed["pending"] == [] and printed["outdated"] == [], printed
    for panel in showing:
        text = printed["text"][panel]
        assert NEW_WORD in text and OLD_WORD not in text, f"panel {panel} printed another sentence's picture"
    assert page.evaluate("document.getElementById('print-all').disabled") is False
    # back to drawing what is on screen: a new sentence leaves the panels far below behind again
    page.fill("#tokens", NEW_TEXT.replace("dog", "fox"))
    page.press("#tokens", "Enter")
    page.wait_for_function(f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).includes('fox')")
    page.wait_for_function("document.querySelector('[data-panel=\"ffn\"]').dataset.outdated !== undefined")
    problems.assert_none()


def test_a_print_from_the_browser_menu_says_which_pictures_are_not_drawn(laptop, bundle):
    """A print the page cannot wait for (the browser's menu) shows no old picture: each panel not drawn
    for this sentence says how to print it. The controls that only work on screen are left out, and a
    dark theme prints dark text on light paper."""
    from test_browser_skeleton import TEXT_AND_BACKGROUND, contrast_ratio

    page, problems = laptop
    _type_new_sentence(page)
    try:
        page.emulate_media(media="print", color_scheme="dark")
        panels = page.eval_on_selector_all(
            "[data-panel]",
            """els => els.map((p) => ({ id: p.dataset.panel,
            behind: p.dataset.outdated !== undefined || !!p.querySelector(':scope > template[data-prerendered]'),
            says: getComputedStyle(p, '::before').content,
            shown: [...p.children].filter((c) => c.checkVisibility()).map((c) => c.textContent).join(' ') }))""",
        )
        behind = [p for p in panels if p["behind"]]
        showing = _panels_showing_the_default_sentence(bundle)
        assert len({p["id"] for p in behind} & set(showing)) >= 3, f"hardly anything behind: {behind}"
        for p in panels:
            if p["id"] in showing:
                assert OLD_WORD not in p["shown"], f"panel {p['id']} prints another sentence's picture"
            if p["behind"]:
                assert "Not drawn for this sentence" in p["says"], p
            else:
                assert "Not drawn" not in p["says"], p
                assert p["id"] not in showing or NEW_WORD in p["shown"], f"panel {p['id']}: {p['shown'][:200]}"
        for hidden in ("#runtime-status", ".stepper-bar", ".share-btn", "#print-all"):
            shown = page.locator(hidden).evaluate_all("els => els.filter((e) => e.checkVisibility()).length")
            assert shown == 0, f"{shown} × {hidden} printed"
        for what in ("h1", ".lede", f'[data-panel="{behind[0]["id"]}"]'):
            element = page.locator(what).first
            pseudo = "::before" if what.startswith("[data-panel") else None
            ink, paper = element.evaluate(TEXT_AND_BACKGROUND, pseudo)
            assert contrast_ratio(ink, paper) >= 4.5 and contrast_ratio(paper, "rgb(255, 255, 255)") < 1.2, (
                f"{what} prints {ink} on {paper} in the dark theme"
            )
    finally:
        page.emulate_media(media="screen", color_scheme="light")
    problems.assert_none()


def test_a_menu_print_of_a_fresh_page_shows_every_pre_rendered_picture(profile, base_url, bundle):
    """Nothing changed yet: every panel's pre-rendered picture is the current one, so a print from the
    browser's menu (its beforeprint event) shows them all at once, none "not drawn"."""
    import json

    import build

    for page, problems in ready_page(profile, base_url, LAPTOP):
        # a reader scrolls to the first stage (which brings prerendered.json) and back up
        page.locator('[data-panel="embedding"]').scroll_into_view_if_needed()
        page.wait_for_function("!!document.querySelector('[data-panel=\"embedding\"] [data-view]')")
        page.evaluate("window.scrollTo({ top: 0, behavior: 'instant' })")
        pending = page.eval_on_selector_all(
            "[data-panel]",
            "els => els.filter((p) => "
            "p.querySelector(':scope > template[data-prerendered]')).map((p) => p.dataset.panel)",
        )
        assert pending, "every panel was drawn already: nothing left for the print to fill"
        page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
        markup = json.loads((bundle / build.PRERENDERED).read_text(encoding="utf-8"))
        for panel in pending:
            el = page.locator(f'[data-panel="{panel}"]')
            assert el.locator(":scope > template[data-prerendered]").count() == 0, f"{panel} still pending"
            assert el.evaluate("(p) => p.dataset.outdated === undefined")
            heading = markup[panel].split(">", 1)[0]  # the pre-rendered markup's first tag, as the page now holds it
            assert heading in el.inner_html(), f"{panel}: not its pre-rendered picture"
        problems.assert_none()


def test_the_credits_page_fits_a_phone(browser, base_url):
    """credits.html at 360 px: the page does not scroll sideways; the table, wider, scrolls in its own box."""
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    problems = PageProblems(page, (base_url.split(SUBPATH)[0] + "/",))
    try:
        page.goto(base_url + "credits.html")
        widths = page.evaluate(
            "() => { const box = document.querySelector('.credits .table-scroll');"
            " return [document.documentElement.scrollWidth, innerWidth, box.getBoundingClientRect().right,"
            " getComputedStyle(box).overflowX]; }"
        )
        assert widths[0] <= widths[1] and widths[2] <= widths[1] and widths[3] == "auto", widths
        problems.assert_none()
    finally:
        context.close()
