"""Designed vs trained, side by side: a designed head next to the trained head that does its job best.

What it teaches: a designed head was wired to do one thing; a trained model may
or may not have learned a head that does the same. Two word-level heatmaps
(the designed head | the closest trained head, any layer), the agreement score,
and one plain sentence: "For 'it', layer 4, head 2 of the trained model agrees
best with the designed Coreference head: 0.83 of its attention falls where the
designed head's does", or, honestly, "No trained head does the designed
Coreference head's job for 'it'" when the best agreement is below
head_patterns.NO_MATCH_BELOW. The numbers come from head_patterns.compare();
this module computes nothing but formats.

Hooks: the section is div[data-view="compare"] with data-layer, data-head (the best
trained head, 0-based; absent when there is none), data-agreement and
data-verdict ("match" | "no-match" | "no-query" | "none"); each heatmap is
svg[data-view="compare-designed"] / svg[data-view="compare-trained"] with
role="img", an aria-label, and one rect.cell per word pair (data-i, data-j,
data-weight). Styles: the heatmap's own classes (style.css, attention.css) and
site/css/compare.css for the layout.
"""

from __future__ import annotations

from typing import Sequence

from ..head_patterns import AT_WORK, NO_MATCH_BELOW, Comparison
from .attention_matrix import LABEL, size_style
from .colors import text_on, viridis
from .drawing import hatch_pattern, weight_legend
from .markup import attr, clip_label, data_num, esc, num, pct

CELL = 26  # px per word: small maps, no numbers in the cells (the tooltip has them), two fit a laptop column
MASS_NOTE_BELOW = 0.9  # say how much of the trained query row went elsewhere when it is more than a tenth


def _q(word: str) -> str:
    return f"“{esc(word)}”"


def _head(name: str) -> str:
    """'Coreference' -> 'Coreference head'; a name that already ends in 'head' keeps one."""
    return name if name.lower().endswith("head") else f"{name} head"


def _trained(m) -> str:
    return f"layer {m.layer + 1}, head {m.head + 1}"


def _word_heatmap(words, matrix, query, view: str, aria: str, resting=None) -> str:
    """Rows are query words, columns key words; colour = weight on the heatmap's viridis scale.

    resting: {row: why} for the rows not compared (the designed head is not at work there): one
    hatched bar each, with the reason as its tooltip, instead of k cells of renormalised noise.
    """
    resting = resting or {}
    k = len(words)
    size = k * CELL
    width, height = LABEL + size + 8, LABEL + size + 44
    hatch = f"{view}-resting"
    svg = attr(
        data_view=view,
        viewBox=f"0 0 {width} {height}",
        role="img",
        class_="heatmap compare-map",
        data_n=k,
        aria_label=aria,
        style=size_style(width),
    )
    out = [f"<svg{svg}>"]
    if resting:
        out.append(f"<defs>{hatch_pattern(hatch)}</defs>")
    for j, w in enumerate(words):
        cls = "col-label" + (" is-query" if j == query else "")
        out.append(
            f'<text class="{cls}" transform="translate({LABEL + j * CELL + CELL / 2:.1f},{LABEL - 6}) '
            f'rotate(-55)">{esc(clip_label(w))}</text>'
        )
    for i, w in enumerate(words):
        cls = "row-label" + (" is-query" if i == query else "")
        out.append(
            f'<text class="{cls}" x="{LABEL - 8}" y="{LABEL + i * CELL + CELL / 2:.1f}" text-anchor="end" '
            f'dominant-baseline="central">{esc(clip_label(w))}</text>'
        )
    # keyboard: a roving-tabindex grid (the bridge moves focus with the arrow keys; the tooltip follows focus)
    out.append('<g class="cells" data-grid>')
    rows = matrix.tolist()
    busy = [i for i in range(k) if i not in resting]
    stop_i = query if query in busy else (busy[0] if busy else None)
    stop = (stop_i, max(range(k), key=lambda j: rows[stop_i][j])) if stop_i is not None else None
    for i in range(k):
        if i in resting:
            bar = attr(
                class_="compare-resting",
                x=LABEL,
                y=LABEL + i * CELL,
                width=size,
                height=CELL,
                fill=f"url(#{hatch})",
                data_i=i,
                data_tip=f"“{words[i]}”: {resting[i]}",
            )
            out.append(f"<rect{bar}/>")
            continue
        for j in range(k):
            v = rows[i][j]
            cell = attr(
                class_="cell is-light" if text_on(v) != "#fff" else "cell",
                x=LABEL + j * CELL,
                y=LABEL + i * CELL,
                width=CELL,
                height=CELL,
                fill=viridis(v),
                data_i=i,
                data_j=j,
                data_weight=data_num(v),
                data_tip=f"“{words[i]}” → “{words[j]}”: {pct(v)}",
                data_grid_cell=True,
                tabindex=0 if (i, j) == stop else None,
            )
            out.append(f"<rect{cell}/>")
    out.append("</g>")
    if query is not None:
        out.append(
            f'<rect class="query-outline" x="{LABEL - 2}" y="{LABEL + query * CELL - 1}" '
            f'width="{size + 4}" height="{CELL + 2}" fill="none"/>'
        )
    out.append(weight_legend(LABEL, LABEL + size + 14, size, f"{view}-scale", None))
    out.append("</svg>")
    return "".join(out)


def _rest_reason(on_words: float, start_token: str, who: str = "the designed head") -> str:
    """Why the designed head is not at work for a word (plain text)."""
    if on_words < AT_WORK:
        return f"{who} rests {pct(1 - on_words, 0)} of its attention on the start token {start_token}, a no-op"
    return f"{who} looks mostly at words the two models split differently"


def _looks(words, matrix, query) -> str:
    """'“it” looks most at “trophy” (82.0 %)', for an aria-label (plain text: attr() escapes it)."""
    if query is None:
        return ""
    row = matrix[query]
    j = int(row.argmax())
    return f" “{words[query]}” looks most at “{words[j]}” ({pct(float(row[j]))})."


def _verdict(c: Comparison, designed_head: str, start_token: str) -> tuple[str, str]:
    """(data-verdict, the sentence for the reader: markup, every word escaped)."""
    best = c.best
    dh = f"the designed {esc(_head(designed_head))}"
    if best is None:
        return "none", (
            f"The two models split this sentence into words too differently to compare {dh} with the trained heads."
        )

    def overall() -> str:
        if best.agreement is None:
            return f" On this sentence {dh} rests on {esc(start_token)} for every word: it has no job here to compare."
        if best.agreement < NO_MATCH_BELOW:
            return (
                f" Over the words where {dh} is at work, no trained head does its job: the closest, "
                f"{_trained(best)}, agrees {num(best.agreement)} on average."
            )
        return (
            f" Over the words where {dh} is at work, {_trained(best)} of the trained model agrees best: "
            f"{num(best.agreement)} on average."
        )

    if c.query_word is None:
        return "no-query", (
            f"The query is a special token, not a word, so there is nothing to compare for it.{overall()}"
        )
    qw = _q(c.query_word)
    if c.query is None:
        return "no-query", (f"The two models split {qw} differently, so it is left out of the comparison.{overall()}")
    if best.query_agreement is None:  # the designed head is not at work for this query
        why = esc(_rest_reason(c.designed_query_on_words or 0.0, start_token, f"the designed {_head(designed_head)}"))
        return "no-query", f"For {qw}, {why}: there is nothing to compare.{overall()}"
    if best.query_agreement < NO_MATCH_BELOW:
        return "no-match", (
            f"No trained head does {dh}'s job for {qw}: the closest, {_trained(best)}, puts only "
            f"{num(best.query_agreement)} of its attention where the designed head does."
        )
    text = (
        f"For {qw}, {_trained(best)} of the trained model agrees best with {dh}: "
        f"{num(best.query_agreement)} of its attention falls where the designed head's does."
    )
    if best.query_word_mass is not None and best.query_word_mass < MASS_NOTE_BELOW:
        text += (
            f" The agreement counts only the words compared: this trained head also puts "
            f"{pct(1 - best.query_word_mass, 0)} of the row on [CLS], [SEP] or words left out."
        )
    return "match", text


def render(
    comparison: Comparison,
    designed_head: str,
    *,
    trained_labels: Sequence[Sequence[str]] = (),
    start_token: str = "<s>",
) -> str:
    """The comparison section: verdict sentence, two word-level heatmaps, how agreement is measured.

    comparison: head_patterns.compare(...) for the sentence, one designed head and the state's query.
    designed_head: that head's name ("Coreference"). trained_labels: per layer, per head, the trained
    heads' measured labels ("[CLS], 0.47": head_patterns.measure_heads' label and score), shown in the
    best head's caption when given. start_token: the designed model's start token, for "rests on <s>".
    """
    c, best = comparison, comparison.best
    verdict, sentence = _verdict(c, designed_head, start_token)
    score = None
    if best is not None:
        score = best.query_agreement if best.query_agreement is not None else best.agreement
    hooks = attr(
        data_view="compare",
        class_="compare",
        data_verdict=verdict,
        data_layer=best.layer if best else None,
        data_head=best.head if best else None,
        data_agreement=data_num(score) if score is not None else None,
    )
    out = [f"<div{hooks}>", f'<p class="compare-verdict">{sentence}</p>']
    if best is not None:
        label = (
            trained_labels[best.layer][best.head]
            if best.layer < len(trained_labels) and best.head < len(trained_labels[best.layer])
            else ""
        )
        d_name = f"Designed: {_head(designed_head)}"
        t_name = f"Trained: {_trained(best)}" + (f" (measured: {label})" if label else "")
        if best.query_agreement is not None:
            shown = f"agreement {num(score)} for “{c.query_word}”"
        else:
            shown = f"mean agreement {num(score)}" if score is not None else "no agreement to show"
        out.append('<div class="compare-maps">')
        resting = {
            i: "not compared: " + _rest_reason(c.on_words[i], start_token)
            for i, busy in enumerate(c.at_work)
            if not busy
        }
        rest_note = " Hatched rows: not compared (the head is not at work there)." if resting else ""
        for view, name, matrix, note, rest in (
            ("compare-designed", d_name, c.designed, rest_note, resting),
            ("compare-trained", t_name, c.trained, f" {shown[0].upper()}{shown[1:]}.", {}),
        ):
            looks = _looks(c.words, matrix, c.query) if c.query not in rest else ""
            aria = f"{name}, word by word: rows are query words, columns are key words.{looks}{note}"
            out.append(
                f'<figure class="compare-fig"><figcaption>{esc(name)}'
                + (f' <span class="compare-note">{esc(note.strip())}</span>' if note else "")
                + f"</figcaption>{_word_heatmap(c.words, matrix, c.query, view, aria, rest)}</figure>"
            )
        out.append("</div>")
    left = (
        f" Left out, split differently by the two tokenizers: {', '.join(_q(w) for w in c.left_out)}."
        if c.left_out
        else ""
    )
    out.append(
        '<p class="caption compare-how">Word by word, as in Clark et al. (2019): attention to a word split into '
        "pieces is the sum over its pieces, attention from it the mean; special tokens ([CLS], [SEP], "
        f"{esc(start_token)}) are left out and each row is rescaled to 100 % over the {len(c.words)} words both "
        f"models split the same way.{left} Agreement = Σ min(p, q) over a row: the share of attention that falls on "
        "the same words in both heads (1 − the total variation distance). Agreeing is not being right: two heads "
        "can point at the same wrong word.</p>"
    )
    out.append("</div>")
    return "".join(out)


def head_picker(designed_heads: Sequence[str], selected: int) -> str:
    """The designed head to compare: a select inside the panel (set_compare_head)."""
    options = "".join(
        f"<option{attr(value=h, selected=h == selected)}>{esc(f'Head {h + 1}: {name}')}</option>"
        for h, name in enumerate(designed_heads)
    )
    return (
        f'<p class="compare-pick"><label for="compare-head">Designed head to compare</label> '
        f'<select id="compare-head" data-event="set_compare_head">{options}</select></p>'
    )


def not_loaded(trained_name: str, trained_id: str, megabytes: str) -> str:
    """Before the trained model is downloaded: what the comparison would show, and a button to get it."""
    return (
        f"<div{attr(data_view='compare', class_='compare', data_verdict='not-loaded')}>"
        f'<p class="compare-verdict">To find the trained head that does this designed head\'s job, the page '
        f"needs the trained model, {esc(trained_name)}: {esc(megabytes)}, downloaded once. It is computed "
        f"here, in your browser, like everything else.</p>"
        f'<p><button type="button"{attr(data_action="load-model", data_target=trained_id)}>'
        f"Download the trained model and compare</button></p></div>"
    )


def unavailable(reason: str) -> str:
    """The comparison cannot be made for this sentence (a model cannot read it): say why."""
    return (
        f"<div{attr(data_view='compare', class_='compare', data_verdict='none')}>"
        f'<p class="compare-verdict">{esc(reason)}</p></div>'
    )
