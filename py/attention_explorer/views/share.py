"""Share and export toolbars for the figure panels, and the embed page's frame.

The toolbar buttons carry data-action (link, embed, svg, png, csv, json) and
data-target (the panel id); the bridge performs the action (clipboard, file
download, dialog), asking the worker for any text it needs. They are static
(rendered once at build time), so they never move under the reader's pointer.
"""

from __future__ import annotations

from .markup import attr, esc

ACTIONS = (
    ("link", "Link", "Copy a link to exactly this view"),
    ("embed", "Embed", "Get an <iframe> snippet that shows this panel live in your page"),
    ("svg", "SVG", "Download this panel as an SVG image"),
    ("png", "PNG", "Download this panel as a PNG image"),
)
DATA_ACTIONS = (
    ("csv", "CSV", "Download the selected head's attention weights as CSV"),
    ("json", "JSON", "Download the selected head's attention weights, tokens and settings as JSON"),
)


def toolbar(panel_id: str, title: str, *, data: bool = False, pictures: bool = True) -> str:
    """pictures=False: a panel of text (the code) has no SVG/PNG to save, only a link and an embed."""
    actions = tuple(a for a in ACTIONS if pictures or a[0] not in ("svg", "png")) + (DATA_ACTIONS if data else ())
    buttons = "".join(
        '<button type="button"'
        + attr(class_="share-btn", data_action=a, data_target=panel_id, title=tip, aria_label=f"{label}: {title}")
        + f">{esc(label)}</button>"
        for a, label, tip in actions
    )
    return f'<div class="share" role="group"{attr(aria_label=f"Share or export: {title}")}>{buttons}</div>'


def embed_frame(
    state, panel_id: str, title: str, panel_markup: str, chips_markup: str, full_url: str, facts: dict | None = None
) -> str:
    """The embed page's one panel: a title bar naming the head, a line saying which model this is and
    what it is (its honest one-liner), the settings that differ from the defaults, the token chips,
    the panel, and a link back. facts: page.figure_facts(...) (plain text, escaped here)."""
    facts = facts or {}
    head = " · ".join(p for p in (facts.get("layer", ""), facts.get("head", "")) if p)
    head_html = f'<span class="embed-headname">{esc(head)}</span>' if head else ""
    model, honest, demo = facts.get("model", ""), facts.get("about", ""), facts.get("demo", "")
    about = f'<span class="embed-model">{esc(model)}</span>' if model else ""
    if honest:
        about += f'{": " if about else ""}<span class="embed-honest">{esc(honest)}</span>'
    if demo:
        about += f'{". " if about else ""}<span class="embed-demo">{esc(demo)}.</span>'
    changed = facts.get("changed") or []
    settings = (
        f'{" " if about else ""}<span class="embed-settings">Not the defaults: {esc(" · ".join(changed))}.</span>'
        if changed
        else ""
    )
    info = f'<p class="embed-about">{about}{settings}</p>' if about or settings else ""
    return (
        f'<div class="embed-head"><strong class="embed-title">{esc(title)}</strong>{head_html}'
        '<a class="embed-open" target="_blank" rel="noopener"'
        + attr(href=full_url)
        + ">Open in Attention Explorer ↗</a></div>"
        f"{info}"
        f'<div class="embed-chips">{chips_markup}</div>'
        f'<div class="embed-panel" data-embedded-panel="{esc(panel_id)}">{panel_markup}</div>'
    )
