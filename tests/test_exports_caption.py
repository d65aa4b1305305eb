"""Exports and embeds stand alone: the words an exported figure carries (page.export_caption) and
the embed's frame (page.render_embed) name the sentence as typed, the model and what it is, the
head, T and √d_k, and never let the reader's text become markup.
"""

from __future__ import annotations

import dataclasses
import html
import re

import pytest

from attention_explorer import page, state as st, worker
from attention_explorer.models import designed as model
from markup_tree import parse

HOSTILE = 'Sarah said "<script>alert(1)</script>" & it\'s <b>fine</b>'
STATES = {
    "default": st.State(),
    "another head": dataclasses.replace(st.State(), head=2),
    "T and √d_k moved": dataclasses.replace(st.State(), temperature=0.5, dk_scale=4.0),
    "causal": dataclasses.replace(st.State(), causal=True, head=1),
}


def hostile_state():
    return st.apply_event(st.State(), {"type": "set_text", "value": HOSTILE})


def test_the_hostile_sentence_is_one_the_model_accepts():
    """Otherwise the escaping tests below would test nothing."""
    s = hostile_state()
    assert s.text == HOSTILE and "<" in "".join(s.tokens)


@pytest.mark.parametrize("name", [*STATES, "hostile"])
def test_the_attention_matrix_caption_names_everything_the_picture_depends_on(name):
    s = hostile_state() if name == "hostile" else STATES[name]
    cap = page.export_caption(s, "attention-matrix")
    assert set(cap) == {"title", "caption", "note"}
    assert all(isinstance(v, str) for v in cap.values()), "plain text only crosses to the page"
    assert cap["title"] == page.EMBEDDABLE["attention-matrix"]
    text = cap["caption"]
    assert f"“{s.text}”" in text, "the sentence exactly as typed"
    assert model.DESCRIPTION.name in text
    assert f"Head {s.head + 1}: {model.HEADS[s.head].name}" in text
    assert f"T = {s.temperature:g}" in text and f"√d_k = {s.dk_scale:g}" in text
    assert f"divided by √d_k·T = {s.temperature * s.dk_scale:g}" in text
    assert ("causal mask on" in text) == s.causal
    assert ("the model's own: 8" in text) == (s.dk_scale != 8.0), "a moved √d_k says what the model's own is"
    assert "Layer" not in text, "a one-layer model needs no layer number"
    assert "not learned from data" in cap["note"], "the designed model says it was designed, not trained"


def test_every_exportable_panel_has_a_caption_with_its_title_and_the_model():
    s = STATES["causal"]
    for pid, title in page.EMBEDDABLE.items():
        if pid in page.TEXT_ONLY:  # the code: a link and an embed, no picture to export
            with pytest.raises(ValueError):
                page.export_caption(s, pid)
            continue
        cap = page.export_caption(s, pid)
        assert cap["title"] == title
        assert model.DESCRIPTION.name in cap["caption"]
        if "text" in page.PANELS[pid].depends:
            assert f"“{s.text}”" in cap["caption"], pid
        if "head" in page.PANELS[pid].depends:
            assert model.HEADS[s.head].name in cap["caption"], pid


def test_a_caption_claims_no_setting_its_picture_ignores():
    """The embedding does not depend on the head or T; the √d_k demo is random vectors, not the sentence."""
    s = STATES["causal"]
    emb = page.export_caption(s, "embedding")["caption"]
    assert "Head" not in emb and "T =" not in emb and "causal" not in emb
    demo = page.export_caption(s, "why-scale")
    assert s.text not in demo["caption"] and "Random vectors" in demo["caption"]
    assert "d_k = 64" in demo["caption"]
    multi = page.export_caption(s, "head-multiples")["caption"]
    assert f"selected Head {s.head + 1}" in multi, "all heads are drawn: the caption names the outlined one"
    ffn = page.export_caption(dataclasses.replace(s, activation="relu"), "ffn")["caption"]
    assert "activation ReLU" in ffn


def test_a_model_with_several_layers_names_the_layer():
    import toy_model

    with toy_model.registered():
        s = dataclasses.replace(st.apply_event(st.State(), {"type": "set_model", "value": "toy"}), layer=1)
        cap = page.export_caption(s, "attention-matrix")
        assert "Layer 2 of 2" in cap["caption"] and "L2 head 1" in cap["caption"]
        assert "Toy model" in cap["caption"] and cap["note"] == "Random weights, for tests."


def test_an_unknown_panel_is_refused():
    with pytest.raises(ValueError):
        page.export_caption(st.State(), "token-chips")  # a panel, but not one with export buttons


def test_the_worker_exports_the_caption_for_its_state():
    assert "export_caption" in worker.__export__
    worker.boot("h=3&T=2", "page")
    cap = worker.export_caption("attention-matrix")
    assert model.HEADS[3].name in cap["caption"] and "T = 2" in cap["caption"]


# ---------------------------------------------------------------- the embed's frame


def _frame(state) -> str:
    return page.render_embed(state)["embed"]


def _head_text(markup: str) -> str:
    """The text of the frame's head and about line (before the panel), tags stripped, entities decoded."""
    head = markup.split('<div class="embed-chips">', 1)[0]
    return html.unescape(re.sub(r"<[^>]+>", "", head))


@pytest.mark.parametrize("name", list(STATES))
def test_an_embed_names_its_head_and_says_the_model_is_designed_not_trained(name):
    s = STATES[name]
    text = _head_text(_frame(s))
    assert page.EMBEDDABLE["attention-matrix"] in text
    assert f"Head {s.head + 1}: {model.HEADS[s.head].name}" in text
    assert model.DESCRIPTION.name in text
    assert "designed by hand, not learned from data" in text
    assert "Open in Attention Explorer" in text


def test_an_embed_lists_the_settings_that_differ_from_the_defaults():
    assert "Not the defaults" not in _head_text(_frame(st.State()))
    text = _head_text(_frame(dataclasses.replace(st.State(), temperature=0.5, dk_scale=4.0, causal=True)))
    assert "T = 0.5" in text and "√d_k = 4 (the model's own: 8)" in text and "causal mask on" in text


def test_an_embed_of_another_panel_names_only_what_that_panel_shows():
    text = _head_text(_frame(dataclasses.replace(st.State(), panel="embedding", head=2)))
    assert page.EMBEDDABLE["embedding"] in text and "Head" not in text
    assert "not learned from data" in text


def test_the_embed_frame_escapes_the_sentence_and_parses():
    markup = _frame(hostile_state())
    assert "<script>" not in markup and "<b>fine</b>" not in markup
    parse(markup)  # well-formed: every element closed, attributes quoted


def test_an_embed_snippet_names_its_panel():
    snippet = page.embed_snippet(dataclasses.replace(st.State(), panel="routing"), "https://x.example/ae/")
    assert 'title="Attention Explorer: Context vector and routing"' in snippet
