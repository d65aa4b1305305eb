"""The guided tour's steps as plain data: what each step sets, shows and says, and the name of its question.

Two layers read a step. state.py sets the page up for it (apply_event's "tour_step", and the extent of
the fields "tour" and "tour_answer"); tour.py, above state, builds its question from a live model run
(state.compute). State must not import tour, or the layers would run both ways; so a step is declared
once, here, in a module that imports nothing of the package, and names its question, which tour.py
builds (tour.QUESTIONS), the way it names its panel (page.PANELS).

    STEPS        the steps, in order (state field "tour": the index, -1 = no tour)
    MAX_ANSWERS  a question's most answers (state field "tour_answer" indexes them)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

MAX_ANSWERS = 4  # a question has at most this many answers (the state's tour_answer indexes them)


@dataclass(frozen=True)
class Step:
    title: str
    panel: str  # the panel brought into view and marked (page.PANELS)
    text: str  # at most three sentences: what to look at
    setup: dict  # state fields the step sets (query given as a word: "query_word")
    ask: Optional[str] = None  # its question's name in tour.QUESTIONS (built there from the live run)


# The designed model, its default sentence: each step says what to look at there.
STEPS: tuple[Step, ...] = (
    Step(
        "Words become tokens",
        "token-chips",
        "The model reads the sentence as tokens: here the words and a start token <s>. Each token "
        "becomes a vector of numbers; in this hand-designed model each number is a named feature "
        "(noun, plural, animal…).",
        {"stage": 0},
        "how_many_tokens",
    ),
    Step(
        "Every token looks at every token",
        "attention-matrix",
        "Each row of the heatmap is one token asking a question (the query); its cells say how much it "
        "looks at each token, and add up to 100 %. The highlighted row is 'it'.",
        {"stage": 2, "head": 0, "query_word": "it"},
        "which_word",
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
        "hot_limit",
    ),
    Step(
        "Why divide by √d_k",
        "why-scale",
        "Scores are divided by √d_k, the square root of the vectors' length, before the softmax. Dot "
        "products of long vectors are large, and a softmax of large numbers picks one key almost always.",
        {"stage": 2, "head": 0, "query_word": "it", "temperature": 1.0},
        "large_scale",
    ),
    Step(
        "Several heads, several questions",
        "attention-matrix",
        "The model has several heads, each with its own W_Q, W_K and W_V, so each asks its own question. "
        "One big head would blend them into one row; separate heads keep 'what does it refer to?' apart "
        "from 'who did this verb?'.",
        {"stage": 3, "head": 1, "query_word": "sat"},
        "which_word",
    ),
    Step(
        "Residual and LayerNorm",
        "layernorm",
        "What the heads found is added to the token's own vector (a residual connection), so nothing the "
        "token was is lost and deep stacks can be trained. LayerNorm then brings each vector back to the "
        "same scale.",
        {"stage": 4, "head": 0, "query_word": "it"},
        "layernorm_mean",
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
