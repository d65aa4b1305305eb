"""The guided tour's questions: a newcomer's ten minutes from a sentence to the feed-forward network.

A step (tour_steps.py, re-exported here as STEPS) sets the page up, names the panel the page brings into
view, says what to look at, and may name its question. The question is built here from the live model
run (`QUESTIONS[step.ask](state, computed)`), so its answers and the feedback on each stay true whatever
the model's weights become; nothing here is a number written by hand.

This module is above state.py: some questions run the model again at another setting (state.compute).
State sets a step's page up from tour_steps.py and imports nothing of this one, so imports run one way.

    STEPS                       the steps, in order (state field "tour": the index, -1 = no tour)
    question(state, computed) -> Question | None
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from . import state as st
from .tour_steps import STEPS
from .views.markup import num, percent_label


@dataclass(frozen=True)
class Question:
    prompt: str
    answers: tuple[str, ...]
    right: int  # index into answers
    feedback: tuple[str, ...]  # one per answer: why (the card says first whether it is right)


def _pct(w: float) -> str:
    return f"{percent_label(w)} %"


def _row(computed, head: int, query: int):
    return computed.trace.weights[head, query]  # [n]: where the query looks in that head


def _top_words(computed, head: int, query: int, k: int = 3) -> list[int]:
    """The k tokens the query looks at most, strongest first (a word shown once)."""
    row, seen, out = _row(computed, head, query), set(), []
    for j in row.argsort()[::-1]:
        if computed.tokens[j] not in seen:
            seen.add(computed.tokens[j])
            out.append(int(j))
        if len(out) == k:
            break
    return out


def _which_word(state, computed) -> Question:
    """Which word does the query look at most in the selected head?"""
    toks, q, h = computed.tokens, state.query, state.head
    top = _top_words(computed, h, q)
    row = _row(computed, h, q)
    order = sorted(top, key=lambda j: toks[j].lower())  # not strongest first: that would give it away
    best = top[0]
    head_name = computed.heads[h].name
    feedback = tuple(
        f"'{toks[j]}' takes {_pct(row[j])} of the row of '{toks[q]}' in head {h + 1} ({head_name})."
        if j == best
        else f"'{toks[j]}' takes {_pct(row[j])}; the darkest cell of the row is '{toks[best]}' ({_pct(row[best])})."
        for j in order
    )
    return Question(
        f"In head {h + 1} ({head_name}), which word does '{toks[q]}' look at most?",
        tuple(f"'{toks[j]}'" for j in order),
        order.index(best),
        feedback,
    )


def _how_many_tokens(state, computed) -> Question:
    n = len(computed.tokens)
    words = n - len(computed.run.special)
    options = (n - 1, n, n + 1)
    why = (
        f"{n}: the {words} words of the sentence and the start token "
        f"{', '.join(computed.tokens[i] for i in computed.run.special)}, which gives a head somewhere to "
        "rest when it finds nothing."
    )
    return Question(
        "How many tokens does the model read in this sentence?",
        tuple(map(str, options)),
        1,
        tuple(why if k == n else f"Count the chips above the heatmap: {why}" for k in options),
    )


def _hot_limit(state, computed) -> Question:
    """Drag T to its largest: how does the row change (computed at T's limit and at 1/n)."""
    fields = st.BY_NAME["temperature"]
    hot_t = fields.limits[1]
    hot = st.compute(dataclasses.replace(state, temperature=hot_t))
    toks, q, h = computed.tokens, state.query, state.head
    row = _row(hot, h, q)
    best, n = int(row.argmax()), len(toks)
    even = 1 / n
    limits = (
        f"At T = {hot_t:g}, '{toks[best]}' still takes {_pct(row[best])} of the row, against "
        f"{_pct(even)} each if it were even (1/{n}). T only divides the scores: as T grows the row "
        "flattens towards 1/n, and as T goes to 0 all the weight goes to the highest score."
    )
    answers = ("All of it goes to one word", "It spreads out, but one word still leads", "Exactly even: 1/n each")
    if row.max() > 0.995:
        right = 0
    elif row.max() - row.min() < 0.005:
        right = 2
    else:
        right = 1
    feedback = (limits,) * 3
    return Question(
        f"Drag T to {hot_t:g}, its largest. What happens to the row of '{toks[q]}'?", answers, right, feedback
    )


def _large_scale(state, computed) -> Question:
    """The scores divided by the largest divisor the slider allows: sharper or flatter (computed)."""
    hi = st.BY_NAME["dk_scale"].limits[1]
    toks, q, h = computed.tokens, state.query, state.head
    now, big = _row(computed, h, q), _row(st.compute(dataclasses.replace(state, dk_scale=hi)), h, q)
    sharper = big.max() > now.max() + 1e-9
    flatter = big.max() < now.max() - 1e-9
    right = 0 if sharper else 1 if flatter else 2
    what = (
        f"Divided by {hi:g} instead of {state.dk_scale:g}, the scores are {hi / state.dk_scale:g} times "
        f"smaller: the top weight of '{toks[q]}' goes from {_pct(now.max())} to {_pct(big.max())}. The divisor "
        "sets how far apart the scores are: long vectors make large dot products, and dividing by √d_k "
        "keeps them in a range where the softmax neither picks one key always nor spreads evenly."
    )
    answers = ("Sharper: more weight on the top word", "Flatter: spread more evenly", "No change")
    return Question(
        f"Set the √d_k slider to {hi:g} instead of {state.dk_scale:g}. The row of '{toks[q]}' becomes…",
        answers,
        right,
        (what,) * 3,
    )


def _layernorm_mean(state, computed) -> Question:
    """After LayerNorm: the mean and spread of the query's vector (computed from the trace)."""
    toks, q = computed.tokens, state.query
    before, after = computed.trace.resid1[q], computed.trace.ln1[q]  # [d_model] each
    answers = ("Mean 0, spread 1 (then scaled by γ, shifted by β)", "Exactly what went in", "All zeros")
    what = (
        f"Before: mean {num(before.mean())}, spread {num(before.std())}; after: mean {num(after.mean())}, "
        f"spread {num(after.std())}. Every token's vector leaves at the same scale, whatever was added to "
        "it, so a stack of many layers neither blows up nor fades."
    )
    return Question(
        f"LayerNorm rescales the vector of '{toks[q]}' after the residual sum. What comes out?", answers, 0, (what,) * 3
    )


QUESTIONS: dict[str, Callable] = {  # by the name a step gives (tour_steps.Step.ask)
    "how_many_tokens": _how_many_tokens,
    "which_word": _which_word,
    "hot_limit": _hot_limit,
    "large_scale": _large_scale,
    "layernorm_mean": _layernorm_mean,
}
assert {s.ask for s in STEPS if s.ask is not None} == set(QUESTIONS), "every step's question built, each one asked"


def question(state, computed) -> Optional[Question]:
    """The question of the state's tour step, from its live run (None: no tour, or a step without one)."""
    if not 0 <= state.tour < len(STEPS) or STEPS[state.tour].ask is None:
        return None
    return QUESTIONS[STEPS[state.tour].ask](state, computed)
