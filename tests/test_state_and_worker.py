"""The UI state's transitions and the worker's dispatch contract, in CPython (no browser)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from attention_explorer import page, state as st, worker
from attention_explorer.models import designed as model
from attention_explorer.tokens import MAX_TOKENS
from markup_tree import parse


def test_default_state_is_the_default_sentence_with_the_pronoun_as_query():
    s = st.State()
    assert s.text == model.DEFAULT_TEXT and len(s.tokens) == 1 + 8  # the start token <s> + 8 words
    assert s.tokens[0] == "<s>" and s.tokens[s.query] == "it"
    assert s.dk_scale == math.sqrt(model.CONFIG.d_head) == 8.0
    assert s.temperature == 1.0


@pytest.mark.parametrize(
    "event, field, expected",
    [
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
    ],
)
def test_each_event_sets_its_field(event, field, expected):
    assert getattr(st.apply_event(st.State(), event), field) == expected


@pytest.mark.parametrize(
    "event, field",
    [
        ({"type": "set_temperature", "value": "warm"}, "temperature"),
        ({"type": "set_temperature", "value": "nan"}, "temperature"),
        ({"type": "set_head", "value": "9"}, "head"),
        ({"type": "set_query", "index": "-1"}, "query"),
        ({"type": "set_activation", "value": "tanh"}, "activation"),
        ({"type": "preset", "value": "no-such-preset"}, "preset"),
        ({"type": "set_text", "value": ""}, "tokens"),
        ({"type": "set_text", "value": " ".join(["word"] * (MAX_TOKENS + 1))}, "tokens"),
        ({"type": "bogus"}, "event"),
    ],
)
def test_bad_events_raise_a_message_for_the_right_field(event, field):
    with pytest.raises(st.InputError) as err:
        st.apply_event(st.State(), event)
    assert err.value.field == field and err.value.message


def test_new_text_keeps_the_query_inside_the_sentence():
    s = dataclasses.replace(st.State(), query=7)
    s2 = st.apply_event(s, {"type": "set_text", "value": "Birds sing"})
    assert s2.tokens == ("<s>", "Birds", "sing") and s2.query == 2  # no pronoun: the last token


# --------------------------------------------------------------------------- the query follows its word


def retype(s, text):
    return st.apply_event(s, {"type": "set_text", "value": text})


def test_adding_a_word_before_the_query_keeps_it_on_its_word():
    s = st.State()
    assert s.tokens[s.query] == "it"
    s2 = retype(s, "The cat sat down quietly because it was tired")
    assert s2.tokens[s2.query] == "it" and s2.query == s.query + 1, "'it' moved right; the query with it"


def test_the_query_follows_the_same_occurrence_of_a_repeated_word():
    s = retype(st.State(), "the dog saw the cat")
    s = st.apply_event(s, {"type": "set_query", "index": 4})  # the second "the"
    s2 = retype(s, "yesterday the dog saw the cat")
    assert s2.query == 5 and s2.tokens[s2.query] == "the"


def test_editing_elsewhere_leaves_the_query_on_its_word():
    s = st.apply_event(st.State(), {"type": "set_query", "index": 2})  # "cat"
    s2 = retype(s, "The cat sat down because it was very tired")
    assert s2.query == 2 and s2.tokens[2] == "cat"


def test_deleting_the_query_word_falls_back_to_the_first_pronoun():
    s = st.apply_event(st.State(), {"type": "set_query", "index": 2})  # "cat"
    s2 = retype(s, "The dog sat down because it was tired and he smiled")
    assert s2.tokens[s2.query] == "it", "'cat' is gone: the first pronoun takes the query"
    s3 = retype(st.apply_event(st.State(), {"type": "set_query", "index": 2}), "Mary sat down and her dog barked")
    assert s3.tokens[s3.query] == "her", "a possessive stands for a noun too"


def test_no_pronoun_means_the_last_token():
    s = st.State()  # query on "it"
    s2 = retype(s, "The cat sat down because cats do that.")
    assert s2.query == len(s2.tokens) - 1 and s2.tokens[s2.query] == "."


def test_the_query_on_the_start_token_stays_there():
    s = st.apply_event(st.State(), {"type": "set_query", "index": 0})
    assert retype(s, "Something else entirely").query == 0


def test_changing_the_model_keeps_the_query_on_its_word_where_it_can():
    """The toy model's tokens differ ("[CLS]" and whitespace words), yet the query stays on "it";
    a word the other tokenizer splits differently falls back to that model's default."""
    import toy_model

    with toy_model.registered():
        s = st.State()
        toy = st.apply_event(s, {"type": "set_model", "value": "toy"})
        assert toy.tokens[0] == "[CLS]" and toy.tokens[toy.query] == "it"
        back = st.apply_event(toy, {"type": "set_model", "value": "designed"})
        assert back.query == s.query
        s2 = st.apply_event(retype(s, "It is late."), {"type": "set_query", "index": 4})  # "."
        toy2 = st.apply_event(s2, {"type": "set_model", "value": "toy"})
        assert toy2.tokens == ("[CLS]", "It", "is", "late.") and toy2.query == 3  # no "." alone: the last token


def test_every_preset_loads_with_its_head_and_query():
    for p in model.PRESETS:
        s = st.apply_event(st.State(), {"type": "preset", "value": p.id})
        assert s.text == p.text and s.query == p.query and (s.layer, s.head) == (0, p.head)
        assert 0 < s.query < len(s.tokens)
        assert page.control_values(s)["preset"] == p.id


def test_agreement_opens_the_verb_head_on_are():
    """The issue's example: 'Agreement' used to open the coreference head, where 'are' rests on the sink."""
    s = st.apply_event(dataclasses.replace(st.State(), head=3), {"type": "preset", "value": "agreement"})
    assert s.head == 1 and s.tokens[s.query] == "are"
    assert model.HEADS[s.head].name == "Verb and its arguments"


def test_reset_returns_to_the_default():
    s = st.apply_event(st.apply_event(st.State(), {"type": "set_head", "value": "2"}), {"type": "reset"})
    assert s == st.State()


def test_panels_redraw_only_when_their_inputs_change():
    s = st.State()
    assert page.panels_to_redraw(s, dataclasses.replace(s, demo_dk=128)) == {"why-scale"}
    assert page.panels_to_redraw(s, dataclasses.replace(s, stage=2)) == {"stepper", "stage-detail"}
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
    """build.py writes the same markup for the default state as the worker renders at start-up
    (before any download: the test process has the trained model installed, a reader's page not)."""
    import json

    import build
    from attention_explorer import models

    html = build.render_page()
    deferred = json.loads(build.render_prerendered())  # the panels below the first screen
    with models.as_on_first_load():
        drawn = page.render_panels(st.State())
    for pid, markup in drawn.items():
        shipped = markup in html if pid in page.FIRST_SCREEN else deferred[pid] == markup
        assert shipped, f"panel {pid} differs from the pre-rendered page"


def test_worker_dispatch_returns_only_changed_panels():
    worker.boot()
    res = worker.dispatch({"type": "set_temperature", "value": "2"})
    assert "attention-matrix" in res["panels"] and "token-chips" not in res["panels"]
    assert 'data-temperature="2"' in res["panels"]["attention-matrix"]
    assert res["values"]["temperature"] == "2"


def _worker_snapshot():
    return (worker._state, set(worker._live), set(worker._stale), worker._form_sent, worker._visible)


def test_warm_up_rehearses_slider_moves_without_changing_anything_the_page_sees(monkeypatch):
    """The rehearsal (page.rehearse) computes the patches and panels of slider moves from the state, as
    many as its time allows, and throws them away: the worker's state and bookkeeping stay, and the
    reply to the reader's first move is the one it would be without the rehearsal."""
    on_screen = ["token-chips", "query-why", "preset-info", "head-info", "attention-matrix", "stepper", "stage-detail"]
    worker.boot("", "page")
    worker.dispatch({"type": "viewport", "value": on_screen})
    worker.dispatch({"type": "set_temperature", "value": "1.5"})  # the heatmap now drawn live: a move patches it
    untouched = worker.dispatch({"type": "set_temperature", "value": "0.7"})

    worker.boot("", "page")
    worker.dispatch({"type": "viewport", "value": on_screen})
    worker.dispatch({"type": "set_temperature", "value": "1.5"})
    before = _worker_snapshot()
    rehearsed = []
    real_patches = page.render_patches
    monkeypatch.setattr(
        page, "render_patches", lambda s, only: rehearsed.append((s, set(only))) or real_patches(s, only)
    )
    handed_back = worker.warm_up()
    assert _worker_snapshot() == before
    assert len(rehearsed) == len(page.REHEARSAL_MOVES), "CPython rehearses every move well within the time limit"
    assert all(only_ == {"attention-matrix"} for _, only_ in rehearsed), "a move patches the heatmap on screen"
    assert {(s.temperature, s.dk_scale) for s, _ in rehearsed} == {(t, 8.0 * k) for t, k in page.REHEARSAL_MOVES}, (
        "the moves are slider positions around the state's"
    )
    assert all(dataclasses.replace(s, temperature=1.5, dk_scale=8.0) == before[0] for s, _ in rehearsed)
    # the last move's patches go back to the bridge, which rehearses applying them off the page
    last_move = rehearsed[-1][0]
    assert handed_back == real_patches(last_move, {"attention-matrix"})
    temperatures = [op["values"] for op in handed_back["attention-matrix"] if op.get("attr") == "data-temperature"]
    assert temperatures == [f"{last_move.temperature:g}"] and last_move.temperature != 1.5
    assert worker.dispatch({"type": "set_temperature", "value": "0.7"}) == untouched


def test_the_rehearsal_stops_at_its_time_limit_and_never_runs_the_readers_function(monkeypatch):
    calls = []
    monkeypatch.setattr(page, "render_patches", lambda s, only: calls.append(s))
    monkeypatch.setattr(page, "render_panels", lambda s, only=None, live=False: calls.append(s) or {})
    monkeypatch.setattr(page, "REHEARSAL_SECONDS", -1.0)
    page.rehearse(st.State(), None)
    assert calls == []
    monkeypatch.setattr(page, "REHEARSAL_SECONDS", 60.0)
    assert page.rehearse(dataclasses.replace(st.State(), code="def attention(q, k, v): pass", custom=True), None) == {}
    assert calls == []
    page.rehearse(st.State(), None)
    assert len(calls) == 2 * len(page.REHEARSAL_MOVES)


def test_before_the_bridge_reports_the_screen_a_rehearsal_draws_the_workspace_only(monkeypatch):
    """At `ready` the worker does not know yet what is on screen (everything counts as on screen for a
    real move then): a rehearsal drawing all fourteen panels cost ~200 ms a move in Pyodide, so the time
    limit let one move through. It draws the workspace: the first screen and the affinity bars."""
    drawn = set()
    real_panels, real_patches = page.render_panels, page.render_patches
    monkeypatch.setattr(
        page, "render_panels", lambda s, only=None, live=False: drawn.update(only) or real_panels(s, only, live=live)
    )
    monkeypatch.setattr(page, "render_patches", lambda s, only: drawn.update(only) or real_patches(s, only))
    page.rehearse(st.State(), None)
    assert {"attention-matrix", "affinity", "query-why"} <= drawn
    assert drawn <= page.FIRST_SCREEN | {"affinity"}, f"drawn off the first screen: {drawn - page.FIRST_SCREEN}"
    drawn.clear()
    page.rehearse(st.State(), {"layernorm"})  # reported: what is on screen, and the small panels always drawn
    assert "layernorm" in drawn and "attention-matrix" not in drawn and drawn <= {"layernorm"} | page.ALWAYS_DRAWN


def test_worker_bad_input_changes_nothing_and_says_why():
    worker.boot()
    before = worker._state
    res = worker.dispatch({"type": "set_text", "value": "   "})
    assert res["panels"] == {} and res["message"] and res["field"] == "tokens"
    assert worker._state == before


def test_worker_stage_event_asks_to_focus_the_stage_section():
    worker.boot()
    res = worker.dispatch({"type": "set_stage", "value": "5"})
    assert res["focus"] == "stage-ffn" and set(res["panels"]) == {"stepper", "stage-detail"}


def test_hostile_text_never_reaches_markup_unescaped():
    worker.boot()
    res = worker.dispatch({"type": "set_text", "value": '<img src=x onerror=alert(1)> "q" & 😀 שלום'})
    assert res["message"] == ""
    for pid, markup in res["panels"].items():
        assert "<img" not in markup, f"panel {pid} inserted reader text as markup"
    chips = res["panels"]["token-chips"]
    assert "&lt;" in chips and "&amp;" in chips and "&quot;" in chips and "😀" in chips and "שלום" in chips


def test_worker_gives_the_tips_a_live_redraw_left_out():
    """Heatmap cells and LayerNorm dimensions drawn live ask the worker for their tips; anything else, or
    a reference that points nowhere, gets "" (never an exception)."""
    worker.boot("", "page")
    s = worker._state
    c = st.compute(s)
    cell = worker.tip({"panel": "attention-matrix", "i": str(s.query), "j": "2"})
    assert cell.startswith(f"A[{s.query},2]: query “{c.tokens[s.query]}” ({s.query}) → key “{c.tokens[2]}” (2)")
    dim = worker.tip({"panel": "layernorm", "i": "0", "j": "6", "block": "ln2"})
    assert dim.startswith("dimension 6") and "h + FFN(h)" in dim
    for ref in (
        {"panel": "layernorm", "j": "6", "block": "nope"},
        {"panel": "layernorm", "j": "x", "block": "ln1"},
        {"panel": "attention-matrix", "i": "99", "j": "0"},
        {"panel": "ffn", "i": "0", "j": "0"},
        {},
    ):
        assert worker.tip(ref) == ""


def test_live_affinity_bars_ask_for_the_tips_the_pre_render_writes_out():
    """The worker's live affinity panel leaves the bars' derivations to worker.tip; each is the text the
    pre-rendered bar carries (both derive A[query, j])."""
    worker.boot("", "page")
    s = worker._state
    c = st.compute(s)
    static = parse(page.PANELS["affinity"].render(s, c))
    live = parse(page.PANELS["affinity"].render_live(s, c))
    bars = [n for n in static.iter() if n.has_class("bar") and n.tag == "g"]
    live_bars = [n for n in live.iter() if n.has_class("bar") and n.tag == "g"]
    assert len(bars) == len(live_bars) == 3 * len(c.tokens)
    assert all("data-tip-src" in n.attrs and "data-tip" not in n.attrs for n in live_bars)
    for n in bars:
        i, j = n.attrs["data-i"], n.attrs["data-j"]
        assert i == str(s.query)
        assert worker.tip({"panel": "affinity", "i": i, "j": j}) == n.attrs["data-tip"], f"bar {j}"


def test_every_reply_names_the_panels_whose_picture_is_behind_the_state():
    """A reply's "stale" (the bridge marks those panels; a printout leaves their old pictures out): none after
    a plain boot (the page's pre-rendered pictures are the default's); after a new sentence, every panel
    off screen that shows tokens and none on screen; after the bridge reports them all on screen (its
    Print), none, and each came back drawn."""
    on_screen = ["token-chips", "query-why", "preset-info", "head-info", "attention-matrix", "stepper", "stage-detail"]
    assert worker.boot("", "page")["stale"] == []
    assert worker.dispatch({"type": "viewport", "value": on_screen})["stale"] == []
    res = worker.dispatch({"type": "set_text", "value": "The dog ran home because it was hungry"})
    off_screen = set(page.PANELS) - set(on_screen)
    assert {"embedding", "projections", "qk-dot", "ffn"} <= set(res["stale"]) <= off_screen
    assert set(res["panels"]) <= set(on_screen) and "attention-matrix" in res["panels"]
    assert res["stale"] == sorted(res["stale"])
    everything = worker.dispatch({"type": "viewport", "value": list(page.PANELS)})
    assert everything["stale"] == [] and set(res["stale"]) <= set(everything["panels"])
    assert all("hungry" in everything["panels"][p] for p in ("embedding", "qk-dot"))
    # with the screen reported again (after the Print), the panels far below fall behind again
    worker.dispatch({"type": "viewport", "value": on_screen})
    assert "ffn" in worker.dispatch({"type": "set_text", "value": "The fox ran home because it was hungry"})["stale"]
