"""The researcher's views live in a real browser (designed model): pinned queries, every head at a glance,
mean and rollout, switching heads off, sentence pairs; by mouse and by keyboard, and in the URL.

Expected numbers are derived here: attention weights from the model's published embedding and weights
(test_browser_skeleton.independent_weights), their mean and rollout written out as loops; the block
output with a head switched off from CPython's run of the same model, which the core tests check
against a loop reference (tests/test_ablation_core.py). A link opened fresh restores all of it:
tests/test_browser_a11y.py opens one (and runs axe-core on these panels).
"""

from __future__ import annotations

import numpy as np
import pytest

from attention_explorer import core
from attention_explorer.models import designed as model
from conftest import MATRIX, scroll_to
from test_browser_skeleton import independent_weights, model_tokens

pytestmark = pytest.mark.browser
TEXT, QUERY = model.DEFAULT_TEXT, model.DEFAULT_QUERY
N_HEADS = model.CONFIG.n_heads
DK = 8.0


def all_heads(text=TEXT):
    return [independent_weights(text, h, 1.0, DK) for h in range(N_HEADS)]  # each [n, n]


def chip(i: int) -> str:
    return f'[data-panel="token-chips"] button[data-token-index="{i}"]'


def bring(page, card: str, ready: str):
    """Scroll a card into view and wait for its panel's live markup (drawn when it nears the screen)."""
    scroll_to(page, card)
    page.wait_for_selector(f"#{card} {ready}")


def cells(page, selector: str, attr: str = "data-weight") -> dict:
    """{(i, j): value} of the cells under selector."""
    got = page.eval_on_selector_all(
        selector,
        f"""els => els.map((e) => [+e.dataset.i, +e.dataset.j,
        +e.getAttribute('{attr}')])""",
    )
    return {(i, j): v for i, j, v in got}


def test_shift_and_ctrl_click_pin_queries_and_the_heatmap_adds_their_mean(fresh):
    fresh.click(chip(1), modifiers=["Shift"])
    fresh.wait_for_selector(f'{MATRIX} rect.pinned-outline[data-pinned-row="1"]')
    fresh.click(chip(3), modifiers=["Control"])
    fresh.wait_for_function(f"document.querySelector('{MATRIX} g.mean-row')?.dataset.rows === '1_3_{QUERY}'")
    w = independent_weights(TEXT, 0, 1.0, DK)
    rows = [1, 3, QUERY]
    got = fresh.eval_on_selector_all(
        f"{MATRIX} rect.mean-cell", "els => els.map((e) => [+e.dataset.meanJ, +e.dataset.weight])"
    )
    assert len(got) == len(w)
    for j, value in got:
        assert value == pytest.approx(sum(w[i][j] for i in rows) / len(rows), abs=1e-9)
    assert fresh.get_attribute(MATRIX, "data-query") == str(QUERY), "pinning does not move the query"
    fresh.wait_for_function("location.hash.includes('p=1_3')")  # the URL follows once the reader pauses
    # the keyboard: Shift+Enter on a chip pins it, and the focus stays on that chip
    fresh.focus(chip(5))
    fresh.keyboard.press("Shift+Enter")
    fresh.wait_for_function(f"document.querySelector('{MATRIX} g.mean-row')?.dataset.rows === '1_3_5_{QUERY}'")
    assert fresh.evaluate("document.activeElement.dataset.tokenIndex") == "5"
    # a pinned chip clicked with Shift again is unpinned; "Unpin all" clears the rest
    fresh.click(chip(5), modifiers=["Shift"])
    fresh.wait_for_function(f"document.querySelector('{MATRIX} g.mean-row')?.dataset.rows === '1_3_{QUERY}'")
    fresh.click('[data-panel="token-chips"] button.unpin')
    fresh.wait_for_function(f"!document.querySelector('{MATRIX} g.mean-row, {MATRIX} rect.pinned-outline')")


def test_the_head_grid_selects_a_head_everywhere_by_mouse_and_keyboard(fresh):
    bring(fresh, "head-grid-card", '[data-view="head-grid"]')
    thumbs = fresh.locator('[data-view="head-grid"] button[data-event="pick_head"]')
    assert thumbs.count() == N_HEADS
    assert [thumbs.nth(h).get_attribute("data-value") for h in range(N_HEADS)] == [f"0,{h}" for h in range(N_HEADS)]
    thumbs.nth(2).click()
    fresh.wait_for_function(f"document.querySelector('{MATRIX}').dataset.head === '2'")
    assert fresh.input_value("#head") == "2"
    fresh.wait_for_selector('[data-view="head-grid"] button[data-value="0,2"][aria-pressed="true"]')
    thumbs.nth(3).focus()
    fresh.keyboard.press("Enter")
    fresh.wait_for_function(f"document.querySelector('{MATRIX}').dataset.head === '3'")
    fresh.wait_for_selector('[data-view="head-grid"] button[data-value="0,3"][aria-pressed="true"]')
    assert fresh.evaluate("document.activeElement.dataset.value") == "0,3", "the focus stays on the thumbnail"
    # the query's row is outlined in every thumbnail
    rows = fresh.eval_on_selector_all(
        '[data-view="head-grid"] rect.thumb-row.is-query', "els => els.map((e) => e.dataset.row)"
    )
    assert rows == [str(QUERY)] * N_HEADS


def test_mean_and_rollout_are_the_heads_mean_and_half_of_it_plus_the_identity(fresh):
    bring(fresh, "aggregates-card", 'svg[data-view="attention-rollout"]')
    heads = all_heads()
    n = len(heads[0])
    mean = [[sum(h[i][j] for h in heads) / N_HEADS for j in range(n)] for i in range(n)]
    # one layer: rollout = Ã = ½·mean + ½·I, each row renormalised (it already sums to 1)
    tilde = [[0.5 * mean[i][j] + (0.5 if i == j else 0.0) for j in range(n)] for i in range(n)]
    rollout = [[v / sum(row) for v in row] for row in tilde]
    for view, want in (("attention-mean", mean), ("attention-rollout", rollout)):
        svg = f'svg[data-view="{view}"]'
        assert fresh.get_attribute(svg, "data-layer") == "0"
        got = cells(fresh, f"{svg} rect[data-i][data-j]")
        assert len(got) == n * n
        for (i, j), v in got.items():
            assert v == pytest.approx(want[i][j], abs=1e-9), f"{view} cell {i},{j}"
    # another query from a row label: the outline, the tab stop, the table and the sentences move
    # (a patch: the maps' numbers stay), and the all-heads grid outlines that row in every thumbnail
    q = 1 if QUERY != 1 else 2
    fresh.evaluate("document.querySelector('svg[data-view=\"attention-rollout\"]').dataset.mark = 'before'")
    fresh.click(f'svg[data-view="attention-rollout"] text.row-label[data-token-index="{q}"]')
    for view, want in (("attention-mean", mean), ("attention-rollout", rollout)):
        svg = f'svg[data-view="{view}"]'
        fresh.wait_for_selector(f'{svg}[data-query="{q}"] rect.query-outline[data-query-row="{q}"]')
        assert cells(fresh, f"{svg} rect[data-i][data-j]") == pytest.approx(
            {(i, j): want[i][j] for i in range(n) for j in range(n)}, abs=1e-9
        )
        stop = fresh.eval_on_selector_all(
            f'{svg} rect.cell[tabindex="0"]', "els => els.map((e) => [+e.dataset.i, +e.dataset.j])"
        )
        assert stop == [[q, max(range(n), key=lambda j: want[q][j])]], "the tab stop is the query row's largest cell"
    assert fresh.get_attribute('svg[data-view="attention-rollout"]', "data-mark") == "before", "patched, not redrawn"
    toks = model_tokens(TEXT)
    assert fresh.text_content('[data-panel="aggregates"] table.sr-only tbody th') == f"{toks[q]} (the query)"
    assert toks[q] in fresh.inner_text('p.aggregates-says[data-says="mean"]')
    bring(fresh, "head-grid-card", f'[data-view="head-grid"][data-query="{q}"]')
    rows = fresh.eval_on_selector_all(
        '[data-view="head-grid"] rect.thumb-row.is-query', "els => els.map((e) => e.dataset.row)"
    )
    assert rows == [str(q)] * N_HEADS


def test_switching_the_coreference_head_off_takes_the_nouns_features_from_it(fresh):
    bring(fresh, "ablation-card", '[data-view="ablation"]')
    toggle = '[data-view="ablation"] button[data-event="set_ablated"][data-toggle="0"]'
    assert fresh.get_attribute(toggle, "aria-pressed") == "false"
    assert not fresh.locator('svg[data-view="ablation-change"]').count(), "no chart while every head is on"
    fresh.focus(toggle)
    fresh.keyboard.press("Enter")  # a button: Enter presses it
    fresh.wait_for_selector('svg[data-view="ablation-change"]')
    assert fresh.get_attribute(toggle, "aria-pressed") == "true"
    assert fresh.evaluate("document.activeElement.dataset.toggle") == "0", "the focus stays on the switch"
    fresh.wait_for_function("location.hash.includes('ab=0')")  # the URL follows once the reader pauses
    toks = model_tokens(TEXT)
    off = (
        model.MODEL.forward(
            tuple(toks), core.Settings(temperature=1.0, dk_scale=DK, causal=False, activation="gelu", ablated=((0, 0),))
        )
        .layers[0]
        .out
    )
    on = (
        model.MODEL.forward(tuple(toks), core.Settings(temperature=1.0, dk_scale=DK, causal=False, activation="gelu"))
        .layers[0]
        .out
    )
    want = [float(np.linalg.norm(off[i] - on[i]) / np.linalg.norm(on[i])) for i in range(len(toks))]
    got = dict(
        fresh.eval_on_selector_all(
            'svg[data-view="ablation-change"] rect[data-token]',
            "els => els.map((e) => [+e.dataset.token, +e.dataset.change])",
        )
    )
    assert [got[i] for i in range(len(toks))] == pytest.approx(want, abs=1e-9)
    assert max(range(len(toks)), key=lambda i: got[i]) == QUERY, "'it' changes most: it lost what the head brought"
    lost = fresh.inner_text('[data-view="ablation-dims"]')
    assert "animal" in lost, "'it' loses its noun's features"
    # the rest of the page follows: the head grid marks it off; switching all back on restores the run
    bring(fresh, "head-grid-card", '[data-view="head-grid"] button[data-value="0,0"].is-off')
    bring(fresh, "ablation-card", '[data-view="ablation"] button[data-event="set_ablated"][data-value=""]')
    fresh.click('[data-view="ablation"] button[data-event="set_ablated"][data-value=""]')
    fresh.wait_for_selector(f'{toggle}[aria-pressed="false"]')
    assert not fresh.locator('svg[data-view="ablation-change"]').count()


def test_a_sentence_pair_preset_and_a_typed_second_sentence(fresh):
    bring(fresh, "pair-card", '[data-view="pair"][data-state="empty"]')
    fresh.click('[data-view="pair"] button[data-event="pair_preset"][data-value="trophy"]')
    fresh.wait_for_selector('[data-view="pair"][data-state="shown"][data-preset="trophy"]')
    first = "The trophy didn't fit in the suitcase because it was too big"
    second = "The trophy didn't fit in the suitcase because it was too small"
    assert fresh.input_value("#tokens") == first and fresh.input_value("#pair-text") == second
    for view, text in (("pair-a", first), ("pair-b", second)):
        toks = model_tokens(text)
        q = toks.index("it")
        assert fresh.get_attribute(f'svg[data-view="{view}"]', "data-query") == str(q)
        w = independent_weights(text, 0, 1.0, DK)
        got = cells(fresh, f'svg[data-view="{view}"] rect.cell[data-i]')
        assert got and all(i == q for i, _ in got)
        for (i, j), v in got.items():
            assert v == pytest.approx(w[i][j], abs=1e-9)
    # the coreference head picks "trophy" in both: wrong for "small", and the page says so
    toks_b = model_tokens(second)
    look_b = int(np.argmax(independent_weights(second, 0, 1.0, DK)[toks_b.index("it")]))
    assert toks_b[look_b] == "trophy"
    assert fresh.get_attribute('[data-view="pair"]', "data-verdict-b") == "wrong"
    assert "wrong" in fresh.inner_text('[data-view="pair"]')
    # a typed second sentence: the difference covers the tokens the two share
    fresh.fill("#pair-text", "The trophy didn't fit in the box because it was too big")
    fresh.wait_for_function(
        "document.querySelector('[data-view=\"pair\"]').dataset.preset === ''"
        " && !!document.querySelector('svg[data-view=\"pair-diff\"]')"
    )
    fresh.wait_for_function("location.hash.includes('s2=')")  # the URL follows once the reader pauses
    deltas = fresh.eval_on_selector_all(
        'svg[data-view="pair-diff"] rect.diff-cell',
        """els => els.map((e) =>
        [+e.dataset.aI, +e.dataset.aJ, +e.dataset.bI, +e.dataset.bJ, +e.dataset.delta])""",
    )
    wa = independent_weights(fresh.input_value("#tokens"), 0, 1.0, DK)
    wb = independent_weights("The trophy didn't fit in the box because it was too big", 0, 1.0, DK)
    ta, tb = model_tokens(first), model_tokens("The trophy didn't fit in the box because it was too big")
    assert deltas
    for ai, aj, bi, bj, d in deltas:
        assert ta[ai] == tb[bi] and ta[aj] == tb[bj], "only tokens the two sentences share are compared"
        assert d == pytest.approx(wa[ai][aj] - wb[bi][bj], abs=1e-9)
    # an unreadable second sentence: the message sits next to its input, the last good pictures stay
    fresh.fill("#pair-text", " ".join(["word"] * 40))
    fresh.wait_for_function("document.getElementById('pair-text-message').textContent.includes('Second sentence')")
    assert fresh.locator('svg[data-view="pair-diff"]').count() == 1
    fresh.fill("#pair-text", "")
    fresh.wait_for_selector('[data-view="pair"][data-state="empty"]')
