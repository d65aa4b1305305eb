"""Heads named by measurement, and designed vs trained word by word (head_patterns.py).

The product promises that a label such as "previous token, 1.00" means what it
says (every word piece puts all its attention on the piece before it), and that
"layer 4, head 2 agrees best with the designed Coreference head" compares like
with like. So the definitions are checked on synthetic matrices whose answers
are known by construction, the word-level conversion and the alignment on
hand-made pieces, and the labels of the real all-MiniLM-L6-v2 against its
attention read directly (not through the scores).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from attention_explorer import core, head_patterns as hp
from attention_explorer.models import bert, designed, minilm, trained as trained_mod
from attention_explorer.models.trained import TrainedModel
from minilm_files import _tokenizer, cached_file, fp32_tensors

BERT_TOKENS = ("[CLS]", "the", "cat", "sat", ",", "then", "slept", ".", "[SEP]")
BERT_SPECIAL = (0, 8)


def one_hot_rows(n, target):  # target(i) -> key index, for every row
    a = np.zeros((n, n))
    for i in range(n):
        a[i, target(i)] = 1.0
    return a


# --------------------------------------------------------------------------
# pattern scores on matrices with known answers
# --------------------------------------------------------------------------


def test_a_pure_previous_token_head_scores_one_and_is_labelled_so():
    n = len(BERT_TOKENS)
    a = one_hot_rows(n, lambda i: max(i - 1, 0))
    scores = hp.pattern_scores(a, BERT_TOKENS, BERT_SPECIAL)
    assert scores["previous token"] == pytest.approx(1.0)
    assert scores["next token"] == pytest.approx(0.0)
    assert hp.strongest(scores) == ("previous token", pytest.approx(1.0))


@pytest.mark.parametrize(
    "label, target",
    [
        ("next token", lambda i: i + 1),
        ("self", lambda i: i),
        ("[CLS]", lambda i: 0),
        ("[SEP]", lambda i: 8),
    ],
)
def test_each_pure_pattern_scores_one(label, target):
    n = len(BERT_TOKENS)
    a = one_hot_rows(n, lambda i: min(target(i), n - 1))
    scores = hp.pattern_scores(a, BERT_TOKENS, BERT_SPECIAL)
    assert scores[label] == pytest.approx(1.0)
    assert hp.strongest(scores)[0] == label


def test_rows_where_a_pattern_is_undefined_do_not_count():
    """The first word has no previous word ([CLS] is before it): whatever it does, previous token stays 1."""
    n = len(BERT_TOKENS)
    a = one_hot_rows(n, lambda i: max(i - 1, 0))
    a[1] = 0.0
    a[1, 5] = 1.0  # the first word looks far away: not a previous-token row at all
    assert hp.pattern_scores(a, BERT_TOKENS, BERT_SPECIAL)["previous token"] == pytest.approx(1.0)
    a[3] = 0.0
    a[3, 3] = 1.0  # a defined row that misses
    defined = range(2, 8)  # the word rows whose previous token is a word
    assert hp.pattern_scores(a, BERT_TOKENS, BERT_SPECIAL)["previous token"] == pytest.approx(
        (len(defined) - 1) / len(defined)
    )


def test_special_rows_are_never_queries():
    n = len(BERT_TOKENS)
    a = one_hot_rows(n, lambda i: max(i - 1, 0))
    a[0] = 0.0
    a[0, 5] = 1.0  # [CLS]'s row and [SEP]'s row may do anything
    a[8] = 0.0
    a[8, 8] = 1.0
    scores = hp.pattern_scores(a, BERT_TOKENS, BERT_SPECIAL)
    assert scores["previous token"] == pytest.approx(1.0) and scores["self"] == pytest.approx(0.0)


def test_punctuation_is_the_mass_on_other_punctuation_tokens():
    """Every row half on ',' (or on '.' for the comma itself), half on itself: 0.5, self not counted."""
    n = len(BERT_TOKENS)
    a = np.zeros((n, n))
    for i in range(n):
        a[i, i] = 0.5
        a[i, 7 if i == 4 else 4] += 0.5
    assert hp.pattern_scores(a, BERT_TOKENS, BERT_SPECIAL)["punctuation"] == pytest.approx(0.5)
    assert hp.is_punctuation(",") and hp.is_punctuation("'") and hp.is_punctuation("$")
    assert hp.is_punctuation("«") and not hp.is_punctuation("##s") and not hp.is_punctuation("3")


def test_broad_is_one_for_uniform_rows_and_halves_with_half_the_words():
    n, words = len(BERT_TOKENS), list(range(1, 8))
    uniform = np.zeros((n, n))
    uniform[:, words] = 1.0 / len(words)
    assert hp.pattern_scores(uniform, BERT_TOKENS, BERT_SPECIAL)["broad"] == pytest.approx(1.0)
    # every row spread evenly over one chosen half... of 6 words: take a 6-word sentence
    toks = ("[CLS]", "a", "b", "c", "d", "e", "f", "[SEP]")
    half = np.zeros((8, 8))
    half[:, [1, 2, 3]] = 1.0 / 3
    assert hp.pattern_scores(half, toks, (0, 7))["broad"] == pytest.approx(0.5)
    # resting on [CLS] with a trace spread evenly on words: broad is the trace's share, not 1
    rest = np.zeros((8, 8))
    rest[:, 0] = 0.94
    rest[:, 1:7] = 0.01
    assert hp.pattern_scores(rest, toks, (0, 7))["broad"] == pytest.approx(0.06)


def test_designed_start_token_counts_as_cls_and_there_is_no_sep():
    """The designed model's "<s>" is its start token: "[CLS]" scores it; with no end token "[SEP]" is 0."""
    toks = ("<s>", "The", "cat", "sat", ".")
    a = np.zeros((5, 5))
    a[:, 0] = 1.0
    scores = hp.pattern_scores(a, toks, (0,))
    assert scores["[CLS]"] == pytest.approx(1.0) and scores["[SEP]"] == 0.0
    assert set(scores) == set(hp.PATTERNS)


def test_strongest_breaks_ties_in_pattern_order():
    assert hp.strongest({p: 0.5 for p in hp.PATTERNS}) == (hp.PATTERNS[0], 0.5)
    assert hp.strongest({"self": 0.2, "broad": 0.7}) == ("broad", 0.7)


# --------------------------------------------------------------------------
# word level and alignment
# --------------------------------------------------------------------------


def test_word_spans_join_continuation_pieces_and_skip_specials():
    toks = ("[CLS]", "the", "token", "##izer", "split", "##s", ".", "[SEP]")
    assert hp.word_spans(toks, (0, 7)) == [(1, 2), (2, 4), (4, 6), (6, 7)]
    assert hp.word_strings(toks, hp.word_spans(toks, (0, 7))) == ["the", "tokenizer", "splits", "."]
    # a "##" piece right after a special token cannot continue it: it starts a word
    assert hp.word_spans(("[CLS]", "##x", "y", "[SEP]"), (0, 3)) == [(1, 2), (2, 3)]
    assert hp.word_of(hp.word_spans(toks, (0, 7)), 3) == 1 and hp.word_of(hp.word_spans(toks, (0, 7)), 0) is None
    # the designed model's tokens are words: a "##x" a reader typed is a word of its own there
    assert hp.word_spans(("<s>", "a", "##x"), (0,), pieces=False) == [(1, 2), (2, 3)]


def test_word_level_sums_to_a_word_and_averages_from_it():
    """[CLS] a ##b c [SEP]: word A = pieces 1-2, word C = piece 3. Worked by hand."""
    toks = ("[CLS]", "a", "##b", "c", "[SEP]")
    w = np.array(
        [
            [1.0, 0.0, 0.0, 0.0, 0.0],
            [0.2, 0.1, 0.3, 0.4, 0.0],  # a:   to A 0.4, to C 0.4 (0.2 on [CLS])
            [0.0, 0.5, 0.0, 0.1, 0.4],  # ##b: to A 0.5, to C 0.1 (0.4 on [SEP])
            [0.0, 0.25, 0.25, 0.5, 0.0],  # c:  to A 0.5, to C 0.5
            [0.0, 0.0, 0.0, 0.0, 1.0],
        ]
    )
    spans = hp.word_spans(toks, (0, 4))
    raw = hp.word_level(w, spans, renormalise_rows=False)
    # from A: the mean of the rows of "a" and "##b": to A (0.4 + 0.5) / 2, to C (0.4 + 0.1) / 2
    np.testing.assert_allclose(raw, [[0.45, 0.25], [0.5, 0.5]], atol=1e-12)
    np.testing.assert_allclose(hp.word_level(w, spans), [[0.45 / 0.7, 0.25 / 0.7], [0.5, 0.5]], atol=1e-12)
    # a stack of heads converts head by head
    stack = hp.word_level(np.stack([w, w]), spans)
    assert stack.shape == (2, 2, 2) and np.allclose(stack[1], hp.word_level(w, spans))


def test_align_pairs_words_spelled_the_same_and_skips_words_split_differently():
    d = ("<s>", "The", "trophy", "did", "n't", "fit", "Café", ".")
    t = ("[CLS]", "the", "trophy", "didn", "'", "t", "fit", "cafe", ".", "[SEP]")
    # designed words: The trophy did n't fit Café . ; trained: the trophy didn ' t fit cafe .
    assert hp.align(d, (0,), t, (0, 9)) == [(0, 0), (1, 1), (4, 5), (5, 6), (6, 7)]


def test_agreement_is_one_minus_total_variation():
    assert hp.agreement([0.5, 0.5, 0.0], [0.5, 0.5, 0.0]) == pytest.approx(1.0)
    assert hp.agreement([1.0, 0.0], [0.0, 1.0]) == pytest.approx(0.0)
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.0, 0.5, 0.5])
    assert hp.agreement(p, q) == pytest.approx(1 - 0.5 * np.abs(p - q).sum())


def _sink_head(n_words, target, at_work):
    """A designed-style word-level head (unrenormalised): rows in at_work put all on target(i), others 0.1
    spread evenly (the rest of their attention rests on the start token, outside the word matrix)."""
    a = np.full((n_words, n_words), 0.1 / n_words)
    for i in at_work:
        a[i] = 0.0
        a[i, target(i)] = 1.0
    return a


def test_best_match_finds_the_head_that_does_the_job_and_ignores_resting_rows():
    k = 5
    pairs = [(i, i) for i in range(k)]
    designed_word = _sink_head(k, lambda i: 0, at_work=[3])  # only word 3 is at work: looks at word 0
    doer = np.full((k, k), 0.0)
    doer[:, 4] = 1.0  # every row on word 4 ...
    doer[3] = 0.0
    doer[3, 0] = 1.0  # ... but word 3 on word 0: the job
    uniform = np.full((k, k), 1.0 / k)  # like the designed resting rows
    layers = [np.stack([uniform, doer]), np.stack([uniform])]
    ranked = hp.best_match(designed_word, layers, pairs, query=3)
    assert (ranked[0].layer, ranked[0].head) == (0, 1)
    assert ranked[0].query_agreement == pytest.approx(1.0)
    assert ranked[0].agreement == pytest.approx(1.0)  # the mean counts only the row at work
    assert ranked[1].query_agreement == pytest.approx(1.0 / k)
    # a query where the designed head rests has nothing to compare; the ranking falls back to the mean
    resting = hp.best_match(designed_word, layers, pairs, query=1)
    assert resting[0].query_agreement is None and (resting[0].layer, resting[0].head) == (0, 1)
    # the trained query row's share on the aligned words is reported (half on a special token here)
    half = doer * 0.5
    assert hp.best_match(designed_word, [half[None]], pairs, query=3)[0].query_word_mass == pytest.approx(0.5)


def test_compare_end_to_end_on_tokens():
    """'<s> The cat sat .' against '[CLS] the cat sat . [SEP]': 'it'-style query on 'sat'."""
    d_toks, t_toks = ("<s>", "The", "cat", "sat", "."), ("[CLS]", "the", "cat", "sat", ".", "[SEP]")
    d = np.zeros((5, 5))
    d[:, 0] = 1.0
    d[3] = [0.0, 0.0, 1.0, 0.0, 0.0]  # 'sat' looks at 'cat'; the rest rest on <s>
    good = np.zeros((6, 6))
    good[:, 5] = 1.0
    good[3] = [0.1, 0.0, 0.9, 0.0, 0.0, 0.0]  # 'sat' on 'cat' (and 10 % on [CLS])
    bad = np.zeros((6, 6))
    bad[:, 1] = 1.0  # everything on 'the'
    c = hp.compare(d_toks, (0,), d, t_toks, (0, 5), [np.stack([bad, good])], query_token=3)
    assert c.words == ("The", "cat", "sat", ".") and c.left_out == () and c.query == 2
    assert c.at_work == (False, False, True, False)
    assert (c.best.layer, c.best.head) == (0, 1)
    assert c.best.query_agreement == pytest.approx(1.0) and c.best.query_word_mass == pytest.approx(0.9)
    np.testing.assert_allclose(c.trained[2], [0, 1, 0, 0])
    special = hp.compare(d_toks, (0,), d, t_toks, (0, 5), [np.stack([bad, good])], query_token=0)
    assert special.query is None and special.query_word is None


# --------------------------------------------------------------------------
# the corpus, and the real trained model
# --------------------------------------------------------------------------


def test_corpus_is_varied_and_fits_the_model():
    assert 40 <= len(hp.CORPUS) <= 60 and len(set(hp.CORPUS)) == len(hp.CORPUS)
    for s in hp.CORPUS:
        assert 4 <= len(s.split()) <= 30, s
    assert any("?" in s for s in hp.CORPUS) and any('"' in s for s in hp.CORPUS)
    assert any(ch.isdigit() for s in hp.CORPUS for ch in s)
    tok = _tokenizer()
    pieces = [tok.tokenize(s) for s in hp.CORPUS]
    assert all(len(p) <= 64 for p in pieces)
    assert sum(t.startswith("##") for p in pieces for t in p) >= 10, "long words that split into pieces"


@pytest.fixture(scope="module")
def weights():
    return bert.load_weights(fp32_tensors(), json.loads(cached_file("config.json").read_text()))


@pytest.fixture(scope="module")
def trained(weights):
    """A fresh MiniLM with the pinned fp32 weights (not the shared MODEL: other tests use its state)."""
    model = TrainedModel(minilm.SPEC)
    model.install_weights(weights, _tokenizer())
    return model


@pytest.fixture(scope="module")
def measured(trained):
    return hp.measure_heads(trained, hp.CORPUS, math.sqrt(32))


def test_measured_labels_are_well_formed_and_deterministic(weights, trained, measured):
    assert len(measured) == 6 and all(len(layer) == 12 for layer in measured)
    for layer in measured:
        for m in layer:
            assert m["label"] in hp.PATTERNS and 0.0 <= m["score"] <= 1.0
            assert m["score"] == max(m["scores"].values()) and set(m["scores"]) == set(hp.PATTERNS)
    # deterministic: the same sentences measure the same (a few of them: the whole corpus takes ~5 s)
    assert hp.measure_heads(trained, hp.CORPUS[:6], math.sqrt(32)) == hp.measure_heads(
        trained, hp.CORPUS[:6], math.sqrt(32)
    )
    # the shipped form: JSON that minilm.py turns into head names
    again = TrainedModel(minilm.SPEC)
    again.install_weights(weights, _tokenizer(), labels=json.loads(json.dumps(measured)))
    for l, layer in enumerate(measured):
        for h, m in enumerate(layer):
            name = again.description.heads[l][h].name
            assert name == f"{trained_mod.PLAIN_NAMES[m['label']]}, {round(m['score'] * 100)} %"


def test_an_early_trained_head_is_a_previous_token_head(trained, measured):
    """Clark et al. found previous-token heads early in BERT; this model keeps one. Checked on the
    attention itself: in that head nearly every word piece's strongest key is the piece before it."""
    found = [
        (l, h) for l in (0, 1) for h, m in enumerate(measured[l]) if m["label"] == "previous token" and m["score"] > 0.8
    ]
    assert found, [[m["label"] for m in layer] for layer in measured[:2]]
    l, h = found[0]
    hits = total = 0
    for s in hp.CORPUS[:10]:
        toks = trained.tokenize(s)
        run = trained.forward(
            toks, core.Settings(temperature=1.0, dk_scale=math.sqrt(32), causal=False, activation="gelu")
        )
        w = run.layers[l].weights[h]
        for i in range(2, len(toks) - 1):  # word pieces with a word piece before them
            hits += int(np.argmax(w[i]) == i - 1)
            total += 1
    assert hits / total > 0.9


def _word_level_loops(weights, tokens, special):
    """Clark et al.'s conversion written out with loops, independently of head_patterns."""
    words = []
    for i, t in enumerate(tokens):
        if i in special:
            continue
        if t.startswith("##") and words and words[-1][-1] == i - 1:
            words[-1].append(i)
        else:
            words.append([i])
    out = np.zeros((len(words), len(words)))
    for a, rows in enumerate(words):
        for b, cols in enumerate(words):
            out[a, b] = sum(weights[i, j] for i in rows for j in cols) / len(rows)
    return out / out.sum(axis=1, keepdims=True)


def test_trophy_designed_heads_against_the_trained_model(trained, measured):
    """On the trophy sentence: the comparison uses Clark et al.'s word level (checked against loops),
    the designed previous-token head is matched by the trained head measured as "previous token",
    and the closest head for 'it' under the designed coreference head is reported with its agreement."""
    text = "The trophy didn't fit in the suitcase because it was too big."
    d_toks, t_toks = designed.MODEL.tokenize(text), trained.tokenize(text)
    d_run = designed.MODEL.forward(
        d_toks, core.Settings(temperature=1.0, dk_scale=8.0, causal=False, activation="gelu")
    )
    t_run = trained.forward(
        t_toks, core.Settings(temperature=1.0, dk_scale=math.sqrt(32), causal=False, activation="gelu")
    )
    layers = [t.weights for t in t_run.layers]
    for l, h in ((0, 0), (3, 1), (5, 11)):
        np.testing.assert_allclose(
            hp.word_level(layers[l][h], hp.word_spans(t_toks, t_run.special)),
            _word_level_loops(layers[l][h], t_toks, set(t_run.special)),
            atol=1e-12,
        )
    names = [info.name for info in designed.MODEL.description.heads[0]]
    prev = names.index("Previous token")
    c = hp.compare(
        d_toks, d_run.special, d_run.layers[0].weights[prev], t_toks, t_run.special, layers, d_toks.index("big")
    )
    assert measured[c.best.layer][c.best.head]["label"] == "previous token"
    assert c.best.query_agreement >= hp.NO_MATCH_BELOW

    coref = names.index("Coreference")
    c = hp.compare(
        d_toks, d_run.special, d_run.layers[0].weights[coref], t_toks, t_run.special, layers, d_toks.index("it")
    )
    assert c.query_word == "it" and c.at_work[c.query]
    assert "did" in c.left_out and "n't" in c.left_out
    # the reported agreement is the overlap of the two rows drawn side by side
    assert c.best.query_agreement == pytest.approx(float(np.minimum(c.designed[c.query], c.trained[c.query]).sum()))
    assert all(c.best.query_agreement >= m.query_agreement for m in c.matches)
