"""What the lesson's prose states agrees with the model on the page and with the picture beside it.

Three errors a reader saw (issue 35, item 8), each checked where the reader meets it:
- the √d_k card stated the designed model's d_k = 64 beside the trained model, whose d_k is 32;
- the embedding panel said "6 are on for this token" beside 5 feature chips;
- a preset's note still read as a description of the head in view after the reader switched heads.

Expectations come from the models' own descriptions and config (d_model / n_heads, the lexicon's
features, the presets' heads), never from the views under test.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re

import pytest

import toy_model
from attention_explorer import page, state as st
from attention_explorer.models import designed
from markup_tree import Node, by_class, parse
from minilm_files import cached_file

DEMO_DK = 77  # the demo's slider, set to no model's d_k: every d_k the card states is then one or the other


@pytest.fixture
def toy():
    with toy_model.registered() as m:
        yield m


def heads_tile_the_stream(model_id: str) -> int:
    """d_k = d_model / n_heads, from the model's description (every head of a layer has d_k columns)."""
    d = st.description(model_id)
    assert d.d_model % len(d.heads[0]) == 0, "heads tile the residual stream"
    return d.d_model // len(d.heads[0])


def minilm_dk_from_config() -> int:
    """MiniLM's d_k from its pinned config.json: hidden_size / num_attention_heads."""
    config = json.loads(cached_file("config.json").read_text(encoding="utf-8"))
    return config["hidden_size"] // config["num_attention_heads"]


# ---------------------------------------------------------------------------
# the √d_k card states the d_k of the model in use, and no other but the demo's
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def built_page() -> str:
    """index.html as build.py fills it: for the state the page opens with (the designed model)."""
    with open("site/index.html", encoding="utf-8") as f:
        return page.fill_template(f.read(), worker_config={})


def set_text(node, text: str) -> None:
    """node.textContent = text, as the bridge sets the form's texts."""
    leaf = Node("#text", {}, node)
    leaf.text = text
    node.children = [leaf]


def card_as_read(s: st.State):
    """The "Why divide by √d_k?" card as a reader sees it in state s: its slider drawn once at build time,
    refilled from control_values and model_form as the bridge refills it, and its live panel drawn for s."""
    (card,) = parse(built_page()).find_all(id="why-scale")
    form_texts = {**page.model_form(s)["text"], **page.control_values(s)}
    for node in card.iter():
        if node.attrs.get("id") in form_texts and node.tag != "input":  # inputs take a value, not text
            set_text(node, form_texts[node.attrs["id"]])
    (slot,) = card.find_all(data_panel="why-scale")
    slot.children = parse(page.PANELS["why-scale"].render(s, st.compute(s))).children
    return card


def prose(node) -> str:
    """node's text without its formulas (a <math>'s text runs together: "Var(q·k/√dk) = dk/dk = 1" reads
    as "=dkdk=1"); what the formulas say is checked by the tests of why.py."""
    if node.tag == "math":
        return " "
    return node.text + "".join(prose(c) for c in node.children)


def stated_dks(card) -> list[int]:
    """Every d_k the card states in its prose, labels and tooltips: "d_k = N" and "√N"."""
    said = [prose(card)] + [
        v
        for n in card.iter()
        for k, v in n.attrs.items()
        if k in ("aria-label", "title", "data-tip") and v and n.tag != "math"
    ]
    text = " ".join(" ".join(said).split())
    return [int(v) for v in re.findall(r"d\s*[kₖ]\s*=\s*(\d+)", text)] + [
        int(v) for v in re.findall(r"√\s*(\d+)", text)
    ]


def assert_card_states(s: st.State, d_k: int) -> None:
    card = card_as_read(s)
    text = " ".join(prose(card).split())
    assert re.search(r"the model itself uses dk = (\d+)", text).group(1) == str(d_k), text
    assert re.search(r"The model on this page has dk = (\d+) per head", text).group(1) == str(d_k), text
    values = stated_dks(card)
    assert d_k in values and DEMO_DK in values
    assert set(values) == {d_k, DEMO_DK}, f"a d_k that is neither the model's ({d_k}) nor the demo's: {values}"


def test_the_scale_card_states_the_designed_models_dk():
    s = dataclasses.replace(st.State(), demo_dk=DEMO_DK)
    assert_card_states(s, heads_tile_the_stream("designed"))


def test_the_scale_card_states_the_trained_models_dk_after_a_switch():
    """The slider's hint is drawn once for the designed model; after switching, it must say MiniLM's 32."""
    s = st.apply_event(dataclasses.replace(st.State(), demo_dk=DEMO_DK), {"type": "set_model", "value": "minilm"})
    assert heads_tile_the_stream("minilm") == minilm_dk_from_config()
    assert_card_states(s, minilm_dk_from_config())


def test_the_scale_card_states_a_bert_like_toy_models_dk(toy):
    s = st.apply_event(dataclasses.replace(st.State(), demo_dk=DEMO_DK), {"type": "set_model", "value": "toy"})
    assert heads_tile_the_stream("toy") == toy_model.D_MODEL // toy_model.N_HEADS
    assert_card_states(s, toy_model.D_MODEL // toy_model.N_HEADS)


# ---------------------------------------------------------------------------
# the embedding panel counts exactly the feature chips it shows
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("preset_id", [p.id for p in designed.PRESETS])
def test_the_embedding_count_is_the_number_of_chips(preset_id):
    s0 = st.apply_event(st.State(), {"type": "preset", "value": preset_id})
    toks = list(s0.tokens)
    for q, tok in enumerate(toks):
        s = dataclasses.replace(s0, query=q)
        root = parse(page.PANELS["embedding"].render(s, st.compute(s)))
        (note,) = [n for n in by_class(root, "emb-note") if "are on for this token" in n.all_text()]
        said = int(re.search(r"(\d+) are on for this token", note.all_text()).group(1))
        chips = [n.all_text() for n in by_class(root, "emb-tag")]
        assert said == len(chips), f"{preset_id}, token {q} {tok!r}: '{said} are on' beside {len(chips)} chips"
        on = [name for name, value in designed.token_features(tok, q, toks).items() if value]
        assert chips == on, f"{preset_id}, token {q} {tok!r}: the chips name the features that are on"


# ---------------------------------------------------------------------------
# a preset's note says which head it describes when another is in view
# ---------------------------------------------------------------------------


def preset_note(s: st.State):
    (p,) = by_class(parse(page.PANELS["preset-info"].render(s, st.compute(s))), "preset-look-for")
    return p


@pytest.mark.parametrize("preset", designed.PRESETS, ids=lambda p: p.id)
def test_the_preset_note_names_the_head_in_view(preset):
    opened = st.apply_event(st.State(), {"type": "preset", "value": preset.id})
    assert (opened.layer, opened.head) == (preset.layer, preset.head)
    note = preset_note(opened)
    assert not by_class(note, "preset-elsewhere"), "with the preset's own head, the note describes what is shown"
    assert f"Head {preset.head + 1} ({designed.HEADS[preset.head].name})" in note.all_text()
    for h in range(designed.CONFIG.n_heads):
        if h == preset.head:
            continue
        s = st.apply_event(opened, {"type": "set_head", "value": str(h)})
        (elsewhere,) = by_class(preset_note(s), "preset-elsewhere")
        text = elsewhere.all_text()
        assert f"about head {preset.head + 1} ({designed.HEADS[preset.head].name})" in text, text
        assert f"head {h + 1} ({designed.HEADS[h].name}) is shown now" in text, text
        assert f"switch back to head {preset.head + 1}" in text, text


def test_a_trained_presets_note_names_its_layer_and_head():
    """MiniLM's trophy preset is about one head of a later layer: another layer's same head is not it."""
    preset = next(p for p in st.description("minilm").presets if p.layer > 0)
    s = st.apply_event(st.State(), {"type": "set_model", "value": "minilm"})
    s = st.apply_event(s, {"type": "preset", "value": preset.id})
    assert not by_class(preset_note(s), "preset-elsewhere")
    s = st.apply_event(s, {"type": "set_layer", "value": "0"})
    assert s.head == preset.head and s.layer == 0
    (elsewhere,) = by_class(preset_note(s), "preset-elsewhere")
    text = elsewhere.all_text()
    assert f"about layer {preset.layer + 1}, head {preset.head + 1}" in text, text
    assert f"layer 1, head {preset.head + 1}" in text and "is shown now" in text, text
