"""Every panel live in a real browser: tooltips, keyboard, stepper, and each control moving
the right numbers. Expected numbers are derived here independently (plain NumPy from the
model's published inputs, and the formulas written out), never copied from the views.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from attention_explorer import tokens as tok
from attention_explorer.models import designed as model
from test_browser_skeleton import independent_weights, model_tokens, set_range, wait_matrix

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'


def independent_scores(text: str, head: int) -> np.ndarray:
    """Raw Q_h·K_hᵀ [n, n] from the embedding and the weight matrices."""
    x = model.embed(model_tokens(text)).x
    p = model.block_params()
    d = model.CONFIG.d_head
    cols = slice(head * d, (head + 1) * d)
    return (x @ p.w_q[:, cols] + p.b_q[cols]) @ (x @ p.w_k[:, cols] + p.b_k[cols]).T


def tooltip_text(page) -> str:
    page.wait_for_selector("#tooltip:not([hidden])")
    return page.inner_text("#tooltip")


def test_nothing_watches_every_change_to_the_document(fresh):
    """PyScript's core would observe the whole document (every redraw walked by an XPath query);
    the bridge imports it without that observer (conftest.OBSERVER_PROBE counts them)."""
    assert fresh.evaluate("window.__documentObserversMadeBy('/vendor/pyscript/')") == 0
    # the probe itself works: it sees an observer on the document until it is disconnected
    assert fresh.evaluate("""() => {
      const o = new MutationObserver(() => {});
      (function probeSelfCheck() { o.observe(document, { childList: true, subtree: true }); })();
      const seen = window.__documentObserversMadeBy("probeSelfCheck");
      o.disconnect();
      return [seen, window.__documentObserversMadeBy("probeSelfCheck")];
    }""") == [1, 0]


def test_hovering_a_cell_shows_its_derivation_with_the_real_numbers(fresh):
    i, j = model.DEFAULT_QUERY, 2  # 'it' and 'cat' (index 0 is the start token <s>)
    fresh.hover(f'{MATRIX} rect[data-i="{i}"][data-j="{j}"]')
    text = tooltip_text(fresh)
    score = independent_scores(model.DEFAULT_TEXT, 0)[i, j]
    weight = independent_weights(model.DEFAULT_TEXT, 0, 1.0, 8.0)[i, j]
    assert f"Q·K = {score:.2f}".replace("-", "\u2212") in text  # the page writes a real minus sign
    assert "÷ (8.00 × 1.00)" in text and f"{score / 8:.3f}" in text
    assert f"{100 * weight:.1f} %" in text


def test_keyboard_focus_shows_the_tooltip_and_arrows_move_between_cells(fresh):
    start = fresh.locator(f'{MATRIX} [data-grid-cell][tabindex="0"]')
    assert start.count() == 1, "the heatmap grid needs exactly one tab stop"
    start.focus()
    i, j = int(start.get_attribute("data-i")), int(start.get_attribute("data-j"))
    first = tooltip_text(fresh)
    fresh.keyboard.press("ArrowRight" if j == 0 else "ArrowLeft")
    j2 = 1 if j == 0 else j - 1
    focused = fresh.evaluate("[document.activeElement.dataset.i, document.activeElement.dataset.j]")
    assert focused == [str(i), str(j2)]
    fresh.wait_for_function("(t) => document.getElementById('tooltip').innerText !== t", arg=first)
    score = independent_scores(model.DEFAULT_TEXT, 0)[i, j2]
    assert f"Q·K = {score:.2f}".replace("-", "\u2212") in tooltip_text(fresh)  # the page writes a real minus
    fresh.keyboard.press("Escape")
    fresh.wait_for_selector("#tooltip[hidden]", state="attached")


def test_stepper_moves_by_keyboard_and_brings_the_stage_into_view(fresh):
    fresh.focus('.step[data-value="0"]')
    fresh.keyboard.press("ArrowRight")
    fresh.wait_for_selector('[data-stage-detail="1"]')
    assert fresh.get_attribute("#stage-projections", "class").split().count("is-focused-stage") == 1
    for k in range(2, 6):
        fresh.focus(".step.is-current")
        fresh.keyboard.press("ArrowRight")
        fresh.wait_for_selector(f'[data-stage-detail="{k}"]')
    assert fresh.is_disabled('[data-arrow="next"]')
    fresh.wait_for_function("""(() => { const r = document.getElementById('stage-ffn').getBoundingClientRect();
        return r.top >= 0 && r.top < window.innerHeight; })()""")
    fresh.focus(".step.is-current")
    fresh.keyboard.press("ArrowLeft")
    fresh.wait_for_selector('[data-stage-detail="4"]')
    assert "LayerNorm" in fresh.inner_text(".stage-detail")
    assert fresh.locator(".stage-detail math").count() == 1, "the stage formula is typeset MathML"


def test_clicking_a_small_multiple_selects_that_head(fresh):
    fresh.click('[data-panel="head-multiples"] [data-event="set_head"][data-value="2"]')
    wait_matrix(fresh, head="2")
    assert fresh.input_value("#head") == "2"
    assert fresh.get_attribute('[data-panel="head-multiples"] [data-value="2"]', "aria-pressed") == "true"
    np.testing.assert_allclose(
        fresh.eval_on_selector_all(
            '[data-panel="affinity"] g.bar[data-measure="weight"]', "els => els.map(e => parseFloat(e.dataset.weight))"
        ),
        independent_weights(model.DEFAULT_TEXT, 2, 1.0, 8.0)[model.DEFAULT_QUERY],
        atol=1e-9,
    )


def test_clicking_a_row_label_moves_the_query_everywhere(fresh):
    fresh.click(f'{MATRIX} .row-label[data-token-index="2"]')  # "cat" (index 0 is the start token <s>)
    wait_matrix(fresh, query="2")
    assert set(fresh.eval_on_selector_all('[data-panel="affinity"] g.bar', "els => els.map(e => e.dataset.i)")) == {"2"}
    assert fresh.get_attribute('[data-panel=token-chips] .chip[data-token-index="2"]', "aria-pressed") == "true"
    assert "cat" in fresh.inner_text('[data-panel="embedding"]')


@pytest.mark.parametrize("temperature, dk_scale", [(2.0, 4.0), (0.5, 16.0)])
def test_sliders_move_the_scaled_scores_and_weights(fresh, temperature, dk_scale):
    set_range(fresh, "#temperature", temperature)
    set_range(fresh, "#dk-scale", dk_scale)
    wait_matrix(fresh, temperature=f"{temperature:g}", dkScale=f"{dk_scale:g}")
    bars = fresh.eval_on_selector_all(
        '[data-panel="affinity"] g.bar[data-measure="score"]',
        "els => els.map(e => [+e.dataset.j, +e.dataset.score, +e.dataset.scaled, +e.dataset.weight])",
    )
    scores = independent_scores(model.DEFAULT_TEXT, 0)[model.DEFAULT_QUERY]
    weights = independent_weights(model.DEFAULT_TEXT, 0, temperature, dk_scale)[model.DEFAULT_QUERY]
    for j, score, scaled, weight in bars:
        assert score == pytest.approx(scores[j], abs=1e-9)
        assert scaled == pytest.approx(scores[j] / (dk_scale * temperature), abs=1e-9)
        assert weight == pytest.approx(weights[j], abs=1e-9)
    assert fresh.inner_text("#dk-scale-out") == f"{dk_scale:.1f}"
    # the second slider's numbers came as a patch (the formula's MathML too): none failed to fit
    label = fresh.get_attribute('[data-panel="affinity"] .formula-numbers math', "aria-label")
    assert f"over {dk_scale:.2f} times {temperature:.2f}" in label, label
    assert "redraw" not in fresh.evaluate("attentionExplorer.sent"), "a patch did not fit the page's markup"


def test_causal_mask_hides_the_future_in_matrix_and_routing(fresh):
    fresh.check("#causal")
    fresh.wait_for_selector(f"{MATRIX} rect[data-masked]")
    cells = fresh.eval_on_selector_all(
        f"{MATRIX} rect[data-i]",
        "els => els.map(e => [+e.dataset.i, +e.dataset.j, +e.dataset.weight, !!e.dataset.masked])",
    )
    n = int(math.isqrt(len(cells)))
    w = np.zeros((n, n))
    for i, j, weight, masked in cells:
        assert masked == (j > i)
        w[i, j] = weight
    scores = independent_scores(model.DEFAULT_TEXT, 0) / 8.0
    for i in range(n):  # softmax over the visible keys only, written out
        e = np.exp(scores[i, : i + 1] - scores[i, : i + 1].max())
        np.testing.assert_allclose(w[i, : i + 1], e / e.sum(), atol=1e-9)
        assert not w[i, i + 1 :].any()
    routes = fresh.eval_on_selector_all('[data-panel="routing"] path.route', "els => els.map(e => +e.dataset.j)")
    assert routes and max(routes) <= model.DEFAULT_QUERY, "a line reaches a future key"


@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_activation_choice_is_applied_to_every_hidden_unit(fresh, activation):
    fresh.select_option("#activation", activation)
    fresh.wait_for_selector(f'[data-view="ffn"][data-activation="{activation}"]')
    units = fresh.eval_on_selector_all(
        '[data-panel="ffn"] circle[data-unit]',
        "els => els.map(e => [+e.dataset.pre, +e.dataset.act, e.dataset.gate === undefined ? null : +e.dataset.gate])",
    )
    # the units with all-zero numbers are one dot that counts them
    silent = fresh.eval_on_selector('[data-panel="ffn"] circle.unit-stack', "e => +e.dataset.silentUnits")
    assert units and len(units) + silent == model.CONFIG.d_ff
    for pre, act, gate in units:
        if activation == "relu":
            expected = max(0.0, pre)
        elif activation == "gelu":
            expected = 0.5 * pre * (1 + math.erf(pre / math.sqrt(2)))
        else:
            expected = gate / (1 + math.exp(-gate)) * pre
        assert act == pytest.approx(expected, abs=1e-9)


def _ln_table(page, key: str) -> np.ndarray:
    """The opened LayerNorm table's numbers [d_model, 4]: summand, summand, sum, output (3 decimals)."""
    rows = page.eval_on_selector_all(
        f'[data-panel="layernorm"] details[data-keep="{key}"] tbody tr',
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.textContent))",
    )
    return np.array([[float(c.replace("\u2212", "-")) for c in r] for r in rows])


def test_a_layernorm_table_joins_the_page_when_opened_and_stays_open_across_redraws(fresh):
    """256 dimensions × 4 numbers would be ~1,500 elements on the page at all times: the table is
    folded, empty until a reader opens it, and then shows the block's numbers (x from the embedding,
    their sum, the LayerNorm of it) and keeps showing them through a redraw."""
    d = model.CONFIG.d_model
    folded = '[data-panel="layernorm"] details[data-keep="ln1-table"]'
    fresh.wait_for_selector(f"{folded} > template[data-on-open]", state="attached")
    assert fresh.locator('[data-panel="layernorm"] table').count() == 0  # nothing until asked for
    try:
        fresh.click(f"{folded} > summary")
        fresh.wait_for_function(f"document.querySelectorAll('{folded} tbody tr').length === {d}")
        assert fresh.locator('[data-panel="layernorm"] table').count() == 1  # only the block opened
        numbers = _ln_table(fresh, "ln1-table")
        x = model.embed(model_tokens(model.DEFAULT_TEXT)).x[model.DEFAULT_QUERY]  # [d_model]
        np.testing.assert_allclose(numbers[:, 0], x, atol=5e-4)
        np.testing.assert_allclose(numbers[:, 2], numbers[:, 0] + numbers[:, 1], atol=2e-3)
        r = numbers[:, 2]  # the designed model's γ = 1, β = 0: h = (r − μ) / σ
        np.testing.assert_allclose(numbers[:, 3], (r - r.mean()) / r.std(), atol=0.05)
        before = numbers[:, 1].copy()
        set_range(fresh, "#temperature", 3)  # another MHA(x): the panel is redrawn
        # the heatmap and this panel come in one reply; the reopened <details> fills on its toggle event
        wait_matrix(fresh, temperature="3")
        fresh.wait_for_function(f"document.querySelectorAll('{folded}[open] tbody tr').length === {d}")
        after = _ln_table(fresh, "ln1-table")
        assert np.abs(after[:, 1] - before).max() > 1e-3, "the open table still shows the old MHA(x)"
    finally:  # the shared page gets its height back (an open 256-row table pushes the panels below it down)
        fresh.eval_on_selector(folded, "d => { d.open = false; }")


def test_a_live_layernorm_dimension_gets_its_tip_from_python(fresh):
    """Python's redraws leave the 512 per-dimension tips out of the LayerNorm panel; hovering (or
    focusing) a dimension asks the worker, and the tip shows that dimension's numbers."""
    set_range(fresh, "#temperature", 1.5)  # every panel of the tall page drawn by Python
    wait_matrix(fresh, temperature="1.5")
    dim = '[data-panel="layernorm"] [data-block="ln1"] .dim-hits i[data-j="6"]'
    fresh.wait_for_selector(f"{dim}[data-tip-src]:not([data-tip])", state="attached")
    fresh.hover(dim)
    text = tooltip_text(fresh)
    x = model.embed(model_tokens(model.DEFAULT_TEXT)).x[model.DEFAULT_QUERY, 6]  # "it" is a pronoun: dim 6 is 1
    assert text.startswith("dimension 6 · pronoun") and f"x + MHA(x) = {x:.3f} + " in text


def test_the_weights_table_opened_after_a_slider_move_shows_the_new_weights(fresh):
    """A slider patches the heatmap's numbers, not those of its table while it waits unopened: the
    waiting table is marked stale, and opening it brings the panel anew, with the new weights."""
    folded = '[data-panel="attention-matrix"] details[data-keep="weights-table"]'
    text = "The dog sat down because it was tired"
    fresh.fill("#tokens", text)  # new tokens: the heatmap drawn anew, its table waiting unopened
    fresh.wait_for_function(f"JSON.parse(document.querySelector('{MATRIX}').dataset.tokens).includes('dog')")
    assert fresh.locator(f"{folded} > template[data-on-open]:not([data-stale])").count() == 1
    set_range(fresh, "#temperature", 2)  # numbers only: a patch
    wait_matrix(fresh, temperature="2")
    assert fresh.locator(f"{folded} > template[data-stale]").count() == 1, "patched, and the table marked stale"
    n = len(model_tokens(text))
    try:
        fresh.click(f"{folded} > summary")
        fresh.wait_for_function(f"document.querySelectorAll('{folded}[open] tbody tr').length === {n}")
        got = fresh.eval_on_selector_all(
            f"{folded} tbody tr",
            """rows => rows.map((r) =>
            [...r.querySelectorAll('td')].map((c) => parseFloat(c.textContent.replace('\u2212', '-'))))""",
        )
        np.testing.assert_allclose(np.array(got), 100 * independent_weights(text, 0, 2.0, 8.0), atol=0.051)
    finally:  # the shared page as the next test expects it
        fresh.eval_on_selector(folded, "d => { d.open = false; }")


def test_scale_demo_follows_its_d_k_slider(fresh):
    set_range(fresh, "#demo-dk", 256)
    fresh.wait_for_selector('[data-view="scale-demo"][data-dk="256"]')
    assert fresh.inner_text("#demo-dk-out") == "256"
    set_range(fresh, "#demo-dk", 64)
    fresh.wait_for_selector('[data-view="scale-demo"][data-dk="64"]')


def test_routing_can_show_all_heads(fresh):
    fresh.check("#routing-all")
    fresh.wait_for_function(
        "new Set([...document.querySelectorAll('[data-panel=\"routing\"] path.route')]"
        ".map(e => e.dataset.h)).size === 4"
    )
    n = len(model_tokens(model.DEFAULT_TEXT))
    assert fresh.locator('[data-panel="routing"] path.route').count() == model.CONFIG.n_heads * n
    fresh.uncheck("#routing-all")
    fresh.wait_for_function(
        "new Set([...document.querySelectorAll('[data-panel=\"routing\"] path.route')]"
        ".map(e => e.dataset.h)).size === 1"
    )


def test_preset_picker_loads_the_sentence_and_says_what_to_look_for(fresh):
    """'Agreement' is about the verb head and 'are': it opens exactly that, and its note says so."""
    preset = next(p for p in model.PRESETS if p.id == "agreement")
    fresh.select_option("#preset", preset.id)
    fresh.wait_for_function(
        f"document.querySelectorAll('[data-panel=token-chips] .chip').length === {len(model_tokens(preset.text))}"
    )
    assert fresh.input_value("#tokens") == preset.text
    wait_matrix(fresh, head="1", query="6")  # <s> The keys to the cabinet are: 'are' is token 6
    note = fresh.inner_text('[data-panel="preset-info"]')
    assert "Head 2" in note and "query 'are'" in note and preset.look_for[:40] in note
    assert fresh.input_value("#head") == "1"
    assert fresh.get_attribute('[data-panel=token-chips] .chip[data-token-index="6"]', "aria-pressed") == "true"


def test_retyping_keeps_the_query_on_its_word(fresh):
    """Add a word before 'it' and the query stays on 'it' (it moved one place right), not on 'because'."""
    fresh.fill("#tokens", "The cat sat down quietly because it was tired")
    wait_matrix(fresh, query=str(model.DEFAULT_QUERY + 1))
    assert fresh.inner_text('[data-panel=token-chips] .chip[aria-pressed="true"]').endswith("it")
    fresh.fill("#tokens", "The dog sat down quietly")  # 'it' is gone and no pronoun is left: the last token
    wait_matrix(fresh, query="5")
    assert fresh.inner_text('[data-panel=token-chips] .chip[aria-pressed="true"]').endswith("quietly")


def test_the_start_token_chip_says_it_is_no_word(fresh):
    start = fresh.locator('[data-panel=token-chips] .chip[data-token-index="0"]')
    assert "is-special" in start.get_attribute("class").split()
    assert "start token" in start.get_attribute("title") and start.inner_text().endswith("<s>")
    name = start.evaluate("e => e.textContent")  # its accessible name (no aria-label): visible + hidden text
    assert "start token" in name and "not a word of the sentence" in name
    assert fresh.locator('[data-panel="token-chips"] .chip.is-special').count() == 1
    assert "8 from the sentence + start token <s>" in fresh.inner_text('[data-panel="token-chips"] .token-count')


@pytest.mark.parametrize("text", ["<img src=x onerror=alert(1)>", 'He said "hi" & left 😀', "שלום עולם", "Hello"])
def test_reader_text_is_shown_as_text_never_as_markup(fresh, text):
    dialogs = []
    fresh.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    n = len(model_tokens(text))
    fresh.fill("#tokens", text)
    fresh.wait_for_function(
        "(want) => JSON.stringify([...document.querySelectorAll('[data-panel=token-chips] .chip')]"
        ".map(e => e.lastChild.textContent)) === want",
        arg=json.dumps(model_tokens(text), separators=(",", ":"), ensure_ascii=False),
    )
    fresh.wait_for_function(f"document.querySelectorAll('{MATRIX} rect[data-i]').length === {n * n}")
    assert fresh.locator('img[src="x"]').count() == 0 and not dialogs


def test_token_limit_and_empty_input_keep_the_last_good_picture(fresh):
    ok = " ".join(["word"] * tok.MAX_TOKENS)
    fresh.fill("#tokens", ok)
    fresh.wait_for_function(
        f"document.querySelectorAll('[data-panel=token-chips] .chip').length === {tok.MAX_TOKENS + 1}"
    )  # + <s>
    good = fresh.inner_html('[data-panel="attention-matrix"]')
    for bad in (ok + " word", ""):
        fresh.fill("#tokens", bad)
        fresh.wait_for_function("document.getElementById('input-message').textContent.length > 0")
        message = fresh.inner_text("#input-message")
        # the limit as the hint above the input says it (the start token <s> counted, as the chips show it)
        assert (f"the limit is {fresh.inner_text('#max-tokens')}." in message) if bad else message
        assert fresh.inner_html('[data-panel="attention-matrix"]') == good
        fresh.fill("#tokens", ok)
        fresh.wait_for_function("document.getElementById('input-message').textContent === ''")
