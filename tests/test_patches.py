"""A slider's patch brings live heatmap markup to exactly what a full redraw would draw.

The patch semantics (bridge.js applyPatch) are re-implemented here over the parsed markup,
and the patched old markup is compared with the new state's full markup, element by element.
"""
from __future__ import annotations

import dataclasses

import pytest

from attention_explorer import page, state as st, worker
from markup_tree import parse

# the selectors render_patch may use, as the browser resolves them inside the panel
SELECT = {
    'svg[data-view="attention-matrix"]': lambda r: r.find_all("svg", data_view="attention-matrix"),
    'svg[data-view="attention-matrix"] rect[data-i]':
        lambda r: [n for s in r.find_all("svg", data_view="attention-matrix") for n in s.find_all("rect", data_i=True)],
    "text.cell-value": lambda r: [n for n in r.find_all("text") if n.has_class("cell-value")],
    "details.weights-table caption":
        lambda r: [n for d in r.find_all("details") if d.has_class("weights-table") for n in d.find_all("caption")],
    f'svg[data-view="attention-matrix"] text.col-label':
        lambda r: [n for s in r.find_all("svg", data_view="attention-matrix") for n in s.find_all("text")
                   if n.has_class("col-label")],
    f'svg[data-view="attention-matrix"] text.row-label':
        lambda r: [n for s in r.find_all("svg", data_view="attention-matrix") for n in s.find_all("text")
                   if n.has_class("row-label")],
    'svg[data-view="attention-matrix"] g.cells':
        lambda r: [n for s in r.find_all("svg", data_view="attention-matrix") for n in s.find_all("g")
                   if n.has_class("cells")],
    'svg[data-view="attention-matrix"] rect.query-outline':
        lambda r: [n for s in r.find_all("svg", data_view="attention-matrix") for n in s.find_all("rect")
                   if n.has_class("query-outline")],
    "details.weights-table tbody th":
        lambda r: [n for d in r.find_all("details") if d.has_class("weights-table") for b in d.find_all("tbody")
                   for n in b.find_all("th")],
    "details.weights-table td":
        lambda r: [n for d in r.find_all("details") if d.has_class("weights-table") for n in d.find_all("td")],
}


def apply_patch(root, ops):
    for op in ops:
        assert op["sel"] in SELECT, f"a selector this test does not know: {op['sel']}"
        els = SELECT[op["sel"]](root)
        if "remove" in op:
            for el in els:
                el.attrs.pop(op["remove"], None)
            continue
        values = op["values"] if "toggle" in op else op["values"].split("\n")
        assert len(values) == len(els), f"{op['sel']}: {len(values)} values for {len(els)} elements"
        for el, v in zip(els, values):
            if "toggle" in op:
                classes = [c for c in (el.attrs.get("class") or "").split() if c != op["toggle"]]
                el.attrs["class"] = " ".join(classes + ([op["toggle"]] if v == "1" else []))
            elif op.get("text"):  # textContent = v: one text node replaces every child
                text = type(el)("#text", {}, el)
                text.text = v
                el.children = [text]
            else:
                el.attrs[op["attr"]] = v


def _fingerprint(root):
    """What a reader or a test sees of the heatmap: every element's attributes (classes as a set) and text."""
    out = []
    for n in root.iter():
        attrs = dict(n.attrs)
        if attrs.get("tabindex") == "-1":  # not a tab stop, as a cell without tabindex (the bridge sets -1 too)
            del attrs["tabindex"]
        if "class" in attrs:
            attrs["class"] = frozenset(attrs["class"].split())
        out.append((n.tag, tuple(sorted(attrs.items())), n.text.strip()))
    return out


CASES = [
    ({}, {"temperature": 0.4}),
    ({}, {"dk_scale": 2.5}),
    ({"causal": True}, {"temperature": 2.0}),
    ({"text": "When the old farmer came home after a long day in the fields his dogs ran to the gate"},
     {"temperature": 0.3}),  # 20 tokens: cells without numbers
    ({"model": "minilm", "layer": 3}, {"temperature": 0.7, "activation": "gelu"}),
    ({}, {"head": 2}),
    ({"query": 2}, {"head": 1, "temperature": 0.5}),
    ({"model": "minilm", "layer": 3}, {"layer": 5, "head": 7}),
    ({}, {"query": 1}),
    ({"causal": True}, {"query": 4, "head": 3}),
    ({"model": "minilm"}, {"query": 2, "layer": 1}),
]


@pytest.mark.parametrize("base,change", CASES)
def test_a_patch_equals_the_full_redraw(base, change):
    old = st.State()
    if "model" in base:
        old = st.apply_event(old, {"type": "set_model", "value": base["model"]})
    old = dataclasses.replace(old, **{k: v for k, v in base.items() if k != "model"})
    if "text" in base:
        old = st.apply_event(st.State(), {"type": "set_text", "value": base["text"]})
    new = dataclasses.replace(old, **change)
    assert page.patchable("attention-matrix", old, new)
    before = parse(page.render_panels(old, {"attention-matrix"}, live=True)["attention-matrix"])
    after = parse(page.render_panels(new, {"attention-matrix"}, live=True)["attention-matrix"])
    assert _fingerprint(before) != _fingerprint(after), "the change must change the picture"
    apply_patch(before, page.render_patches(new, {"attention-matrix"})["attention-matrix"])
    assert _fingerprint(before) == _fingerprint(after)


def test_structure_changes_are_never_patched():
    s = st.State()
    for field, value in (("key", 1), ("causal", True), ("text", "a cat"), ("model", "minilm")):
        assert not page.patchable("attention-matrix", s, dataclasses.replace(s, **{field: value})), field


def test_the_worker_patches_only_markup_it_drew_live():
    worker.boot("", "page")
    first = worker.dispatch({"type": "set_temperature", "value": "0.5"})
    assert "attention-matrix" in first["panels"], "the pre-rendered heatmap is replaced, not patched"
    second = worker.dispatch({"type": "set_temperature", "value": "0.6"})
    assert "attention-matrix" in second["patches"] and "attention-matrix" not in second["panels"]
    third = worker.dispatch({"type": "pick_cell", "value": "2,1"})  # query and key: the key is not patched
    assert "attention-matrix" in third["panels"] and not third["patches"]
    # the bridge found markup a patch does not fit: it asks for the panel
    again = worker.dispatch({"type": "redraw", "value": "attention-matrix"})
    assert "attention-matrix" in again["panels"]
    # off screen, the heatmap goes stale; it is not patched when it comes back
    worker.dispatch({"type": "viewport", "value": ["token-chips"]})
    worker.dispatch({"type": "set_text", "value": "The dog barked"})
    back = worker.dispatch({"type": "viewport", "value": ["token-chips", "attention-matrix"]})
    assert "attention-matrix" in back["panels"]


def test_viridis_many_is_viridis_for_every_value():
    import numpy as np

    from attention_explorer.views.colors import viridis, viridis_many

    ts = np.concatenate([np.random.default_rng(3).random(5000), np.linspace(0, 1, 1001), [-0.5, 0.05, 0.95, 1.0, 2.0]])
    assert viridis_many(ts) == [viridis(t) for t in ts]


@pytest.mark.parametrize("allowed,interactive,tab_stop,light", [
    (True, True, False, False), (True, True, True, True), (False, True, False, False),
    (True, False, False, True), (False, False, False, False)])
def test_the_fast_cell_markup_is_attr_markup(allowed, interactive, tab_stop, light):
    from attention_explorer.views.attention_matrix import cell_rect
    from attention_explorer.views.markup import attr, data_num

    x, y, cell, fill, i, j, w = 96, 132, 18, "#3b528b" if allowed else "url(#attention-matrix-masked)", 2, 5, 0.123456
    want = (f'<rect{attr(class_="cell is-light" if light else "cell", x=x, y=y, width=cell, height=cell, fill=fill, data_i=i, data_j=j, data_weight=data_num(w), data_masked="true" if not allowed else None, data_grid_cell=interactive, tabindex=0 if tab_stop else None, data_tip=None, data_tip_src=True)}/>')
    assert cell_rect(x, y, cell, fill, light, i, j, w, allowed, interactive, tab_stop) == want
