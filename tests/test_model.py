"""The illustrative model: its layout, its determinism, and what each hand-designed head does.

Expected attention targets are linguistic facts written out here (which noun a
pronoun stands for, which nouns are a verb's arguments, which noun a determiner
belongs to), not numbers read off the code. Head order is the one the page
documents: 0 coreference, 1 verb-argument, 2 previous token, 3 noun-phrase head.
The model's tokens are the start token "<s>" (index 0) and then the words, so a
word's index is one more than its place in the sentence.
"""

import numpy as np
import pytest

from attention_explorer import core
from attention_explorer.models import designed as model
from attention_explorer.tokens import MAX_TOKENS, tokenize as words

START = "<s>"  # the model's start token, always at index 0
tokenize = model.tokenize  # the tokens as the model sees them: (START, *words)

COREF, VERB, PREV, NP = 0, 1, 2, 3
PRESETS = {p.id: p for p in model.PRESETS}
THIRD_PERSON = {
    "it",
    "its",
    "itself",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
}


def idx(toks, ref):
    """Index of 'word' (first occurrence) or 'word#k' (k-th occurrence, 1-based) in toks."""
    word, _, k = ref.partition("#")
    hits = [i for i, t in enumerate(toks) if t == word]
    k = int(k or 1)
    assert len(hits) >= k, f"{ref!r} not in {toks}"
    return hits[k - 1]


def run(text, **kw):
    toks = tokenize(text)
    emb, trace = model.forward(toks, core.Settings(**kw))
    return toks, emb, trace


def test_the_tokens_are_the_start_token_then_the_words():
    assert model.START_TOKEN == START
    assert tokenize("The cat sat.") == (START, "The", "cat", "sat", ".")
    assert model.MODEL.tokenize("Dogs bark") == (START, "Dogs", "bark")
    run_ = model.MODEL.forward(
        tokenize("Dogs bark"), core.Settings(temperature=1.0, dk_scale=8.0, causal=False, activation="gelu")
    )
    assert run_.special == (0,), "the start token is special: not a word of the sentence"
    assert run_.tokens[0] == START


def test_typing_the_start_tokens_spelling_gives_ordinary_tokens():
    """'<s>' typed by the reader is three symbols, never a second start token."""
    toks = tokenize("<s> hi")
    assert toks[0] == START and START not in toks[1:]


# ---------------------------------------------------------------------------
# the linguistic facts behind every preset
# ---------------------------------------------------------------------------
# (pronoun, the noun it stands for) for every 3rd-person pronoun/possessive in each preset
COREF_FACTS = {
    "tired-cat": [("it", "cat")],
    "cat-dog": [("it", "cat")],  # both animals fit; the head's rule prefers the subject
    "cat-dogs": [("they", "dogs")],  # plural: only "dogs" agrees
    "man-mat": [("it", "mat")],  # "it" cannot be a man
    "she-he": [("she", "Mary"), ("him", "John")],
    "trophy": [("it", "trophy")],
    "agreement": [],
    "list": [],
    "question": [("its", "dog")],
    "noun-phrase": [],
    "nonsense": [],
    "two-sentences": [("It", "dog")],
    "long": [("his", "farmer"), ("they", "dogs"), ("him", "farmer")],
}

# every verb and auxiliary in each preset -> its arguments (subject and objects); an auxiliary
# shares the arguments of the verb it helps ("would call him", "had missed him")
VERB_FACTS = {
    "tired-cat": {"sat": {"cat"}, "was": {"it"}},
    "cat-dog": {"chased": {"cat", "dog"}, "was": {"it"}},
    "cat-dogs": {"chased": {"cat", "dogs"}, "were": {"they"}},
    "man-mat": {"sat": {"man"}, "was": {"it"}},
    "she-he": {"told": {"Mary", "John"}, "would": {"she", "him"}, "call": {"she", "him"}},
    "trophy": {"did": {"trophy"}, "fit": {"trophy"}, "was": {"it"}},
    "agreement": {"are": {"keys"}},
    "list": {"bought": {"I", "apples", "pears", "bread", "milk"}},
    "question": {"did": {"dog"}, "hide": {"dog", "bone"}},
    "noun-phrase": {"chased": {"dog", "cats"}},
    "nonsense": {"sleep": {"ideas"}},
    "two-sentences": {"barked": {"dog"}, "wanted": {"It", "dinner"}},
    "long": {"came": {"farmer"}, "ran": {"dogs"}, "had": {"they", "him"}, "missed": {"they", "him"}},
}

# every determiner / adjective / number / possessive in front of a noun -> that noun
NP_FACTS = {
    "tired-cat": {"The": "cat"},
    "cat-dog": {"The": "cat", "the": "dog"},
    "cat-dogs": {"The": "cat", "the": "dogs"},
    "man-mat": {"The": "man", "the": "mat"},
    "she-he": {},
    "trophy": {"The": "trophy", "the": "suitcase"},
    "agreement": {"The": "keys", "the": "cabinet", "the#2": "table"},
    "list": {},
    "question": {"the": "dog", "little": "dog", "its": "bone"},
    "noun-phrase": {"The": "dog", "big": "dog", "brown": "dog", "three": "cats", "small": "cats"},
    "nonsense": {"Colorless": "ideas", "green": "ideas"},
    "two-sentences": {"The": "dog"},
    "long": {
        "the": "farmer",
        "old": "farmer",
        "a": "day",
        "long": "day",
        "the#2": "fields",
        "his": "dogs",
        "tired": "dogs",
        "the#3": "gate",
        "all": "afternoon",
    },
}


def test_every_preset_has_its_facts_written_down():
    assert set(COREF_FACTS) == set(VERB_FACTS) == set(NP_FACTS) == set(PRESETS)


# ---------------------------------------------------------------------------
# configuration, API and layout
# ---------------------------------------------------------------------------
def test_config_matches_the_documented_sizes():
    c = model.CONFIG
    assert (c.d_model, c.n_heads, c.d_head, c.d_ff) == (256, 4, 64, 4 * 256)
    assert c.n_heads * c.d_head == c.d_model
    assert c.max_tokens == MAX_TOKENS + 1, "the start token + the tokenizer's limit on words"
    assert model.DESCRIPTION.max_tokens == c.max_tokens


def test_a_sentence_over_the_limit_is_told_the_limit_the_page_states():
    """The page's hint says "at most {max_tokens} tokens" and its token count includes <s>: the
    message for a sentence too long counts the same way (the words the reader typed, plus <s>)."""
    from attention_explorer.tokens import TokenError

    words = MAX_TOKENS + 3
    with pytest.raises(TokenError) as err:
        model.tokenize(" ".join(["cat"] * words))
    message = str(err.value)
    assert f"makes {words + 1} tokens ({words} from the sentence + start token <s>)" in message, message
    assert f"the limit is {model.DESCRIPTION.max_tokens}." in message, message
    assert len(model.tokenize(" ".join(["cat"] * MAX_TOKENS))) == model.DESCRIPTION.max_tokens


def test_default_scale_is_the_square_root_of_d_head():
    _, _, trace = run(model.DEFAULT_TEXT)
    assert trace.scale == pytest.approx(8.0)


def test_heads_are_described_in_head_order():
    assert len(model.HEADS) == model.CONFIG.n_heads
    names = [h.name.lower() for h in model.HEADS]
    assert "coreference" in names[COREF]
    assert "verb" in names[VERB]
    assert "previous" in names[PREV]
    assert "noun" in names[NP]
    for h in model.HEADS:
        assert h.short and len(h.explanation) > 100


def test_the_page_says_plainly_the_weights_are_designed_not_trained():
    text = model.DESIGNED_NOT_TRAINED.lower()
    assert "by hand" in text and "not learned" in text


def test_feature_names_are_unique_and_fit_in_the_first_half():
    names = model.FEATURE_NAMES
    assert len(set(names)) == len(names)
    assert len(names) <= model.CONFIG.d_model // 2
    for must in (
        "noun",
        "proper noun",
        "pronoun",
        "verb",
        "determiner",
        "singular",
        "plural",
        "human",
        "animal",
        "inanimate",
        "comma",
        "sentence end",
        "question word",
    ):
        assert must in names


def test_shapes():
    toks, emb, trace = run("The cat chased the dog because it was hungry")
    n, c = len(toks), model.CONFIG
    for a in (emb.token, emb.position, emb.x):
        assert a.shape == (n, c.d_model)
    assert trace.weights.shape == (c.n_heads, n, n)
    assert trace.q.shape == trace.k.shape == trace.v.shape == (c.n_heads, n, c.d_head)
    assert trace.ffn_act.shape == (n, c.d_ff)
    assert trace.out.shape == (n, c.d_model)
    p = model.block_params()
    assert p.w_q.shape == p.w_o.shape == (c.d_model, c.d_model)
    assert p.w_1.shape == p.w_gate.shape == (c.d_model, c.d_ff)
    assert p.w_2.shape == (c.d_ff, c.d_model)


def test_positional_encoding_fills_the_second_half_and_features_the_first():
    toks, emb, _ = run("Where did the little dog hide its bone?")
    n, half = len(toks), model.CONFIG.d_model // 2
    assert np.array_equal(emb.position[:, :half], np.zeros((n, half)))
    assert np.allclose(emb.position[:, half:], core.sinusoidal_positional_encoding(n, half))
    assert np.array_equal(emb.token[:, half:], np.zeros((n, half)))
    assert np.array_equal(emb.x, emb.token + emb.position)
    nf = len(model.FEATURE_NAMES)
    for i, t in enumerate(toks):
        feats = model.token_features(t, i, toks)
        assert list(feats) == list(model.FEATURE_NAMES)
        assert np.array_equal(emb.token[i, :nf], list(feats.values()))
    assert not emb.token[:, nf:].any(), "dims after the named features start empty"


def test_token_features_are_zero_or_one_and_mark_every_token_and_the_start():
    toks = tokenize("The cat sat down because it was tired")
    for i, t in enumerate(toks):
        f = model.token_features(t, i, toks)
        assert set(f.values()) <= {0.0, 1.0}
        assert f["any token"] == 1.0
        assert f["start token"] == (1.0 if i == 0 else 0.0), "only <s> is the start token, not the first word"


def test_the_start_token_has_no_features_but_being_a_token_and_the_start():
    """It is not a word: no part of speech, nothing a head copies, nothing an FFN detector reads."""
    toks = tokenize("Sarah saw the dog")
    on = {name for name, v in model.token_features(START, 0, toks).items() if v}
    assert on == {"any token", "start token"}
    assert model.describe_token(START, 0, toks)[0] == "start token"


def test_the_lexicon_reads_the_words_only():
    """The first word is still the sentence's first word for the tagger ('Wugs' is no name there),
    and a name right after the start token is still a name."""
    assert "proper noun" not in tags("Wugs sleep", "Wugs")
    assert {"proper noun", "female", "human", "subject"} <= set(tags("Sarah saw the dog", "Sarah"))
    assert {"determiner", "modifier"} <= set(tags("The cat sat", "The"))


def test_token_features_insist_on_a_consistent_index():
    toks = [START, "The", "cat"]
    with pytest.raises(AssertionError):
        model.token_features("dog", 2, toks)


def test_forward_is_deterministic():
    text = "When the old farmer came home, his dogs ran to the gate."
    for kw in ({}, {"causal": True, "activation": "swiglu", "temperature": 0.5}):
        _, emb1, t1 = run(text, **kw)
        _, emb2, t2 = run(text, **kw)
        assert np.array_equal(emb1.x, emb2.x)
        for name in ("q", "k", "v", "weights", "attn_out", "ffn_act", "out"):
            assert np.array_equal(getattr(t1, name), getattr(t2, name)), name


def test_block_params_are_built_once_and_read_only():
    p = model.block_params()
    assert model.block_params() is p
    assert p.w_gate is not None
    with pytest.raises(ValueError):
        p.w_q[0, 0] = 1.0
    assert np.array_equal(p.ln1_gamma, np.ones(256)) and not p.ln1_beta.any()
    assert np.array_equal(p.ln2_gamma, np.ones(256)) and not p.ln2_beta.any()


def test_values_copy_the_attended_tokens_features():
    toks, emb, trace = run("The cat sat down because it was tired")
    nf = len(model.FEATURE_NAMES)
    for h in range(model.CONFIG.n_heads):
        assert np.allclose(trace.v[h][:, :nf], emb.token[:, :nf])


def test_forward_rejects_empty_and_overlong_token_lists():
    with pytest.raises(ValueError):
        model.forward([])
    with pytest.raises(ValueError):
        model.forward([START])  # no word
    with pytest.raises(ValueError, match="words"):
        model.forward([START] + ["a"] * model.CONFIG.max_tokens)
    model.forward([START] + ["a"] * (model.CONFIG.max_tokens - 1))  # the longest sentence runs


def test_forward_wants_the_start_token_first_and_only_first():
    with pytest.raises(ValueError, match="start token"):
        model.forward(["The", "cat"])
    with pytest.raises(ValueError, match="start token"):
        model.forward([START, "The", START, "cat"])


@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
@pytest.mark.parametrize("causal", [False, True])
def test_every_option_runs_and_stays_finite(activation, causal):
    _, _, trace = run(
        "I \u2764\ufe0f NYC, \u05e9\u05dc\u05d5\u05dd! <b>3.14</b>",
        activation=activation,
        causal=causal,
        temperature=0.05,
        dk_scale=2.0,
    )
    assert np.isfinite(trace.out).all()
    assert np.allclose(trace.weights.sum(-1), 1.0)


def test_causal_mask_hides_the_future():
    _, _, trace = run("The cat sat down because it was tired", causal=True)
    n = trace.weights.shape[-1]
    assert not np.triu(trace.weights, k=1).any()
    assert np.array_equal(trace.mask, core.causal_mask(n))


def test_higher_temperature_softens_the_coreference_answer():
    toks = tokenize(model.DEFAULT_TEXT)
    q = model.DEFAULT_QUERY
    peaks = [model.forward(toks, core.Settings(temperature=t))[1].weights[COREF, q].max() for t in (0.5, 1.0, 2.0, 4.0)]
    assert peaks == sorted(peaks, reverse=True)
    assert peaks[-1] < peaks[0]


# ---------------------------------------------------------------------------
# presets and the default
# ---------------------------------------------------------------------------
def test_default_sentence_is_the_first_preset_with_it_as_query():
    toks = tokenize(model.DEFAULT_TEXT)
    assert len(toks) == 1 + 8, "the start token and eight words"
    assert toks[model.DEFAULT_QUERY] == "it"
    assert model.PRESETS[0].text == model.DEFAULT_TEXT and model.PRESETS[0].query == model.DEFAULT_QUERY


def test_default_it_attends_to_cat_with_more_than_half_its_weight():
    toks, _, trace = run(model.DEFAULT_TEXT)
    row = trace.weights[COREF, model.DEFAULT_QUERY]
    assert toks[int(row.argmax())] == "cat"
    assert row.max() > 0.5


def test_presets_are_well_formed():
    assert len(model.PRESETS) >= 8
    assert len(PRESETS) == len(model.PRESETS), "preset ids are unique"
    for p in model.PRESETS:
        toks = tokenize(p.text)
        assert 0 < p.query < len(toks), "the query is a word, not the start token"
        assert 0 <= p.head < model.CONFIG.n_heads
        assert p.title and len(p.look_for) > 40
    longest = max(len(words(p.text)) for p in model.PRESETS)
    assert MAX_TOKENS - 4 <= longest <= MAX_TOKENS, "one preset is a long sentence near the limit"


@pytest.mark.parametrize(
    "text,pronoun,noun",
    [
        ("Mary told John that he would call her tomorrow", "he", "John"),  # she-he, pronouns swapped
        ("Mary told John that he would call her tomorrow", "her", "Mary"),
        ("The trophy didn't fit in the suitcase because it was too small", "it", "trophy"),  # unmoved
    ],
)
def test_what_the_preset_texts_promise_when_a_word_is_changed(text, pronoun, noun):
    toks, _, trace = run(text)
    row = trace.weights[COREF, idx(toks, pronoun)]
    assert toks[int(row.argmax())] == noun


def test_each_presets_query_is_a_token_its_head_acts_on():
    for p in model.PRESETS:
        toks = tokenize(p.text)
        word = toks[p.query]
        acts = {
            COREF: {pron for pron, _ in COREF_FACTS[p.id]},
            VERB: set(VERB_FACTS[p.id]),
            NP: {w.partition("#")[0] for w in NP_FACTS[p.id]},
        }.get(p.head, set(toks[1:]))
        assert word in acts, f"{p.id}: query {word!r} is not something head {p.head} acts on"


# What each preset's note says about the head and query it opens, read from the note itself:
# (head, query word, the key the query attends to most). The list's note says 'I' and 'apples'
# get equal shares, so either may come out on top.
PRESET_NOTES = {
    "tired-cat": (COREF, "it", {"cat"}),
    "cat-dog": (COREF, "it", {"cat"}),
    "cat-dogs": (COREF, "they", {"dogs"}),
    "man-mat": (COREF, "it", {"mat"}),
    "she-he": (COREF, "she", {"Mary"}),
    "trophy": (COREF, "it", {"trophy"}),
    "agreement": (VERB, "are", {"keys"}),
    "list": (VERB, "bought", {"I", "apples"}),
    "question": (VERB, "did", {"dog"}),
    "noun-phrase": (NP, "big", {"dog"}),
    "nonsense": (VERB, "sleep", {"ideas"}),
    "two-sentences": (COREF, "It", {"dog"}),
    "long": (COREF, "they", {"dogs"}),
}


@pytest.mark.parametrize("pid", list(PRESETS))
def test_each_presets_note_is_true_for_the_head_and_query_it_opens(pid):
    """The preset opens the head and query its note is about, and there the query's strongest key is the
    token the note names (e.g. 'Agreement' opens the verb head on 'are', which looks at 'keys')."""
    assert set(PRESET_NOTES) == set(PRESETS)
    head, query, keys = PRESET_NOTES[pid]
    p = PRESETS[pid]
    toks, _, trace = run(p.text)
    assert (p.head, toks[p.query]) == (head, query), f"{pid} opens head {p.head} on {toks[p.query]!r}"
    row = trace.weights[head, p.query]
    assert toks[int(row.argmax())] in keys, f"{query!r} looks most at {toks[int(row.argmax())]!r}, not {keys}"
    assert sum(row[idx(toks, k)] for k in keys) > 0.5
    for k in keys:
        assert f"'{k}'" in p.look_for, f"the note of {pid} names {k!r}"


def test_the_list_notes_equal_shares_are_equal():
    toks, _, trace = run(PRESETS["list"].text)
    row = trace.weights[VERB, idx(toks, "bought")]
    assert row[idx(toks, "I")] == pytest.approx(row[idx(toks, "apples")], abs=1e-9)
    others = [row[j] for j in range(len(toks)) if toks[j] not in ("I", "apples")]
    assert row[idx(toks, "I")] > max(others), "they are the nearest arguments: nearest first"


def test_the_noun_phrase_notes_causal_mask_story():
    """'The', 'big' and 'brown' find no noun and rest on <s>; 'three' and 'small' grab 'dog'."""
    toks, _, trace = run(PRESETS["noun-phrase"].text, causal=True)
    w = trace.weights[NP]
    for m in ("The", "big", "brown"):
        assert int(w[idx(toks, m)].argmax()) == 0 and w[idx(toks, m), 0] > 0.5, m
    for m in ("three", "small"):
        assert toks[int(w[idx(toks, m)].argmax())] == "dog", m


def test_the_long_notes_second_choice_is_fields():
    toks, _, trace = run(PRESETS["long"].text)
    row = trace.weights[COREF, idx(toks, "they")]
    assert [toks[j] for j in np.argsort(-row)[:2]] == ["dogs", "fields"]


# ---------------------------------------------------------------------------
# the start token: where heads with nothing to do rest, and why that is a no-op
# ---------------------------------------------------------------------------
def test_attending_to_the_start_token_writes_nothing_into_any_head_slot():
    """What a head copies from <s> into the residual stream (v_<s> W_O, per head) is exactly zero."""
    toks, _, trace = run("Sarah saw the dog in the park")
    p, dh = model.block_params(), model.CONFIG.d_head
    for h in range(model.CONFIG.n_heads):
        assert not (trace.v[h, 0] @ p.w_o[h * dh : (h + 1) * dh]).any(), f"head {h}"


def test_a_token_resting_on_the_start_token_is_changed_little():
    """'saw' is nobody's pronoun: in the coreference head it rests on <s>, and the head's slot of its
    attention output stays near zero (what little there is comes from the few % elsewhere)."""
    toks, _, trace = run("Sarah saw the dog in the park")
    saw = idx(toks, "saw")
    assert trace.weights[COREF, saw, 0] > 0.9
    slot = slice(model.SLOT_START, model.SLOT_START + len(model.COPIED))
    assert np.abs(trace.attn_out[saw, slot]).max() < 0.1


def test_the_start_token_fires_no_ffn_detector():
    """Every detector's pre-activation is below its threshold for <s> (GELU leaves a small negative
    number for a unit that is off, as for any word; ReLU leaves exactly zero)."""
    wired = [u for u, name in enumerate(model.UNIT_NAMES) if name]
    _, _, trace = run("The cat sat down because it was tired")
    assert (trace.ffn_pre[0, wired] < 0).all()
    _, _, relu = run("The cat sat down because it was tired", activation="relu")
    assert not relu.ffn_out[0].any()


@pytest.mark.parametrize(
    "text,word,head",
    [
        ("Where is it?", "it", COREF),  # no noun at all: nothing to resolve
        ("I saw it yesterday.", "it", COREF),
        ("They said that they would come.", "they", COREF),  # a pronoun is no antecedent
        ("Come here quickly!", "Come", VERB),  # an imperative with no argument
        ("Sit down.", "Sit", VERB),
    ],
)
def test_a_query_that_finds_nothing_rests_on_the_start_token(text, word, head):
    toks, _, trace = run(text)
    row = trace.weights[head, idx(toks, word)]
    assert int(row.argmax()) == 0, f"{word!r} looks most at {toks[int(row.argmax())]!r}"
    assert max(row[1:]) < 0.5, "no word gets the attention it did not earn"


def test_a_sentence_starting_with_a_name_does_not_make_everything_attend_to_it():
    """The old sink was the first word: 'Sarah' took every row. Now only the rows that mean it do."""
    toks, _, trace = run("Sarah saw the dog in the park and she waved at it.")
    sarah = idx(toks, "Sarah")
    for h in range(model.CONFIG.n_heads):
        rows = {toks[i] for i in range(len(toks)) if trace.weights[h, i, sarah] >= 0.5}
        assert rows <= {"saw", "she", "waved", "and"}, (h, rows)  # its verbs, its pronoun, its next token
    assert {toks[i] for i in range(len(toks)) if trace.weights[COREF, i, sarah] >= 0.5} == {"she"}


def test_the_default_query_is_the_first_pronoun_else_the_last_token():
    assert model.default_query(tokenize("The cat sat down because it was tired")) == 6
    assert model.default_query(tokenize("Mary lost her keys and she cried")) == 3  # 'her' (a possessive)
    assert model.default_query(tokenize("I saw them")) == 3  # 'I' stands for no noun; 'them' does
    assert model.default_query(tokenize("Dogs bark.")) == 3  # no pronoun: the last token, '.'


# ---------------------------------------------------------------------------
# the heads, on every preset
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("pid", list(COREF_FACTS))
def test_coreference_head_on_every_preset(pid):
    toks, _, trace = run(PRESETS[pid].text)
    w = trace.weights[COREF]
    pronouns = {idx(toks, pron) for pron, _ in COREF_FACTS[pid]}
    assert pronouns == {i for i, t in enumerate(toks) if t.lower() in THIRD_PERSON}, "facts cover every pronoun"
    for pron, noun in COREF_FACTS[pid]:
        i, j = idx(toks, pron), idx(toks, noun)
        assert int(w[i].argmax()) == j, f"{pron!r} should look at {noun!r}, looks at {toks[int(w[i].argmax())]!r}"
        assert w[i, j] > 0.5
    assert toks[0] == START
    for i in set(range(len(toks))) - pronouns:
        assert int(w[i].argmax()) == 0, f"{toks[i]!r} has nothing to resolve: it rests on the start token"


@pytest.mark.parametrize("pid", list(VERB_FACTS))
def test_verb_head_on_every_preset(pid):
    toks, _, trace = run(PRESETS[pid].text)
    w = trace.weights[VERB]
    verbs = {idx(toks, v) for v in VERB_FACTS[pid]}
    for verb, args in VERB_FACTS[pid].items():
        i = idx(toks, verb)
        arg_idx = [idx(toks, a) for a in args]
        assert toks[int(w[i].argmax())] in args, f"{verb!r} should look at one of {sorted(args)}"
        assert w[i, arg_idx].sum() > 0.5, f"{verb!r} puts most of its attention on its arguments"
    assert toks[0] == START
    for i in set(range(len(toks))) - verbs:
        assert int(w[i].argmax()) == 0, f"{toks[i]!r} is not a verb: it rests on the start token"


@pytest.mark.parametrize("pid", list(PRESETS))
def test_previous_token_head_on_every_preset(pid):
    toks, _, trace = run(PRESETS[pid].text)
    w = trace.weights[PREV]
    assert int(w[0].argmax()) == 0, "the start token has no predecessor and looks at itself"
    assert int(w[1].argmax()) == 0, "the first word looks at the start token"
    for i in range(1, len(toks)):
        assert int(w[i].argmax()) == i - 1
        assert w[i, i - 1] > 0.5


@pytest.mark.parametrize("pid", list(NP_FACTS))
def test_noun_phrase_head_on_every_preset(pid):
    toks, _, trace = run(PRESETS[pid].text)
    w = trace.weights[NP]
    modifiers = {idx(toks, m) for m in NP_FACTS[pid]}
    for mod, noun in NP_FACTS[pid].items():
        i, j = idx(toks, mod), idx(toks, noun)
        assert int(w[i].argmax()) == j, f"{mod!r} should look at {noun!r}, looks at {toks[int(w[i].argmax())]!r}"
        assert w[i, j] > 0.5
    assert toks[0] == START
    for i in set(range(len(toks))) - modifiers:
        assert int(w[i].argmax()) == 0, f"{toks[i]!r} describes no noun: it rests on the start token"


# ---------------------------------------------------------------------------
# the heads on sentences that are not presets
# ---------------------------------------------------------------------------
MORE_COREF = [
    ("The girls met the boy because he was lost", "he", "boy"),  # only a male singular fits
    ("The dogs chased the cat because it was hungry", "it", "cat"),  # "dogs" is plural
    ("Alice thanked Bob because he helped her", "he", "Bob"),
    ("Alice thanked Bob because he helped her", "her", "Alice"),
    ("The children played in the park until they were tired", "they", "children"),
    ("The book fell off the table because it was heavy", "it", "book"),  # the subject wins
    ("Why did the bird leave its nest?", "its", "bird"),  # an animal beats a thing
    ("A horse and two cows ate the grass near their barn", "their", "cows"),  # the only plural
    ("The cat sat on the mat because it was dirty", "it", "cat"),  # man-mat with "man" -> "cat"
    ("Tom's mother smiled because he was home", "he", "Tom"),  # "mother" is female
]


@pytest.mark.parametrize("text,pronoun,noun", MORE_COREF)
def test_coreference_head_beyond_the_presets(text, pronoun, noun):
    toks, _, trace = run(text)
    row = trace.weights[COREF, idx(toks, pronoun)]
    assert toks[int(row.argmax())] == noun
    assert row.max() > 0.5


MORE_VERBS = [
    ("The girls met the boy because he was lost", "met", {"girls", "boy"}),
    ("The girls met the boy because he was lost", "was", {"he"}),
    ("The children played in the park until they were tired", "were", {"they"}),
    ("A horse and two cows ate the grass near their barn", "ate", {"horse", "cows", "grass"}),
    ("Is the soup too hot for the kids?", "Is", {"soup"}),
    ("Who ate the cake?", "ate", {"Who", "cake"}),
]


@pytest.mark.parametrize("text,verb,args", MORE_VERBS)
def test_verb_head_beyond_the_presets(text, verb, args):
    toks, _, trace = run(text)
    row = trace.weights[VERB, idx(toks, verb)]
    assert toks[int(row.argmax())] in args
    assert sum(row[idx(toks, a)] for a in args) > 0.5


MORE_NP = [
    ("Why did the bird leave its nest?", {"the": "bird", "its": "nest"}),
    (
        "A horse and two cows ate the grass near their barn",
        {"A": "horse", "two": "cows", "the": "grass", "their": "barn"},
    ),
    ("My sister gave her dog a bone", {"My": "sister", "her": "dog", "a": "bone"}),
    ("Tom's mother smiled", {"'s": "mother"}),
    ("a very big, red ball", {"a": "ball", "big": "ball", "red": "ball"}),
]


@pytest.mark.parametrize("text,facts", MORE_NP)
def test_noun_phrase_head_beyond_the_presets(text, facts):
    toks, _, trace = run(text)
    for mod, noun in facts.items():
        row = trace.weights[NP, idx(toks, mod)]
        assert toks[int(row.argmax())] == noun, mod
        assert row.max() > 0.5


@pytest.mark.parametrize(
    "text",
    [
        "Hi",
        "Colorless green ideas sleep furiously and glorp the wugs.",
        "שלום עולם, מה שלומך?",
        "<img src=x onerror=alert(1)>",
        "I \u2764\ufe0f \U0001f355 \U0001f355 \U0001f355 !!!",
        " ".join(f"w{i}" for i in range(MAX_TOKENS)),
    ],
)
def test_previous_token_head_works_for_any_tokens_at_all(text):
    toks, _, trace = run(text)
    w = trace.weights[PREV]
    for i in range(1, len(toks)):
        assert int(w[i].argmax()) == i - 1
        assert w[i, i - 1] > 0.5


def test_previous_token_head_reads_positions_only():
    a = run("The cat sat down because it was tired")[2].weights[PREV]
    b = run("Blue ideas, 42 \U0001f355 of them?")[2].weights[PREV]  # other tokens, same count
    assert a.shape == b.shape
    assert np.allclose(a, b)


def test_previous_token_head_survives_the_causal_mask():
    toks, _, trace = run(PRESETS["long"].text, causal=True)
    w = trace.weights[PREV]
    assert all(int(w[i].argmax()) == i - 1 for i in range(1, len(toks)))


def test_causal_mask_stops_modifiers_from_seeing_their_noun():
    toks, _, trace = run("The big brown dog", causal=True)
    w = trace.weights[NP]
    assert all(w[idx(toks, m), idx(toks, "dog")] == 0.0 for m in ("The", "big", "brown"))


def test_the_ffn_detectors_answer_for_the_default_sentence():
    toks, _, trace = run(model.DEFAULT_TEXT)
    animal = model.DIM_NAMES.index("pronoun found an animal")
    it, tired = idx(toks, "it"), idx(toks, "tired")
    assert trace.ffn_out[it, animal] > 0.5, "'it' found 'cat', an animal"
    assert abs(trace.ffn_out[tired, animal]) < 0.2, "'tired' is no pronoun"


def test_hidden_units_are_named_where_wired_and_silent_elsewhere():
    names = model.UNIT_NAMES
    assert len(names) == model.CONFIG.d_ff
    wired = [u for u, n in enumerate(names) if n]
    assert "pronoun found an animal" in names
    p = model.block_params()
    silent = np.setdiff1d(np.arange(model.CONFIG.d_ff), wired)
    assert not p.w_1[:, silent].any() and not p.w_2[silent].any() and not p.w_gate[:, silent].any()
    for u in wired:  # each named unit writes exactly the residual dim of the same name
        assert [model.DIM_NAMES[d] for d in np.flatnonzero(p.w_2[u])] == [names[u]]


def test_dim_names_name_every_residual_dim():
    assert len(model.DIM_NAMES) == model.CONFIG.d_model
    assert model.DIM_NAMES[: len(model.FEATURE_NAMES)] == model.FEATURE_NAMES
    assert all(n.startswith("position") for n in model.DIM_NAMES[model.CONFIG.d_model // 2 :])


# ---------------------------------------------------------------------------
# describe_token: the tags the page shows, including guesses for unknown words
# ---------------------------------------------------------------------------
def tags(text, ref):
    toks = tokenize(text)
    i = idx(toks, ref)
    return model.describe_token(toks[i], i, toks)


@pytest.mark.parametrize(
    "text,word,expected,absent",
    [
        ("The cat sat down", "cat", {"noun", "singular", "animal", "subject"}, {"guessed from spelling"}),
        ("She saw two dogs", "dogs", {"noun", "plural", "animal", "object"}, set()),
        ("The cat sat down because it was tired", "it", {"pronoun", "singular", "3rd person"}, set()),
        ("Later Mary left", "Mary", {"proper noun", "female", "human"}, {"guessed from spelling"}),
        ("The women sang", "women", {"noun", "plural", "human", "female"}, set()),
        ("I did n't go", "n't", {"negation"}, set()),
        ("We like the big ball", "big", {"adjective", "modifier"}, set()),
        ("Where is it?", "Where", {"question word"}, {"start token"}),  # the first word is a word
        ("Wait, stop!", ",", {"comma"}, set()),
        ("Wait, stop!", "!", {"sentence end"}, set()),
    ],
)
def test_describe_token_known_words(text, word, expected, absent):
    got = set(tags(text, word))
    assert expected <= got, got
    assert not (absent & got), got


@pytest.mark.parametrize(
    "text,word,expected",
    [
        ("The wug slept", "wug", {"noun", "singular", "guessed from spelling"}),  # no rule fits: a noun
        ("Three blorfs slept", "blorfs", {"noun", "plural", "guessed from spelling"}),  # -s
        ("The cat glorped", "glorped", {"verb", "past tense", "guessed from spelling"}),  # -ed
        ("It was snarfing", "snarfing", {"verb", "-ing form", "guessed from spelling"}),  # -ing
        ("It ran frobnicately", "frobnicately", {"adverb", "guessed from spelling"}),  # -ly
        ("A gloriferous day", "gloriferous", {"adjective", "guessed from spelling"}),  # -ous
        ("I met Zanzibeth yesterday", "Zanzibeth", {"proper noun", "human", "guessed from spelling"}),  # capital inside
        ("We saw 42 owls", "42", {"number"}),
        ("Nice \U0001f355", "\U0001f355", {"symbol"}),
    ],
)
def test_describe_token_guesses_unknown_words_from_their_spelling(text, word, expected):
    got = set(tags(text, word))
    assert expected <= got, got


def test_an_unknown_capitalised_first_word_is_not_taken_for_a_name():
    assert "proper noun" not in tags("Wugs sleep", "Wugs")


def test_ambiguous_words_are_read_from_their_neighbour():
    assert "noun" in tags("The walk was long", "walk")
    assert "verb" in tags("They walk home", "walk")
    assert "possessive" in tags("I saw her dog", "her")
    assert "pronoun" in tags("I saw her yesterday", "her")
    assert "auxiliary" in tags("it's late", "'s")
    assert "possessive" in tags("John's dog", "'s")
    assert "adverb" in tags("The cat sat down", "down")
    assert "preposition" in tags("The cat ran down the road", "down")
