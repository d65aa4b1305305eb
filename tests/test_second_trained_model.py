"""A second trained BERT-like model is one spec and one registry line (issue 37, item 4).

A tiny BERT (2 layers × 2 heads, d_model 32) is made here from random weights in Hugging Face's
BertModel naming, bundled by build.py's own make_bundle/write_model, installed from the bytes as
the worker installs a download, and registered beside the page's models. Then everything the page
does with a trained model is done with it, none of which names it: its numbers against a BERT
written out here from the same (quantized) weights, every panel, the model picker, a permalink,
the comparison card and the sentence pairs.
"""

from __future__ import annotations

import dataclasses
import gzip
import math

import numpy as np
import pytest

import build
from attention_explorer import core, models, page, pairs, permalink, state as st
from attention_explorer.models import quantize
from attention_explorer.models.base import pair
from attention_explorer.models.trained import TrainedModel, TrainedSpec, preset

N_LAYERS, N_HEADS, D, D_FF, POSITIONS = 2, 2, 32, 64, 64
WORDS = "the cat sat down because it was tired dog ran home".split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s"]
EPS = 1e-12

SPEC = TrainedSpec(
    id="tiny",
    name="tiny-bert",
    about="A tiny BERT with random weights, made by a test.",
    source="tests/test_second_trained_model.py",
    pins="(none)",
    card="tiny-bert-README.md",
    n_layers=N_LAYERS,
    n_heads=N_HEADS,
    d_model=D,
    d_ff=D_FF,
    download_mb=0,
    presets=(
        preset("cat", "The cat", "The cat sat down because it was tired.", "where 'it' looks.", "it", layer=1, head=1),
        preset("dog", "The dog", "The dog ran home.", "where 'dog' looks.", "dog"),
    ),
    pairs=(
        pair(
            "cats",
            "One or many",
            "the cat sat down",
            "the cats sat down",
            "sat",
            ("", ""),
            (),
            "the query's row in both.",
            layer=1,
        ),
    ),
)


def random_tensors(seed=0) -> dict:
    rng = np.random.default_rng(seed)
    t = {
        "embeddings.word_embeddings.weight": rng.normal(0, 1, (len(VOCAB), D)),
        "embeddings.position_embeddings.weight": rng.normal(0, 0.5, (POSITIONS, D)),
        "embeddings.token_type_embeddings.weight": rng.normal(0, 0.1, (2, D)),
        "embeddings.LayerNorm.weight": rng.uniform(0.5, 1.5, D),
        "embeddings.LayerNorm.bias": rng.normal(0, 0.1, D),
    }
    for i in range(N_LAYERS):
        L = f"encoder.layer.{i}."
        for name, (d_out, d_in) in {
            "attention.self.query": (D, D),
            "attention.self.key": (D, D),
            "attention.self.value": (D, D),
            "attention.output.dense": (D, D),
            "intermediate.dense": (D_FF, D),
            "output.dense": (D, D_FF),
        }.items():
            t[L + name + ".weight"] = rng.normal(0, 1 / math.sqrt(d_in), (d_out, d_in))  # nn.Linear: [out, in]
            t[L + name + ".bias"] = rng.normal(0, 0.1, d_out)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            t[L + ln + ".weight"] = rng.uniform(0.5, 1.5, D)
            t[L + ln + ".bias"] = rng.normal(0, 0.1, D)
    return {k: v.astype(np.float32) for k, v in t.items()}


CONFIG = {
    "hidden_size": D,
    "num_attention_heads": N_HEADS,
    "num_hidden_layers": N_LAYERS,
    "intermediate_size": D_FF,
    "vocab_size": len(VOCAB),
    "layer_norm_eps": EPS,
    "hidden_act": "gelu",
    "position_embedding_type": "absolute",
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """(manifest entry, the file written): the bundle as build.py writes any trained model's."""
    tensors = random_tensors()
    blob = build.make_bundle(SPEC, tensors, CONFIG, "\n".join(VOCAB) + "\n")
    dist = tmp_path_factory.mktemp("dist")
    entry = build.write_model(dist, SPEC, blob, None)
    return entry, dist / entry["src"]


@pytest.fixture(scope="module")
def tiny(bundle):
    model = TrainedModel(SPEC)
    assert not model.available
    model.install(gzip.decompress(bundle[1].read_bytes()))  # as the worker installs a download
    with models.registered(model):
        yield model


# ------------------------------------------------------------------------------------------- reference


def _ln(x, g, b):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + EPS) * g + b


def _lin(t, name, x):
    return x @ t[name + ".weight"].T + t[name + ".bias"]


def reference(t, ids, temperature=1.0, causal=False):
    """BERT's forward pass written out (float64): [per layer: weights [h, n, n]], last hidden [n, d]."""
    t = {k: np.asarray(v, np.float64) for k, v in t.items()}
    n = len(ids)
    x = _ln(
        t["embeddings.word_embeddings.weight"][ids]
        + t["embeddings.position_embeddings.weight"][:n]
        + t["embeddings.token_type_embeddings.weight"][0],
        t["embeddings.LayerNorm.weight"],
        t["embeddings.LayerNorm.bias"],
    )
    d_head, out = D // N_HEADS, []
    for i in range(N_LAYERS):
        L = f"encoder.layer.{i}."
        q, k, v = (_lin(t, L + f"attention.self.{c}", x) for c in ("query", "key", "value"))
        heads, z = [], []
        for h in range(N_HEADS):
            s = slice(h * d_head, (h + 1) * d_head)
            logits = q[:, s] @ k[:, s].T / (math.sqrt(d_head) * temperature)
            if causal:
                logits = np.where(np.tril(np.ones((n, n), bool)), logits, -np.inf)
            w = np.exp(logits - logits.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            heads.append(w)
            z.append(w @ v[:, s])
        h1 = _ln(
            x + _lin(t, L + "attention.output.dense", np.concatenate(z, -1)),
            t[L + "attention.output.LayerNorm.weight"],
            t[L + "attention.output.LayerNorm.bias"],
        )
        pre = _lin(t, L + "intermediate.dense", h1)
        act = 0.5 * pre * (1 + np.vectorize(math.erf)(pre / math.sqrt(2)))
        x = _ln(h1 + _lin(t, L + "output.dense", act), t[L + "output.LayerNorm.weight"], t[L + "output.LayerNorm.bias"])
        out.append(np.array(heads))
    return out, x


# ------------------------------------------------------------------------------------------- the tests


def test_the_bundle_is_written_like_any_trained_models(bundle):
    entry, path = bundle
    assert path.name.startswith("tiny.") and path.name.endswith(".safetensors.gz")
    assert entry["bytes"] == path.stat().st_size and entry["sha256"] == build.sha256_of(path.read_bytes())


def test_the_registry_lists_it_after_the_others_and_restores_itself(tiny):
    assert list(models.MODELS)[-1] == "tiny" and models.TRAINED[-1] == "tiny"
    assert models.MODELS[models.DEFAULT] is models.get("designed")
    d = st.description("tiny")
    assert (d.n_layers, len(d.heads[0]), d.d_model, d.d_k, d.d_ff) == (N_LAYERS, N_HEADS, D, D // N_HEADS, D_FF)
    # the presets' queries were found in the tokens once the vocabulary came
    cat = d.presets[0]
    assert tiny.tokenize(cat.text)[cat.query] == "it"


def test_its_numbers_are_berts_written_out(tiny):
    s = st.apply_event(st.State(), {"type": "set_model", "value": "tiny"})
    s = st.apply_event(s, {"type": "set_temperature", "value": "0.7"})
    s = st.apply_event(s, {"type": "set_causal", "value": True})
    ids = [VOCAB.index(tok) for tok in s.tokens]
    deq = quantize.dequantize(quantize.quantize(random_tensors()))  # the page runs the quantized weights
    want_weights, want_out = reference(deq, ids, temperature=0.7, causal=True)
    run = st.compute(s).run
    assert len(run.layers) == N_LAYERS
    for layer, (trace, want) in enumerate(zip(run.layers, want_weights)):
        np.testing.assert_allclose(trace.weights, want, atol=2e-5, err_msg=f"layer {layer}")
    np.testing.assert_allclose(run.layers[-1].out, want_out, atol=2e-4)
    assert st.settings(s) == core.Settings(
        temperature=0.7, dk_scale=math.sqrt(D // N_HEADS), causal=True, activation="gelu"
    )


def test_every_panel_draws_it_and_the_picker_lists_it(tiny):
    s = st.apply_event(st.State(), {"type": "set_model", "value": "tiny"})
    s = st.apply_event(s, {"type": "set_layer", "value": "1"})
    panels = page.render_panels(s)
    assert set(panels) == set(page.PANELS) and all(panels.values())
    form = page.model_form(s)
    assert ["tiny", "Trained: tiny-bert"] in form["options"]["model"]
    assert [o[0] for o in form["options"]["layer"]] == [str(i) for i in range(N_LAYERS)]
    assert form["text"]["dk-d"] == str(D // N_HEADS)


def test_a_permalink_opens_it_on_its_layer_and_head(tiny):
    s = st.apply_event(st.State(), {"type": "set_model", "value": "tiny"})
    s = dataclasses.replace(s, layer=1, head=1)
    back, notices = permalink.decode(permalink.encode(s))
    assert (back.model, back.layer, back.head, back.text) == ("tiny", 1, 1, s.text) and not notices


def test_the_comparison_card_sets_the_model_in_use_against_the_designed_one(tiny):
    s = st.apply_event(st.State(), {"type": "set_model", "value": "tiny"})
    cmp = st.comparison(s)
    assert cmp.trained_id == "tiny" and cmp.trained is not None
    assert len(cmp.trained.run.layers) == N_LAYERS
    assert cmp.designed.model.id == models.DEFAULT


def test_its_sentence_pairs_are_its_own(tiny):
    d = st.description("tiny")
    assert pairs.presets(d) == SPEC.pairs
    s = st.apply_event(st.State(), {"type": "set_model", "value": "tiny"})
    s = st.apply_event(s, {"type": "pair_preset", "value": "cats"})
    assert (s.text, s.pair_text, s.layer) == ("the cat sat down", "the cats sat down", 1)
    assert s.tokens[s.query] == "sat"
    assert "One or many" in page.render_panels(s, {"pair"})["pair"]


def test_a_bundle_whose_size_the_spec_misstates_is_refused(tmp_path):
    wrong = dataclasses.replace(SPEC, download_mb=24)
    with pytest.raises(build.BuildError, match="download_mb"):
        build.write_model(tmp_path, wrong, b"x" * 1000, None)


def test_weights_of_other_sizes_than_the_spec_are_refused():
    from attention_explorer.models import bert
    from attention_explorer.models.wordpiece import WordPiece

    weights = bert.load_weights(random_tensors(), CONFIG)
    with pytest.raises(ValueError, match="spec says"):
        TrainedModel(dataclasses.replace(SPEC, n_heads=4)).install_weights(
            weights, WordPiece.from_text("\n".join(VOCAB))
        )
