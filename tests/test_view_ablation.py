"""The ablation panel (views/ablation.py): switch heads off and see what they contributed.

What the product promises: a toggle per head that switches exactly that head off (aria-pressed says
which are off), a way back to all on; a bar per token whose number is the share of the token's output
vector that changed; for the designed model, "it" visibly losing its noun's features when the
Coreference head is off; for several layers, a difference heatmap whose every cell is A_off − A_on of
the selected head; no empty chart when nothing is off; reader text never becomes markup.

Expected numbers are computed here with plain Python loops over the two runs' traces (the intact run
and the run with heads off), never with the view's own helpers.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

import toy_model
from attention_explorer import page, state as st
from attention_explorer.models import designed
from attention_explorer.views import ablation
from markup_tree import parse

HOSTILE = "<b>&\"'"


def render(s):
    c, intact = st.compute(s), st.compute_intact(s)
    markup = ablation.render(s, c, intact)
    return c, intact, markup, parse(markup)


def words(node) -> str:
    return " ".join(node.all_text().split())


def toggles(root):
    return root.find_all("button", data_event="set_ablated", data_toggle=True)


# --------------------------------------------------------------------------- the switches


def test_designed_toggles_carry_flat_indices_and_say_which_heads_are_off():
    s = dataclasses.replace(st.State(), ablated=(0, 2))
    _, _, _, root = render(s)
    buttons = toggles(root)
    assert [b.attrs["data-toggle"] for b in buttons] == ["0", "1", "2", "3"]
    assert [b.attrs["aria-pressed"] for b in buttons] == ["true", "false", "true", "false"]
    for h, b in enumerate(buttons):
        assert b.attrs["type"] == "button"
        assert designed.HEADS[h].name in words(b), "each switch names its head"
    all_on = root.find_all("button", data_event="set_ablated", data_value="")
    assert len(all_on) == 1 and "back on" in words(all_on[0])
    assert st.apply_event(s, {"type": "set_ablated", "value": all_on[0].attrs["data-value"]}).ablated == ()


def test_toy_toggles_switch_off_exactly_the_head_they_are_labelled_with():
    """Flat index = the count of heads in earlier layers + the head; the event the button sends switches
    off the run's head (layer, head) that its label names, and a second press switches it back on."""
    with toy_model.registered():
        s = dataclasses.replace(st.State(), model="toy")
        _, _, markup, root = render(s)
        buttons = toggles(root)
        expected, k = [], 0
        for layer in range(toy_model.N_LAYERS):
            for head in range(toy_model.N_HEADS):
                expected.append((k, layer, head))
                k += 1
        assert len(buttons) == len(expected)
        for b, (k, layer, head) in zip(buttons, expected):
            assert b.attrs["data-toggle"] == str(k) and b.attrs["aria-pressed"] == "false"
            assert b.attrs["aria-label"].startswith(f"Layer {layer + 1}, head {head + 1}:")
            after = st.apply_event(s, {"type": b.attrs["data-event"], "toggle": b.attrs["data-toggle"]})
            heads_on = [t.head_on.tolist() for t in st.compute(after).run.layers]
            assert heads_on == [
                [not (l == layer and h == head) for h in range(toy_model.N_HEADS)] for l in range(toy_model.N_LAYERS)
            ]
            _, _, _, again = render(after)
            pressed = [x.attrs["aria-pressed"] for x in toggles(again)]
            assert pressed == ["true" if i == k else "false" for i in range(len(expected))]
            assert st.apply_event(after, {"type": "set_ablated", "toggle": str(k)}).ablated == ()
        # rows are layers, each a named group
        groups = [g for g in root.find_all(role="group") if g.attrs.get("aria-label", "").startswith("Layer ")]
        assert [len(g.find_all("button")) for g in groups] == [toy_model.N_HEADS] * toy_model.N_LAYERS
        assert not root.find_all("button", data_value=""), "no 'all back on' while every head is on"


def test_nothing_off_draws_no_chart_and_says_what_to_do():
    for model in ("designed", "toy"):
        with toy_model.registered():
            s = dataclasses.replace(st.State(), model=model)
            _, _, markup, root = render(s)
        assert "Switch a head off to see what it contributes" in words(root)
        assert not root.find_all("svg") and not root.find_all("table"), f"{model}: an empty chart"
        assert root.find_all("div", data_view="ablation")[0].attrs["data-off"] == ""


# --------------------------------------------------------------------------- change per token


def _relative_changes(off_out, on_out):
    """Per token: ‖off − on‖ / ‖on‖ over d_model, by loops over plain floats."""
    out = []
    for a_row, b_row in zip(off_out.tolist(), on_out.tolist()):
        diff = math.sqrt(sum((a - b) ** 2 for a, b in zip(a_row, b_row)))
        size = math.sqrt(sum(b * b for b in b_row))
        out.append(diff / size)
    return out


@pytest.mark.parametrize("model,ablated", [("designed", (0,)), ("designed", (1, 3)), ("toy", (1,)), ("toy", (4,))])
def test_bars_are_the_relative_change_of_every_tokens_output(model, ablated):
    with toy_model.registered():
        s = dataclasses.replace(st.State(), model=model, ablated=ablated)
        c, intact, _, root = render(s)
    expected = _relative_changes(c.run.layers[-1].out, intact.run.layers[-1].out)  # the model's output
    svgs = root.find_all("svg", data_view="ablation-change")
    assert len(svgs) == 1
    svg = svgs[0]
    assert svg.attrs["role"] == "img" and svg.attrs["aria-label"]
    bars = svg.find_all("rect", data_change=True)
    assert [int(b.attrs["data-token"]) for b in bars] == list(range(len(c.tokens)))
    for b, e in zip(bars, expected):
        assert float(b.attrs["data-change"]) == pytest.approx(e, rel=1e-9, abs=1e-12)
    widths = [float(b.attrs["width"]) for b in bars]
    for (w1, e1), (w2, e2) in zip(zip(widths, expected), zip(widths[1:], expected[1:])):
        assert (w1 - w2) * (e1 - e2) >= -1e-6, "a longer bar must mean a larger change"
    assert max(expected) > 0
    # the screen-reader table has a row per token with the same percentage
    table = [t for t in root.find_all("table") if "output" in words(t.find_all("caption")[0])][0]
    rows = table.find_all("tbody")[0].find_all("tr")
    assert len(rows) == len(c.tokens)
    for r, e in zip(rows, expected):
        assert words(r.find_all("td")[0]) == f"{100 * e:.1f} %"
    assert "% of the token's output vector that changed" in words(root)


def test_switching_off_coreference_changes_it_most_in_the_designed_model():
    s = dataclasses.replace(st.State(), ablated=(designed.COREF,))
    c, intact, _, root = render(s)
    bars = root.find_all("rect", data_change=True)
    changes = [float(b.attrs["data-change"]) for b in bars]
    assert c.tokens[changes.index(max(changes))] == "it"


# --------------------------------------------------------------------------- what "it" lost


def test_switching_off_coreference_shows_it_losing_its_nouns_features():
    """Default sentence, query 'it', Coreference head off: the dims it lost are exactly the features the
    head copies from 'cat' (the lexicon's), each from about 1 to 0, read before LayerNorm; and the
    feed-forward detector 'pronoun found an animal' goes from firing to not."""
    s = dataclasses.replace(st.State(), ablated=(designed.COREF,))
    c, intact, _, root = render(s)
    q = s.query
    assert c.tokens[q] == "it"
    toks = list(c.tokens)
    cat = toks.index("cat")
    feats = designed.token_features("cat", cat, toks)
    expected = {f"coref: {f}" for f in designed.COPIED if feats[f] == 1.0}
    assert {"coref: noun", "coref: animal"} <= expected
    lists = {u.attrs["data-stage"]: u for u in root.find_all("ul", data_view="ablation-dims")}
    names = c.model.dim_names
    listed = {names[int(li.attrs["data-dim"])]: li for li in lists["resid1"].find_all("li")}
    assert set(listed) == expected
    on, off = intact.run.layers[0].resid1[q].tolist(), c.run.layers[0].resid1[q].tolist()
    for name, li in listed.items():
        d = int(li.attrs["data-dim"])
        assert float(li.attrs["data-before"]) == pytest.approx(on[d], abs=1e-12) and on[d] > 0.9
        assert float(li.attrs["data-after"]) == pytest.approx(off[d], abs=1e-12) and abs(off[d]) < 0.05
        text = words(li)
        assert text == f"‘it’: ‘{name}’ {on[d]:.2f} → {off[d]:.2f}".replace("-", "−")
    ffn = {names[int(li.attrs["data-dim"])]: li for li in lists["ffn_out"].find_all("li")}
    assert "pronoun found an animal" in ffn
    li = ffn["pronoun found an animal"]
    assert float(li.attrs["data-before"]) > 0.5 and float(li.attrs["data-after"]) < 0
    text = words(root)
    assert "before LayerNorm" in text and "‘cat’" in text


def test_switching_off_another_head_does_not_claim_it_lost_the_coreference_features():
    s = dataclasses.replace(st.State(), ablated=(designed.PREV,))
    c, _, _, root = render(s)
    names = c.model.dim_names
    for ul in root.find_all("ul", data_view="ablation-dims"):
        assert not any(names[int(li.attrs["data-dim"])].startswith("coref:") for li in ul.find_all("li"))


def test_one_layer_draws_no_attention_difference_and_says_why():
    _, _, _, root = render(dataclasses.replace(st.State(), ablated=(0,)))
    assert not root.find_all("svg", data_view="ablation-diff")
    assert "With one layer, no attention weight changes" in words(root)


# --------------------------------------------------------------------------- attention difference


@pytest.mark.parametrize("ablated,head", [((1,), 2), ((0, 2), 0), ((1,), 1)])
def test_the_difference_heatmap_is_a_off_minus_a_on_of_the_selected_head(ablated, head):
    with toy_model.registered():
        s = dataclasses.replace(st.State(), model="toy", ablated=ablated, layer=1, head=head)
        c, intact, markup, root = render(s)
        causal = dataclasses.replace(s, causal=True)
        cc, ci, _, croot = render(causal)
    for run_off, run_on, tree in ((c, intact, root), (cc, ci, croot)):
        a_off = run_off.run.layers[1].weights[head].tolist()
        a_on = run_on.run.layers[1].weights[head].tolist()
        n = len(a_on)
        svgs = tree.find_all("svg", data_view="ablation-diff")
        assert len(svgs) == 1
        svg = svgs[0]
        assert svg.attrs["role"] == "img" and svg.attrs["aria-label"]
        assert (svg.attrs["data-layer"], svg.attrs["data-head"]) == ("1", str(head))
        cells = svg.find_all("rect", data_delta=True)
        assert sorted((int(r.attrs["data-i"]), int(r.attrs["data-j"])) for r in cells) == [
            (i, j) for i in range(n) for j in range(n)
        ]
        biggest = 0.0
        for r in cells:
            i, j = int(r.attrs["data-i"]), int(r.attrs["data-j"])
            delta = a_off[i][j] - a_on[i][j]
            biggest = max(biggest, abs(delta))
            assert float(r.attrs["data-delta"]) == pytest.approx(delta, abs=1e-11)
            assert r.has_class("up" if delta >= 0 else "dn")
        assert biggest > 1e-4, "a head off in layer 0 must move layer 1's attention"
        assert float(svg.attrs["data-limit"]) == pytest.approx(biggest, abs=1e-11)
    assert root.find_all("table", class_="sr-only")


def test_no_earlier_switched_off_head_means_a_note_and_a_later_layer_to_choose():
    with toy_model.registered():
        s = dataclasses.replace(st.State(), model="toy", ablated=(1,), layer=0)  # layer 0's own head off
        _, _, _, root = render(s)
        assert not root.find_all("svg", data_view="ablation-diff")
        text = words(root)
        assert (
            "the attention of layer 1 is only changed by heads switched off in earlier layers: choose a later layer"
        ) in text.lower()
        picks = root.find_all("button", data_event="set_layer")
        assert [b.attrs["data-value"] for b in picks] == ["1"]
        assert st.apply_event(s, {"type": "set_layer", "value": picks[0].attrs["data-value"]}).layer == 1
        # a head off only in the last layer: no later layer to offer
        s = dataclasses.replace(s, ablated=(toy_model.N_HEADS,), layer=1)
        _, _, _, root = render(s)
        assert not root.find_all("svg", data_view="ablation-diff")
        assert not root.find_all("button", data_event="set_layer")


# --------------------------------------------------------------------------- markup, escaping, the trained model


def test_reader_and_model_text_is_escaped():
    """A token and a head name of <b>&"' come out as text, never as markup, everywhere they appear."""
    hostile_heads = tuple(
        tuple(dataclasses.replace(info, name=HOSTILE + info.name) for info in layer)
        for layer in toy_model.DESCRIPTION.heads
    )
    hostile_dims = (HOSTILE,) + toy_model.DESCRIPTION.dim_names[1:]
    desc = dataclasses.replace(toy_model.DESCRIPTION, heads=hostile_heads, dim_names=hostile_dims)
    with toy_model.registered() as model:
        model.description = desc
        try:
            s = dataclasses.replace(
                st.State(), model="toy", text=f"the {HOSTILE} toy", query=2, ablated=(0, 1), layer=1
            )
            c, _, markup, root = render(s)
        finally:
            del model.description
    assert c.tokens[2] == HOSTILE
    assert "<b>" not in markup and "</b>" not in markup
    text = root.all_text()
    assert HOSTILE in text
    assert any(HOSTILE in b.attrs.get("aria-label", "") for b in toggles(root))
    assert any(HOSTILE in (svg.attrs.get("aria-label", "")) for svg in root.find_all("svg"))
    # the designed model: the sentence's punctuation is escaped too
    s = dataclasses.replace(st.State(), text='The <b>cat</b> & "dog" sat because it was tired', ablated=(0,))
    s = dataclasses.replace(s, query=s.tokens.index("it"))
    _, _, markup, root = render(s)
    assert "<b>" not in markup and "&amp;" in markup
    assert "&" in root.all_text()


def test_well_formed_named_and_light():
    """Every svg is a named image with a screen-reader equivalent; every button is a named button; ids
    only where SVG needs them, unique and named after the panel; the designed panel stays a few kB."""
    with toy_model.registered():
        for model, ablated, layer in (("designed", (0,), 0), ("toy", (0, 4), 1)):
            s = dataclasses.replace(st.State(), model=model, ablated=ablated, layer=layer)
            _, _, markup, root = render(s)
            for svg in root.find_all("svg"):
                assert svg.attrs.get("role") == "img" and svg.attrs.get("aria-label")
            for b in root.find_all("button"):
                assert b.attrs.get("type") == "button" and (words(b) or b.attrs.get("aria-label"))
            assert len(root.find_all("table", class_="sr-only")) == len(root.find_all("svg"))
            ids = [n.attrs["id"] for n in root.iter() if "id" in n.attrs]  # the legend's gradient only
            assert len(ids) == len(set(ids)) and all(i.startswith("ablation-") for i in ids)
            assert not root.find_all("h1") + root.find_all("h2") + root.find_all("h3")
            assert "effect of one head can be small" in words(root)
    assert (
        len(
            page.PANELS["ablation"].render(
                dataclasses.replace(st.State(), ablated=(0,)), st.compute(dataclasses.replace(st.State(), ablated=(0,)))
            )
        )
        < 20_000
    )


def test_the_trained_model_gets_a_compact_grid_of_72_switches_and_a_light_heatmap():
    s = st.apply_event(st.State(), {"type": "set_model", "value": "minilm"})
    s = st.apply_event(
        s, {"type": "set_text", "value": "The trophy didn't fit in the suitcase because it was too big."}
    )
    off = st.flat_head("minilm", 2, 5)
    s = dataclasses.replace(s, layer=4, head=1, ablated=(off,))
    c, intact, markup, root = render(s)
    buttons = toggles(root)
    assert len(buttons) == 72 and len({b.attrs["aria-label"] for b in buttons}) == 72
    assert [b.attrs["data-toggle"] for b in buttons] == [str(k) for k in range(72)]
    assert [b.attrs["aria-pressed"] for b in buttons].count("true") == 1
    assert buttons[off].attrs["aria-pressed"] == "true"
    assert buttons[off].attrs["aria-label"].startswith("Layer 3, head 6:")
    assert words(buttons[off]) == "6"
    assert not root.find_all("ul", data_view="ablation-dims"), "a trained model has no named dims"
    cells = root.find_all("svg", data_view="ablation-diff")[0].find_all("rect", data_delta=True)
    n = len(c.tokens)
    assert len(cells) == n * n
    a_off, a_on = c.run.layers[4].weights[1].tolist(), intact.run.layers[4].weights[1].tolist()
    for r in cells[:: max(1, n // 3)]:
        i, j = int(r.attrs["data-i"]), int(r.attrs["data-j"])
        assert float(r.attrs["data-delta"]) == pytest.approx(a_off[i][j] - a_on[i][j], abs=1e-6)
    assert len(markup) < 90_000
    assert sum(1 for x in root.iter() if not x.tag.startswith("#")) < 1_000
