"""Prose panels: what the selected head does, what to look for in the current preset."""
from __future__ import annotations

from .markup import esc


def head_info(state, heads) -> str:
    info = heads[state.head]
    return (f'<h3 class="head-name">Head {state.head + 1}: {esc(info.name)}</h3>'
            f'<p class="head-explanation">{esc(info.explanation)}</p>')


def preset_info(state, presets) -> str:
    preset = next((p for p in presets if p.text == state.text), None)
    if preset is None:
        return '<p class="preset-look-for muted">Your own sentence. Pick a preset for a guided example.</p>'
    return (f'<p class="preset-look-for"><strong>{esc(preset.title)}.</strong> '
            f'What to look for: {esc(preset.look_for)}</p>')
