"""The seam between the page and its models: one declaration per state field, one model interface.

What the product promises here: the state, the permalink and the form are derived
from fields.FIELDS; views import no model module and draw whatever model they are
handed (checked with a second, very different toy model); switching model or layer
keeps the state valid and recomputes only what it must.
"""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import toy_model
from attention_explorer import core, fields, models, page, permalink, state as st
from attention_explorer.models import designed
from markup_tree import parse

PKG = Path(__file__).resolve().parents[1] / "py" / "attention_explorer"


def _imports(path: Path) -> set[str]:
    """Every module a file imports, resolved to absolute 'attention_explorer.x.y' names where relative."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(("attention_explorer", *path.relative_to(PKG).parent.parts))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names |= {base} | {f"{base}.{a.name}" for a in node.names}
    return names


# --------------------------------------------------------------------------- boundaries


def test_no_view_imports_a_model_module():
    """Views draw from (state, description, run): a new model must not need a view to know it."""
    for path in sorted((PKG / "views").glob("*.py")):
        bad = {
            m
            for m in _imports(path)
            if m.startswith("attention_explorer.model") or m in ("attention_explorer.state", "attention_explorer.page")
        }
        assert not bad, f"{path.name} imports {sorted(bad)}"


def test_fields_imports_nothing_from_the_package():
    own = {m for m in _imports(PKG / "fields.py") if m.startswith("attention_explorer")}
    assert not own, f"fields.py must stand alone, imports {own}"


def test_state_does_not_import_the_page():
    """The old import circle (state -> page -> views -> state) is gone."""
    code = (
        "import sys; import attention_explorer.state, attention_explorer.permalink; "
        "print('attention_explorer.page' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(PKG.parent)}
    )
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- one declaration per field


def test_state_permalink_and_form_derive_from_the_field_declarations():
    names = [f.name for f in fields.FIELDS]
    assert [f.name for f in dataclasses.fields(st.State)] == names
    assert permalink.KEYS == {f.name: f.key for f in fields.FIELDS if f.in_link}
    assert permalink.LABELS == {f.name: f.label for f in fields.FIELDS}
    values = page.control_values(st.State())
    for f in fields.FIELDS:
        if f.control:
            assert f.control in values, f"the form's values miss {f.control} for {f.name}"


def test_every_declared_control_is_in_the_page_with_its_event():
    """Each field's control exists once in the built page and sends that field's event."""
    import build

    root = parse(build.render_page())
    for f in fields.FIELDS:
        if f.control:
            found = [el for el in root.iter() if el.attrs.get("id") == f.control]
            assert len(found) == 1, f"#{f.control} appears {len(found)} times"
            assert found[0].attrs.get("data-event") == f.event, f"#{f.control} must send {f.event}"


def test_number_fields_clamp_to_their_declared_limits():
    for f in fields.FIELDS:
        if f.kind in ("number", "count"):
            lo, hi = f.limits
            assert getattr(st.apply_event(st.State(), {"type": f.event, "value": hi * 10}), f.name) == hi
            assert getattr(st.apply_event(st.State(), {"type": f.event, "value": lo - 1e6}), f.name) == lo


# --------------------------------------------------------------------------- the model interface


def test_the_designed_model_behind_the_interface_is_the_designed_model():
    """Same tokens, same trace as calling the designed model's own forward pass."""
    m = models.get("designed")
    toks = m.tokenize("The dog chased the cat because it was hungry")
    run = m.forward(toks, core.Settings(temperature=0.7, dk_scale=5.0, causal=True, activation="relu"))
    emb, trace = designed.forward(
        list(toks), core.Settings(temperature=0.7, dk_scale=5.0, causal=True, activation="relu")
    )
    assert run.tokens == toks and len(run.layers) == 1
    assert toks[0] == "<s>" and run.special == (0,), "the start token leads and is marked special"
    assert np.array_equal(run.embedding.x, emb.x)
    for name in ("weights", "scores", "out", "ffn_act"):
        assert np.array_equal(getattr(run.layers[0], name), getattr(trace, name))
    assert run.token_tags[0] == tuple(designed.describe_token(toks[0], 0, list(toks)))


def test_descriptions_are_consistent_with_the_runs():
    with toy_model.registered():
        for model_id, model in models.MODELS.items():
            d = model.description
            run = model.forward(
                model.tokenize(d.default_text),
                core.Settings(temperature=1.0, dk_scale=d.true_dk_scale, causal=False, activation=d.activations[0]),
            )
            assert len(run.layers) == d.n_layers
            for layer, trace in enumerate(run.layers):
                assert trace.n_heads == len(d.heads[layer]) and trace.d_head == d.d_k, model_id
                assert trace.d_model == d.d_model and trace.d_ff == d.d_ff, model_id
            assert 0 <= d.default_query < len(run.tokens)
            for text in (d.default_text, "zzz"):  # every model names a fallback query for any sentence
                toks = model.tokenize(text)
                assert 0 <= model.default_query(toks) < len(toks), model_id
            for p in d.presets:
                assert 0 <= p.query < len(model.tokenize(p.text)), f"{model_id} preset {p.id}"


def test_run_arrays_are_read_only():
    run = models.get("designed").forward(
        ("<s>", "a", "cat"), core.Settings(temperature=1.0, dk_scale=8.0, causal=False, activation="gelu")
    )
    for arr in (run.embedding.token, run.embedding.position, run.embedding.x, run.layers[0].weights):
        with pytest.raises(ValueError):
            arr[0, 0] = 1.0


# --------------------------------------------------------------------------- a second model, end to end


@pytest.fixture
def toy():
    with toy_model.registered() as m:
        yield m


def test_switching_model_follows_the_models_sizes(toy):
    s = st.apply_event(dataclasses.replace(st.State(), head=3), {"type": "set_model", "value": "toy"})
    assert s.model == "toy" and s.dk_scale == pytest.approx(np.sqrt(toy_model.D_K))
    assert s.head == toy_model.N_HEADS - 1, "a head the new model lacks is clamped to its last"
    assert s.tokens[0] == toy_model.SPECIAL and s.tokens[1:] == tuple(s.text.split())
    assert s.activation in toy_model.DESCRIPTION.activations
    back = st.apply_event(s, {"type": "set_model", "value": "designed"})
    assert back.dk_scale == 8.0 and back.tokens == designed.MODEL.tokenize(back.text)


def test_layer_selection_recomputes_nothing_and_shows_that_layer(toy):
    s = st.apply_event(st.State(), {"type": "set_model", "value": "toy"})
    c0 = st.compute(s)
    s1 = st.apply_event(s, {"type": "set_layer", "value": "1"})
    c1 = st.compute(s1)
    assert c1.run is c0.run, "choosing a layer reuses the memoised run"
    assert c1.trace is c0.run.layers[1] and c1.params is c0.run.params[1]
    # layer 1's input is layer 0's output: the block is chained through the core
    assert np.array_equal(c1.trace.x, c0.run.layers[0].out)
    with pytest.raises(st.InputError):
        st.apply_event(s, {"type": "set_layer", "value": "2"})
    with pytest.raises(st.InputError):
        st.apply_event(st.State(), {"type": "set_layer", "value": "1"})  # the designed model has one layer


def test_every_panel_draws_the_toy_model_on_every_layer(toy):
    """Views serve any model: the heatmap's cells carry the selected layer's weights."""
    s = st.apply_event(st.State(), {"type": "set_model", "value": "toy"})
    for layer in range(toy_model.N_LAYERS):
        for head in range(toy_model.N_HEADS):
            s2 = dataclasses.replace(s, layer=layer, head=head)
            panels = page.render_panels(s2)
            assert set(panels) == set(page.PANELS)
            (svg,) = parse(panels["attention-matrix"]).find_all("svg", data_view="attention-matrix")
            weights = st.compute(s2).run.layers[layer].weights[head]
            cells = svg.find_all("rect", data_weight=True)
            assert cells, "the heatmap has cells"
            for cell in cells:
                i, j = int(cell.attrs["data-i"]), int(cell.attrs["data-j"])
                assert float(cell.attrs["data-weight"]) == pytest.approx(weights[i, j], abs=1e-12)
            assert toy_model.DESCRIPTION.heads[layer][head].name in panels["head-info"]


def test_permalinks_carry_the_model_and_the_layer(toy):
    s = dataclasses.replace(
        st.State(), model="toy", layer=1, head=2, dk_scale=float(np.sqrt(8)), text="the toy sees", query=3
    )
    frag = permalink.encode(s)
    assert "m=toy" in frag and "l=1" in frag
    assert permalink.decode(frag) == (s, [])
    state, notices = permalink.decode("m=toy&l=7")
    assert state.model == "toy" and state.layer == 0
    assert notices == ["Ignored the link's layer: 7 is out of range (0 to 1)."]
    state, notices = permalink.decode("m=gpt9&h=1")
    assert state.model == "designed" and state.head == 1
    assert notices == ['Ignored the link\'s model: "gpt9" is not one of designed, minilm, toy.']


def test_exports_name_the_model_and_layer(toy):
    import json

    from attention_explorer import exports

    s = dataclasses.replace(st.apply_event(st.State(), {"type": "set_model", "value": "toy"}), layer=1)
    doc = json.loads(exports.weights_json(s, st.compute(s)))
    assert doc["model"] == {"id": "toy", "name": toy_model.DESCRIPTION.name} and doc["layer"] == 1
    assert doc["d_k"] == toy_model.D_K
    assert np.array_equal(np.array(doc["weights"]), st.compute(s).run.layers[1].weights[s.head])
    assert doc["tokens"][0] == toy_model.SPECIAL


# ------------------------------------------------------------- special tokens and preset notes in the views


def chips_of(state):
    from attention_explorer.views import controls

    tree = parse(controls.render_token_chips(state, st.compute(state)))
    return tree.find_all("button", data_token_index=True), tree.find_all("p", class_="token-count")[0]


def test_the_start_token_chip_is_marked_special_and_named():
    """A student must not take <s> for a word they typed: its chip says what it is."""
    chips, count = chips_of(st.State())
    assert [c.has_class("is-special") for c in chips] == [True] + [False] * 8
    start = chips[0]
    name = start.all_text()  # what a screen reader says: the visible text and the hidden explanation
    assert name.startswith("0") and name.endswith("<s>")
    for said in (name, start.attrs["title"]):
        assert "start token" in said and "not a word of the sentence" in said
    assert not any("title" in c.attrs or c.find_all(class_="sr-only") for c in chips[1:]), "words are just words"
    text = count.all_text()
    assert text.startswith("9 tokens (8 from the sentence + start token <s>)"), text
    assert count.attrs["data-token-count"] == "9", "the count of chips, specials included"


def test_token_chips_name_any_models_specials(toy):
    """The view reads run.special and the tokens, so the toy model's [CLS] is named the same way."""
    s = st.apply_event(st.State(), {"type": "set_model", "value": "toy"})
    chips, count = chips_of(s)
    assert [c.has_class("is-special") for c in chips] == [True] + [False] * (len(chips) - 1)
    assert "[CLS]: start token" in chips[0].attrs["title"]
    assert f"({len(chips) - 1} from the sentence + start token [CLS])" in count.all_text()


def test_the_preset_note_names_the_head_and_the_query_it_opened():
    from attention_explorer.views import explain

    def note(preset_id, heads=designed.HEADS):
        s = st.apply_event(st.State(), {"type": "preset", "value": preset_id})
        return parse(explain.preset_info(s, designed.PRESETS, heads)).all_text()

    assert "Head 2 (Verb and its arguments), query 'are': 'are' looks at 'keys'" in note("agreement")
    assert "Head 4 (Noun-phrase head), query 'big':" in note("noun-phrase")
    assert "Head 1 (Coreference), query 'it':" in note("tired-cat")
    assert "Head 2, query 'are':" in note("agreement", heads=()), "without the heads, the head by number"
    own = st.apply_event(st.State(), {"type": "set_text", "value": "Hi"})
    assert "Your own sentence" in explain.preset_info(own, designed.PRESETS, designed.HEADS)
