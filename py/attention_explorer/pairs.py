"""Sentence pairs: two sentences that differ in a word or two, read by the same head.

What it teaches: attention is a function of the words. Change "big" to "small"
in "The trophy didn't fit in the suitcase because it was too big" and a reader's
answer to "what is 'it'?" flips from the trophy to the suitcase (a Winograd
schema: only knowledge of the world decides). Does the head's attention flip
too? Put the two sentences side by side and subtract where their tokens align.

This module holds no mathematics and imports no model: each model declares its
ready-made pairs (ModelDescription.pairs); here are their lookup, the token alignment, and the small
readings of a trace row the view's verdict needs (which word a query looks at most). views/pairs.py
draws them.

    presets(description) -> tuple[PairPreset, ...]   ready-made pairs of a model (its description's)
    preset(description, preset_id) -> PairPreset | None
    align(tokens_a, tokens_b) -> ((i, i'), ...)      the tokens the two sentences share, in order
    substitutions(tokens_a, tokens_b) -> (Change, ...)  the spans that differ ("big" -> "small")
    counterpart(pairs, i) -> i' | None               where token i of A is in B
    strongest_word(row, tokens, special, query) -> j | None   the verdict's "looks most at"
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

from .models.base import ModelDescription, PairPreset  # noqa: F401  (a model declares its pairs)
from .tokens import word_at  # noqa: F401  (the view and the tests read words through pairs)


def presets(model: ModelDescription) -> tuple:
    """The ready-made pairs of a model (its description's; () for a model without any)."""
    return model.pairs


def preset(model: ModelDescription, preset_id: str):
    return next((p for p in presets(model) if p.id == preset_id), None)


def matching_preset(model: ModelDescription, first: str, second: str):
    """The preset whose two sentences these are (None for a pair the reader wrote)."""
    return next((p for p in presets(model) if (p.first, p.second) == (first, second)), None)


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
