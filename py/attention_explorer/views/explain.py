"""Prose panels: what the selected head does, what to look for in the current preset."""
from __future__ import annotations

from .markup import esc


def head_info(state, heads) -> str:
    info = heads[state.head]
    # the explanation is folded: the heatmap below it belongs on the first screen, even on a phone
    return (f'<h3 class="head-name">Head {state.head + 1}: {esc(info.name)}</h3>'
            f'<details class="head-explanation"><summary>What this head does, and why</summary>'
            f'<p>{esc(info.explanation)}</p></details>')


def preset_focus(preset, tokens, heads=()) -> str:
    """"Head 2 (Verb and its arguments), query 'are'": what the preset opens, which its note is about.
    heads: layer 0's HeadInfo (a preset's head index is in layer 0); without them the head is only numbered."""
    head = f"Head {preset.head + 1}"
    if preset.head < len(heads):
        head += f" ({heads[preset.head].name})"
    return f"{head}, query '{tokens[preset.query]}'"


def preset_info(state, presets, heads=()) -> str:
    """The note of the preset whose sentence is on the page, naming the head and query it opened."""
    preset = next((p for p in presets if p.text == state.text), None)
    if preset is None:
        return '<p class="preset-look-for muted">Your own sentence. Pick a preset for a guided example.</p>'
    return (f'<p class="preset-look-for"><strong>{esc(preset.title)}.</strong> '
            f'<span class="preset-focus">{esc(preset_focus(preset, state.tokens, heads))}</span>: '
            f'{esc(preset.look_for)}</p>')
