"""No ordinary word is a sink (issue 9): a head with nothing to do parks attention on the start token.

The rule, in every head of the designed model, with and without the causal mask: no ordinary word
(a token that is not special) takes >= 50 % of the attention from more than half of the rows, where
the rows are all tokens' rows, the start token's included. A bright column on a word means that
word was chosen; only the start token's column may mean "nothing to do here".

Checked on every preset and on typed sentences that are not presets: varied, realistic, some
starting with a name (the old sink was the first word, so "Sarah saw..." made everything seem to
attend to Sarah), some questions, some long.
"""

import pytest

from attention_explorer import core
from attention_explorer.models import designed as model

TYPED = [
    "Sarah saw the dog in the park and she waved at it.",
    "Sarah thinks her brother will win the race.",
    "John gave Mary a book because she loves stories.",
    "Emma and Lucy walked to school together.",
    "Paris is a beautiful city.",
    "Tom told his sister that the cake was for her birthday.",
    "Lisa bought a new phone, but it broke after a week.",
    "Why did the children leave their toys in the garden?",
    "Can you help me carry these heavy boxes upstairs?",
    "Is the library open on Saturday?",
    "Who broke the window in the kitchen?",
    "Where are my keys?",
    "The teacher told the students that they had done well.",
    "After the storm, the old fisherman repaired his boat and went back to sea.",
    "My grandmother bakes bread every Sunday morning.",
    "The quick brown fox jumps over the lazy dog.",
    "When the phone rang, the man put down his coffee and answered it.",
    "The birds sang while the sun rose over the quiet hills.",
    "The police caught the thief before he could escape.",
    "Although it was raining, the kids played outside all afternoon.",
    "The small red car stopped at the corner, and a tall woman stepped out of it.",
    "Dogs bark.",
    "We visited three museums and two old churches during our trip to Rome last summer.",
    "The government announced new rules for schools yesterday.",
    "Where is it?",
]
SENTENCES = [p.text for p in model.PRESETS] + TYPED


def worst_sink(text: str, causal: bool):
    """(share of rows, head, word) for the ordinary word that takes >= 50 % from the most rows."""
    toks = model.MODEL.tokenize(text)
    run = model.MODEL.forward(
        toks, core.Settings(temperature=1.0, dk_scale=model.DESCRIPTION.true_dk_scale, causal=causal, activation="gelu")
    )
    weights = run.layers[0].weights  # [heads, n, n]
    n = len(toks)
    return max(
        (float((weights[h, :, j] >= 0.5).sum()) / n, h, toks[j])
        for h in range(weights.shape[0])
        for j in range(n)
        if j not in run.special
    )


def test_the_typed_sentences_are_not_presets_and_are_enough():
    assert len(TYPED) >= 20
    assert not set(TYPED) & {p.text for p in model.PRESETS}
    assert sum(model.MODEL.tokenize(t)[1] in ("Sarah", "John", "Emma", "Paris", "Tom", "Lisa") for t in TYPED) >= 5
    assert sum(t.endswith("?") for t in TYPED) >= 5
    assert max(len(model.MODEL.tokenize(t)) for t in TYPED) >= 16


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("text", SENTENCES, ids=[t[:32] for t in SENTENCES])
def test_no_ordinary_word_takes_half_the_attention_from_more_than_half_the_rows(text, causal):
    share, head, word = worst_sink(text, causal)
    assert share <= 0.5, f"head {head + 1}: {word!r} takes >= 50 % of the attention from {share:.0%} of the rows"


@pytest.mark.parametrize("text", SENTENCES, ids=[t[:32] for t in SENTENCES])
def test_the_sink_is_the_start_token(text):
    """In the three heads with a sink, the start token's column is the brightest one: most rows rest there."""
    toks = model.MODEL.tokenize(text)
    run = model.MODEL.forward(toks, core.Settings(temperature=1.0, dk_scale=8.0, causal=False, activation="gelu"))
    assert run.special == (0,)
    weights = run.layers[0].weights
    for h in (0, 1, 3):  # coreference, verb, noun phrase; the previous-token head has nothing to park
        column_sums = weights[h].sum(axis=0)
        assert int(column_sums.argmax()) == 0, f"head {h + 1}: {toks[int(column_sums.argmax())]!r}"
