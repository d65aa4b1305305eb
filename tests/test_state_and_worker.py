"""The UI state's transitions and the worker's dispatch contract, in CPython (no browser)."""
from __future__ import annotations

import dataclasses
import math

import pytest

from attention_explorer.models import designed as model
from attention_explorer import page, state as st, worker
from attention_explorer.tokens import MAX_TOKENS


def test_default_state_is_the_default_sentence_with_the_pronoun_as_query():
    s = st.State()
    assert s.text == model.DEFAULT_TEXT and len(s.tokens) == 8
    assert s.tokens[s.query] == "it"
    assert s.dk_scale == math.sqrt(model.CONFIG.d_head) == 8.0
    assert s.temperature == 1.0


@pytest.mark.parametrize("event, field, expected", [
    ({"type": "set_temperature", "value": "2.5"}, "temperature", 2.5),
    ({"type": "set_temperature", "value": "99"}, "temperature", st.TEMPERATURE_RANGE[1]),
    ({"type": "set_temperature", "value": "0"}, "temperature", st.TEMPERATURE_RANGE[0]),
    ({"type": "set_dk_scale", "value": "3"}, "dk_scale", 3.0),
    ({"type": "set_head", "value": "3"}, "head", 3),
    ({"type": "set_query", "index": "2"}, "query", 2),
    ({"type": "set_causal", "value": True}, "causal", True),
    ({"type": "set_activation", "value": "swiglu"}, "activation", "swiglu"),
    ({"type": "set_stage", "value": "4"}, "stage", 4),
    ({"type": "set_routing_all", "value": True}, "routing_all_heads", True),
    ({"type": "set_demo_dk", "value": "256"}, "demo_dk", 256),
])
def test_each_event_sets_its_field(event, field, expected):
    assert getattr(st.apply_event(st.State(), event), field) == expected


@pytest.mark.parametrize("event, field", [
    ({"type": "set_temperature", "value": "warm"}, "temperature"),
    ({"type": "set_temperature", "value": "nan"}, "temperature"),
    ({"type": "set_head", "value": "9"}, "head"),
    ({"type": "set_query", "index": "-1"}, "query"),
    ({"type": "set_activation", "value": "tanh"}, "activation"),
    ({"type": "preset", "value": "no-such-preset"}, "preset"),
    ({"type": "set_text", "value": ""}, "tokens"),
    ({"type": "set_text", "value": " ".join(["word"] * (MAX_TOKENS + 1))}, "tokens"),
    ({"type": "bogus"}, "event"),
])
def test_bad_events_raise_a_message_for_the_right_field(event, field):
    with pytest.raises(st.InputError) as err:
        st.apply_event(st.State(), event)
    assert err.value.field == field and err.value.message


def test_new_text_keeps_the_query_inside_the_sentence():
    s = dataclasses.replace(st.State(), query=7)
    s2 = st.apply_event(s, {"type": "set_text", "value": "Birds sing"})
    assert s2.query == 1 and s2.tokens == ("Birds", "sing")


def test_every_preset_loads_with_its_suggested_query():
    for p in model.PRESETS:
        s = st.apply_event(st.State(), {"type": "preset", "value": p.id})
        assert s.text == p.text and 0 <= s.query < len(s.tokens)
        assert page.control_values(s)["preset"] == p.id


def test_reset_returns_to_the_default():
    s = st.apply_event(st.apply_event(st.State(), {"type": "set_head", "value": "2"}), {"type": "reset"})
    assert s == st.State()


def test_panels_redraw_only_when_their_inputs_change():
    s = st.State()
    assert page.panels_to_redraw(s, dataclasses.replace(s, demo_dk=128)) == {"why-scale"}
    assert page.panels_to_redraw(s, dataclasses.replace(s, stage=2)) == {"stepper"}
    redraw_t = page.panels_to_redraw(s, dataclasses.replace(s, temperature=2.0))
    assert "attention-matrix" in redraw_t and "token-chips" not in redraw_t and "stepper" not in redraw_t
    assert "token-chips" in page.panels_to_redraw(s, dataclasses.replace(s, query=1))


def test_worker_boot_redraws_only_what_the_link_changes_from_the_prerendered_page():
    res = worker.boot()
    assert res["panels"] == {}, "the pre-rendered default needs no redraw"
    assert res["values"]["tokens"] == model.DEFAULT_TEXT and res["message"] == ""
    res = worker.boot("h=2")
    assert "attention-matrix" in res["panels"] and "token-chips" not in res["panels"]
    assert 'data-head="2"' in res["panels"]["attention-matrix"]
    res = worker.boot("", mode="embed")
    assert set(res["panels"]) == {"embed"}
    worker.boot()


def test_prerendered_page_equals_what_the_worker_would_draw():
    """build.py writes the same markup for the default state as the worker renders."""
    import build

    html = build.render_page()
    for pid, markup in page.render_panels(st.State()).items():
        assert markup in html, f"panel {pid} differs from the pre-rendered page"


def test_worker_dispatch_returns_only_changed_panels():
    worker.boot()
    res = worker.dispatch({"type": "set_temperature", "value": "2"})
    assert "attention-matrix" in res["panels"] and "token-chips" not in res["panels"]
    assert 'data-temperature="2"' in res["panels"]["attention-matrix"]
    assert res["values"]["temperature"] == "2"


def test_worker_bad_input_changes_nothing_and_says_why():
    worker.boot()
    before = worker._state
    res = worker.dispatch({"type": "set_text", "value": "   "})
    assert res["panels"] == {} and res["message"] and res["field"] == "tokens"
    assert worker._state == before


def test_worker_stage_event_asks_to_focus_the_stage_section():
    worker.boot()
    res = worker.dispatch({"type": "set_stage", "value": "5"})
    assert res["focus"] == "stage-ffn" and set(res["panels"]) == {"stepper"}


def test_hostile_text_never_reaches_markup_unescaped():
    worker.boot()
    res = worker.dispatch({"type": "set_text", "value": '<img src=x onerror=alert(1)> "q" & 😀 שלום'})
    assert res["message"] == ""
    for pid, markup in res["panels"].items():
        assert "<img" not in markup, f"panel {pid} inserted reader text as markup"
    chips = res["panels"]["token-chips"]
    assert "&lt;" in chips and "&amp;" in chips and "&quot;" in chips and "😀" in chips and "שלום" in chips
