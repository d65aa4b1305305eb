"""Two sentences, one head (pairs.py, views/pairs.py).

What the product promises: the two sentences' tokens are aligned as a reader would (the tokens they
share, in order; the changed words named "big → small"); both pictures show the same head's own
numbers; the difference map covers only the aligned tokens and each cell is A − B of those tokens;
the verdict names the word the query really looks at most and says plainly when that is not the
word a reader would pick ("the model gets this one wrong"); the ready-made pairs are readable by
their model and say true things about it; nothing the reader types becomes markup.

Every expected number here is computed again with plain loops: the alignment against a longest
common subsequence and an independent Ratcliff/Obershelp matcher, the differences by subtracting the
trace's weights over the test's own alignment, the strongest word by a loop over the row.
"""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

import toy_model
from attention_explorer import models, page, pairs, state as st
from attention_explorer.views import pairs as view
from attention_explorer.views.markup import num
from markup_tree import by_class, parse

HOSTILE = "<b>&\"' <img src=x onerror=alert(1)>"
MODELS = ("designed", "minilm")


# ---------------------------------------------------------------------------------------------------
# independent references
# ---------------------------------------------------------------------------------------------------


def lcs_length(a, b) -> int:
    """Length of a longest common subsequence: the textbook dynamic program."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


def all_lcs(a, b) -> set:
    """Every longest common subsequence of a and b, as tuples of index pairs: the textbook table,
    then every optimal path back through it (memoised on (i, j))."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    memo = {}

    def paths(i, j):
        if (i, j) not in memo:
            if table[i][j] == 0:
                found = {()}
            else:
                found = set()
                if a[i] == b[j] and table[i][j] == table[i + 1][j + 1] + 1:
                    found |= {((i, j),) + rest for rest in paths(i + 1, j + 1)}
                if table[i + 1][j] == table[i][j]:
                    found |= paths(i + 1, j)
                if table[i][j + 1] == table[i][j]:
                    found |= paths(i, j + 1)
            memo[(i, j)] = found
        return memo[(i, j)]

    return paths(0, 0)


def runs(pairs_) -> int:
    """How many runs of consecutive tokens (on both sides) an alignment is made of."""
    return sum(1 for k, (i, j) in enumerate(pairs_) if k == 0 or pairs_[k - 1] != (i - 1, j - 1))


def best_alignments(a, b) -> set:
    """The longest common subsequences in the fewest runs: what a reader would line up."""
    found = all_lcs(a, b)
    fewest = min(runs(p) for p in found)
    return {p for p in found if runs(p) == fewest}


def own_alignment(a, b) -> list:
    """The test's alignment of two sentences, where it is unambiguous (asserted)."""
    (only,) = best_alignments(a, b)
    return list(only)


def is_common_subsequence(pairs_, a, b) -> bool:
    return all(a[i] == b[j] for i, j in pairs_) and all(
        i1 < i2 and j1 < j2 for (i1, j1), (i2, j2) in zip(pairs_, pairs_[1:])
    )


def strongest(row, special, query):
    """(index, weight) of the key with the most weight, specials and the query left out (first on ties)."""
    best, best_w = None, 0.0
    for j in range(len(row)):
        if j == query or j in special:
            continue
        if float(row[j]) > best_w:
            best, best_w = j, float(row[j])
    return best, best_w


def whole_word(tokens, j) -> str:
    start, stop = j, j + 1
    while start > 0 and tokens[start].startswith("##"):
        start -= 1
    while stop < len(tokens) and tokens[stop].startswith("##"):
        stop += 1
    return "".join(t.removeprefix("##") for t in tokens[start:stop]).lower()


def own_text(node) -> str:
    """A label's own text, without its <title> tooltip."""
    return "".join(c.text for c in node.children if c.tag == "#text")


def labels(pic, cls="row-label") -> list:
    return [own_text(t) for t in by_class(pic, cls)]


def unit_cells(d: str) -> set:
    """The unit squares (i, j) a painted path covers: its 'M j i h w v1 h-w z' runs."""
    cells = set()
    for j, i, w in re.findall(r"M(\d+) (\d+)h(\d+)v1h-\d+z", d):
        cells |= {(int(i), int(j) + k) for k in range(int(w))}
    assert re.sub(r"M(\d+) (\d+)h(\d+)v1h-(\d+)z", "", d) == "", "a path holds only whole cell runs"
    return cells


# ---------------------------------------------------------------------------------------------------
# alignment
# ---------------------------------------------------------------------------------------------------

SENTENCE_PAIRS = [
    (
        "The trophy did n't fit in the suitcase because it was too big".split(),
        "The trophy did n't fit in the suitcase because it was too small".split(),
    ),
    ("the cat saw the dog".split(), "the dog saw the cat".split()),  # swapped words
    ("the toy sees the toy".split(), "the toy sees the other toy".split()),  # repeated words, an insertion
    ("a b a b a".split(), "b a b".split()),
    (
        "The cat chased the dogs because they were hungry".split(),
        "The cats chased the dog because they were hungry".split(),
    ),  # two substitutions
    ("it it it".split(), "it".split()),
    ([], "one".split()),
    ("same words here".split(), "same words here".split()),
]


@pytest.mark.parametrize("a, b", SENTENCE_PAIRS)
def test_alignment_is_a_longest_common_subsequence_in_the_fewest_runs(a, b):
    """The aligned tokens are equal, in order on both sides, as many as the textbook LCS finds, and
    in as few runs as any such alignment."""
    got = pairs.align(a, b)
    assert is_common_subsequence(list(got), a, b)
    assert len(got) == lcs_length(a, b)
    assert got in best_alignments(a, b)


def test_alignment_keeps_runs_together_on_repeated_words():
    """'the toy' matches 'the toy', not a stray 'the' with a later 'toy'; swapped words keep the rest."""
    a, b = "the toy sees the toy".split(), "the toy sees the other toy".split()
    assert pairs.align(a, b) == ((0, 0), (1, 1), (2, 2), (3, 3), (4, 5))
    assert [tuple(c) for c in pairs.substitutions(a, b)] == [(4, 4, 4, 5)]  # "other" added
    assert pairs.counterpart(pairs.align(a, b), 4) == 5
    assert pairs.align("the dog saw the cat".split(), "the cat".split()) == ((3, 0), (4, 1))
    a, b = "the cat saw the dog".split(), "the dog saw the cat".split()
    assert pairs.align(a, b) == ((0, 0), (2, 2), (3, 3))
    assert [tuple(c) for c in pairs.substitutions(a, b)] == [(1, 2, 1, 2), (4, 5, 4, 5)]
    assert pairs.counterpart(pairs.align(a, b), 1) is None


def test_alignment_matches_the_reference_on_random_sequences():
    """Small alphabets make many repeats: always a longest common subsequence in the fewest runs."""
    rng = random.Random(7)
    for _ in range(400):
        a = [rng.choice("abc") for _ in range(rng.randint(0, 8))]
        b = [rng.choice("abc") for _ in range(rng.randint(0, 8))]
        got = pairs.align(a, b)
        assert is_common_subsequence(list(got), a, b), (a, b)
        assert got in best_alignments(a, b), (a, b)


@pytest.mark.parametrize("a, b", SENTENCE_PAIRS)
def test_substitutions_cover_exactly_the_tokens_left_unaligned(a, b):
    aligned = pairs.align(a, b)
    changes = pairs.substitutions(a, b)
    in_a = [i for c in changes for i in range(c.a_start, c.a_stop)]
    in_b = [j for c in changes for j in range(c.b_start, c.b_stop)]
    assert sorted(in_a + [i for i, _ in aligned]) == list(range(len(a)))
    assert sorted(in_b + [j for _, j in aligned]) == list(range(len(b)))
    for c in changes:  # a change sits between the same aligned neighbours on both sides
        before = [(i, j) for i, j in aligned if i < c.a_start]
        assert all(j < c.b_start for _, j in before)
        assert all(j >= c.b_stop for i, j in aligned if i >= c.a_stop)
        assert c.a_stop > c.a_start or c.b_stop > c.b_start


def test_the_winograd_change_is_one_substitution():
    a, b = SENTENCE_PAIRS[0]
    (c,) = pairs.substitutions(a, b)
    assert (a[c.a_start : c.a_stop], b[c.b_start : c.b_stop]) == (["big"], ["small"])


# ---------------------------------------------------------------------------------------------------
# presets
# ---------------------------------------------------------------------------------------------------


def model_state(model_id):
    s = st.State()
    return s if model_id == "designed" else st.apply_event(s, {"type": "set_model", "value": model_id})


def all_presets():
    return [(m, p) for m in MODELS for p in pairs.presets(models.get(m).description)]


def test_each_model_has_its_pairs():
    assert len(models.get("designed").description.pairs) >= 4 and len(models.get("minilm").description.pairs) >= 3
    assert pairs.presets(toy_model.MODEL.description) == ()
    for m in MODELS:
        ids = [p.id for p in pairs.presets(models.get(m).description)]
        assert len(ids) == len(set(ids))
        d = models.get(m).description
        assert pairs.preset(d, ids[0]) is d.pairs[0] and pairs.preset(d, "nope") is None


@pytest.mark.parametrize("model_id, p", all_presets(), ids=lambda x: getattr(x, "id", x))
def test_a_preset_is_readable_by_its_model(model_id, p):
    """Both sentences tokenize; the query word is a token of the first; its head exists; a reader's
    answer is a word of each sentence."""
    model = models.get(model_id)
    first, second = model.tokenize(p.first), model.tokenize(p.second)
    assert p.query_word in first
    d = model.description
    assert 0 <= p.layer < d.n_layers and 0 <= p.head < len(d.heads[p.layer])
    assert p.expect_first.lower() in {whole_word(first, j) for j in range(len(first))}
    assert p.expect_second.lower() in {whole_word(second, j) for j in range(len(second))}
    assert p.note and p.title


@pytest.mark.parametrize("model_id, p", all_presets(), ids=lambda x: getattr(x, "id", x))
def test_pair_preset_event_sets_both_sentences_the_query_and_the_head(model_id, p):
    s = st.apply_event(model_state(model_id), {"type": "pair_preset", "value": p.id})
    assert (s.text, s.pair_text) == (p.first, p.second)
    assert s.tokens[s.query] == p.query_word and s.query == s.tokens.index(p.query_word)
    assert (s.layer, s.head) == (p.layer, p.head)
    assert st.compute_pair(s).tokens == models.get(model_id).tokenize(p.second)


@pytest.mark.parametrize("model_id, p", all_presets(), ids=lambda x: getattr(x, "id", x))
def test_what_a_preset_says_the_head_picks_is_what_it_picks(model_id, p):
    """The note talks about these words: recomputed from the traces with a plain loop, at the
    model's own settings, the strongest word (specials and the query left out) in each sentence."""
    s = st.apply_event(model_state(model_id), {"type": "pair_preset", "value": p.id})
    a, b = st.compute(s), st.compute_pair(s)
    qb = dict(own_alignment(a.tokens, b.tokens))[s.query]
    ja, _ = strongest(a.trace.weights[p.head][s.query], a.run.special, s.query)
    jb, _ = strongest(b.trace.weights[p.head][qb], b.run.special, qb)
    assert (whole_word(a.tokens, ja), whole_word(b.tokens, jb)) == p.picks


def test_the_designed_model_gets_winograd_pairs_wrong_and_its_notes_say_so():
    """At least four designed pairs where a reader's answer changes and the coreference head's does not
    (checked in test_what_a_preset_says_the_head_picks_is_what_it_picks); the note says 'wrong'."""
    same_pick = [
        p
        for p in pairs.presets(models.get("designed").description)
        if p.picks[0] == p.picks[1] and p.expect_first != p.expect_second
    ]
    assert len(same_pick) >= 4
    for p in same_pick:
        assert p.head == 0 and "wrong" in p.note


# ---------------------------------------------------------------------------------------------------
# the view
# ---------------------------------------------------------------------------------------------------


def panel(s):
    """The pair panel as the page draws it, parsed."""
    markup = page.PANELS["pair"].render(s, st.compute(s))
    return markup, parse(markup)


def svg(root, name):
    (found,) = root.find_all("svg", data_view=name)
    return found


def section(root):
    (div,) = root.find_all("div", data_view="pair")
    return div


def check_pictures(s):
    """Every number the pictures show, against the traces and the test's own alignment and subtraction."""
    a, b = st.compute(s), st.compute_pair(s)
    h = s.head
    wa, wb = a.trace.weights[h].tolist(), b.trace.weights[h].tolist()
    aligned = own_alignment(a.tokens, b.tokens)
    qb = dict(aligned).get(s.query)
    markup, root = panel(s)
    for name, comp, w, q in (("pair-a", a, wa, s.query), ("pair-b", b, wb, qb)):
        pic = svg(root, name)
        n = len(comp.tokens)
        assert pic.attrs["role"] == "img" and pic.attrs["aria-label"]
        assert labels(pic) == [view.clip_label(t) for t in comp.tokens]
        levels = int(pic.attrs["data-levels"])
        painted = {}
        for path in by_class(pic, "pair-level"):
            for cell in unit_cells(path.attrs["d"]):
                assert cell not in painted, "each cell is painted once"
                painted[cell] = path.attrs.get("data-level", "masked")
        assert set(painted) == {(i, j) for i in range(n) for j in range(n)}
        for i in range(n):
            for j in range(n):
                if not bool(comp.trace.mask[i][j]):
                    assert painted[(i, j)] == "masked"
                else:
                    assert float(painted[(i, j)]) == pytest.approx(round(w[i][j] * levels) / levels)
        cells = pic.find_all("rect", data_i=True)
        if q is None:
            assert cells == [] and pic.find_all("rect", class_="query-outline") == []
            continue
        assert [(int(c.attrs["data-i"]), int(c.attrs["data-j"])) for c in cells] == [(q, j) for j in range(n)]
        for c in cells:
            assert float(c.attrs["data-weight"]) == pytest.approx(w[q][int(c.attrs["data-j"])], abs=1e-11)
        (outline,) = pic.find_all("rect", class_="query-outline")
        assert outline.attrs["data-query-row"] == str(q)
    diff = svg(root, "pair-diff") if aligned else None
    if diff is None:
        assert root.find_all("svg", data_view="pair-diff") == []
        return a, b, aligned, markup, root
    k = len(aligned)
    assert labels(diff) == [view.clip_label(a.tokens[i]) for i, _ in aligned]
    limit = float(diff.attrs["data-limit"])
    levels = int(diff.attrs["data-levels"])
    deltas = [[wa[ai][aj] - wb[bi][bj] for aj, bj in aligned] for ai, bi in aligned]
    assert limit >= max(abs(d) for row in deltas for d in row)
    painted = {}
    for path in by_class(diff, "pair-level"):
        for cell in unit_cells(path.attrs["d"]):
            assert cell not in painted
            painted[cell] = (path.attrs.get("data-sign", "masked"), path.attrs.get("data-level"))
    assert all(0 <= i < k and 0 <= j < k for i, j in painted), "the difference has aligned tokens only"
    for r in range(k):
        for c in range(k):
            d = deltas[r][c]
            step = min(levels, round(abs(d) / limit * levels))
            if not bool(a.trace.mask[aligned[r][0]][aligned[c][0]]):
                assert painted[(r, c)][0] == "masked"
            elif step == 0:
                assert (r, c) not in painted  # blank: no difference to see
            else:
                sign, level = painted[(r, c)]
                assert sign == ("neg" if d < 0 else "pos") and float(level) == pytest.approx(step / levels)
    cells = diff.find_all("rect", data_delta=True)
    row = next((r for r, (ai, _) in enumerate(aligned) if ai == s.query), None)
    assert len(cells) == (k if row is not None else 0)
    for cell in cells:
        r, c = int(cell.attrs["data-i"]), int(cell.attrs["data-j"])
        assert r == row
        ai, bi = aligned[r]
        aj, bj = aligned[c]
        assert [int(cell.attrs[x]) for x in ("data-a-i", "data-a-j", "data-b-i", "data-b-j")] == [ai, aj, bi, bj]
        assert float(cell.attrs["data-delta"]) == pytest.approx(wa[ai][aj] - wb[bi][bj], abs=1e-11)
    return a, b, aligned, markup, root


def test_designed_preset_pictures_show_the_traces_numbers():
    s = st.apply_event(st.State(), {"type": "pair_preset", "value": "soft-mat"})
    check_pictures(s)


def test_a_multi_layer_model_shows_the_selected_layer_and_head():
    """Toy model (random weights, so every cell differs): layer 2, head 3, a sentence with an insertion
    and repeated words, with and without the causal mask."""
    with toy_model.registered():
        s = dataclasses.replace(st.State(), model="toy")
        s = st.apply_event(s, {"type": "set_text", "value": "the toy sees the toy"})
        s = st.apply_event(s, {"type": "set_pair_text", "value": "the toy sees the other toy today"})
        for causal in (False, True):
            t = dataclasses.replace(s, layer=1, head=2, query=5, causal=causal)
            a, b, aligned, markup, root = check_pictures(t)
            assert section(root).attrs["data-query-b"] == "6"  # the last "toy", after the inserted "other"
            assert "layer 2 of 2, head 3" in markup
            gaps = [g.all_text() for g in by_class(svg(root, "pair-diff"), "diff-gap")]
            assert gaps == ["left out here: “nothing” → “other”", "left out here: “nothing” → “today”"]
            assert "Changed: nothing → “other”; nothing → “today”." in " ".join(root.all_text().split())


def test_trained_preset_pictures_show_the_traces_numbers():
    s = st.apply_event(model_state("minilm"), {"type": "pair_preset", "value": "trophy"})
    a, b, aligned, markup, root = check_pictures(s)
    assert "layer 4 of 6, head 2" in markup
    for name in ("pair-a", "pair-b"):  # [CLS] and [SEP] are marked as not words
        rows = by_class(svg(root, name), "row-label")
        assert rows[0].has_class("is-special") and rows[-1].has_class("is-special")


def verdict(root) -> str:
    (p,) = by_class(root, "pair-verdict")
    return " ".join(p.all_text().split())


@pytest.mark.parametrize("model_id, p", all_presets(), ids=lambda x: getattr(x, "id", x))
def test_the_verdict_names_the_word_looked_at_and_says_when_it_is_wrong(model_id, p):
    s = st.apply_event(model_state(model_id), {"type": "pair_preset", "value": p.id})
    a, b = st.compute(s), st.compute_pair(s)
    qb = dict(own_alignment(a.tokens, b.tokens))[s.query]
    _, root = panel(s)
    div, text = section(root), verdict(root)
    assert div.attrs["data-preset"] == p.id
    sentences = text.split("In sentence ")[1:]
    for name, comp, q, expect, part in (
        ("a", a, s.query, p.expect_first, sentences[0]),
        ("b", b, qb, p.expect_second, sentences[1]),
    ):
        j, w = strongest(comp.trace.weights[s.head][q], comp.run.special, q)
        assert div.attrs[f"data-look-{name}"] == str(j)
        assert f"looks most at “{comp.tokens[j]}” ({100 * w:.0f} %" in part
        rest = sum(float(comp.trace.weights[s.head][q][k]) for k in comp.run.special)
        assert (f"; {100 * rest:.0f} % rests on {', '.join(comp.tokens[k] for k in comp.run.special)})" in part) == (
            rest >= 0.2
        )
        right = whole_word(comp.tokens, j) == expect.lower()
        assert div.attrs[f"data-verdict-{name}"] == ("right" if right else "wrong")
        assert ("the model gets this one wrong" in part) == (not right)
        assert (f"a reader would pick “{expect}”" in part) == (not right)


def test_the_wrong_model_case_is_said_plainly():
    """Trophy and suitcase, designed model: verified here that the coreference head picks 'trophy' in
    both sentences while a reader picks the suitcase in the second; the view says so."""
    s = st.apply_event(st.State(), {"type": "pair_preset", "value": "trophy"})
    a, b = st.compute(s), st.compute_pair(s)
    qb = dict(own_alignment(a.tokens, b.tokens))[s.query]
    ja, _ = strongest(a.trace.weights[0][s.query], a.run.special, s.query)
    jb, wb = strongest(b.trace.weights[0][qb], b.run.special, qb)
    assert a.tokens[ja] == b.tokens[jb] == "trophy"
    _, root = panel(s)
    text = verdict(root)
    assert (
        f"In sentence B, “it” still looks most at “trophy” ({100 * wb:.0f} %), but a reader would pick "
        "“suitcase”: the model gets this one wrong."
    ) in text
    assert "picks “trophy” both times" in text
    assert section(root).attrs["data-verdict-b"] == "wrong"
    # the two pictures are the same where the tokens align, and the panel says that too
    assert "the two pictures are the same" in " ".join(root.all_text().split())
    assert by_class(svg(root, "pair-diff"), "diff-level") == []


def test_free_text_reports_where_the_query_looks_without_judging():
    s = st.apply_event(st.State(), {"type": "set_text", "value": "The cat chased the dog because it was hungry"})
    s = st.apply_event(s, {"type": "set_pair_text", "value": "The man chased the dog because it was hungry"})
    a, b = st.compute(s), st.compute_pair(s)
    _, root = panel(s)
    div, text = section(root), verdict(root)
    assert div.attrs["data-preset"] == "" and div.attrs["data-verdict-a"] == div.attrs["data-verdict-b"] == ""
    ja, _ = strongest(a.trace.weights[s.head][s.query], a.run.special, s.query)
    qb = dict(own_alignment(a.tokens, b.tokens))[s.query]
    jb, _ = strongest(b.trace.weights[s.head][qb], b.run.special, qb)
    assert (a.tokens[ja], b.tokens[jb]) == ("cat", "dog")  # 'it' cannot mean the man: the head skips him
    assert "moves from “cat” to “dog”" in text
    assert "reader" not in text and "wrong" not in text
    assert "Changed: “cat” → “man”." in " ".join(root.all_text().split())


def test_a_query_resting_on_the_start_token_picks_nothing():
    """'cat' has nothing to resolve in the coreference head: the verdict says it rests on <s>, not that
    it 'looks most at' a word with 1 %."""
    s = st.apply_event(st.State(), {"type": "set_pair_text", "value": "The cat sat"})
    s = dataclasses.replace(s, query=2)
    a = st.compute(s)
    row = a.trace.weights[0][2]
    _, root = panel(s)
    text = verdict(root)
    assert f"“cat” rests {100 * float(row[0]):.0f} % of its attention on <s>" in text
    assert "looks most at" not in text and section(root).attrs["data-look-a"] == ""


def test_a_query_the_edit_changed_has_no_row_in_the_second_sentence():
    s = st.apply_event(st.State(), {"type": "pair_preset", "value": "trophy"})
    s = dataclasses.replace(s, query=s.tokens.index("big"))
    a, b, aligned, markup, root = check_pictures(s)
    div = section(root)
    assert div.attrs["data-query-b"] == "" and div.attrs["data-verdict-b"] == ""
    assert "“big” has no counterpart in sentence B" in verdict(root)
    assert svg(root, "pair-b").attrs["data-query"] == ""


def test_the_numbers_table_lists_the_query_row_for_screen_readers():
    s = st.apply_event(st.State(), {"type": "pair_preset", "value": "soft-mat"})
    a, b = st.compute(s), st.compute_pair(s)
    aligned = own_alignment(a.tokens, b.tokens)
    qb = dict(aligned)[s.query]
    _, root = panel(s)
    (table,) = root.find_all("table", class_="sr-only pair-numbers")
    rows = {
        r.find_all("th")[0].all_text(): [td.all_text() for td in r.find_all("td")]
        for r in table.find_all("tbody")[0].find_all("tr")
    }
    for ai, bi in aligned:
        wa, wb = float(a.trace.weights[0][s.query][ai]), float(b.trace.weights[0][qb][bi])
        got = rows[a.tokens[ai]] if a.tokens.count(a.tokens[ai]) == 1 else None
        if got:
            assert got[:2] == [f"{100 * wa:.1f} %", f"{100 * wb:.1f} %"]
            assert got[2].replace("+", "").replace("−", "-").removesuffix(" pts") == f"{100 * (wa - wb):.1f}".replace(
                "-0.0", "0.0"
            )
    assert rows["man (only in A)"][1:] == ["—", "—"] and rows["cat (only in B)"][0] == "—"


def test_no_second_sentence_shows_the_presets_and_no_pictures():
    s = st.State()
    markup, root = panel(s)
    assert section(root).attrs["data-state"] == "empty"
    assert root.find_all("svg") == []
    buttons = root.find_all("button")
    assert [b.attrs["data-value"] for b in buttons] == [p.id for p in pairs.presets(models.get("designed").description)]
    for b, p in zip(buttons, pairs.presets(models.get("designed").description)):
        assert b.attrs["type"] == "button" and b.attrs["data-event"] == "pair_preset" and p.title in b.all_text()
        assert b.attrs["aria-pressed"] == "false"


def test_presets_stay_under_the_pictures_and_mark_the_one_shown():
    s = st.apply_event(st.State(), {"type": "pair_preset", "value": "lift"})
    markup, root = panel(s)
    pressed = [b.attrs["data-value"] for b in root.find_all("button", aria_pressed="true")]
    assert pressed == ["lift"]
    assert markup.index('data-view="pair-diff"') < markup.index('data-event="pair_preset"')
    assert "weak → heavy" in root.find_all("button", data_value="lift")[0].all_text()


def test_accessible_markup():
    """Every picture is an image with a label; ids are unique; no heading inside the panel."""
    with toy_model.registered():
        s = dataclasses.replace(st.State(), model="toy", causal=True)
        s = st.apply_event(s, {"type": "set_text", "value": "the toy sees the toy"})
        s = st.apply_event(s, {"type": "set_pair_text", "value": "the toy sees a toy"})
        markup, root = panel(s)
    svgs = root.find_all("svg")
    assert len(svgs) == 3
    for e in svgs:
        assert e.attrs["role"] == "img" and len(e.attrs["aria-label"]) > 40
    ids = [e.attrs["id"] for e in root.iter() if "id" in e.attrs]
    assert ids and len(ids) == len(set(ids))
    for e in root.iter():
        assert e.tag not in ("h1", "h2", "h3", "h4", "h5", "h6")
        if "aria-label" in e.attrs:
            assert "role" in e.attrs, e.tag
        if "data-grid-cell" in e.attrs:
            assert e.attrs.get("data-tip")
    for pic in svgs:  # one tab stop per grid
        assert len([e for e in pic.iter() if e.attrs.get("tabindex") == "0"]) == 1


@pytest.mark.parametrize("model_id", MODELS)
def test_a_hostile_second_sentence_is_shown_as_text(model_id):
    s = model_state(model_id)
    s = st.apply_event(s, {"type": "set_text", "value": "The cat sat " + HOSTILE})
    s = st.apply_event(s, {"type": "set_pair_text", "value": "The dog sat " + HOSTILE})
    markup, root = panel(s)
    assert "<b>" not in markup and "<img" not in markup
    assert all(
        e.tag
        in {
            "#root",
            "#text",
            "div",
            "p",
            "strong",
            "figure",
            "figcaption",
            "span",
            "svg",
            "defs",
            "pattern",
            "rect",
            "line",
            "text",
            "title",
            "g",
            "path",
            "linearGradient",
            "lineargradient",
            "stop",
            "table",
            "caption",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "button",
        }
        for e in root.iter()
    ), {e.tag for e in root.iter()}
    assert not any(a.startswith("on") for e in root.iter() for a in e.attrs)
    text = root.all_text()
    assert "“The dog sat " + HOSTILE + "”" in text  # the sentence, exactly as typed, in its caption
    pics = svg(root, "pair-b")
    assert labels(pics) == [view.clip_label(t) for t in st.compute_pair(s).tokens]


def test_unavailable_escapes_its_message():
    markup = view.unavailable('The second sentence cannot be read: "<b>" & more')
    root = parse(markup)
    assert "<b>" not in markup and '"<b>" & more' in root.all_text()
    assert section(root).attrs["data-state"] == "unavailable"


def test_a_second_sentence_the_model_cannot_read_is_refused_with_a_message():
    with pytest.raises(st.InputError) as err:
        st.apply_event(st.State(), {"type": "set_pair_text", "value": " ".join(["word"] * 40)})
    assert err.value.field == "pair-text" and err.value.message.startswith("Second sentence:")


def test_diff_limit_rounds_up_to_five_points_and_never_below_ten():
    assert view.diff_limit([]) == view.diff_limit([0.0]) == pytest.approx(0.1)
    assert view.diff_limit([0.12, -0.31]) == pytest.approx(0.35)
    assert view.diff_limit([-0.35]) == pytest.approx(0.35)
    assert view.diff_limit([1.0]) == pytest.approx(1.0)
    assert num(100 * view.diff_limit([0.051]), 0) == "10"


def test_the_strongest_word_leaves_out_special_tokens_and_the_query_itself():
    toks = ("[CLS]", "a", "it", "b", "[SEP]")
    assert pairs.strongest_word([0.5, 0.1, 0.3, 0.1, 0.0], toks, (0, 4), 2) == 1  # first of the tied words
    assert pairs.strongest_word([0.2, 0.1, 0.3, 0.15, 0.25], toks, (0, 4), 2) == 3
    assert pairs.strongest_word([0.6, 0.0, 0.4, 0.0, 0.0], toks, (0, 4), 2) is None
    assert pairs.word_at(("[CLS]", "suit", "##case", "it"), 2) == pairs.word_at(("suit", "##case"), 0) == "suitcase"
