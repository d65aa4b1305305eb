"""The layer-flow stepper: the six stages of the block, each with its formula and one line.

Buttons select a stage (data-event="set_stage"); the arrow keys press the
previous/next buttons (the bridge forwards ArrowLeft/ArrowRight inside
[data-arrow-keys] to the [data-arrow] buttons). The worker then asks the page to
bring the stage's section into view (see STAGE_SECTIONS).
"""

from __future__ import annotations

from ..fields import STAGES
from . import math as m
from .markup import attr, esc

# The page section each stage brings into focus (ids in site/index.html).
STAGE_SECTIONS = (
    "stage-input",
    "stage-projections",
    "stage-attention",
    "stage-multihead",
    "stage-layernorm",
    "stage-ffn",
)


def _embedding_formula(learned: bool) -> str:
    """x_i = e(token_i) + PE(i); a trained BERT-style model: x_i = LayerNorm(E_tok[token_i] + E_pos[i] + E_type[0])."""
    x_i = m.sub(m.mi("x"), m.mi("i"))
    if not learned:
        return m.math(
            x_i,
            m.mo("="),
            m.mi("e"),
            m.paren(m.sub(m.mtext("token"), m.mi("i"))),
            m.mo("+"),
            m.mtext("PE"),
            m.paren(m.mi("i")),
        )

    def row(what, idx):
        return m.row(m.sub(m.mi("E"), m.mtext(what)), m.mo("["), idx, m.mo("]"))

    return m.math(
        x_i,
        m.mo("="),
        m.mtext("LayerNorm"),
        m.paren(
            m.row(
                row("tok", m.sub(m.mtext("token"), m.mi("i"))),
                m.mo("+"),
                row("pos", m.mi("i")),
                m.mo("+"),
                row("type", m.mn("0")),
            )
        ),
    )


def _formulas(learned: bool = False) -> tuple[str, ...]:
    x, W, b = m.mi("x"), m.mi("W"), m.mi("b")
    return (
        _embedding_formula(learned),
        m.math(
            m.mi("Q"),
            m.mo("="),
            m.mi("X"),
            m.sub(W, m.mi("Q")),
            m.mo(","),
            m.mi("K"),
            m.mo("="),
            m.mi("X"),
            m.sub(W, m.mi("K")),
            m.mo(","),
            m.mi("V"),
            m.mo("="),
            m.mi("X"),
            m.sub(W, m.mi("V")),
        ),
        m.math(
            m.mi("A"),
            m.mo("="),
            m.mtext("softmax"),
            m.paren(m.frac(m.row(m.mi("Q"), m.sup(m.mi("K"), m.mo("⊤"))), m.row(m.sqrt_dk(), m.mo("·"), m.mi("T")))),
            m.mo(","),
            m.mi("Z"),
            m.mo("="),
            m.mi("A"),
            m.mi("V"),
        ),
        m.math(
            m.mtext("MultiHead"),
            m.mo("="),
            m.mtext("Concat"),
            m.paren(
                m.row(
                    m.sub(m.mtext("head"), m.mn("1")),
                    m.mo(","),
                    m.mo("…"),
                    m.mo(","),
                    m.sub(m.mtext("head"), m.mi("h")),
                )
            ),
            m.sup(W, m.mi("O")),
        ),
        m.math(
            m.mi("h"), m.mo("="), m.mtext("LayerNorm"), m.paren(m.row(x, m.mo("+"), m.mtext("MultiHead"), m.paren(x)))
        ),
        m.math(
            m.mtext("out"),
            m.mo("="),
            m.mtext("LayerNorm"),
            m.paren(
                m.row(
                    m.mi("h"),
                    m.mo("+"),
                    m.mi("φ"),
                    m.paren(m.row(m.mi("h"), m.sub(W, m.mn("1")), m.mo("+"), m.sub(b, m.mn("1")))),
                    m.sub(W, m.mn("2")),
                    m.mo("+"),
                    m.sub(b, m.mn("2")),
                )
            ),
        ),
    )


def explanations(model, learned: bool = False) -> tuple[str, ...]:
    """One line per stage, true for the model described (its sizes; named features or learned ones).
    learned: the embedding ends in a LayerNorm (a trained BERT-style model: word piece + position + token type)."""
    if learned:
        what = (
            "a learned row for its word piece plus a learned row for its position (and one for its segment), "
            "normalised by a LayerNorm; the dimensions have no names"
        )
    elif model.region("features"):
        what = "what the word is (its named features) plus where it is (a sinusoidal position signal)"
    else:
        what = "a learned vector for the token plus a learned vector for its position"
    stack = (
        f" The block's output is the next layer's input: this model stacks {model.n_layers} such layers."
        if model.n_layers > 1
        else ""
    )
    return (
        f"Each token becomes a vector of d_model = {model.d_model} numbers: {what}.",
        "Three weight matrices turn every token vector into a query (what it looks for), a key (what it offers) "
        "and a value (what it passes on).",
        "Each query is compared with every key; the scores are divided by √d_k·T and turned into weights by a "
        "softmax; the output is the weighted sum of the values.",
        f"Every head does this in its own {model.d_k}-dimensional subspace; their outputs are concatenated and "
        f"mixed back into the model's width by W_O.",
        "The attention output is added to the input (the residual path) and normalised to zero mean and unit "
        "variance, then scaled by γ and shifted by β.",
        f"Each token then passes, on its own, through a two-layer network that widens from {model.d_model} to "
        f"{model.d_ff} numbers, applies a nonlinearity, and narrows back; another residual + LayerNorm follows.{stack}",
    )


def render(state, computed) -> str:
    k = state.stage
    buttons = "".join(
        '<li><button type="button"'
        + attr(
            class_="step is-current" if s == k else "step",
            data_event="set_stage",
            data_value=s,
            aria_current="step" if s == k else None,
            aria_controls=STAGE_SECTIONS[s],
        )
        + f'><span class="step-number">{s + 1}</span> <span class="step-name">{esc(name)}</span></button></li>'
        for s, name in enumerate(STAGES)
    )
    prev_btn = (
        '<button type="button" class="step-nav"'
        + attr(data_arrow="prev", data_event="set_stage", data_value=max(0, k - 1), disabled=k == 0)
        + ' aria-label="Previous stage">←</button>'
    )
    next_btn = (
        '<button type="button" class="step-nav"'
        + attr(
            data_arrow="next",
            data_event="set_stage",
            data_value=min(len(STAGES) - 1, k + 1),
            disabled=k == len(STAGES) - 1,
        )
        + ' aria-label="Next stage">→</button>'
    )
    return (
        f'<nav class="stepper" data-arrow-keys aria-label="Stages of the transformer block" data-stage="{k}">'
        f'{prev_btn}<ol class="steps">{buttons}</ol>{next_btn}</nav>'
    )


def render_detail(state, computed) -> str:
    """The current stage's formula and one line: below the sticky stepper, so the bar stays small."""
    k = state.stage
    learned = computed.embedding.learned  # the model's kind of embedding (the same for every sentence)
    return (
        f'<div class="stage-detail" data-stage-detail="{k}"><p class="stage-title">Stage {k + 1} of {len(STAGES)}: '
        f"<strong>{esc(STAGES[k])}</strong></p>"
        # a formula wider than a narrow screen scrolls sideways in its box, which the keyboard can reach
        f'<div class="stage-formula" tabindex="0" role="group" aria-label="Stage {k + 1} formula">'
        f"{_formulas(learned)[k]}</div>"
        f'<p class="stage-line">{esc(explanations(computed.model, learned)[k])}</p>'
        + (
            '<p class="custom-badge" data-custom="true">Every stage below is computed with your attention '
            "function (see “Your own attention function” at the end).</p>"
            if getattr(state, "custom", False)
            else ""
        )
        + "</div>"
    )
