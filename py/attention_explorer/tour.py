"""The guided tour: a newcomer's ten minutes from a sentence to the feed-forward network.

Each step sets what the page shows (`Step.setup`: the designed model's sentence, layer, head, query,
T, √d_k and stage), names the panel the page brings into view and marks, says what to look at in at
most three sentences, and may ask a question. A question's answers and the feedback on each are
worked out from the live model run (`Question` built by the step's `ask(state, computed)`), so they
stay true whatever the model's weights become; nothing here is a number written by hand.

    STEPS                       the steps, in order (state field "tour": the index, -1 = no tour)
    setup(state, i) -> State    the state step i shows (state.apply_event calls it)
    question(state, i) -> Question | None
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from .views.markup import num, percent_label

MAX_ANSWERS = 4  # a question has at most this many answers (the state's tour_answer indexes them)


@dataclass(frozen=True)
class Question:
    prompt: str
    answers: tuple[str, ...]
    right: int  # index into answers
    feedback: tuple[str, ...]  # one per answer: why (the card says first whether it is right)


@dataclass(frozen=True)
class Step:
    title: str
    panel: str  # the panel brought into view and marked (fields.PANEL_IDS)
    text: str  # at most three sentences: what to look at
    setup: dict  # state fields the step sets (query given as a word: "query_word")
    ask: Optional[Callable] = None  # (state, computed) -> Question, from the live run


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
    from . import state as st

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
    from . import state as st

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


# The designed model, its default sentence: each step says what to look at there.
STEPS: tuple[Step, ...] = (
    Step(
        "Words become tokens",
        "token-chips",
        "The model reads the sentence as tokens: here the words and a start token <s>. Each token "
        "becomes a vector of numbers; in this hand-designed model each number is a named feature "
        "(noun, plural, animal…).",
        {"stage": 0},
        _how_many_tokens,
    ),
    Step(
        "Every token looks at every token",
        "attention-matrix",
        "Each row of the heatmap is one token asking a question (the query); its cells say how much it "
        "looks at each token, and add up to 100 %. The highlighted row is 'it'.",
        {"stage": 2, "head": 0, "query_word": "it"},
        _which_word,
    ),
    Step(
        "A score: how well a query matches a key",
        "qk-dot",
        "The weight comes from a score, the dot product q·k of the query's vector with each key's. "
        "Matching features add to it; the softmax then turns a row of scores into weights that add to 1.",
        {"stage": 2, "head": 0, "query_word": "it"},
    ),
    Step(
        "Temperature: how sharp the choice is",
        "attention-matrix",
        "The softmax divides the scores by T before it compares them (textbooks fix T = 1). Small T makes "
        "the top score win everything; large T spreads the weight out.",
        {"stage": 2, "head": 0, "query_word": "it", "temperature": 1.0},
        _hot_limit,
    ),
    Step(
        "Why divide by √d_k",
        "why-scale",
        "Scores are divided by √d_k, the square root of the vectors' length, before the softmax. Dot "
        "products of long vectors are large, and a softmax of large numbers picks one key almost always.",
        {"stage": 2, "head": 0, "query_word": "it", "temperature": 1.0},
        _large_scale,
    ),
    Step(
        "Several heads, several questions",
        "attention-matrix",
        "The model has several heads, each with its own W_Q, W_K and W_V, so each asks its own question. "
        "One big head would blend them into one row; separate heads keep 'what does it refer to?' apart "
        "from 'who did this verb?'.",
        {"stage": 3, "head": 1, "query_word": "sat"},
        _which_word,
    ),
    Step(
        "Residual and LayerNorm",
        "layernorm",
        "What the heads found is added to the token's own vector (a residual connection), so nothing the "
        "token was is lost and deep stacks can be trained. LayerNorm then brings each vector back to the "
        "same scale.",
        {"stage": 4, "head": 0, "query_word": "it"},
        _layernorm_mean,
    ),
    Step(
        "The feed-forward network",
        "ffn",
        "Last, each token's vector goes through a small two-layer network on its own: no token looks at "
        "another here. Its units detect combinations of features; a real model stacks many such layers "
        "(try the trained model in Model and settings).",
        {"stage": 5, "head": 0, "query_word": "it"},
    ),
)
assert len(STEPS) >= 6 and sum(s.ask is not None for s in STEPS) >= 4, "a tour of six steps, four questions"


def setup(state, i: int):
    """The state step i shows: the designed model's default sentence, with the step's settings."""
    from . import models, state as st

    d = st.description(models.DEFAULT)
    step = STEPS[i]
    base = st.State()  # the designed model, its sentence, T = 1, its √d_k, no mask, nothing switched off
    fields = {k: v for k, v in step.setup.items() if k != "query_word"}
    new = dataclasses.replace(base, tour=i, tour_answer=-1, dk_scale=d.true_dk_scale, **fields)
    word = step.setup.get("query_word")
    if word and word in new.tokens:
        new = dataclasses.replace(new, query=new.tokens.index(word))
    return new


def question(state, computed) -> Optional[Question]:
    """The question of the state's tour step, from its live run (None: no tour, or a step without one)."""
    if not 0 <= state.tour < len(STEPS) or STEPS[state.tour].ask is None:
        return None
    return STEPS[state.tour].ask(state, computed)
