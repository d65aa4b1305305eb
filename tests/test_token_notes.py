"""Tokenisation explained where it shows (issue 35, item 6): the chips' notes and marks.

The trained model: word pieces (##), [UNK], lowercasing and dropped accents, each said only when the
sentence shows it. The designed model: words its English lexicon lacks are marked and named as guesses.
"""

from __future__ import annotations

import pytest

from attention_explorer import page, state as st
from markup_tree import parse


def chips_panel(model: str, text: str):
    s = st.State() if model == "designed" else st.apply_event(st.State(), {"type": "set_model", "value": model})
    s = st.apply_event(s, {"type": "set_text", "value": text})
    return s, parse(page.render_panels(s, {"token-chips"})["token-chips"])


def notes(tree) -> list[str]:
    return [p.all_text() for p in tree.find_all("p") if p.has_class("token-note")]


def test_made_up_and_french_words_are_marked_as_guesses_and_named():
    s, tree = chips_panel("designed", "Zorbles chase the cat")
    marked = [c for c in tree.find_all("button") if c.has_class("is-guessed")]
    assert [s.tokens[int(c.attrs["data-token-index"])] for c in marked] == ["Zorbles"]
    (note,) = notes(tree)
    assert "“Zorbles”" in note and "guesses" in note and "English" in note and "“cat”" not in note
    _, tree = chips_panel("designed", "The cat sat down because it was tired")
    assert notes(tree) == [] and not [c for c in tree.find_all("button") if c.has_class("is-guessed")]


def test_the_trained_model_says_what_its_tokenizer_did_only_when_it_did():
    s, tree = chips_panel("minilm", "The café served unbelievably good 🍕.")
    said = " ".join(notes(tree))
    assert any(t.startswith("##") for t in s.tokens) and "##" in said
    assert "[UNK]" in s.tokens and "[UNK] is a sign" in said
    assert "lowercases" in said and "drops accents" in said
    s, tree = chips_panel("minilm", "the cat sat on the mat.")
    assert not any(t.startswith("##") or t == "[UNK]" for t in s.tokens)
    assert notes(tree) == []
    _, tree = chips_panel("minilm", "The cat sat on the mat.")
    (note,) = notes(tree)
    assert "lowercases" in note and "accents" not in note


@pytest.mark.parametrize("text", ["<b>Zorbles</b> & co", "L'<i>été</i> 🍕"])
def test_the_notes_escape_the_readers_words(text):
    for model in ("designed", "minilm"):
        _, tree = chips_panel(model, text)
        assert not tree.find_all("b") and not tree.find_all("i")
