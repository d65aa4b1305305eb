"""A slider's patch brings live heatmap markup to exactly what a full redraw would draw.

The patch semantics (site/bridge/patch.js applyPatch) are re-implemented here over the parsed markup,
and the patched old markup is compared with the new state's full markup, element by element.
"""

from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction

import pytest

from attention_explorer import page, state as st, worker
from markup_tree import parse

# A compound selector: a tag, classes and [attr] / [attr="value"] tests (render_patch needs no more).
COMPOUND = re.compile(r'^(?P<tag>[a-z]+)?(?P<rest>(?:\.[\w-]+|\[[\w-]+(?:="[^"]*")?\])*)$')


def _matches(node, compound: str) -> bool:
    m = COMPOUND.match(compound)
    assert m, f"a selector this test does not know: {compound}"
    if m["tag"] and node.tag != m["tag"]:
        return False
    for cls in re.findall(r"\.([\w-]+)", m["rest"]):
        if not node.has_class(cls):
            return False
    for name, value in re.findall(r'\[([\w-]+)(?:="([^"]*)")?\]', m["rest"]):
        if name not in node.attrs or (value and node.attrs[name] != value):
            return False
    return True


def select(root, sel: str) -> list:
    """querySelectorAll(sel) under root, for descendant selectors of compounds, in document order."""
    *ancestors, last = sel.split()
    found = []
    for n in root.iter():
        if n is root or not _matches(n, last):
            continue
        up, want = n.parent, list(ancestors)
        while want and up is not None and up is not root:
            if _matches(up, want[-1]):
                want.pop()
            up = up.parent
        if not want:
            found.append(n)
    return found


def apply_patch(root, ops):
    """site/bridge/patch.js applyPatch over a parsed panel."""
    for op in ops:
        els = select(root, op["sel"])
        if "remove" in op:
            for el in els:
                el.attrs.pop(op["remove"], None)
            continue
        values = (
            op["values"]
            if "toggle" in op
            else [op["values"]]
            if op.get("html")
            else op["values"].split(op.get("sep", "\n"))
        )
        assert len(values) == len(els), f"{op['sel']}: {len(values)} values for {len(els)} elements"
        for el, v in zip(els, values):
            if op.get("html"):  # innerHTML = v
                el.children = parse(v).children
                for child in el.children:
                    child.parent = el
            elif "toggle" in op:
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
    (
        {"text": "When the old farmer came home after a long day in the fields his dogs ran to the gate"},
        {"temperature": 0.3},
    ),  # 20 tokens: cells without numbers
    ({"model": "minilm", "layer": 3}, {"temperature": 0.7, "activation": "gelu"}),
    ({}, {"head": 2}),
    ({"query": 2}, {"head": 1, "temperature": 0.5}),
    ({"model": "minilm", "layer": 3}, {"layer": 5, "head": 7}),
    ({}, {"query": 1}),
    ({"causal": True}, {"query": 4, "head": 3}),
    ({"model": "minilm"}, {"query": 2, "layer": 1}),
]


def _states(base: dict, change: dict):
    old = st.State()
    if "model" in base:
        old = st.apply_event(old, {"type": "set_model", "value": base["model"]})
    if "text" in base:
        old = st.apply_event(old, {"type": "set_text", "value": base["text"]})
    old = dataclasses.replace(old, **{k: v for k, v in base.items() if k not in ("model", "text")})
    return old, dataclasses.replace(old, **change)


def _patch_equals_redraw(pid: str, old, new):
    assert page.patchable(pid, old, new)
    before = parse(page.render_panels(old, {pid}, live=True)[pid])
    after = parse(page.render_panels(new, {pid}, live=True)[pid])
    assert _fingerprint(before) != _fingerprint(after), "the change must change the picture"
    apply_patch(before, page.render_patches(new, {pid})[pid])
    assert _fingerprint(before) == _fingerprint(after)


@pytest.mark.parametrize("base,change", CASES)
def test_a_patch_equals_the_full_redraw(base, change):
    _patch_equals_redraw("attention-matrix", *_states(base, change))


def _cell_labels(root) -> list[str]:
    return [n.all_text() for n in select(root, "text.cell-value")]


def _honest(w: float) -> str:
    """100·w rounded half up from w's exact value; "<1" above 0 but under 0.5 %; "0" for exactly 0."""
    q = Fraction(float(w)) * 100
    return "0" if q == 0 else "<1" if q < Fraction(1, 2) else str(math.floor(q + Fraction(1, 2)))


# (before, after, what each of the <s> row's eight equal small weights reads after; None: masked row)
LABEL_CASES = [
    ({}, {"temperature": 0.8}, "<1"),  # 0.19 % each
    ({"temperature": 0.8}, {"temperature": 1.0}, "1"),  # 0.64 % each
    ({"causal": True}, {"temperature": 2.0, "head": 1}, None),
    ({"query": 2}, {"dk_scale": 3.0}, "<1"),  # 0.0002 % each
]


@pytest.mark.parametrize("base,change,small", LABEL_CASES)
def test_a_slider_patch_writes_the_labels_a_fresh_render_writes(base, change, small):
    """The cell numbers after a slider move (the patch path, page.render_patches) are those of a fresh render
    of the new state, each its own weight rounded: equal weights keep equal labels through a patch."""
    old, new = _states(base, change)
    before = parse(page.render_panels(old, {"attention-matrix"}, live=True)["attention-matrix"])
    apply_patch(before, page.render_patches(new, {"attention-matrix"})["attention-matrix"])
    fresh = parse(page.render_panels(new, {"attention-matrix"})["attention-matrix"])  # as build.py draws it
    c = st.compute(new)
    w, mask, n = c.trace.weights[new.head], c.trace.mask, len(c.tokens)
    expected = [_honest(w[i, j]) for i in range(n) for j in range(n) if mask[i, j]]
    assert _cell_labels(before) == _cell_labels(fresh) == expected
    if small is not None:
        assert expected[1:n] == [small] * (n - 1), "the <s> row's equal weights read the same"


LONG = "When the old farmer came home after a long day in the fields his dogs ran to the gate"
AFFINITY_CASES = [
    ({}, {"temperature": 0.4}),
    ({}, {"dk_scale": 2.5}),
    ({"causal": True}, {"temperature": 2.0}),  # masked keys: hatched weights
    ({"text": LONG}, {"temperature": 0.3}),  # 20 tokens: value labels written upright
    ({"text": LONG, "causal": True, "query": 5}, {"dk_scale": 30.0}),
    ({"model": "minilm", "layer": 3}, {"temperature": 0.7}),
    ({"model": "minilm", "layer": 5, "query": 3, "head": 7}, {"temperature": 3.0, "dk_scale": 1.0}),
]


@pytest.mark.parametrize("base,change", AFFINITY_CASES)
def test_an_affinity_patch_equals_the_full_redraw(base, change):
    """The affinity bars, formula and table: a slider's patch draws what a full redraw draws."""
    _patch_equals_redraw("affinity", *_states(base, change))


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


@pytest.mark.parametrize(
    "allowed,interactive,tab_stop,light",
    [
        (True, True, False, False),
        (True, True, True, True),
        (False, True, False, False),
        (True, False, False, True),
        (False, False, False, False),
    ],
)
def test_the_fast_cell_markup_is_attr_markup(allowed, interactive, tab_stop, light):
    from attention_explorer.views.attention_matrix import cell_rect
    from attention_explorer.views.markup import attr, data_num

    x, y, cell, fill, i, j, w = 96, 132, 18, "#3b528b" if allowed else "url(#attention-matrix-masked)", 2, 5, 0.123456
    attrs = attr(
        class_="cell is-light" if light else "cell",
        x=x,
        y=y,
        width=cell,
        height=cell,
        fill=fill,
        data_i=i,
        data_j=j,
        data_weight=data_num(w),
        data_masked="true" if not allowed else None,
        data_grid_cell=interactive,
        tabindex=0 if tab_stop else None,
        data_tip=None,
        data_tip_src=True,
    )
    want = f"<rect{attrs}/>"
    assert cell_rect(x, y, cell, fill, light, i, j, w, allowed, interactive, tab_stop) == want


HEAD_GRID_CASES = [
    ({}, {"query": 2}),
    ({}, {"head": 3}),
    ({"causal": True, "query": 5}, {"query": 1, "head": 2}),  # masked cells, another strongest key
    ({"model": "minilm"}, {"query": 3}),  # 72 thumbnails
    ({"model": "minilm", "layer": 2, "head": 4}, {"layer": 5, "head": 0, "query": 1}),
    ({"model": "minilm", "ablated": (3, 40)}, {"query": 4}),  # heads marked "off"
]


@pytest.mark.parametrize("base,change", HEAD_GRID_CASES)
def test_a_head_grid_patch_equals_the_full_redraw(base, change):
    _patch_equals_redraw("head-grid", *_states(base, change))


def test_the_head_grid_is_redrawn_with_pinned_queries_or_new_weights():
    old = st.State()
    assert not page.patchable("head-grid", old, dataclasses.replace(old, pinned=(1,)))
    assert not page.patchable(
        "head-grid", dataclasses.replace(old, pinned=(1,)), dataclasses.replace(old, pinned=(1,), query=2)
    )
    assert not page.patchable("head-grid", old, dataclasses.replace(old, temperature=0.5))


AGGREGATES_CASES = [
    ({}, {"query": 2}),
    ({"causal": True, "query": 5}, {"query": 1}),  # masked cells
    ({"text": LONG}, {"query": 12}),  # 20 tokens: no numbers in the cells
    ({"model": "minilm", "layer": 3}, {"query": 4}),
    ({"model": "minilm", "layer": 0, "ablated": (2,)}, {"query": 1}),
]


@pytest.mark.parametrize("base,change", AGGREGATES_CASES)
def test_an_aggregates_patch_equals_the_full_redraw(base, change):
    _patch_equals_redraw("aggregates", *_states(base, change))


def test_aggregates_are_redrawn_with_pinned_queries_or_new_weights():
    old = st.State()
    assert not page.patchable("aggregates", old, dataclasses.replace(old, pinned=(1,), query=3))
    assert not page.patchable("aggregates", old, dataclasses.replace(old, temperature=0.5))
