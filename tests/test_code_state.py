"""Your own attention function in the state, the worker and links (issue 12), in CPython.

The expected weights are computed here from the trace's own q and k with plain loops, never read
from the views or the reader's-function machinery.
"""

from __future__ import annotations

import html as html_mod
import math
import re

import pytest

from attention_explorer import custom_attention, page, permalink, state as st, worker
from markup_tree import parse

DEFAULT = st.State()
NO_SCALING = next(e for e in custom_attention.EDITS if e.id == "no-scaling").source


def run(s, source):
    return st.apply_event(s, {"type": "run_code", "value": source})


def softmax_rows(q, k, divide_by):
    """softmax(q kᵀ / divide_by) row by row, written out."""
    out = []
    for qi in q.tolist():
        logits = [sum(a * b for a, b in zip(qi, kj)) / divide_by for kj in k.tolist()]
        m = max(logits)
        e = [math.exp(x - m) for x in logits]
        out.append([x / sum(e) for x in e])
    return out


def test_run_switches_the_readers_function_on_for_every_head():
    s = run(DEFAULT, NO_SCALING)
    assert s.custom and s.code == NO_SCALING
    trace = st.compute(s).trace
    assert trace.custom
    for h in range(trace.n_heads):  # no scaling: softmax(q kᵀ / T), T = 1
        want = softmax_rows(trace.q[h], trace.k[h], s.temperature)
        for got_row, want_row in zip(trace.weights[h].tolist(), want):
            assert got_row == pytest.approx(want_row, abs=1e-9)
    back = st.apply_event(s, {"type": "reset_code"})
    assert not back.custom and back.code == "" and not st.compute(back).trace.custom


def test_the_original_source_run_as_the_readers_gives_the_pages_numbers():
    mine = st.compute(run(DEFAULT, custom_attention.SOURCE)).trace
    own = st.compute(DEFAULT).trace
    assert abs(mine.weights - own.weights).max() < 1e-12 and abs(mine.out - own.out).max() < 1e-12


def test_a_syntax_error_is_refused_with_its_line_and_the_state_is_kept():
    with pytest.raises(st.InputError) as exc:
        run(
            DEFAULT,
            custom_attention.SOURCE.replace(
                "def attention(q, k, v, mask, temperature, scale):", "def attention(q, k, v, mask, temperature, scale)"
            ),
        )
    assert exc.value.field == "attention-code" and "line" in exc.value.message


def test_the_worker_keeps_the_last_good_view_when_the_function_returns_nan():
    worker.boot("", "page")
    good = worker.dispatch({"type": "run_code", "value": NO_SCALING})
    assert not good["message"] and "attention-matrix" in set(good["panels"]) | set(good["patches"])
    nan = custom_attention.SOURCE.replace("return z, weights", "return z, weights * np.nan")
    bad = worker.dispatch({"type": "run_code", "value": nan})
    assert bad["field"] == "attention-code" and "NaN" in bad["message"] and not bad["panels"]
    assert worker._state.code == NO_SCALING, "the last good function stays in use"
    assert 'data-custom="true"' in page.PANELS["attention-matrix"].render(worker._state, st.compute(worker._state))


def test_a_link_carries_the_code_compressed_but_never_runs_it():
    s = run(DEFAULT, NO_SCALING)
    frag = permalink.encode(s)
    assert "code=" in frag and "def attention" not in frag
    decoded, notices = permalink.decode(frag)
    assert decoded.code == NO_SCALING and not decoded.custom
    assert notices == [permalink.CODE_NOTICE]
    assert not st.compute(decoded).trace.custom
    # a hostile or broken code value is ignored with a notice; a huge one is refused unread
    for bad in ("code=%%%", "code=AAAA", "code=" + "A" * 5000):
        state, notes = permalink.decode(bad)
        assert state.code == "" and any("attention function" in n for n in notes)


def test_the_editor_the_status_and_the_embed_say_which_function_is_in_use():
    html = page.fill_template(
        open("site/index.html", encoding="utf-8").read(),
        worker_config={},
        editor_files={"view": "./v.js", "python": "./p.js"},
    )
    area = re.search(r'<textarea[^>]*id="attention-code"[^>]*>(.*?)</textarea>', html, re.S).group(1)
    assert html_mod.unescape(area) == custom_attention.SOURCE
    s = run(DEFAULT, NO_SCALING)
    status = parse(page.PANELS["code"].render(s, st.compute(s)))
    assert status.find_all(data_view="code-status")[0].attrs["data-custom"] == "true"
    assert "your attention function" in page.export_caption(s, "attention-matrix")["caption"]
    embed = page.render_embed(st.State(code="<b>x</b>", panel="code"))["embed"]
    assert "&lt;b&gt;x&lt;/b&gt;" in embed and "<b>x</b>" not in embed and "Run it in the explorer" in embed


def test_a_z_that_is_not_the_weighted_sum_is_said_so_where_the_sum_is_drawn():
    doubled = custom_attention.SOURCE.replace("return z, weights", "return 2 * z, weights")
    s = run(DEFAULT, doubled)
    c = st.compute(s)
    assert abs(c.trace.head_outputs - 2 * (c.trace.weights @ c.trace.v)).max() < 1e-12 or c.trace.head_on is not None
    routing = page.PANELS["routing"].render(s, c)
    assert "not the weighted sum" in routing
    assert "not the weighted sum" not in page.PANELS["routing"].render(
        run(DEFAULT, NO_SCALING), st.compute(run(DEFAULT, NO_SCALING))
    )


def test_under_the_editor_one_line_says_what_run_means():
    """A reader pasting code from elsewhere is told that it runs with the page's rights (issue 38)."""
    html = page.fill_template(
        open("site/index.html", encoding="utf-8").read(),
        worker_config={},
        editor_files={"view": "./v.js", "python": "./p.js"},
    )
    line = re.search(r'<p id="code-rights"[^>]*>(.*?)</p>', html, re.S)
    assert line, "the line is on the page, under the editor"
    text = html_mod.unescape(line.group(1))
    assert "network" in text and "rights" in text and html.index('id="code-rights"') > html.index('id="run-code"')
