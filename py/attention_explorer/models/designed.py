"""The illustrative model: one transformer block whose weights are designed by hand.

Random weights make meaningless attention pictures, and a trained model's
heads are hard to read. This model is built so that each of its four heads
does one recognisable thing on any ordinary English sentence.

Its tokenizer puts a start token "<s>" in front of the words, as trained
models do ([CLS] in BERT, <s> in RoBERTa and Llama): the tokens of
"The cat sat" are ("<s>", "The", "cat", "sat"). It is special, not a word of
the sentence (ModelRun.special == (0,)); the lexicon never sees it.

The residual stream (d_model = 256 numbers per token) is laid out in blocks
that never overlap, which is what makes the heads legible:

    dims   0..41   token features, each a named 0/1 fact from lexicon.py:
                   part of speech, singular/plural, human/animal/thing,
                   subject/object/modifier, "refers back like it/he/she/they"...;
                   the start token has only "any token" and "start token"
    dims  42..105  empty in the input; each head writes a 16-number summary of
                   what it looked at into its own slot of 16 (attention output)
    dims 106..119  empty in the input; the feed-forward layer's 14 detectors
                   write their answers here ("pronoun found an animal", ...)
    dims 120..127  unused, always 0 (dim 127 is the detectors' zero reference)
    dims 128..255  the sinusoidal positional encoding (Vaswani et al. 2017),
                   computed for a width of 128: 64 (sin, cos) pairs

So x = token_embedding + positional_encoding is really a concatenation:
a head that wants to match *what* a token is reads dims 0..41 and nothing
else; a head that wants to match *where* it is reads dims 128..255.

How a head is designed: q·k is a sum over the head's 64 columns, and each
column is a "channel" we wire by hand. A content channel puts a weight on
one query feature in W_Q and weights on key features in W_K, so the score
adds up "what this query looks for" x "what that key is". A positional
channel uses one frequency pair of the encoding: W_K copies (sin pω, cos pω)
of the key unchanged and W_Q *rotates* the query's pair by δ·ω, which makes
the product cos((p - δ - j)·ω): summed over pairs, a bump centred on the key
position j = p - δ. Every number in the content weights below is in logits,
the units of the softmax input at the default scale √d_k = 8 and
temperature 1, so "+4 for a noun" means e^4 ≈ 55 times more attention.

Where a head has nothing to do for a token, it parks the token's attention
on the start token: the coreference, verb and noun-phrase heads have a
"sink" channel, keyed on the feature "start token", that pulls every token
there (and the head's own queries only weakly, so they go there only when
they find nothing). Trained models do the same with [CLS] or <s>: an
"attention sink", or "no-op" attention.

V copies the attended token's 42 features; W_O keeps 16 of them and writes
them into the head's slot, so after attention every token also carries a
blurred copy of what each head found. The start token's features are only
"any token" and "start token", and W_O keeps neither: attending to it writes
exactly nothing into the head's slot, which is what makes it a no-op.
LayerNorm has gamma = 1, beta = 0.
The feed-forward layer wires only its first 14 hidden units, each a feature
detector reading two facts ("a pronoun" and "the coreference head found an
animal"); the other 1010 units have zero weights, kept so the shapes are
those of a real block. GELU and ReLU use w_1 as the detector; SwiGLU uses
the same w_1 as its linear branch and a sharpened copy (4·w_1) as its gate.
No weight is random and there are no biases, so the same sentence always
gives the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import core, tokens as tokens_mod
from . import lexicon
from .base import DimRegion, EmbeddingTrace, HeadInfo, ModelDescription, ModelRun, Preset, pair

START_TOKEN = "<s>"  # put before the words by tokenize(); special, never a word of the sentence

DESIGNED_NOT_TRAINED = (
    "The weights of this model were designed by hand, not learned from data. Each of its four "
    "heads was wired to do one thing you can name (find a pronoun's noun, link a verb to its "
    "subject and object, look one token back, join a word to the noun it describes) so that the "
    "pictures mean something. Like trained models, it puts a start token <s> before the words, and "
    "a token that has nothing to do in a head rests its attention there: the start token carries "
    'nothing the head passes on, so this "no-op" attention changes the token almost not at all. '
    'A bright <s> column means "nothing to do here", not that the start token matters. A trained '
    "model learns its heads from billions of words; they are rarely this tidy."
)


@dataclass(frozen=True)
class ModelConfig:
    """The designed model's sizes."""

    d_model: int = 256  # room for 42 named features, 4 head slots, detectors and a 128-wide positional code
    n_heads: int = 4  # one head per hand-designed behaviour
    d_head: int = 64  # d_model / n_heads, as in Vaswani et al.; √64 = 8 is an easy scale to divide by
    d_ff: int = 1024  # 4 * d_model, the ratio of Vaswani et al. and GPT-2
    # the start token + the tokenizer's limit on words; the positional code and the page are checked up to this
    max_tokens: int = tokens_mod.MAX_TOKENS + 1

    def __post_init__(self):
        assert self.n_heads * self.d_head == self.d_model, "heads must tile the residual stream exactly"
        assert self.d_model % 4 == 0, "the positional half must hold whole (sin, cos) pairs"
        assert self.d_ff >= 64, "the feed-forward layer needs room for its detector units"
        assert self.max_tokens >= 1, "a sentence has at least one token"


CONFIG = ModelConfig()

# ---------------------------------------------------------------------------
# features and the layout of the residual stream
# ---------------------------------------------------------------------------
FEATURE_NAMES: tuple[str, ...] = (
    "any token",
    "start token",  # 1 on every token; 1 on the start token <s> only (the heads' sink)
    *lexicon.POS_TAGS,  # part of speech, one-hot: determiner ... symbol
    "singular",
    "plural",
    "1st person",
    "2nd person",
    "3rd person",
    "human",
    "animal",
    "inanimate",
    "male",
    "female",
    "refers: it",
    "refers: he",
    "refers: she",
    "refers: they",  # pronouns and possessives that need a noun
    "subject",
    "object",
    "modifier",  # grammatical role (noun-phrase heads; modifier = det/adj before its noun)
    "past tense",
    "-ing form",
    "capitalised",
    "guessed",  # guessed: not in the lexicon, read from the spelling
)
N_FEATURES = len(FEATURE_NAMES)
_F = {name: i for i, name in enumerate(FEATURE_NAMES)}
assert len(_F) == N_FEATURES, "feature names must be unique"

# the 16 features each head copies into its slot: enough to say what it found
COPIED: tuple[str, ...] = (
    "noun",
    "proper noun",
    "pronoun",
    "verb",
    "auxiliary",
    "determiner",
    "adjective",
    "preposition",
    "singular",
    "plural",
    "human",
    "animal",
    "inanimate",
    "male",
    "female",
    "subject",
)
SLOT_START = N_FEATURES  # head h writes dims SLOT_START + 16h .. SLOT_START + 16h + 15
DETECTOR_START = SLOT_START + CONFIG.n_heads * len(COPIED)
POSITION_START = CONFIG.d_model // 2  # the positional encoding fills the second half
assert DETECTOR_START < POSITION_START, "features and head slots must fit in the first half"
assert N_FEATURES <= CONFIG.d_head, "V copies all features into one head's columns"


HEADS: tuple[HeadInfo, ...] = (
    HeadInfo(
        "Coreference",
        "coref",
        "A pronoun (it, he, she, they and their forms such as its, him, their) looks for the noun it "
        "stands for. The rule is grammar, not meaning: the noun must agree in number (it/he/she want a "
        "singular noun, they a plural one) and in kind (he and she want a person, and a man or a woman "
        "when the word says so; it wants a non-person). Among the nouns that fit, it prefers the "
        "subject of a clause, and for 'it' an animal over a thing. So in 'The cat sat on the mat "
        "because it was tired', 'it' goes to 'cat'. When two nouns fit equally well the attention "
        "splits between them; real meaning ('too big' vs 'too small') is beyond it. Every other token "
        "has nothing to resolve and rests its attention on the start token <s>, as trained models rest "
        "on [CLS] or <s>; so does a pronoun with no noun that fits ('Where is it?'). This is "
        '"no-op" attention: <s> carries nothing the head passes on, so resting there changes the '
        'token almost not at all. The bright <s> column means "nothing to do", not that the start '
        "token matters.",
    ),
    HeadInfo(
        "Verb and its arguments",
        "verb",
        "A verb or auxiliary (sat, chased, was, did) looks at its arguments: the subject and the objects "
        "of its clause, as nouns or pronouns. A positional bump centred on the verb itself makes "
        "nearby arguments win, so in a sentence with two clauses each verb finds its own subject. "
        "Nouns after a preposition ('on the mat') are not arguments. Tokens that are not verbs, and "
        "verbs with no argument in sight, have nothing to do here and rest their attention on the "
        "start token <s>: no-op attention, as in trained models, since <s> carries nothing the "
        "head passes on.",
    ),
    HeadInfo(
        "Previous token",
        "prev",
        "Every token looks at the token just before it, whatever the words are: this head reads only "
        "the positional encoding. Its query is the token's own position code rotated back by one "
        "step, and the key is the position code unchanged, so the dot product peaks where the key's "
        "position is one less than the query's. The first word looks at the start token <s>, and <s>, "
        "with nothing before it, looks at itself. Trained models have heads like this; they let the "
        "next layer see word pairs.",
    ),
    HeadInfo(
        "Noun-phrase head",
        "np",
        "Determiners, adjectives, numbers and possessives (the, big, three, his) look ahead to the "
        "noun they describe: the first noun that ends their phrase. Content finds the nouns; a "
        "positional bump one or two tokens to the right of the query picks the nearest one ahead. "
        "In 'the big brown dog', all three modifiers look at 'dog'. Turn on the causal mask and "
        "they can no longer see ahead, which is why left-to-right models cannot work this way: they "
        "grab a noun behind them if there is one, else rest on the start token <s>. Every other "
        "token rests its attention on <s> too: no-op attention, as in trained models, since <s> "
        "carries nothing the head passes on.",
    ),
)
assert len(HEADS) == CONFIG.n_heads, "one HeadInfo per head, in head order"


def _dim_names() -> tuple[str, ...]:
    names = list(FEATURE_NAMES)
    for head in HEADS:
        names += [f"{head.short}: {f}" for f in COPIED]
    names += [d.name for d in _DETECTORS]
    names += ["unused"] * (POSITION_START - 1 - len(names))
    names.append(ZERO_DIM)
    for i in range((CONFIG.d_model - POSITION_START) // 2):
        names += [f"position sin {i}", f"position cos {i}"]
    return tuple(names)


# ---------------------------------------------------------------------------
# tokens: the start token, then the words
# ---------------------------------------------------------------------------
def tokenize(text: str) -> tuple[str, ...]:
    """("<s>", *words): the start token, then the text split by tokens.py (which checks the word limit
    and counts <s> in its message)."""
    return (START_TOKEN, *tokens_mod.tokenize(text, start_token=START_TOKEN))


def _words(tokens) -> tuple[str, ...]:
    """The words of a token sequence: everything after the start token (what the lexicon analyses)."""
    return tuple(tokens[1:])


def default_query(tokens) -> int:
    """The token most worth clicking: the first pronoun that stands for a noun (it, he, she, they and
    their forms: what the coreference head resolves), else the last token."""
    toks = _check_tokens(tokens)
    analysis = lexicon.analyze(_words(toks))
    return next((i + 1 for i, a in enumerate(analysis) if a.refers), len(toks) - 1)


# ---------------------------------------------------------------------------
# token features and the embedding
# ---------------------------------------------------------------------------
def _analysis(token: str, index: int, tokens: list[str]) -> lexicon.TokenAnalysis | None:
    """What the lexicon says about word tokens[index]; None for the start token (not a word)."""
    assert 0 <= index < len(tokens), f"index {index} out of range for {len(tokens)} tokens"
    assert tokens[index] == token, f"tokens[{index}] is {tokens[index]!r}, not {token!r}"
    assert tokens[0] == START_TOKEN, f"the tokens must begin with the start token {START_TOKEN!r}"
    if index == 0:
        return None
    return lexicon.analyze(_words(tokens))[index - 1]


def token_features(token: str, index: int, tokens: list[str]) -> dict[str, float]:
    """Every named feature of tokens[index] (0.0 or 1.0), in FEATURE_NAMES order.

    The start token has only "any token" and "start token": no part of speech, nothing a head
    copies into its slot, nothing an FFN detector reads, so resting attention on it is a no-op."""
    a = _analysis(token, index, tokens)
    if a is None:
        return {name: float(name in ("any token", "start token")) for name in FEATURE_NAMES}
    on = {"any token", a.pos} | {f for f in a.feats if f in _F}
    if a.refers:
        on.add(f"refers: {a.refers}")
    if a.role:
        on.add(a.role)
    if a.modifier:
        on.add("modifier")
    if a.guessed:
        on.add("guessed")
    return {name: float(name in on) for name in FEATURE_NAMES}


def describe_token(token: str, index: int, tokens: list[str]) -> list[str]:
    """Short human-readable tags for the page, e.g. ['noun', 'singular', 'animal', 'subject']."""
    a = _analysis(token, index, tokens)
    if a is None:
        return ["start token", "special: not a word of the sentence"]
    f = token_features(token, index, tokens)
    tags = [a.pos]
    tags += [t for t in ("singular", "plural") if f[t]]
    if a.pos in (lexicon.PRON, lexicon.POSS):
        tags += [t for t in ("1st person", "2nd person", "3rd person") if f[t]]
    tags += [t for t in ("human", "animal", "inanimate", "male", "female", "past tense", "-ing form") if f[t]]
    if a.refers:
        tags.append(f"refers back ({a.refers})")
    if a.pos != lexicon.NEG and f["negation"]:
        tags.append("negation")
    tags += [t for t in ("subject", "object", "modifier") if f[t]]
    if a.guessed:
        tags.append("guessed from spelling")
    return tags


def _check_tokens(tokens) -> list[str]:
    """tokens as tokenize() returns them: the start token, then 1 to MAX_TOKENS words."""
    toks = list(tokens)
    if not toks or toks[0] != START_TOKEN:
        raise ValueError(
            f"tokens must begin with the start token {START_TOKEN!r} (use tokenize(text)); got {toks[:3]!r}"
        )
    if START_TOKEN in toks[1:]:
        raise ValueError(
            f"the start token {START_TOKEN!r} may only come first; got it at index {toks.index(START_TOKEN, 1)}"
        )
    if len(toks) == 1:
        raise ValueError("tokens must hold at least one word after the start token")
    if len(toks) > CONFIG.max_tokens:
        raise ValueError(
            f"tokens has {len(toks) - 1} words after the start token; the model takes at most "
            f"{CONFIG.max_tokens - 1} (tokens.MAX_TOKENS)"
        )
    if not all(isinstance(t, str) and t for t in toks):
        raise ValueError("tokens must be non-empty strings")
    return toks


def embed(tokens: list[str]) -> EmbeddingTrace:
    """token: the named features in dims 0..41; position: the sinusoidal code in dims 128..255;
    x = token + position (disjoint dims, so really a concatenation). Each [n, d_model]."""
    toks = _check_tokens(tokens)
    n, d = len(toks), CONFIG.d_model
    tok_emb = np.zeros((n, d))
    for i, t in enumerate(toks):
        tok_emb[i, :N_FEATURES] = list(token_features(t, i, toks).values())
    pos = np.zeros((n, d))
    pos[:, POSITION_START:] = core.sinusoidal_positional_encoding(n, d - POSITION_START)  # [n, 128]
    return EmbeddingTrace(token=tok_emb, position=pos, x=tok_emb + pos)


# ---------------------------------------------------------------------------
# attention weights, one channel (column of W_Q / W_K) at a time
# ---------------------------------------------------------------------------
SCALE = math.sqrt(CONFIG.d_head)  # 8.0: content weights are written in logits at this scale
QUERY_GAIN = 2.0  # W_Q entries for content channels; W_K = logits * SCALE / QUERY_GAIN
N_PAIRS = (CONFIG.d_model - POSITION_START) // 2  # 64 frequency pairs in the positional half
OMEGA = 1.0 / np.power(10000.0, 2 * np.arange(N_PAIRS) / (CONFIG.d_model - POSITION_START))  # [64] rad/token

# The coreference, verb and noun-phrase heads each have a "sink" channel keyed on the feature
# "start token": it pulls tokens to the start token by (others, queries) logits. Tokens that are not
# the head's queries feel the first number, strong enough to beat the head's positional bump, which
# pulls every token towards its neighbours. The head's own queries feel the second, weaker than any
# target they are built to find, so they rest on the start token only when they find nothing (a
# verb without arguments, a modifier whose noun the causal mask hides). The start token is never a
# word, so no pull here can hand a word attention it did not earn.

# head 0, coreference: what each kind of pronoun wants in its antecedent (logits)
# a noun, a subject preferred; never another pronoun or possessive (they carry "human", "male"... too),
# and not the singular verbs and determiners ("is", "a") that the number agreement would otherwise reward
_NOMINAL = {
    "noun": 4.0,
    "proper noun": 4.0,
    "pronoun": -8.0,
    "possessive": -8.0,
    "verb": -2.0,
    "auxiliary": -2.0,
    "determiner": -2.0,
    "subject": 2.0,
}
COREF_KEYS = {
    "refers: it": {**_NOMINAL, "singular": 2.0, "plural": -5.0, "human": -6.0, "animal": 1.0},
    "refers: he": {
        **_NOMINAL,
        "singular": 2.0,
        "plural": -5.0,
        "human": 2.0,
        "male": 3.0,
        "female": -3.0,
        "animal": -3.0,
        "inanimate": -6.0,
    },
    "refers: she": {
        **_NOMINAL,
        "singular": 2.0,
        "plural": -5.0,
        "human": 2.0,
        "female": 3.0,
        "male": -3.0,
        "animal": -3.0,
        "inanimate": -6.0,
    },
    "refers: they": {**_NOMINAL, "plural": 2.0, "singular": -5.0},
}
COREF_GAIN = 0.8  # scales all coreference logits: 1.0 is needlessly sharp for the default sentence
# pronouns feel 1.5: the weakest fitting noun (a thing after a preposition, 0.8 × 6 = 4.8 logits) wins
# clearly, and a pronoun with no fitting noun ("Where is it?") rests on the start token
COREF_SINK = (5.0, 1.5)

# head 1, verb -> its arguments
VERB_QUERY = {"verb": 1.0, "auxiliary": 1.0}
VERB_KEYS = {"subject": 9.0, "object": 9.0}
# a bump is (frequency pairs, shift δ, gain); gain is raw score per pair, so ÷8 for logits
VERB_BUMP = (range(2, 26), 0.0, 1.3)  # centred on the verb: nearby arguments win by ~2.5 logits
VERB_SINK = (8.0, 4.0)  # others: beats the bump's ~4-logit range; verbs: an argument scores >= 9 + 1

# head 2, previous token: positions only
PREV_BUMP = (range(0, 32), 1.0, 16.0)  # the 32 fastest pairs, one step back: the peak wins by ~3.8 logits

# head 3, modifier -> noun-phrase head
NP_QUERY = {"modifier": 1.0}
NP_KEYS = {"noun": 9.0, "proper noun": 9.0, "modifier": -9.0}  # a noun that is not itself a modifier
NP_BUMP = (range(0, 16), -1.5, 4.6)  # centred 1.5 tokens ahead: the noun 1-2 ahead beats one 3 ahead
NP_SINK = (14.0, 6.0)  # others: beats the bump's ~9-logit peak; modifiers: a noun scores >= 9


def _content_channel(w_q, w_k, col: int, query: dict, keys: dict, gain: float = 1.0) -> None:
    """Column col scores query-feature x key-feature; keys are in logits at the default scale."""
    for f, w in query.items():
        w_q[_F[f], col] = QUERY_GAIN * w
    for f, logit in keys.items():
        w_k[_F[f], col] = gain * logit * SCALE / QUERY_GAIN


def _position_channels(w_q, w_k, col0: int, pairs, shift: float, gain: float) -> int:
    """Columns col0.. score gain * Σ cos((p - shift - j)·ω) over the pairs; returns the next free column.

    Pair i of the encoding holds (sin pω, cos pω) in dims (2i, 2i+1) of the positional half. W_K copies
    it; W_Q rotates it by -shift·ω, turning the query's code into that of position p - shift.
    """
    col = col0
    root = math.sqrt(gain)  # split the gain between W_Q and W_K
    for i in pairs:
        s, c = POSITION_START + 2 * i, POSITION_START + 2 * i + 1  # the pair's sin and cos dims
        cs, sn = math.cos(shift * OMEGA[i]), math.sin(shift * OMEGA[i])
        # q_sin = sin((p-δ)ω) = sin pω cos δω - cos pω sin δω ; q_cos = cos((p-δ)ω) = cos pω cos δω + sin pω sin δω
        w_q[s, col], w_q[c, col] = root * cs, -root * sn
        w_q[s, col + 1], w_q[c, col + 1] = root * sn, root * cs
        w_k[s, col], w_k[c, col + 1] = root, root
        col += 2
    return col


def _attention_weights(cfg: ModelConfig):
    d, dh = cfg.d_model, cfg.d_head
    w_q, w_k, w_v, w_o = (np.zeros((d, d)) for _ in range(4))

    def sink(col, queries, logits: tuple):  # every token -> the start token, the head's queries weakly
        others, own = logits
        damp = {f: -(1.0 - own / others) for f in queries}  # a query token: any token + its query feature
        _content_channel(w_q, w_k, col, {"any token": 1.0, **damp}, {"start token": others})

    # head 0, coreference: one channel per kind of pronoun, plus the sink
    col = 0
    for query, keys in COREF_KEYS.items():
        _content_channel(w_q, w_k, col, {query: 1.0}, keys, COREF_GAIN)
        col += 1
    sink(col, COREF_KEYS, COREF_SINK)
    assert col < dh

    # head 1, verb -> subject and objects, near the verb
    base = dh
    _content_channel(w_q, w_k, base, VERB_QUERY, VERB_KEYS)
    sink(base + 1, VERB_QUERY, VERB_SINK)
    end = _position_channels(w_q, w_k, base + 2, *VERB_BUMP)
    assert end <= base + dh, "the verb head's channels must fit in its 64 columns"

    # head 2, previous token: positional channels only
    base = 2 * dh
    end = _position_channels(w_q, w_k, base, *PREV_BUMP)
    assert end <= base + dh, "the previous-token head's channels must fit in its 64 columns"

    # head 3, modifier -> the noun ending its phrase, just ahead
    base = 3 * dh
    _content_channel(w_q, w_k, base, NP_QUERY, NP_KEYS)
    sink(base + 1, NP_QUERY, NP_SINK)
    end = _position_channels(w_q, w_k, base + 2, *NP_BUMP)
    assert end <= base + dh, "the noun-phrase head's channels must fit in its 64 columns"

    # V: every head's value is the attended token's feature vector (dims 0..41 of its columns)
    # W_O: head h's copy of COPIED features goes to its own 16-dim slot of the residual stream
    for h in range(cfg.n_heads):
        for f in range(N_FEATURES):
            w_v[f, h * dh + f] = 1.0
        for k, name in enumerate(COPIED):
            w_o[h * dh + _F[name], SLOT_START + h * len(COPIED) + k] = 1.0
    return w_q, w_k, w_v, w_o


# ---------------------------------------------------------------------------
# feed-forward: a handful of feature detectors
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Detector:
    """One feed-forward feature detector: the residual dims it reads and when it fires."""

    name: str  # also the name of the residual dim it writes
    inputs: tuple  # ((residual dim name, weight), ...)
    threshold: float  # fires when the weighted inputs exceed this (in units of a 0/1 feature)


_PRONOUN_REFS = (("refers: it", 1.0), ("refers: he", 1.0), ("refers: she", 1.0), ("refers: they", 1.0))
_VERBISH = (("verb", 1.0), ("auxiliary", 1.0))
_DETECTORS: tuple[Detector, ...] = (
    Detector("pronoun found an animal", _PRONOUN_REFS + (("coref: animal", 1.0),), 1.5),
    Detector("pronoun found a person", _PRONOUN_REFS + (("coref: human", 1.0),), 1.5),
    Detector("pronoun found a thing", _PRONOUN_REFS + (("coref: inanimate", 1.0),), 1.5),
    Detector("pronoun found a plural", _PRONOUN_REFS + (("coref: plural", 1.0),), 1.5),
    Detector("verb involves a person", _VERBISH + (("verb: human", 1.0),), 1.4),
    Detector("verb involves an animal", _VERBISH + (("verb: animal", 1.0),), 1.4),
    Detector("verb involves a thing", _VERBISH + (("verb: inanimate", 1.0),), 1.4),
    Detector("verb has a plural argument", _VERBISH + (("verb: plural", 1.0),), 1.4),
    Detector("noun right after a determiner", (("noun", 1.0), ("prev: determiner", 1.0)), 1.5),
    Detector("word right after a preposition", (("prev: preposition", 1.0),), 0.5),
    Detector("verb right after a pronoun", _VERBISH + (("prev: pronoun", 1.0),), 1.5),
    Detector("describes a plural noun", (("modifier", 1.0), ("np: plural", 1.0)), 1.4),
    Detector("describes a singular noun", (("modifier", 1.0), ("np: singular", 1.0)), 1.4),
    Detector("describes a person", (("modifier", 1.0), ("np: human", 1.0)), 1.4),
)
UNIT_NAMES: tuple[str, ...] = (
    tuple(d.name for d in _DETECTORS)  # a name per hidden unit, "" if unwired
    + ("",) * (CONFIG.d_ff - len(_DETECTORS))
)
ZERO_DIM = "zero (reference)"  # the last dim before the positional half: 0 for every token, always
DETECTOR_GAIN = 1.0  # pre-activation per unit of margin (÷σ≈0.47 by LayerNorm): ~1 when a detector fires
SWIGLU_GATE_SHARPNESS = 4.0  # w_gate = 4·w_1: silu(4z)·z is ~0 for z < 0 (off stays off) and ~4z² for z > 0


def _ffn_weights(cfg: ModelConfig, dim_index: dict):
    d, d_ff = cfg.d_model, cfg.d_ff
    w_1, w_2 = np.zeros((d, d_ff)), np.zeros((d_ff, d))
    assert DETECTOR_START + len(_DETECTORS) < POSITION_START - 1, "detectors must fit below the zero dim"
    assert len(_DETECTORS) <= d_ff, "one hidden unit per detector"
    for u, det in enumerate(_DETECTORS):
        # The FFN reads LayerNorm's output, (r - μ)/σ per dim, not the 0/1 features r. Reading the
        # threshold off "any token" (r = 1) and the rest off the zero dim (r = 0) makes the weights
        # sum to zero, so μ cancels and the unit computes exactly gain·(Σ w·input - threshold)/σ.
        total = 0.0
        for name, w in det.inputs:
            w_1[dim_index[name], u] = DETECTOR_GAIN * w
            total += w
        w_1[_F["any token"], u] = -DETECTOR_GAIN * det.threshold
        w_1[dim_index[ZERO_DIM], u] = DETECTOR_GAIN * (det.threshold - total)
        w_2[u, DETECTOR_START + u] = 1.0  # the unit writes its answer into its own named dim
    return w_1, SWIGLU_GATE_SHARPNESS * w_1, w_2


@lru_cache(maxsize=1)
def block_params() -> core.BlockParams:
    """The hand-designed weights (built once; the arrays are read-only)."""
    cfg = CONFIG
    w_q, w_k, w_v, w_o = _attention_weights(cfg)
    w_1, w_gate, w_2 = _ffn_weights(cfg, {name: i for i, name in enumerate(DIM_NAMES)})
    zeros = lambda k: np.zeros(k)  # noqa: E731 -- no biases: every number that matters is a weight above
    params = core.BlockParams(
        w_q=w_q,
        w_k=w_k,
        w_v=w_v,
        w_o=w_o,
        b_q=zeros(cfg.d_model),
        b_k=zeros(cfg.d_model),
        b_v=zeros(cfg.d_model),
        b_o=zeros(cfg.d_model),
        ln1_gamma=np.ones(cfg.d_model),
        ln1_beta=zeros(cfg.d_model),
        w_1=w_1,
        b_1=zeros(cfg.d_ff),
        w_2=w_2,
        b_2=zeros(cfg.d_model),
        ln2_gamma=np.ones(cfg.d_model),
        ln2_beta=zeros(cfg.d_model),
        w_gate=w_gate,
    )
    for f in params.__dataclass_fields__:
        arr = getattr(params, f)
        if isinstance(arr, np.ndarray):
            arr.setflags(write=False)
    return params


def forward(tokens: list[str], settings: core.Settings = core.Settings()) -> tuple[EmbeddingTrace, core.BlockTrace]:
    """Embed the tokens and run the block (settings.dk_scale None means √d_head = 8)."""
    emb = embed(tokens)
    return emb, core.run_block(emb.x, block_params(), CONFIG.n_heads, settings)


DIM_NAMES: tuple[str, ...] = _dim_names()  # a name for every one of the d_model residual dims
assert len(DIM_NAMES) == CONFIG.d_model, "one name per residual dim"


# ---------------------------------------------------------------------------
# presets
# ---------------------------------------------------------------------------
COREF, VERB, PREV, NP = range(CONFIG.n_heads)  # head indices, in HEADS order


def _preset(id: str, title: str, text: str, look_for: str, head: int, query_word: str, nth: int = 0) -> Preset:
    """A preset whose note talks about head `head` and the nth occurrence of query_word."""
    toks = tokenize(text)
    hits = [i for i, t in enumerate(toks) if t == query_word]
    assert len(hits) > nth, f"preset {id!r}: {query_word!r} is not in {toks}"
    assert 0 <= head < CONFIG.n_heads, f"preset {id!r}: no head {head}"
    return Preset(id, title, text, look_for, hits[nth], head)


# Each note is shown after "Head h (name), query 'word':", naming the head and query the preset opens,
# so it starts from that token. tests/test_model.py checks each note's first claim against the weights.
PRESETS: tuple[Preset, ...] = (
    _preset(
        "tired-cat",
        "The cat was tired",
        "The cat sat down because it was tired",
        "almost all of its attention goes to 'cat', the only singular noun before it. Click any "
        "other token: it has no noun to find and rests on the start token <s>, a no-op, since <s> "
        "carries nothing this head passes on.",
        COREF,
        "it",
    ),
    _preset(
        "cat-dog",
        "Two animals: the subject wins",
        "The cat chased the dog because it was hungry",
        "both 'cat' and 'dog' fit 'it'. The head prefers the subject, so 'cat' gets the most and "
        "'dog' a visible share. Now pick Head 2 (Verb and its arguments) and click 'chased': it "
        "splits its attention between its subject 'cat' and its object 'dog'.",
        COREF,
        "it",
    ),
    _preset(
        "cat-dogs",
        "Singular or plural: 'they' needs 'dogs'",
        "The cat chased the dogs because they were hungry",
        "compare with the previous preset: 'dog' became 'dogs' and 'it' became 'they'. 'they' "
        "needs a plural noun, so the head now skips the subject 'cat' for 'dogs'.",
        COREF,
        "they",
    ),
    _preset(
        "man-mat",
        "A person is not 'it'",
        "The man sat on the mat because it was dirty",
        "'it' cannot stand for a person, so the head passes over 'man' and lands on 'mat'. Change "
        "'man' to 'cat' and it jumps back to the subject: the head reads grammar (animals may be "
        "'it'), not the meaning of 'dirty'.",
        COREF,
        "it",
    ),
    _preset(
        "she-he",
        "he or she",
        "Mary told John that she would call him tomorrow",
        "'she' goes to 'Mary', and 'him' (click it) to 'John': the names carry gender in the "
        "lexicon. Swap 'she' and 'him' for 'he' and 'her' and the arrows swap too.",
        COREF,
        "she",
    ),
    _preset(
        "trophy",
        "Where grammar runs out",
        "The trophy didn't fit in the suitcase because it was too big",
        "'it' goes to 'trophy' (the subject), which happens to be right. Change 'big' to 'small': a "
        "reader now takes 'it' to be the suitcase, but nothing this head reads has changed, so its "
        "answer does not move. Telling the two apart needs knowledge of the world (a Winograd "
        "schema).",
        COREF,
        "it",
    ),
    _preset(
        "agreement",
        "Agreement across a phrase",
        "The keys to the cabinet are on the table",
        "'are' looks at 'keys', its subject, not at the nearer 'cabinet', which sits after a "
        "preposition and is no argument. The plural 'keys' is why the verb is 'are' and not "
        "'is'.",
        VERB,
        "are",
    ),
    _preset(
        "list",
        "A list with commas",
        "I bought apples, pears, bread and milk.",
        "'bought' spreads its attention over its subject 'I' and the objects it governs, nearest "
        "first: 'I' and 'apples', one token away on either side, get equal shares. Pick Head 3 "
        "(Previous token): every word after a comma looks at the comma.",
        VERB,
        "bought",
    ),
    _preset(
        "question",
        "A question",
        "Where did the little dog hide its bone?",
        "in a question the subject comes after the auxiliary, yet 'did' still finds 'dog', and so "
        "does 'hide' (which also looks at its object 'bone'). Click 'its': with Head 1 "
        "(Coreference) it looks back at 'dog', with Head 4 (Noun-phrase head) ahead at 'bone'.",
        VERB,
        "did",
    ),
    _preset(
        "noun-phrase",
        "Describing words find their noun",
        "The big brown dog chased three small cats",
        "'The', 'big' and 'brown' all look ahead at 'dog'; 'three' and 'small' look at 'cats'. Turn "
        "on the causal mask: nobody can see ahead any more, so 'The', 'big' and 'brown' find no "
        "noun and rest on the start token <s>, while 'three' and 'small' grab 'dog', the nearest "
        "noun they can still see: the wrong one.",
        NP,
        "big",
    ),
    _preset(
        "nonsense",
        "Grammar without meaning",
        "Colorless green ideas sleep furiously.",
        "Chomsky's sentence means nothing, yet every head works: 'sleep' finds its subject "
        "'ideas'; with Head 4 (Noun-phrase head) 'Colorless' and 'green' look at 'ideas'; the "
        "previous-token head never needs meaning.",
        VERB,
        "sleep",
    ),
    _preset(
        "two-sentences",
        "Across a full stop",
        "The dog barked. It wanted dinner.",
        "'It' starts a new sentence but still finds 'dog'; the capital letter does not make it a "
        "name, because the tagger knows it begins a sentence.",
        COREF,
        "It",
    ),
    _preset(
        "long",
        "A long sentence",
        "When the old farmer came home after a long day in the fields, his tired dogs ran to "
        "the gate because they had missed him all afternoon.",
        "29 tokens, near the limit of 32. 'they' finds 'dogs' (with a share for 'fields', also "
        "plural); 'his' and 'him' find 'farmer'. With Head 3 (Previous token) the diagonal just "
        "below the main one stays sharp all the way down.",
        COREF,
        "they",
    ),
)
DEFAULT_TEXT = PRESETS[0].text
DEFAULT_QUERY = PRESETS[0].query
assert len({p.id for p in PRESETS}) == len(PRESETS), "preset ids must be unique"

# ---------------------------------------------------------------------------
# sentence pairs (views/pairs.py): head 0 (Coreference) resolves a pronoun by grammar, from features
# (number, person or not, animal or thing, subject first), never by what the sentence means. In a
# true Winograd pair those features do not change, so it picks the same noun in both sentences and
# is wrong in one of them; where a grammatical feature changes, it changes its answer, even when a
# reader's does not.
# ---------------------------------------------------------------------------------------------------
PAIRS = (
    pair(
        "trophy",
        "Trophy and suitcase",
        "The trophy didn't fit in the suitcase because it was too big",
        "The trophy didn't fit in the suitcase because it was too small",
        "it",
        ("trophy", "suitcase"),
        ("trophy", "trophy"),
        "'it' picks 'trophy' both times: right for 'big', wrong for 'small'. 'big' and 'small' are both "
        "just adjectives to this head, so nothing it reads has changed.",
        head=COREF,
    ),
    pair(
        "lift",
        "Too weak or too heavy",
        "The man could not lift his son because he was so weak",
        "The man could not lift his son because he was so heavy",
        "he",
        ("man", "son"),
        ("man", "man"),
        "'he' picks 'man' both times, the subject: right for 'weak', wrong for 'heavy'. Who is heavy "
        "is knowledge about lifting, not grammar.",
        head=COREF,
    ),
    pair(
        "council",
        "Feared or advocated",
        "The city council refused the demonstrators a permit because they feared violence",
        "The city council refused the demonstrators a permit because they advocated violence",
        "they",
        ("council", "demonstrators"),
        ("demonstrators", "demonstrators"),
        "'they' picks 'demonstrators' both times, the only plural noun: wrong for 'feared', where a "
        "reader means the council (one word, many people), right for 'advocated'.",
        head=COREF,
    ),
    pair(
        "chase",
        "Hungry or scared",
        "The cat chased the mouse because it was hungry",
        "The cat chased the mouse because it was scared",
        "it",
        ("cat", "mouse"),
        ("cat", "cat"),
        "'it' picks 'cat', the subject, both times: right for 'hungry', wrong for 'scared'.",
        head=COREF,
    ),
    pair(
        "soft-mat",
        "A person or a cat on the mat",
        "The man sat on the mat because it was soft",
        "The cat sat on the mat because it was soft",
        "it",
        ("mat", "mat"),
        ("mat", "cat"),
        "the opposite mistake: a reader says the mat is soft both times, but 'it' cannot mean a "
        "person, so the head takes 'mat' after 'man' and jumps to the subject 'cat': wrong.",
        head=COREF,
    ),
    pair(
        "number",
        "One or many: grammar decides",
        "The cat chased the dogs because they were hungry",
        "The cats chased the dog because they were hungry",
        "they",
        ("dogs", "cats"),
        ("dogs", "cats"),
        "here grammar is enough: 'they' wants a plural noun, so the head follows the plural from "
        "'dogs' to 'cats' and is right both times.",
        head=COREF,
    ),
)


# ---------------------------------------------------------------------------
# the model interface (models/base.py)
# ---------------------------------------------------------------------------
DIM_REGIONS = (
    DimRegion(0, N_FEATURES, "features", "features", f"named features of the token (dims 0–{N_FEATURES - 1})"),
    DimRegion(
        SLOT_START,
        DETECTOR_START,
        "head-slots",
        "head slots",
        f"the heads write what they found into dims {SLOT_START}–{DETECTOR_START - 1}",
    ),
    DimRegion(
        DETECTOR_START,
        POSITION_START,
        "detectors",
        "FFN",
        f"the feed-forward detectors write into dims {DETECTOR_START}–{POSITION_START - 1}",
    ),
    DimRegion(
        POSITION_START,
        CONFIG.d_model,
        "position",
        "position code",
        f"the sinusoidal position code (dims {POSITION_START}–{CONFIG.d_model - 1})",
    ),
)

DESCRIPTION = ModelDescription(
    id="designed",
    name=f"Designed model (1 layer × {CONFIG.n_heads} heads)",
    about=DESIGNED_NOT_TRAINED,
    n_layers=1,
    heads=(HEADS,),
    d_model=CONFIG.d_model,
    d_k=CONFIG.d_head,
    d_ff=CONFIG.d_ff,
    activations=core.ACTIVATIONS,  # every weight is designed, so each nonlinearity is meaningful
    max_tokens=CONFIG.max_tokens,
    dim_names=DIM_NAMES,
    dim_regions=DIM_REGIONS,
    unit_names=UNIT_NAMES,
    presets=PRESETS,
    default_text=DEFAULT_TEXT,
    default_query=DEFAULT_QUERY,
    pairs=PAIRS,
    headline=f"This model is designed by hand: each of its {CONFIG.n_heads} heads does one job you can name, so "
    "every number can be explained. Real models learn theirs.",
)


@lru_cache(maxsize=16)
def _embed_and_project(tokens: tuple) -> tuple:
    """(embedding, (q, k, v), tags) of a sentence: what moving T, √d_k, the mask or the activation leaves alone."""
    toks = list(tokens)
    emb = embed(toks)
    tags = tuple(tuple(describe_token(t, i, toks)) for i, t in enumerate(toks))
    return emb, core.project_qkv(emb.x, block_params(), CONFIG.n_heads), tags


class DesignedModel:
    """The hand-designed one-layer model behind the explorer's interface."""

    description = DESCRIPTION
    available = True  # its weights are written by this module

    def tokenize(self, text: str) -> tuple[str, ...]:
        return tokenize(text)

    def default_query(self, tokens) -> int:
        return default_query(tokens)

    def forward(self, tokens, settings: core.Settings) -> ModelRun:
        toks = list(tokens)
        emb, qkv, tags = _embed_and_project(tuple(toks))  # a slider does not change these: computed once
        trace = core.run_block(emb.x, block_params(), CONFIG.n_heads, settings, qkv=qkv)
        return ModelRun(
            tokens=tuple(toks), token_tags=tags, special=(0,), embedding=emb, layers=(trace,), params=(block_params(),)
        )


MODEL = DesignedModel()
