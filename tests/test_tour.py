"""The guided tour (issue 35, item 4): steps that set the page up, questions answered from the live model.

Expectations are worked out here from the trace's raw scores q·k (independent of the softmax, the
temperature and the scale the page applied) with a softmax written out, never copied from tour.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from attention_explorer import fields, page, permalink, state as st, tour, worker
from attention_explorer.views.markup import percent_label
from fresh_python import printed_lines
from markup_tree import parse

STEP_IDS = list(range(len(tour.STEPS)))
ASKING = [i for i in STEP_IDS if tour.STEPS[i].ask is not None]


def at_step(i, **changes):
    s = st.apply_event(st.State(), {"type": "tour_step", "value": i})
    for name, value in changes.items():
        s = st.apply_event(s, {"type": fields.BY_NAME[name].event, "value": value})
    return s


def row_from_scores(s, temperature=None, scale=None):
    """The query's weights in the selected head, from the raw scores: softmax(q·k / (scale · T))."""
    trace = st.compute(s).trace
    z = trace.scores[s.head, s.query] / ((scale or s.dk_scale) * (temperature or s.temperature))
    e = np.exp(z - z.max())
    return e / e.sum()


def pct(w):
    return f"{percent_label(w)} %"


def test_six_steps_or_more_four_questions_or_more_each_text_three_sentences_at_most():
    assert len(tour.STEPS) >= 6 and len(ASKING) >= 4
    for step in tour.STEPS:
        assert step.panel in page.PANELS
        sentences = [x for x in re.split(r"(?<=[.!?])\s+(?=[A-Z'(])", step.text.strip()) if x]
        assert 1 <= len(sentences) <= 3, (step.title, sentences)
    # from a sentence to the feed-forward network
    assert tour.STEPS[0].panel == "token-chips" and tour.STEPS[-1].panel == "ffn"


@pytest.mark.parametrize("i", STEP_IDS)
def test_a_step_sets_the_page_up_from_the_designed_models_default(i):
    reader = st.apply_event(st.State(), {"type": "set_temperature", "value": "3"})  # what the reader had
    s = st.apply_event(reader, {"type": "tour_step", "value": i})
    setup = tour.STEPS[i].setup
    assert s.tour == i and s.tour_answer == -1 and s.model == "designed"
    assert s.temperature == setup.get("temperature", 1.0) and s.dk_scale == st.description("designed").true_dk_scale
    for name, value in setup.items():
        if name == "query_word":
            assert s.tokens[s.query] == value
        else:
            assert getattr(s, name) == value, name


@pytest.mark.parametrize("i", STEP_IDS)
def test_a_link_opens_the_step_with_what_the_reader_changed_since(i):
    s = at_step(i, head=2)
    back, notices = permalink.decode(permalink.encode(s))
    assert back == s and not notices
    bare, notices = permalink.decode(f"tour={i}")
    assert bare == at_step(i) and not notices


def test_leaving_and_a_step_out_of_range():
    s = at_step(3)
    assert st.apply_event(s, {"type": "tour_step", "value": -1}).tour == -1
    with pytest.raises(st.InputError, match="tour step"):
        st.apply_event(s, {"type": "tour_step", "value": len(tour.STEPS)})
    _, notices = permalink.decode(f"tour={len(tour.STEPS)}")
    assert notices  # said, not silently dropped


def question_of(s):
    return tour.question(s, st.compute(s))


def test_which_word_is_the_rows_largest_weight_whatever_the_reader_chose():
    for i in [i for i in ASKING if tour.STEPS[i].ask == "which_word"]:
        for head in range(4):
            for query in (3, 6, 8):
                s = at_step(i, head=head, query=query)
                q = question_of(s)
                row = row_from_scores(s)
                words = [a.strip("'") for a in q.answers]
                assert words[q.right] == s.tokens[int(row.argmax())]
                for k, w in enumerate(words):  # each feedback states that word's own weight
                    j = s.tokens.index(w)
                    assert pct(row[j]) in q.feedback[k]


def test_the_temperature_question_is_answered_at_the_sliders_largest_t():
    i = next(i for i in ASKING if tour.STEPS[i].ask == "hot_limit")
    hot = fields.BY_NAME["temperature"].limits[1]
    for query in (1, 6):
        s = at_step(i, query=query)
        q = question_of(s)
        row = row_from_scores(s, temperature=hot)
        want = 0 if row.max() > 0.995 else 2 if np.ptp(row) < 0.005 else 1
        assert q.right == want
        assert pct(row.max()) in q.feedback[0] and pct(1 / len(row)) in q.feedback[0]


def test_the_scale_question_compares_the_row_at_the_largest_divisor():
    i = next(i for i in ASKING if tour.STEPS[i].ask == "large_scale")
    hi = fields.BY_NAME["dk_scale"].limits[1]
    s = at_step(i)
    q = question_of(s)
    now, big = row_from_scores(s), row_from_scores(s, scale=hi)
    assert q.answers[q.right].startswith("Flatter" if big.max() < now.max() else "Sharper")
    assert pct(now.max()) in q.feedback[0] and pct(big.max()) in q.feedback[0]


def test_the_tokens_and_layernorm_questions_read_the_trace():
    s = at_step(0, text="Dogs bark at night")
    q = question_of(s)
    assert q.answers[q.right] == str(len(s.tokens)) == "5"
    i = next(i for i in ASKING if tour.STEPS[i].ask == "layernorm_mean")
    s = at_step(i)
    q = question_of(s)
    ln = st.compute(s).trace.ln1[s.query]
    assert abs(ln.mean()) < 1e-6 and abs(ln.std() - 1) < 1e-3 and q.answers[q.right].startswith("Mean 0")


def test_the_card_shows_the_question_then_the_chosen_answers_feedback():
    s = at_step(1)
    tree = parse(page.render_panels(s, {"tour"})["tour"])
    answers = tree.find_all("button", data_answer=True)
    q = question_of(s)
    assert [b.all_text() for b in answers] == list(q.answers)
    assert all(b.attrs["aria-pressed"] == "false" for b in answers)
    assert tree.find_all(data_feedback=True)[0].all_text() == ""
    assert tree.find_all(id="tour-next")[0].attrs["data-value"] == "2"
    for k in range(len(q.answers)):
        s2 = st.apply_event(s, {"type": "tour_answer", "value": k})
        tree = parse(page.render_panels(s2, {"tour"})["tour"])
        feedback = tree.find_all(data_feedback=True)[0].all_text()
        assert feedback.endswith(q.feedback[k])
        assert feedback.startswith("Right:") == (k == q.right)
        if k != q.right:
            assert feedback.startswith(f"Not quite, it is {q.answers[q.right]}:")
        pressed = [b for b in tree.find_all("button", data_answer=True) if b.attrs["aria-pressed"] == "true"]
        assert [b.attrs["data-answer"] for b in pressed] == [str(k)]


def test_no_tour_shows_the_start_button_and_the_last_step_finishes():
    tree = parse(page.render_panels(st.State(), {"tour"})["tour"])
    start = tree.find_all(id="tour-start")[0]
    assert (start.attrs["data-event"], start.attrs["data-value"]) == ("tour_step", "0")
    last = parse(page.render_panels(at_step(len(tour.STEPS) - 1), {"tour"})["tour"])
    nxt = last.find_all(id="tour-next")[0]
    assert nxt.all_text() == "Finish" and nxt.attrs["data-value"] == "-1"


def test_the_card_escapes_the_readers_words():
    s = at_step(1, text="The <b>cat</b> sat because it was tired")
    markup = page.render_panels(s, {"tour"})["tour"]
    assert "<b>" not in markup


def test_the_worker_brings_each_steps_panel_into_view_and_redraws_the_card():
    worker.boot()
    for i in STEP_IDS:
        reply = worker.dispatch({"type": "tour_step", "value": i})
        assert reply["focus"] == tour.STEPS[i].panel
        assert f'data-tour-step="{i}"' in reply["panels"]["tour"]
    reply = worker.dispatch({"type": "tour_step", "value": -1})
    assert "tour-start" in reply["panels"]["tour"] and reply["focus"] == ""
    reply = worker.dispatch({"type": "load_hash", "value": "tour=4"})
    assert reply["focus"] == tour.STEPS[4].panel


def test_the_card_is_redrawn_in_a_tour_and_left_alone_without_one():
    without = st.State()
    assert "tour" not in page.panels_to_redraw(
        without, st.apply_event(without, {"type": "set_temperature", "value": "2"})
    )
    s = at_step(3)
    assert "tour" in page.panels_to_redraw(s, st.apply_event(s, {"type": "set_temperature", "value": "2"}))
    assert "tour" in page.panels_to_redraw(without, s) and "tour" in page.panels_to_redraw(s, without)


def test_each_step_names_a_question_the_tour_builds_and_each_question_is_asked():
    named = {s.ask for s in tour.STEPS if s.ask is not None}
    assert named == set(tour.QUESTIONS)


def test_start_up_imports_no_tour_module_and_a_tour_step_does():
    """The worker's start-up (a plain link) reads none of the tour: state imports tour_steps at a reader's
    first tour step, and tour (above state) only the card's view does."""
    script = (
        "import sys\n"
        "from attention_explorer import worker\n"
        "worker.boot('', 'page')\n"
        "print(sorted(m for m in ('attention_explorer.tour', 'attention_explorer.tour_steps') if m in sys.modules))\n"
        "worker.dispatch({'type': 'tour_step', 'value': 1})\n"
        "print('attention_explorer.tour' in sys.modules and 'attention_explorer.tour_steps' in sys.modules)\n"
    )
    at_start, after_step = printed_lines(script)
    assert at_start == "[]", f"imported at start-up: {at_start}"
    assert after_step == "True"
