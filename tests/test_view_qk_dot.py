"""The Q·K breakdown and the one-line reason under the query (views/qk_dot.py).

Promised to readers: a raw score is shown as the sum it is, term by term, and the
listed terms plus "all other dimensions" add up to the score the heatmap uses;
each q and k entry is traced back to the input dimensions it comes from; the key
is the query's strongest unless the reader picks one.
"""

from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction

import numpy as np
import pytest

import toy_model
from attention_explorer import permalink, state as st
from attention_explorer.views import qk_dot
from markup_tree import parse

SENTENCES = (
    "The cat sat down because it was tired",
    "The big brown dog chased three small cats",
    "Mary told John that she would call him tomorrow",
)


def _panel(s):
    c = st.compute(s)
    (root,) = parse(qk_dot.render(s, c)).find_all("div", data_view="qk-dot")
    return c, root


def _states(model="designed"):
    base = (
        dataclasses.replace(st.State(), model=model)
        if model == "designed"
        else st.apply_event(st.State(), {"type": "set_model", "value": model})
    )
    for text in SENTENCES:
        s = st.apply_event(base, {"type": "set_text", "value": text})
        c = st.compute(s)
        for h in range(len(c.heads)):
            for layer in range(c.model.n_layers):
                for i in range(len(c.tokens)):
                    yield dataclasses.replace(s, head=h, layer=layer, query=i)


def _check_terms(s):
    c, root = _panel(s)
    tr, h = c.trace, s.head
    i, j = int(root.attrs["data-i"]), int(root.attrs["data-j"])
    score = float(root.attrs["data-score"])
    assert i == s.query
    assert score == pytest.approx(float(np.dot(tr.q[h, i], tr.k[h, j])), rel=1e-9, abs=1e-9)
    assert score == pytest.approx(float(tr.scores[h, i, j]), rel=1e-9, abs=1e-9)
    terms = root.find_all(data_term=True)
    values = [float(t.attrs["data-value"]) for t in terms]
    assert sum(values) == pytest.approx(score, rel=1e-9, abs=1e-9), "the listed terms add up to the score"
    for t in terms:
        d = t.attrs["data-dim"]
        if d != "other":
            assert float(t.attrs["data-value"]) == pytest.approx(tr.q[h, i, int(d)] * tr.k[h, j, int(d)], abs=1e-9)
    assert sum(t.attrs["data-dim"] == "other" for t in terms) <= 1
    return c, root, i, j


def test_terms_add_up_to_the_score_for_every_query_and_head_of_the_designed_model():
    for s in _states():
        _check_terms(s)


def test_terms_add_up_on_every_layer_and_head_of_another_model():
    with toy_model.registered():
        for s in _states("toy"):
            _check_terms(s)


def test_the_default_key_is_the_querys_strongest():
    for s in _states():
        c, root, i, j = _check_terms(s)
        row = np.where(c.trace.mask[i], c.trace.weights[s.head, i], -1.0)
        assert row[j] == row.max(), f"query {i} head {s.head}: key {j} is not the strongest"
        assert root.attrs["data-auto"] == "true"


def test_the_readers_key_is_used_and_a_masked_one_falls_back():
    s = st.State()
    n = len(s.tokens)
    for j in range(n):
        picked = st.apply_event(s, {"type": "set_key", "value": str(j)})
        _, root, _, shown = _check_terms(picked)
        assert shown == j and root.attrs["data-auto"] == "false"
    causal = dataclasses.replace(s, causal=True, query=1, key=n - 1)  # a future key is hidden by the mask
    c, root, i, shown = _check_terms(causal)
    assert shown <= 1 and root.attrs["data-auto"] == "true"


def test_listed_dimensions_are_the_large_ones_and_each_q_k_entry_is_traced_to_its_inputs():
    s = st.State()
    c, root, i, j = _check_terms(s)
    h = s.head
    terms = c.trace.q[h, i] * c.trace.k[h, j]
    total = np.abs(terms).sum()
    listed = [int(t.attrs["data-dim"]) for t in root.find_all(data_term=True) if t.attrs["data-dim"] != "other"]
    assert listed, "the default pair has a dominant dimension"
    assert all(abs(terms[d]) >= 0.02 * total for d in listed)
    unlisted = [d for d in range(len(terms)) if d not in listed]
    if len(listed) < qk_dot.MAX_LISTED:
        assert all(abs(terms[d]) < 0.02 * total for d in unlisted), "every dimension over 2 % is listed"
    # the k entry's input dimensions: x_j[a] * W_K[a, col], read back from the text "name value + ... = total"
    row = next(t for t in root.find_all(data_term=True) if t.attrs["data-dim"] == str(listed[0]))
    k_line = [ln for ln in row.find_all("span", class_="qk-src-line") if ln.all_text().startswith("k")][0].all_text()
    col = h * c.trace.d_head + listed[0]
    contrib = c.trace.x[j] * c.params.w_k[:, col]
    named = [c.model.dim_names[a] for a in np.flatnonzero(contrib)]
    for name in named[: qk_dot.MAX_SOURCES]:
        assert name in k_line, f"{name!r} feeds k but is not named in {k_line!r}"
    total_text = k_line.rsplit("=", 1)[1].strip().replace("−", "-")
    assert float(total_text) == pytest.approx(c.trace.k[h, j, listed[0]], abs=0.006)


def test_key_events_pick_cells_and_follow_the_query():
    s = st.State()
    s2 = st.apply_event(s, {"type": "pick_cell", "value": "2,1"})
    assert (s2.query, s2.key) == (2, 1)
    s3 = st.apply_event(s2, {"type": "set_query", "index": "3"})
    assert (s3.query, s3.key) == (3, -1), "a new query shows its strongest key again"
    assert st.apply_event(s2, {"type": "set_key", "value": "-1"}).key == -1
    for bad in ("99", "x", "-2"):
        with pytest.raises(st.InputError):
            st.apply_event(s, {"type": "set_key", "value": bad})
    with pytest.raises(st.InputError):
        st.apply_event(s, {"type": "pick_cell", "value": "1"})


def test_permalinks_keep_the_chosen_key():
    s = dataclasses.replace(st.State(), key=2)
    frag = permalink.encode(s)
    assert "k=2" in frag and permalink.decode(frag) == (s, [])


def test_heatmap_cells_and_affinity_bars_choose_the_key():
    from attention_explorer import page

    panels = page.render_panels(st.State())
    s = st.State()
    (group,) = parse(panels["attention-matrix"]).find_all("g", data_cell_event="pick_cell")  # click: pick_cell "i,j"
    cells = group.find_all("rect", data_i=True)
    assert len(cells) == len(s.tokens) ** 2
    # hovering a cell of the query's row picks its column as the key: the group names the event and the row
    assert group.attrs.get("data-hover-event") == "set_key" and group.attrs.get("data-hover-row") == str(s.query)
    bars = parse(panels["affinity"]).find_all("g", data_event="set_key")
    assert {b.attrs["data-value"] for b in bars} == {str(j) for j in range(len(s.tokens))}


def test_the_why_line_names_the_strongest_key_and_what_carries_it():
    for s in _states():
        if s.query % 3:
            continue  # a sample keeps this quick
        c = st.compute(s)
        (root,) = parse(qk_dot.why_line(s, c)).find_all("p", data_view="query-why")
        text = root.all_text()
        i, h, tr = s.query, s.head, c.trace
        j = int(np.argmax(np.where(tr.mask[i], tr.weights[h, i], -1.0)))
        assert int(root.attrs["data-j"]) == j
        assert f"“{c.tokens[j]}”" in text and c.heads[h].name in text
        pct = re.search(r"\((\d+\.\d) %\)", text)
        assert pct and float(pct.group(1)) == pytest.approx(100 * tr.weights[h, i, j], abs=0.05 + 1e-9)


def test_the_why_line_calls_a_special_token_special():
    with toy_model.registered():
        found = False
        for s2 in _states("toy"):
            c = st.compute(s2)
            tr, i, h = c.trace, s2.query, s2.head
            j = int(np.argmax(np.where(tr.mask[i], tr.weights[h, i], -1.0)))
            if j in c.run.special:
                assert "special token" in qk_dot.why_line(s2, c)
                found = True
                break
        assert found, "the toy model's [CLS] is somebody's strongest key"


@pytest.mark.parametrize(
    "weights",
    [
        [1 / 3] * 3,
        [0.125] * 8,
        [0.994, 0.003, 0.003],
        [0.0, 0.0],
        [0.5, 0.5],
        list(np.random.default_rng(3).dirichlet(np.ones(17))),
    ],
)
def test_percent_labels_round_each_weight_on_its_own(weights):
    """This test used to assert that a row's whole percentages add up to 100 (largest remainder): that was
    the bug of issue 35 ([1/3] * 3 read 34 33 33, [0.125] * 8 read 13 13 13 13 12 12 12 12). Each label is
    now its own weight rounded half up, "<1" above 0 but under 0.5 %; tests/test_rounding.py has the rest."""
    from attention_explorer.views.markup import percent_labels

    got = percent_labels(weights)
    for g, w in zip(got, weights):
        q = Fraction(float(w)) * 100  # the exact value of 100·w
        if g == "<1":
            assert 0 < q < Fraction(1, 2)
        else:
            assert g == str(math.floor(q + Fraction(1, 2))) and abs(int(g) - q) <= Fraction(1, 2)
    for v in set(weights):
        assert len({g for g, w in zip(got, weights) if w == v}) == 1, "equal weights, equal labels"


def test_the_w_o_sentence_is_true_for_each_models_weights():
    """'Each output column mixes all heads' was false for the designed W_O: the sentence is read from W_O."""
    from attention_explorer.views import multihead

    for model_id in ("designed", "toy"):
        with toy_model.registered():
            s = st.apply_event(st.State(), {"type": "set_model", "value": model_id})
            c = st.compute(s)
            w_o, H, d = c.params.w_o, c.trace.n_heads, c.trace.d_head
            heads_per_column = [
                len({h for h in range(H) if np.any(w_o[h * d : (h + 1) * d, col] != 0)}) for col in range(w_o.shape[1])
            ]
            text = multihead.render(s, c, c.heads)
            if max(heads_per_column) <= 1:
                assert "at most one head" in text and f"mixes all {H} heads" not in text
            else:
                assert all(k == H for k in heads_per_column) and f"mixes all {H} heads" in text
