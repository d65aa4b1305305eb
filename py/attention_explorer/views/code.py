"""Your own attention function: the editor, the ready-made edits, and which function is in use.

What it teaches: the attention the page draws is an ordinary Python function. The reader edits it
(drop the scaling, use a hard argmax, ReLU instead of exp, a causal mask, an ALiBi bias, a
temperature per head), presses Run, and every head of every layer is computed with it.

The editor is static markup outside the re-rendered panels (a redraw must never move the caret):
a <textarea id="attention-code"> that the bridge upgrades to a CodeMirror editor when it comes near
the screen, #run-code, #reset-code, the edits' <select id="code-edit"> and the message line
#attention-code-message. The panel "code" (render_status) says which function is in use.
A link carries the code but never runs it: only the reader's Run does.

Hooks: [data-view="code-status"] with data-custom ("true" | "false"); #attention-code's value is the
editor's text; the edits and the original source come to the bridge as JSON (edits_data).
"""

from __future__ import annotations

from .markup import attr, esc

# custom_attention (the reader's-code machinery) is imported by the functions that need its source text:
# build.py's editor markup and an embed of the code, not the worker's start-up (the status and badge below
# need only the state).

RUN_KEYS = "Ctrl+Enter (⌘+Enter on a Mac)"


def render_editor(state) -> str:
    """The editor's static markup; its text is the state's code, or the page's own function."""
    from .. import custom_attention

    source = state.code or custom_attention.SOURCE
    options = "".join(f"<option{attr(value=e.id)}>{esc(e.title)}</option>" for e in custom_attention.EDITS)
    return (
        '<div class="code-editor">'
        '<div class="field code-edits"><label for="code-edit">Start from a ready-made edit</label>'
        f'<select id="code-edit" aria-describedby="code-edit-hint"><option value="">The page\'s own function</option>'
        f"{options}</select>"
        '<span id="code-edit-hint" class="hint">Choosing one puts it in the editor; nothing runs until you press '
        "Run.</span></div>"
        '<p id="code-look-for" class="code-look-for" aria-live="polite"></p>'
        '<label for="attention-code" id="attention-code-label" class="code-label">'
        "The attention function (Python, NumPy as np)</label>"
        "<textarea"
        + attr(
            id="attention-code",
            class_="code-text",
            spellcheck="false",
            autocomplete="off",
            rows=16,
            maxlength=custom_attention.MAX_CHARS,
            aria_describedby="code-keys attention-code-message",
        )
        + f">{esc(source)}</textarea>"
        '<div class="code-buttons">'
        '<button type="button" id="run-code" class="primary">Run</button>'
        '<button type="button" id="reset-code">Reset to the page\'s function</button>'
        f'<span id="code-keys" class="hint">Run: the button or {esc(RUN_KEYS)}. Tab leaves the editor. '
        f"At most {custom_attention.MAX_CHARS:,} characters; a function that runs longer than 2 s is "
        "stopped.</span></div>"
        '<p id="attention-code-message" class="input-message" role="status" aria-live="polite"></p>'
        f'<p id="code-rights" class="hint">{esc(RIGHTS)}</p>'
        "</div>"
    )


# What Run means, for a reader pasting code from elsewhere (the function is not sandboxed: it is the reader's)
RIGHTS = (
    "Your function runs in your browser with this page's rights: it can reach the network like any "
    "script here. Run only code you have read. It is kept in this browser until you reset it."
)


def edits_data() -> dict:
    """The ready-made edits for the bridge's <select>: {"original": source, "edits": {id: {...}}}."""
    from .. import custom_attention

    return {
        "original": custom_attention.SOURCE,
        "edits": {e.id: {"title": e.title, "look_for": e.look_for, "source": e.source} for e in custom_attention.EDITS},
    }


def _n_heads(computed) -> int:
    return sum(len(layer) for layer in computed.model.heads)


def render_status(state, computed) -> str:
    """Which attention function the pictures were computed with."""
    n, layers = _n_heads(computed), computed.model.n_layers
    where = f"all {n} heads" + (f" of all {layers} layers" if layers > 1 else "")
    if state.custom:
        text = (
            f"In use: your attention function, on {where}. Every picture on this page is computed with "
            "it and says so (“your attention function”). Reset brings back the page's own."
        )
    elif state.code:
        text = (
            "In use: the page's own attention function. The editor holds a function that has not been "
            "run: press Run to use it."
        )
    else:
        text = f"In use: the page's own attention function, on {where}. Edit it and press Run."
    return (
        "<p"
        + attr(
            class_="code-status" + (" is-custom" if state.custom else ""),
            data_view="code-status",
            data_custom="true" if state.custom else "false",
        )
        + f">{esc(text)}</p>"
    )


def badge(state) -> str:
    """A line under the head's name while the reader's function is in use."""
    if not state.custom:
        return ""
    return '<p class="custom-badge" data-custom="true">Computed with your attention function</p>'


def render_embed(state, full_link: str) -> str:
    """An embed shows the code read-only, with a link to run it in the explorer (it never runs here)."""
    from .. import custom_attention

    source = state.code or custom_attention.SOURCE
    return (
        f'<div class="code-embed" data-view="code-embed"><pre class="code-readonly" tabindex="0" '
        f'aria-label="The attention function, read-only"><code>{esc(source)}</code></pre>'
        f"<p><a{attr(href=full_link, target='_blank', rel='noopener')}>Run it in the explorer</a> "
        "(it runs only when you press Run there).</p></div>"
    )
