"""Model inputs declared once (issue 37, item 4): one core.Settings from the state through every model.

A field with model_input=True (fields.py) is a field of core.Settings of the same name; state.settings
fills it in, every model hands it to core.run_block, and a knob core does not read is caught here.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

import toy_model
from attention_explorer import core, fields, models, state as st


def test_every_model_input_is_a_knob_of_settings_and_back():
    knobs = {f.name for f in dataclasses.fields(core.Settings)} - {"attention_fn"}
    inputs = {f.name for f in fields.FIELDS if f.model_input} - {"model", "text", "code", "custom"}
    assert knobs == inputs == set(st.SETTINGS_FIELDS)


def test_a_new_model_input_without_its_knob_is_refused_by_name():
    with pytest.raises(ValueError, match=r"\['rope'\] are not fields of core.Settings"):
        st.settings_fields((*fields.MODEL_INPUTS, "rope"))
    with pytest.raises(ValueError, match=r"fields \['causal'\] no model inputs"):
        st.settings_fields(tuple(n for n in fields.MODEL_INPUTS if n != "causal"))


def random_state(rng: random.Random) -> st.State:
    d = st.description("designed")
    return dataclasses.replace(
        st.State(),
        temperature=rng.choice((0.05, 0.5, 1.0, 3.0)),
        dk_scale=rng.choice((0.5, 8.0, 20.0)),
        causal=rng.random() < 0.5,
        activation=rng.choice(d.activations),
        ablated=tuple(sorted(rng.sample(range(len(d.heads[0])), rng.randint(0, 2)))),
    )


def test_the_settings_carry_the_states_values():
    rng = random.Random(7)
    for _ in range(30):
        s = random_state(rng)
        got = st.settings(s)
        assert (got.temperature, got.dk_scale, got.causal, got.activation) == (
            s.temperature,
            s.dk_scale,
            s.causal,
            s.activation,
        )
        assert got.ablated == tuple((0, h) for h in s.ablated)  # one layer: flat index = head
        assert got.attention_fn is None


# a second value for each knob, and what it must change in the designed model's one layer
OTHER = {"temperature": 2.0, "dk_scale": 3.0, "causal": True, "activation": "relu", "ablated": ((0, 1),)}
CHANGES = {
    "temperature": "weights",
    "dk_scale": "weights",
    "causal": "weights",
    "activation": "out",
    "ablated": "attn_out",
}


@pytest.mark.parametrize("name", st.SETTINGS_FIELDS)
def test_core_reads_every_knob(name):
    """Each knob, changed alone, changes what the block computes (a knob nothing reads would not)."""
    assert set(OTHER) == set(st.SETTINGS_FIELDS), "a new knob needs its other value here"
    base = st.State()
    toks = base.tokens
    plain = models.get("designed").forward(toks, st.settings(base))
    other = models.get("designed").forward(toks, dataclasses.replace(st.settings(base), **{name: OTHER[name]}))
    what = CHANGES[name]
    assert not np.allclose(getattr(plain.layers[0], what), getattr(other.layers[0], what)), name


def test_run_block_is_transformer_block_with_the_knobs_spelled_out():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, toy_model.D_MODEL))
    p = toy_model.MODEL._params[1]
    s = core.Settings(temperature=0.6, dk_scale=2.5, causal=True, activation="relu", ablated=((1, 0), (0, 1)))
    got = core.run_block(x, p, toy_model.N_HEADS, s, layer=1)
    want = core.transformer_block(
        x,
        p,
        toy_model.N_HEADS,
        temperature=0.6,
        scale=2.5,
        mask=np.tril(np.ones((5, 5), bool)),
        activation="relu",
        head_mask=np.array([False] + [True] * (toy_model.N_HEADS - 1)),
    )
    for name in ("weights", "attn_out", "out"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))


def test_settings_are_hashable_and_equal_by_value():
    """state.py memoises runs on them."""
    assert hash(core.Settings(temperature=0.5)) == hash(core.Settings(temperature=0.5))
    assert core.Settings(ablated=((0, 1),)) != core.Settings()
