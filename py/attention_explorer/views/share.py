"""Share and export toolbars for the figure panels, and the embed page's frame.

The toolbar buttons carry data-action (link, embed, svg, png, csv, json) and
data-target (the panel id); the bridge performs the action (clipboard, file
download, dialog), asking the worker for any text it needs. They are static
(rendered once at build time), so they never move under the reader's pointer.
"""
from __future__ import annotations

from .markup import attr, esc

ACTIONS = (("link", "Link", "Copy a link to exactly this view"),
           ("embed", "Embed", "Get an <iframe> snippet that shows this panel live in your page"),
           ("svg", "SVG", "Download this panel as an SVG image"),
           ("png", "PNG", "Download this panel as a PNG image"))
DATA_ACTIONS = (("csv", "CSV", "Download the selected head's attention weights as CSV"),
                ("json", "JSON", "Download the selected head's attention weights, tokens and settings as JSON"))


def toolbar(panel_id: str, title: str, *, data: bool = False) -> str:
    actions = ACTIONS + (DATA_ACTIONS if data else ())
    buttons = "".join(
        f'<button type="button"{attr(class_="share-btn", data_action=a, data_target=panel_id, title=tip, aria_label=f"{label}: {title}")}>{esc(label)}</button>'
        for a, label, tip in actions)
    return f'<div class="share" role="group"{attr(aria_label=f"Share or export: {title}")}>{buttons}</div>'


def embed_frame(state, panel_id: str, title: str, panel_markup: str, chips_markup: str, full_url: str) -> str:
    """The embed page's one panel: a title bar, the token chips, the panel, a link back."""
    return (f'<div class="embed-head"><strong class="embed-title">{esc(title)}</strong>'
            f'<a class="embed-open" target="_blank" rel="noopener"{attr(href=full_url)}>Open in Attention Explorer ↗</a></div>'
            f'<div class="embed-chips">{chips_markup}</div>'
            f'<div class="embed-panel" data-embedded-panel="{esc(panel_id)}">{panel_markup}</div>')
