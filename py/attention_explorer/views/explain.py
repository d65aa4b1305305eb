"""Prose panels: what the selected head does, what to look for in the current preset.

Also the one place a head's name becomes words (`head_title`, `head_ref`): the designed
model's heads have names ("Coreference"); a trained model's heads are numbered and carry a
measured label in their name ("Head 1: previous token, 1.00"), which must not read
"Head 1: Head 1: …" or "the Head 1: … head".
"""

from __future__ import annotations

from .markup import esc


def model_line(model, other) -> str:
    """The first screen's plain line: what kind of model this is, and one click to the other kind.
    other: the description of the model the button switches to (None: no button)."""
    button = ""
    if other is not None:
        what = (
            f"Try a trained model ({other.picker_label.removeprefix('Trained: ')}, {other.download_mb} MB)"
            if other.download_mb
            else f"Back to the {other.picker_label.lower()}"
        )
        button = (
            f' <button type="button" class="model-switch" data-action="use-model" '
            f'data-target="{esc(other.id)}">{esc(what)}</button>'
        )
    return f'<p class="model-line">{esc(model.headline)}{button}</p>'


def causal_note(state, model) -> str:
    """With the causal mask on: what it is for, and a plain warning for a model made without it."""
    if not state.causal:
        return ""
    what = (
        "Causal mask on: each token sees only itself and the tokens before it (the upper triangle is "
        "hidden), as in a decoder such as GPT that writes text one token at a time and must not see the "
        "next word."
    )
    if model.download_mb:  # a trained encoder
        warning = (
            f" Careful: {model.picker_label.removeprefix('Trained: ')} is an encoder, trained to see the "
            "whole sentence; with the mask its numbers are no longer what it learned, and its head "
            "names were measured without it."
        )
    else:
        warning = " The designed model was made without it: its heads still work, looking only backwards."
    return f'<p class="causal-note" role="note">{esc(what + warning)}</p>'


def head_name(h: int, info) -> str:
    """The head's own words without its number: "Coreference", "previous token, 1.00" ("" for a bare "Head 3")."""
    prefix, name = f"Head {h + 1}", info.name.strip()
    if name == prefix:
        return ""
    if name.startswith(prefix + ":"):
        return name[len(prefix) + 1 :].strip()
    return name


def head_title(h: int, info) -> str:
    """ "Head 2: Verb and its arguments"; "Head 1: previous token, 1.00"; "Head 3" (no name beyond its number)."""
    name = head_name(h, info)
    return f"Head {h + 1}: {name}" if name else f"Head {h + 1}"


def head_ref(h: int, info) -> str:
    """For the middle of a sentence: "head 2 (Verb and its arguments)", "head 3" when it has only a number."""
    name = head_name(h, info)
    return f"head {h + 1} ({name})" if name else f"head {h + 1}"


def head_info(state, heads) -> str:
    info = heads[state.head]
    # the explanation is folded: the heatmap below it belongs on the first screen, even on a phone
    return (
        f'<h3 class="head-name">{esc(head_title(state.head, info))}</h3>'
        f'<details class="head-explanation"><summary>What this head does, and why</summary>'
        f"<p>{esc(info.explanation)}</p></details>"
    )


def _heads_of_layer(heads, layer: int) -> tuple:
    """heads: one layer's HeadInfo tuple, or a tuple per layer (then the preset's layer is picked).
    A flat tuple is layer 0's: a preset in another layer is then only numbered."""
    if heads and isinstance(heads[0], tuple):
        return heads[layer] if layer < len(heads) else ()
    return heads if layer == 0 else ()


def preset_focus(preset, tokens, heads=()) -> str:
    """ "Head 2 (Verb and its arguments), query 'are'": what the preset opens, which its note is about.
    heads: layer 0's HeadInfo, or every layer's (a tuple per layer); without them the head is only numbered.
    A preset in a later layer names it: "Layer 3, head 5 (…), query 'it'"."""
    layer_heads = _heads_of_layer(heads, preset.layer)
    head = f"Head {preset.head + 1}"
    if preset.head < len(layer_heads):
        name = head_name(preset.head, layer_heads[preset.head])
        head += f" ({name})" if name else ""
    if preset.layer:
        head = f"Layer {preset.layer + 1}, h{head[1:]}"
    query = f", query '{tokens[preset.query]}'" if 0 <= preset.query < len(tokens) else ""
    return head + query


def _head_number(layer: int, h: int, layered: bool) -> str:
    """ "head 3"; "layer 4, head 2" when layered (either head of the sentence is past the first layer)."""
    return f"layer {layer + 1}, head {h + 1}" if layered else f"head {h + 1}"


def _head_named(layer: int, h: int, heads, layered: bool) -> str:
    """_head_number with the head's name when it has one: "head 3 (Previous token)"."""
    layer_heads = _heads_of_layer(heads, layer)
    name = head_name(h, layer_heads[h]) if h < len(layer_heads) else ""
    return _head_number(layer, h, layered) + (f" ({name})" if name else "")


def elsewhere_note(state, preset, heads=()) -> str:
    """ "" when the head in view is the one the preset's note is about; else a sentence that says so.

    The note describes one head's picture; read beside another head's it would be false ("almost all of
    its attention goes to 'cat'" under the previous-token head), so it names its head and the way back."""
    if (state.layer, state.head) == (preset.layer, preset.head):
        return ""
    layered = bool(state.layer or preset.layer)
    return (
        f"This note is about {_head_named(preset.layer, preset.head, heads, layered)}; "
        f"{_head_named(state.layer, state.head, heads, layered)} is shown now: switch back to "
        f"{_head_number(preset.layer, preset.head, layered)} to see what it describes."
    )


def preset_info(state, presets, heads=()) -> str:
    """The note of the preset whose sentence is on the page, naming the head and query it opened, and
    saying so first when the reader has since switched to another head."""
    preset = next((p for p in presets if p.text == state.text), None)
    if preset is None:
        return '<p class="preset-look-for muted">Your own sentence. Pick a preset for a guided example.</p>'
    elsewhere = elsewhere_note(state, preset, heads)
    elsewhere = f'<span class="preset-elsewhere">{esc(elsewhere)}</span> ' if elsewhere else ""
    return (
        f'<p class="preset-look-for"><strong>{esc(preset.title)}.</strong> {elsewhere}'
        f'<span class="preset-focus">{esc(preset_focus(preset, state.tokens, heads))}</span>: '
        f"{esc(preset.look_for)}</p>"
    )
