"""Name a head by what it does (measured), and find the trained head that does a designed head's job.

NumPy, the standard library and `core` (the `core.Settings` that measure_heads
runs a model with). It imports no model module: pattern_scores, compare and the
functions between take attention arrays and token strings, and measure_heads
takes the model it measures as an argument (anything with the models/base.py
interface). So the build (CPython) and the page (Pyodide) run the same code.

1. Pattern scores: one head, one sentence
-----------------------------------------
`pattern_scores(weights, tokens, special)` reads one head's attention matrix
A [n, n] (row i = query i, rows sum to 1) and gives each known pattern a score
in [0, 1]: the mean, over the query rows where the pattern is defined, of the
attention mass the pattern predicts. Only word rows count: the rows of special
tokens ([CLS], [SEP], the designed model's "<s>") are never queries here. A
reader who sees "previous token, 1.00" reads: on average, every word piece puts
all of its attention on the piece just before it.

    "previous token"  A[i, i-1]; rows whose previous token is a word piece
                      (not the first word: its previous token is [CLS])
    "next token"      A[i, i+1]; rows whose next token is a word piece
                      (not the last: its next token is [SEP])
    "self"            A[i, i]; every word row
    "[CLS]"           mass on the start token, when the sequence starts with a special
                      token: [CLS] in BERT, "<s>" in the designed model (the labels are
                      fixed, so "[CLS]" means "the start token" for both models)
    "[SEP]"           mass on the end token, when the sequence ends with a special token
                      (BERT's [SEP]; the designed model has none, so its score is 0)
    "punctuation"     mass on the punctuation tokens other than the query itself; rows of
                      sentences with punctuation elsewhere
    "broad"           how evenly the row spreads over the words: (mass on word keys) x
                      exp(H) / m, with H the entropy of the row renormalised over the m word
                      keys (m >= 2). exp(H) is the effective number of keys attended, so a
                      row uniform over all words scores 1, uniform over half of them 0.5, a
                      row on one word 1/m, and a row resting on [CLS]/[SEP] about 0. Like the
                      others it is "the share of the row the pattern accounts for".

A pattern defined on no row of the input scores 0 (it predicts nothing there).
Patterns overlap (a previous token can be punctuation), so scores need not
sum to 1. `strongest(scores)` is the label with the highest score.

2. Heads named by measurement
-----------------------------
`measure_heads(model, CORPUS, dk_scale)` runs the model on every sentence of
CORPUS (T = 1, no mask) and pools the rows: each pattern's score is the mean
over every row of the corpus where it is defined (long sentences weigh more,
as they have more rows). build.py runs it on the trained model and ships the
result in the model's bundle, as models/trained.py reads it: per layer, per head,
{"label", "score", "scores"}. It is deterministic (no randomness; fixed order).

3. Designed vs trained, word by word (Clark et al. 2019)
--------------------------------------------------------
The two models cut a sentence differently: the designed one into words (with
"did" + "n't"), the trained one into lowercase WordPiece pieces ("didn", "'",
"t"; "tokenizer" -> "token", "##izer"). So both are compared on words:

    word_spans(tokens, special)  the pieces of each word: a piece and the "##" pieces after it;
                                 special tokens are in no word
    word_level(weights, spans)   attention TO a word = the sum over its pieces (columns),
                                 FROM a word = the mean over its pieces (rows), as Clark et al.;
                                 each row is then renormalised over the words, i.e. the mass on
                                 special tokens is left out (the designed model parks unused
                                 attention on "<s>", BERT on [CLS]/[SEP]: both no-ops)
    align(...)                   pairs (designed word, trained word) with the same lowercased,
                                 accent-free spelling, in order (difflib); words split differently
                                 ("did"/"n't" vs "didn"/"'"/"t") are left out of the comparison
    agreement                    for two rows p, q renormalised over the aligned words:
                                 sum_j min(p_j, q_j) = 1 - total variation distance: the share of
                                 attention that falls on the same words in both heads
    best_match(...)              every trained head (any layer) against one designed head, best
                                 first: by the agreement of the query's row when a query is given
                                 (what the page says about "it"), else by the mean agreement
    compare(...)                 all of the above from token-level attention, for the page

The mean agreement, and the query's row, count only where the designed head is
at work: rows that put at least half (AT_WORK) of their attention on the
aligned words. The designed heads park every other row on "<s>"; renormalised,
those rows would become near-uniform noise and reward the broadest trained
head, and "for 'trophy' the closest trained head is ..." would compare nothing.

Below NO_MATCH_BELOW = 0.5 the page says that no trained head does the
designed head's job for that query: at 0.5 at least half of the attention
goes to other words, so "the same job" would overclaim. For scale, on the
sentences we tried the median trained head reaches 0.05-0.2 on a designed
head's query row (chance), the best 0.55-0.96. Agreement is not correctness:
on "The trophy didn't fit in the suitcase because it was too big." layer 4,
head 2 of all-MiniLM-L6-v2 matches the designed coreference head for "it"
(0.83, both mostly on "trophy"), and it does the same when "big" becomes
"small", where "it" is the suitcase.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from . import core

PATTERNS = ("previous token", "next token", "self", "[CLS]", "[SEP]", "punctuation", "broad")
CONTINUATION = "##"  # WordPiece's mark of a piece that continues the word before it
NO_MATCH_BELOW = 0.5  # a query row agreement below this: "no trained head does this designed head's job"
AT_WORK = 0.5  # a designed row counts in the mean agreement when >= this much of it is on aligned words

# ~50 varied sentences (4-30 words): prose, questions, lists, numbers, quotes, dialogue, and long or rare
# words that WordPiece splits into pieces. Fixed: the measured labels are shipped and must be reproducible.
CORPUS = (
    "The cat sat on the mat.",
    "The trophy didn't fit in the suitcase because it was too big.",
    "A man is playing a guitar on the street.",
    "She gave him the book, and he read it twice.",
    "Where did you put the keys that I left on the kitchen table?",
    "Paris is the capital and most populous city of France.",
    "The stock market fell sharply after the unexpected announcement on Tuesday.",
    "I think, therefore I am.",
    "The children who live next door play football every afternoon.",
    "After the rain stopped, the birds began to sing again.",
    "Water boils at 100 degrees Celsius at sea level.",
    "The quick brown fox jumps over the lazy dog.",
    "My brother bought a new car last week, but it broke down yesterday.",
    "Can you tell me how to get to the train station from here?",
    "Time flies like an arrow; fruit flies like a banana.",
    "We need eggs, flour, sugar, butter and a pinch of salt.",
    '"Stop right there," the officer shouted, "and put your hands up!"',
    "The recipe calls for 250 grams of flour and 3 eggs.",
    "In 1969, Neil Armstrong became the first person to walk on the Moon.",
    "Photosynthesis converts sunlight, water and carbon dioxide into glucose and oxygen.",
    "The unbelievably enthusiastic tokenizer split everything into tiny pieces.",
    "Is it true that octopuses have three hearts?",
    "Dogs bark at night.",
    "Please close the window before you leave.",
    "The committee postponed its decision until the next meeting in March.",
    "Although the bridge was old, engineers declared it perfectly safe.",
    "He said that she said that they would come tomorrow.",
    "What time does the museum open on Sundays?",
    "Our neighbours' garden is full of sunflowers, tomatoes and bees.",
    "The price rose from $4.99 to $6.50 in just two months.",
    "Electroencephalography measures the electrical activity of the brain.",
    "The teacher asked the students to hand in their essays by Friday.",
    "Why would anyone leave a perfectly good sandwich on the bus?",
    "Mount Everest, the highest mountain on Earth, is 8,849 metres tall.",
    "The old lighthouse keeper wrote letters to his daughter every winter.",
    "Bananas, unlike most fruit, are technically berries.",
    "If you heat ice, it melts; if you cool water, it freezes.",
    "The software update fixed three bugs but introduced a new one.",
    'She whispered, "I\'m not sure this is a good idea."',
    "Thousands of commuters were delayed when the signal system failed this morning.",
    "The hungry caterpillar ate one apple, two pears and three plums.",
    "Nobody expected the small team from the village to win the championship.",
    "Do you prefer tea or coffee in the morning?",
    "The archaeologists uncovered a remarkably well-preserved Roman mosaic.",
    "Turn left at the bakery, then walk straight for about five minutes.",
    "The violinist practised the difficult passage until her fingers ached.",
    "Rain is expected tonight, with temperatures dropping to 3 degrees.",
    "The doctor asked the nurse to help her with the patient.",
    "Misunderstandings between neighbours are surprisingly common.",
    "When the old farmer came home, his tired dogs ran to the gate because they had missed him all day.",
)


# --------------------------------------------------------------------------
# 1. pattern scores
# --------------------------------------------------------------------------


def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation (Unicode P*) or ASCII symbols, as BERT splits them."""
    return bool(token) and all(
        unicodedata.category(c).startswith("P") or (c.isascii() and not c.isalnum() and not c.isspace()) for c in token
    )


def _pattern_sums(weights, tokens, special) -> dict[str, tuple[float, int]]:  # [n, n] -> {label: (sum, rows)}
    """For each pattern: (sum over the rows where it is defined of the mass it predicts, how many rows)."""
    a = np.asarray(weights, dtype=np.float64)
    n = len(tokens)
    assert a.shape == (n, n), f"one head's matrix [n, n] for {n} tokens, got {a.shape}"
    specials = set(int(s) for s in special)
    words = [i for i in range(n) if i not in specials]  # the query rows that count, and the word keys
    is_word = np.zeros(n, dtype=bool)
    is_word[words] = True
    punct = np.array([is_word[j] and is_punctuation(tokens[j]) for j in range(n)], dtype=bool)
    start = 0 if n and 0 in specials else None
    end = n - 1 if n > 1 and (n - 1) in specials else None
    m = len(words)
    sums = {p: [0.0, 0] for p in PATTERNS}

    def add(label, value):
        sums[label][0] += float(value)
        sums[label][1] += 1

    for i in words:
        row = a[i]
        if i > 0 and is_word[i - 1]:
            add("previous token", row[i - 1])
        if i + 1 < n and is_word[i + 1]:
            add("next token", row[i + 1])
        add("self", row[i])
        if start is not None:
            add("[CLS]", row[start])
        if end is not None:
            add("[SEP]", row[end])
        others = punct.copy()
        others[i] = False
        if others.any():
            add("punctuation", row[others].sum())
        if m >= 2:
            mass = float(row[is_word].sum())
            if mass > 0:
                p = row[is_word] / mass
                nz = p[p > 0]
                entropy = float(-(nz * np.log(nz)).sum())
                add("broad", mass * math.exp(entropy) / m)
            else:
                add("broad", 0.0)
    return {p: (s, c) for p, (s, c) in sums.items()}


def _means(sums: dict) -> dict[str, float]:
    return {p: (s / c if c else 0.0) for p, (s, c) in sums.items()}


def pattern_scores(weights, tokens, special) -> dict[str, float]:  # [n, n] -> {label: score in [0, 1]}
    """Each pattern's mean predicted mass over the word rows where it is defined (module docstring)."""
    return _means(_pattern_sums(weights, tokens, special))


def strongest(scores: dict) -> tuple[str, float]:
    """(label, score) of the highest score; ties go to the earlier label in PATTERNS."""
    order = {p: k for k, p in enumerate(PATTERNS)}
    label = max(scores, key=lambda p: (scores[p], -order.get(p, len(order))))
    return label, float(scores[label])


def measure_heads(model, sentences: Sequence[str] = CORPUS, dk_scale: Optional[float] = None) -> list:
    """Per layer, per head: {"label", "score", "scores"} pooled over the sentences at T = 1, no mask.

    model: anything with the models/base.py interface (description, tokenize, forward).
    dk_scale: the softmax's √d_k (None: the model's true one). Scores are rounded to 4 decimals,
    so the shipped JSON is compact and the same on every build.
    """
    desc = model.description
    scale = desc.true_dk_scale if dk_scale is None else float(dk_scale)
    pooled = [[{p: [0.0, 0] for p in PATTERNS} for _ in layer] for layer in desc.heads]
    for sentence in sentences:
        toks = model.tokenize(sentence)
        run = model.forward(toks, core.Settings(dk_scale=scale, activation=desc.activations[0]))
        for l, trace in enumerate(run.layers):
            for h in range(trace.weights.shape[0]):
                for p, (s, c) in _pattern_sums(trace.weights[h], run.tokens, run.special).items():
                    pooled[l][h][p][0] += s
                    pooled[l][h][p][1] += c
    out = []
    for layer in pooled:
        heads = []
        for sums in layer:
            scores = {p: round(v, 4) for p, v in _means(sums).items()}
            label, score = strongest(scores)
            heads.append({"label": label, "score": score, "scores": scores})
        out.append(heads)
    return out


# --------------------------------------------------------------------------
# 3. word level
# --------------------------------------------------------------------------


def word_spans(tokens, special, pieces: bool = True) -> list[tuple[int, int]]:
    """(start, stop) token indices of each word: a piece and the "##" pieces after it; specials in none.

    pieces=False: the tokens are words already (the designed model's), each its own span, even one a
    reader typed as "##x".
    """
    specials = set(int(s) for s in special)
    spans: list[list[int]] = []
    for i, tok in enumerate(tokens):
        if i in specials:
            continue
        if pieces and tok.startswith(CONTINUATION) and len(tok) > len(CONTINUATION) and spans and spans[-1][1] == i:
            spans[-1][1] = i + 1  # continues the word just before it
        else:
            spans.append([i, i + 1])
    return [(s, e) for s, e in spans]


def word_strings(tokens, spans) -> list[str]:
    """Each word's text: its pieces joined, the "##" marks dropped ("token" + "##izer" -> "tokenizer")."""
    return [
        "".join(t[len(CONTINUATION) :] if k and t.startswith(CONTINUATION) else t for k, t in enumerate(tokens[s:e]))
        for s, e in spans
    ]


def word_of(spans, token_index: int) -> Optional[int]:
    """The word a token belongs to, or None (a special token)."""
    for w, (s, e) in enumerate(spans):
        if s <= token_index < e:
            return w
    return None


def renormalise(rows):  # [..., k] -> [..., k]
    """Each row divided by its sum; a row with nothing in it stays 0."""
    rows = np.asarray(rows, dtype=np.float64)
    total = rows.sum(axis=-1, keepdims=True)
    return np.divide(rows, total, out=np.zeros_like(rows), where=total > 0)


def word_level(weights, spans, renormalise_rows: bool = True) -> np.ndarray:  # [..., n, n] -> [..., nw, nw]
    """Token attention -> word attention (Clark et al. 2019), renormalised over the words.

    To a word: the sum of its pieces' columns. From a word: the mean of its pieces' rows.
    Special tokens are in no span, so their mass is dropped and each row renormalised over
    the words (a row that had nothing on words stays 0). Works on one head or a stack.
    renormalise_rows=False keeps each row's share on the words (< 1 where it rests on
    specials): what best_match needs to know which rows are at work.
    """
    a = np.asarray(weights, dtype=np.float64)
    n = a.shape[-1]
    rows = np.zeros((len(spans), n))  # [n_words, n] mean over a word's pieces
    cols = np.zeros((n, len(spans)))  # [n, n_words] sum over a word's pieces
    for w, (s, e) in enumerate(spans):
        rows[w, s:e] = 1.0 / (e - s)
        cols[s:e, w] = 1.0
    out = rows @ a @ cols
    return renormalise(out) if renormalise_rows else out


def _plain(word: str) -> str:
    """Lowercase, accents stripped (as BERT's uncased tokenizer does), for matching spellings."""
    return "".join(c for c in unicodedata.normalize("NFD", word.lower()) if unicodedata.category(c) != "Mn")


def align(designed_tokens, designed_special, trained_tokens, trained_special) -> list[tuple[int, int]]:
    """(designed word index, trained word index) for the words both models spell the same, in order.

    Words are compared lowercased and without accents; difflib finds the longest runs of equal
    words. A word the tokenizers cut differently ("did" + "n't" vs "didn" + "'" + "t") has no
    partner and is left out of the comparison.
    """
    d_spans = word_spans(designed_tokens, designed_special, pieces=False)
    d = [_plain(w) for w in word_strings(designed_tokens, d_spans)]
    t = [_plain(w) for w in word_strings(trained_tokens, word_spans(trained_tokens, trained_special))]
    import difflib  # only when a trained model's heads are compared: not at the worker's start-up

    matcher = difflib.SequenceMatcher(a=d, b=t, autojunk=False)
    return [(blk.a + k, blk.b + k) for blk in matcher.get_matching_blocks() for k in range(blk.size)]


def aligned(designed_word, trained_word, pairs):  # [nd, nd], [..., nt, nt] -> [k, k], [..., k, k]
    """Both word-level matrices restricted to the aligned words and renormalised over them."""
    di = np.array([a for a, _ in pairs], dtype=np.intp)
    ti = np.array([b for _, b in pairs], dtype=np.intp)
    p = np.asarray(designed_word, dtype=np.float64)[np.ix_(di, di)]
    q = np.asarray(trained_word, dtype=np.float64)[..., ti[:, None], ti[None, :]]
    return renormalise(p), renormalise(q)


def agreement(p, q):  # [..., k], [..., k] -> [...]
    """sum_j min(p_j, q_j) per row: 1 − the total variation distance of two distributions."""
    return np.minimum(np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)).sum(axis=-1)


def _at_work(designed_word, pairs):  # [nd, nd] -> [k] bool
    """The aligned rows where the designed head puts at least AT_WORK of its attention on the aligned words."""
    di = np.array([a for a, _ in pairs], dtype=np.intp)
    return np.asarray(designed_word, dtype=np.float64)[np.ix_(di, di)].sum(axis=-1) >= AT_WORK


@dataclass(frozen=True)
class Match:
    """How closely one trained head matches a designed head."""

    layer: int  # 0-based layer of the trained head
    head: int  # 0-based head within that layer
    agreement: Optional[float]  # mean over the rows where the designed head is at work (None: no such row)
    query_agreement: Optional[float]  # the query word's row (None: no query, the query is not aligned, or the
    # designed head is not at work for it)
    query_word_mass: Optional[float]  # share of the trained head's query row on the aligned words before
    # renormalising (the rest rests on [CLS]/[SEP] or unaligned words)


def best_match(designed_word, trained_word_layers, pairs, query: Optional[int] = None) -> list[Match]:
    """Every trained head against one designed head on the aligned words, best first.

    designed_word: [nd, nd] the designed head, word level: word_level(..., renormalise_rows=False), so that
    each row's share on words is known (which rows are at work).
    trained_word_layers: per layer [n_heads, nt, nt] the trained heads, word_level(..., renormalise_rows=False)
    likewise (query_word_mass). Rows are renormalised over the aligned words here, for the agreement.
    pairs: align(...). query: the designed word index of the query (word_of), or None.
    Sorted by query_agreement when the query is aligned and the designed head at work for it, else by
    agreement (None last); ties by layer, then head.
    """
    pairs = list(pairs)
    d = np.asarray(designed_word, dtype=np.float64)
    ti = np.array([b for _, b in pairs], dtype=np.intp)
    at_work = _at_work(d, pairs)
    qpos = next((k for k, (a, _) in enumerate(pairs) if a == query), None)
    if qpos is not None and not at_work[qpos]:
        qpos = None  # the designed head rests for this query: nothing to compare
    matches = []
    for l, layer in enumerate(trained_word_layers):
        layer = np.asarray(layer, dtype=np.float64)
        p, q = aligned(d, layer, pairs)  # [k, k], [n_heads, k, k]
        rows = agreement(p, q)  # [n_heads, k]
        for h in range(layer.shape[0]):
            mean = float(rows[h][at_work].mean()) if at_work.any() else None
            if qpos is None:
                matches.append(Match(l, h, mean, None, None))
            else:
                mass = float(layer[h][ti[qpos], ti].sum())
                matches.append(Match(l, h, mean, float(rows[h][qpos]), mass))

    def key(m: Match):
        primary = m.query_agreement if qpos is not None else m.agreement
        return (-(primary if primary is not None else -1.0), m.layer, m.head)

    return sorted(matches, key=key)


@dataclass(frozen=True, eq=False)
class Comparison:
    """One designed head against every trained head on one sentence, for the page (compare())."""

    words: tuple[str, ...]  # the aligned words, as the designed model spells them
    pairs: tuple[tuple[int, int], ...]  # (designed word index, trained word index) per aligned word
    query: Optional[int]  # the query's position in `words` (None: a special token, or not aligned)
    query_word: Optional[str]  # the query as the designed model spells it (None: a special token)
    designed_query_mass: Optional[float]  # share of the designed query row on the aligned words (None: no query)
    designed_query_on_words: Optional[float]  # ... on any word (the rest rests on the start token)
    left_out: tuple[str, ...]  # the designed model's words with no partner (split differently)
    at_work: tuple[bool, ...]  # per aligned word: is the designed head at work in its row (AT_WORK)
    on_words: tuple[float, ...]  # per aligned word: share of the designed row on any word (not the start token)
    designed: np.ndarray  # [k, k] the designed head over the aligned words, rows renormalised
    trained: Optional[np.ndarray]  # [k, k] the best trained head likewise (None: no aligned words)
    matches: tuple[Match, ...]  # every trained head, best first (best_match)

    @property
    def best(self) -> Optional[Match]:
        return self.matches[0] if self.matches and self.words else None


def compare(
    designed_tokens,
    designed_special,
    designed_weights,
    trained_tokens,
    trained_special,
    trained_layers,
    query_token: Optional[int] = None,
) -> Comparison:
    """The whole comparison from token-level attention: designed_weights [n, n] of one designed head,
    trained_layers: per layer [n_heads, m, m] (run.layers[l].weights), query_token: the designed token index."""
    d_spans = word_spans(designed_tokens, designed_special, pieces=False)  # the designed model's tokens are words
    t_spans = word_spans(trained_tokens, trained_special)
    pairs = align(designed_tokens, designed_special, trained_tokens, trained_special)
    d_word = word_level(designed_weights, d_spans, renormalise_rows=False)  # [nd, nd]
    t_word = [word_level(w, t_spans, renormalise_rows=False) for w in trained_layers]  # per layer [H, nt, nt]
    words = word_strings(designed_tokens, d_spans)
    qword = word_of(d_spans, query_token) if query_token is not None else None
    matches = best_match(d_word, t_word, pairs, qword)
    qpos = next((k for k, (a, _) in enumerate(pairs) if a == qword), None)
    di = [a for a, _ in pairs]
    kept = set(di)
    designed, trained = aligned(d_word, t_word[matches[0].layer][matches[0].head] if matches else d_word, pairs)
    return Comparison(
        words=tuple(words[a] for a in di),
        pairs=tuple(pairs),
        query=qpos,
        query_word=words[qword] if qword is not None else None,
        designed_query_mass=float(d_word[qword, di].sum()) if qword is not None else None,
        designed_query_on_words=float(d_word[qword].sum()) if qword is not None else None,
        left_out=tuple(w for k, w in enumerate(words) if k not in kept),
        at_work=tuple(bool(x) for x in _at_work(d_word, pairs)),
        on_words=tuple(float(d_word[a].sum()) for a in di),
        designed=designed,
        trained=trained if pairs and matches else None,
        matches=tuple(matches),
    )


def table(measured) -> str:
    """The measured labels as text: one line per head, every score."""
    lines = ["layer head  label           score  " + " ".join(f"{p[:8]:>8}" for p in PATTERNS)]
    for l, layer in enumerate(measured):
        for h, m in enumerate(layer):
            lines.append(
                f"{l + 1:>5} {h + 1:>4}  {m['label']:<15} {m['score']:.2f}   "
                + " ".join(f"{m['scores'][p]:>8.2f}" for p in PATTERNS)
            )
    return "\n".join(lines)
