"""The guided tour's card (tour_steps.py says what each step shows, tour.py what it asks).

No tour: one button, "Take the 10-minute tour" (#tour-start). In the tour: a card fixed to the
bottom of the screen with the step's title, at most three sentences, its question (buttons with
[data-answer]; the chosen one's feedback in [data-feedback], worked out from the live run) and
Back, Next (#tour-next) and Leave (Escape too). Every text passes through esc/attr.
"""

from __future__ import annotations

from .. import tour
from .markup import attr, esc

START_LABEL = "Take the 10-minute tour"


def render(state, computed) -> str:
    n = len(tour.STEPS)
    if not 0 <= state.tour < n:
        asks = sum(s.ask is not None for s in tour.STEPS)
        return (
            '<div class="tour-start"><button type="button" id="tour-start"'
            + attr(data_event="tour_step", data_value="0")
            + f'>{esc(START_LABEL)}</button> <span class="hint">{n} steps from a sentence to the feed-forward '
            f"network, {asks} questions to check yourself</span></div>"
        )
    i = state.tour
    step = tour.STEPS[i]
    q = tour.question(state, computed)
    parts = [
        f'<section class="tour-card"{attr(data_tour_step=i, data_highlight=step.panel)} aria-labelledby="tour-title">',
        f'<p class="tour-count">Tour: step {i + 1} of {n}</p>',
        f'<h2 id="tour-title" tabindex="-1">{esc(step.title)}</h2>',
        f'<p class="tour-text">{esc(step.text)}</p>',
    ]
    if q is not None:
        chosen = state.tour_answer if 0 <= state.tour_answer < len(q.answers) else -1
        buttons = []
        for k, answer in enumerate(q.answers):
            verdict = "" if k != chosen else (" is-right" if k == q.right else " is-wrong")
            buttons.append(
                f'<button type="button" class="tour-answer{verdict}"'
                + attr(
                    data_event="tour_answer",
                    data_value=k,
                    data_answer=k,
                    aria_pressed="true" if k == chosen else "false",
                )
                + f">{esc(answer)}</button>"
            )
        feedback = ""
        if chosen >= 0:
            feedback = ("Right: " if chosen == q.right else f"Not quite, it is {q.answers[q.right]}: ") + q.feedback[
                chosen
            ]
        parts.append(
            f'<fieldset class="tour-question"><legend>{esc(q.prompt)}</legend>{"".join(buttons)}</fieldset>'
            f'<p class="tour-feedback" data-feedback aria-live="polite">{esc(feedback)}</p>'
        )
    back = f'<button type="button"{attr(data_event="tour_step", data_value=i - 1)}>Back</button>' if i > 0 else ""
    last = i == n - 1
    nxt = (
        f'<button type="button" id="tour-next" class="primary"'
        f"{attr(data_event='tour_step', data_value=-1 if last else i + 1)}>{'Finish' if last else 'Next'}</button>"
    )
    leave = (
        f'<button type="button" class="tour-leave"{attr(data_event="tour_step", data_value=-1)}>'
        "Leave the tour <kbd>Esc</kbd></button>"
    )
    parts.append(f'<div class="tour-nav">{back}{nxt}{leave}</div></section>')
    return "".join(parts)
