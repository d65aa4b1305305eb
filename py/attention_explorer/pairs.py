"""Sentence pairs: two sentences that differ in a word or two, read by the same head.

What it teaches: attention is a function of the words. Change "big" to "small"
in "The trophy didn't fit in the suitcase because it was too big" and a reader's
answer to "what is 'it'?" flips from the trophy to the suitcase (a Winograd
schema: only knowledge of the world decides). Does the head's attention flip
too? Put the two sentences side by side and subtract where their tokens align.

This module holds no mathematics and imports no model: the presets (per model
id), the token alignment, and the small readings of a trace row the view's
verdict needs (which word a query looks at most). views/pairs.py draws them.

    presets(model_id) -> tuple[PairPreset, ...]      ready-made pairs for a model
    preset(model_id, preset_id) -> PairPreset | None
    align(tokens_a, tokens_b) -> ((i, i'), ...)      the tokens the two sentences share, in order
    substitutions(tokens_a, tokens_b) -> (Change, ...)  the spans that differ ("big" -> "small")
    counterpart(pairs, i) -> i' | None               where token i of A is in B
    strongest_word(row, tokens, special, query) -> j | None   the verdict's "looks most at"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Sequence

from .tokens import word_at  # noqa: F401  (the view and the tests read words through pairs)


@dataclass(frozen=True)
class PairPreset:
    """A ready-made pair. `first` becomes the sentence, `second` the second sentence, the first
    `query_word` token of the first sentence the query, (layer, head) the head both pictures show."""
    id: str
    title: str
    first: str
    second: str
    query_word: str  # the token as the model spells it (the trained model lowercases: "it")
    layer: int = 0
    head: int = 0
    note: str = ""           # one line: what to look for (plain text; the view escapes it)
    expect_first: str = ""   # the word a reader takes the query to mean in the first sentence
    expect_second: str = ""  # ... and in the second; "" = no single right answer
    # the words the head picks (strongest_word) at the preset's head with the model's own settings
    # (T = 1, its √d_k, no mask): what the note talks about; tests/test_pairs.py checks them
    picks: tuple = ()

    def __post_init__(self):
        assert self.first and self.second and self.first != self.second, f"{self.id}: two different sentences"
        assert self.query_word, f"{self.id}: a pair needs a query word"
        assert not self.picks or len(self.picks) == 2, f"{self.id}: picks are (first, second)"


def _pair(id, title, first, second, query_word, expect, picks, note, layer=0, head=0) -> PairPreset:
    return PairPreset(id, title, first, second, query_word, layer, head, note, expect[0], expect[1], picks)


# ---------------------------------------------------------------------------------------------------
# the designed model: head 0 (Coreference) resolves a pronoun by grammar, from hand-made features
# (number, person or not, animal or thing, subject first), never by what the sentence means. In a
# true Winograd pair those features do not change, so it picks the same noun in both sentences and
# is wrong in one of them; where a grammatical feature changes, it changes its answer, even when a
# reader's does not.
# ---------------------------------------------------------------------------------------------------
COREF = 0
_DESIGNED = (
    _pair("trophy", "Trophy and suitcase",
          "The trophy didn't fit in the suitcase because it was too big",
          "The trophy didn't fit in the suitcase because it was too small",
          "it", ("trophy", "suitcase"), ("trophy", "trophy"),
          "'it' picks 'trophy' both times: right for 'big', wrong for 'small'. 'big' and 'small' are both "
          "just adjectives to this head, so nothing it reads has changed.", head=COREF),
    _pair("lift", "Too weak or too heavy",
          "The man could not lift his son because he was so weak",
          "The man could not lift his son because he was so heavy",
          "he", ("man", "son"), ("man", "man"),
          "'he' picks 'man' both times, the subject: right for 'weak', wrong for 'heavy'. Who is heavy "
          "is knowledge about lifting, not grammar.", head=COREF),
    _pair("council", "Feared or advocated",
          "The city council refused the demonstrators a permit because they feared violence",
          "The city council refused the demonstrators a permit because they advocated violence",
          "they", ("council", "demonstrators"), ("demonstrators", "demonstrators"),
          "'they' picks 'demonstrators' both times, the only plural noun: wrong for 'feared', where a "
          "reader means the council (one word, many people), right for 'advocated'.", head=COREF),
    _pair("chase", "Hungry or scared",
          "The cat chased the mouse because it was hungry",
          "The cat chased the mouse because it was scared",
          "it", ("cat", "mouse"), ("cat", "cat"),
          "'it' picks 'cat', the subject, both times: right for 'hungry', wrong for 'scared'.",
          head=COREF),
    _pair("soft-mat", "A person or a cat on the mat",
          "The man sat on the mat because it was soft",
          "The cat sat on the mat because it was soft",
          "it", ("mat", "mat"), ("mat", "cat"),
          "the opposite mistake: a reader says the mat is soft both times, but 'it' cannot mean a "
          "person, so the head takes 'mat' after 'man' and jumps to the subject 'cat': wrong.",
          head=COREF),
    _pair("number", "One or many: grammar decides",
          "The cat chased the dogs because they were hungry",
          "The cats chased the dog because they were hungry",
          "they", ("dogs", "cats"), ("dogs", "cats"),
          "here grammar is enough: 'they' wants a plural noun, so the head follows the plural from "
          "'dogs' to 'cats' and is right both times.", head=COREF),
)

# ---------------------------------------------------------------------------------------------------
# the trained model: layer 4, head 2 (0-based 3, 1) is the head that sends a pronoun's attention to
# the nouns it could mean (measured on these and other Winograd pairs: about 70 % of the pronoun's
# row on the two candidates, its strongest word always one of them). Which of the two it prefers
# hardly moves with the meaning: it is right about half the time, like a coin.
# ---------------------------------------------------------------------------------------------------
L4H2 = {"layer": 3, "head": 1}
_MINILM = (
    _pair("trophy", "Trophy and suitcase",
          "The trophy didn't fit in the suitcase because it was too big.",
          "The trophy didn't fit in the suitcase because it was too small.",
          "it", ("trophy", "suitcase"), ("trophy", "trophy"),
          "this head splits 'it' between the two nouns, 'trophy' most, in both sentences: right for "
          "'big', wrong for 'small'.", **L4H2),
    _pair("lift", "Too weak or too heavy",
          "The man could not lift his son because he was so weak.",
          "The man could not lift his son because he was so heavy.",
          "he", ("man", "son"), ("son", "son"),
          "'he' goes to 'son' both times: wrong for 'weak', right for 'heavy'. The head finds the "
          "nouns; it does not work out which one is meant.", **L4H2),
    _pair("council", "Feared or advocated",
          "The city council refused the demonstrators a permit because they feared violence.",
          "The city council refused the demonstrators a permit because they advocated violence.",
          "they", ("council", "demonstrators"), ("demonstrators", "demonstrators"),
          "'they' goes to 'demonstrators' both times, the plural noun: wrong for 'feared', right for "
          "'advocated'.", **L4H2),
    _pair("call", "Not successful or not available",
          "Paul tried to call George on the phone, but he wasn't successful.",
          "Paul tried to call George on the phone, but he wasn't available.",
          "he", ("paul", "george"), ("paul", "george"),
          "here the head does move: 'he' leans to 'paul' for 'successful' and to 'george' for "
          "'available', as a reader would; in the first sentence only by a hair.", **L4H2),
)

_PRESETS = {"designed": _DESIGNED, "minilm": _MINILM}
for _model, _list in _PRESETS.items():
    assert len({p.id for p in _list}) == len(_list), f"{_model}: preset ids must be unique"


def presets(model_id: str) -> tuple:
    """The ready-made pairs for a model (() for a model without any)."""
    return _PRESETS.get(model_id, ())


def preset(model_id: str, preset_id: str):
    return next((p for p in presets(model_id) if p.id == preset_id), None)


def matching_preset(model_id: str, first: str, second: str):
    """The preset whose two sentences these are (None for a pair the reader wrote)."""
    return next((p for p in presets(model_id) if (p.first, p.second) == (first, second)), None)


# ---------------------------------------------------------------------------------------------------
# alignment
# ---------------------------------------------------------------------------------------------------
class Change(NamedTuple):
    """A span where the sentences differ: tokens a_start:a_stop of A became b_start:b_stop of B
    (either side may be empty: a token added or dropped)."""
    a_start: int
    a_stop: int
    b_start: int
    b_stop: int


def align(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> tuple:
    """((i, i'), ...): token i of A is the same token as token i' of B, both increasing.

    The most tokens the two sentences share, in order (a longest common subsequence); among those,
    the one in the fewest runs, so that "the cat" pairs with "the cat" rather than a stray "the" with
    a later "cat"; then the earliest. Only equal tokens are paired; the spans between are
    substitutions(). (difflib's matcher, which follows the query through an edit in state.py, takes
    the longest run first and can pair fewer: "the cat saw the dog" / "the dog saw the cat" would
    keep only "the cat", not "the … saw the".)"""
    a, b = list(tokens_a), list(tokens_b)
    n, m = len(a), len(b)
    # best[c][i][j]: (shared, -runs) of the best alignment of a[i:] with b[j:]; c = 1 when a[i-1] and
    # b[j-1] are aligned, so that aligning a[i] with b[j] continues their run instead of starting one
    best = [[[(0, 0)] * (m + 1) for _ in range(n + 1)] for _ in range(2)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            skip = max(best[0][i + 1][j], best[0][i][j + 1])
            for c in (0, 1):
                if a[i] == b[j]:
                    shared, runs = best[1][i + 1][j + 1]
                    take = (shared + 1, runs - (1 - c))
                    best[c][i][j] = take if take >= skip else skip
                else:
                    best[c][i][j] = skip
    out, i, j, c = [], 0, 0, 0
    while i < n and j < m:  # walk the choices back: align when that is best, else skip in A, else in B
        if a[i] == b[j] and (best[1][i + 1][j + 1][0] + 1, best[1][i + 1][j + 1][1] - (1 - c)) == best[c][i][j]:
            out.append((i, j))
            i, j, c = i + 1, j + 1, 1
        elif best[0][i + 1][j] == best[c][i][j]:
            i, c = i + 1, 0
        else:
            j, c = j + 1, 0
    return tuple(out)


def substitutions(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> tuple:
    """(Change, ...): the spans between the aligned tokens, in order ("big" -> "small")."""
    out = []
    prev_a, prev_b = 0, 0
    for i, j in align(tokens_a, tokens_b) + ((len(tokens_a), len(tokens_b)),):
        if i > prev_a or j > prev_b:
            out.append(Change(prev_a, i, prev_b, j))
        prev_a, prev_b = i + 1, j + 1
    return tuple(out)


def counterpart(pairs, i: int) -> Optional[int]:
    """The B index aligned with A's token i (None when the edit changed it)."""
    return next((b for a, b in pairs if a == i), None)


# ---------------------------------------------------------------------------------------------------
# reading a query row
# ---------------------------------------------------------------------------------------------------
def strongest_word(row, tokens, special, query: int) -> Optional[int]:
    """The key with the most weight in a query's row (first on ties), leaving out the special tokens
    ([CLS], [SEP], <s>: where a head rests when it has nothing to do) and the query itself (a pronoun
    is not its own referent). None when every other word gets 0 (all masked or all on specials)."""
    best, best_w = None, 0.0
    for j, w in enumerate(row):
        w = float(w)
        if j == query or j in special:
            continue
        if w > best_w:
            best, best_w = j, w
    return best




def same_word(a: str, b: str) -> bool:
    """Words compared as a reader would: case aside (the trained model lowercases)."""
    return a.casefold() == b.casefold()
