"""The trained model (all-MiniLM-L6-v2) computed through the explorer's core.

The product promises that every number drawn for the trained model is the
real model's number. So the forward pass in models/bert.py is checked against
an independent reference written here from the equations -- per head, per
query row, explicit softmax, explicit LayerNorm, exact GELU via math.erf --
reading the weights with its own few-line parser, in PyTorch's W x + b layout
(so a wrong transpose or a swapped tensor name in bert.py cannot cancel out).

The page computes in float32 (the weights' own precision, and the fast route
in Pyodide), which must equal the float64 reference to 1e-5. Float32 rounding
could hide a small slip in a formula below that bound (an eps, a GELU
approximation), so the same forward pass is also run on the same weights
widened to float64 and must then equal the reference to 1e-12.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from attention_explorer import core
from attention_explorer.models import bert
from minilm_files import SENTENCES, cached_file, fp32_tensors, token_ids

# The bound for the float32 forward pass vs the reference, absolute, on attention weights (probabilities:
# an absolute error is what a reader sees) and on hidden states (LayerNorm outputs: unit-scale rows, a few
# dimensions up to ~10; the float32 errors measured do not grow with the magnitude, so absolute there too).
# Measured at T = 1 on the 20 test sentences and a 64-piece text: attention 1.6e-6, hidden states 2.3e-6 in the
# worst layer. A low temperature magnifies the same logit errors (T = 0.25: 8.6e-6; T = 0.05: 2.4e-4).
TOL = 1e-5
TOL64 = 1e-12  # the same code in float64 (measured: 5e-15): any larger difference is a formula, not rounding
N_LAYERS, N_HEADS, D_MODEL, D_HEAD, D_FF, EPS = 6, 12, 384, 32, 1536, 1e-12


# --------------------------------------------------------------------------
# fixtures: weights read once per module (the file is 90 MB)
# --------------------------------------------------------------------------


def _raw_tensors(path):
    """{name: float64 array} straight from the file: no validation, nothing from the package."""
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__" or e["dtype"] != "F32":
            continue
        begin, end = e["data_offsets"]
        a = np.frombuffer(data[8 + n + begin : 8 + n + end], dtype="<f4").reshape(e["shape"])
        out[name] = a.astype(np.float64)  # float32 weights, exactly; the reference computes in float64
    return out


@pytest.fixture(scope="module")
def raw():
    return _raw_tensors(cached_file("model.safetensors"))


@pytest.fixture(scope="module")
def weights():
    return bert.load_weights(fp32_tensors(), json.loads(cached_file("config.json").read_text()))


@pytest.fixture(scope="module")
def weights64(weights):
    """The same weights widened to float64 (exactly): core then runs the very same code in float64."""

    def wide(record):
        return dataclasses.replace(
            record, **{k: v.astype(np.float64) for k, v in vars(record).items() if isinstance(v, np.ndarray)}
        )

    return dataclasses.replace(wide(weights), layers=tuple(wide(p) for p in weights.layers))


# --------------------------------------------------------------------------
# the independent reference
# --------------------------------------------------------------------------


def ref_layer_norm(v, gamma, beta, eps=EPS):  # one row: explicit mean and biased variance
    d = len(v)
    mean = sum(float(t) for t in v) / d
    var = sum((float(t) - mean) ** 2 for t in v) / d
    return np.array([(float(t) - mean) / math.sqrt(var + eps) * g + b for t, g, b in zip(v, gamma, beta)])


def ref_gelu(t):
    return 0.5 * t * (1.0 + math.erf(t / math.sqrt(2.0)))


def ref_linear(raw, name, x):  # nn.Linear: weight [out, in], y = W x + b
    return raw[name + ".weight"] @ x + raw[name + ".bias"]


def ref_bert(raw, ids, temperature=1.0, scale=None, allowed=None):
    """-> (embedding LayerNorm rows [n, d], [per layer: weights [h, n, n]], final hidden states [n, d])."""
    n = len(ids)
    scale = math.sqrt(D_HEAD) if scale is None else scale
    E = "embeddings."
    x = [
        ref_layer_norm(
            raw[E + "word_embeddings.weight"][ids[i]]
            + raw[E + "position_embeddings.weight"][i]
            + raw[E + "token_type_embeddings.weight"][0],
            raw[E + "LayerNorm.weight"],
            raw[E + "LayerNorm.bias"],
        )
        for i in range(n)
    ]
    emb = np.array(x)
    all_weights = []
    for layer in range(N_LAYERS):
        L = f"encoder.layer.{layer}."
        q = [ref_linear(raw, L + "attention.self.query", xi) for xi in x]
        k = [ref_linear(raw, L + "attention.self.key", xi) for xi in x]
        v = [ref_linear(raw, L + "attention.self.value", xi) for xi in x]
        A = np.zeros((N_HEADS, n, n))
        concat = [np.zeros(D_MODEL) for _ in range(n)]
        for h in range(N_HEADS):
            cols = slice(h * D_HEAD, (h + 1) * D_HEAD)
            for i in range(n):
                live = [j for j in range(n) if allowed is None or allowed[i][j]]
                logits = {j: sum(a * b for a, b in zip(q[i][cols], k[j][cols])) / (scale * temperature) for j in live}
                m = max(logits.values())
                e = {j: math.exp(logits[j] - m) for j in live}
                total = sum(e.values())
                for j in live:
                    A[h, i, j] = e[j] / total
                concat[i][cols] = sum(A[h, i, j] * v[j][cols] for j in live)
        all_weights.append(A)
        h1 = [
            ref_layer_norm(
                x[i] + ref_linear(raw, L + "attention.output.dense", concat[i]),
                raw[L + "attention.output.LayerNorm.weight"],
                raw[L + "attention.output.LayerNorm.bias"],
            )
            for i in range(n)
        ]
        x = []
        for i in range(n):
            act = np.array([ref_gelu(t) for t in ref_linear(raw, L + "intermediate.dense", h1[i])])
            x.append(
                ref_layer_norm(
                    h1[i] + ref_linear(raw, L + "output.dense", act),
                    raw[L + "output.LayerNorm.weight"],
                    raw[L + "output.LayerNorm.bias"],
                )
            )
    return emb, all_weights, np.array(x)


def _assert_matches_reference(raw, weights, weights64, ids, **knobs):
    allowed = core.causal_mask(len(ids)) if knobs.get("causal") else None
    r_emb, r_weights, r_out = ref_bert(
        raw, ids, knobs.get("temperature", 1.0), knobs.get("dk_scale"), None if allowed is None else allowed.tolist()
    )
    for w, dtype, tol in ((weights, np.float32, TOL), (weights64, np.float64, TOL64)):
        emb, traces = bert.forward(w, ids, settings=core.Settings(**knobs))
        where = f"({np.dtype(dtype).name})"
        np.testing.assert_allclose(emb.out, r_emb, rtol=0, atol=tol, err_msg=f"embedding LayerNorm {where}")
        for layer, (t, rw) in enumerate(zip(traces, r_weights)):
            assert t.weights.dtype == t.out.dtype == dtype, f"layer {layer} computed in {t.out.dtype}, not {where}"
            np.testing.assert_allclose(
                t.weights, rw, rtol=0, atol=tol, err_msg=f"attention weights, layer {layer} {where}"
            )
        np.testing.assert_allclose(traces[-1].out, r_out, rtol=0, atol=tol, err_msg=f"final hidden states {where}")


# --------------------------------------------------------------------------
# the forward pass equals the reference
# --------------------------------------------------------------------------


@pytest.mark.parametrize("sentence", [SENTENCES[0], SENTENCES[1], SENTENCES[-1]])
def test_forward_equals_independent_reference(raw, weights, weights64, sentence):
    """Attention weights of every layer and head, and the final hidden states, within 1e-5 of the loop reference
    computed in float32 (the page's precision), within 1e-12 in float64."""
    _assert_matches_reference(raw, weights, weights64, token_ids(sentence))


def test_temperature_scale_and_mask_reach_every_layer(raw, weights, weights64):
    """T, the sqrt(d_k) override and the mask act on the softmax of all six layers, as the reference says."""
    ids = token_ids("She gave him the book, and he read it twice.")
    _assert_matches_reference(raw, weights, weights64, ids, temperature=0.7, dk_scale=4.0, causal=True)


def test_embedding_parts_are_the_table_rows(raw, weights):
    """The embedding stage shows word-piece row + learned position row + token-type row, then their LayerNorm."""
    ids = token_ids(SENTENCES[2])
    emb, _ = bert.forward(weights, ids)
    n = len(ids)
    np.testing.assert_array_equal(emb.word, raw["embeddings.word_embeddings.weight"][ids])
    np.testing.assert_array_equal(emb.position, raw["embeddings.position_embeddings.weight"][:n])
    np.testing.assert_array_equal(emb.token_type, np.tile(raw["embeddings.token_type_embeddings.weight"][0], (n, 1)))
    np.testing.assert_allclose(emb.summed, emb.word + emb.position + emb.token_type, rtol=0, atol=1e-12)
    np.testing.assert_allclose(emb.ln_mean, emb.summed.mean(axis=1), rtol=0, atol=1e-12)
    assert emb.eps == EPS
    np.testing.assert_array_equal(emb.token_ids, ids)


def test_traces_describe_minilm(weights):
    """Six BlockTraces of 12 heads x 32 dims, 1536 GELU units, eps 1e-12, true scale sqrt(32)."""
    assert (weights.n_layers, weights.n_heads, weights.d_model, weights.d_head, weights.d_ff) == (
        N_LAYERS,
        N_HEADS,
        D_MODEL,
        D_HEAD,
        D_FF,
    )
    assert (weights.vocab_size, weights.max_positions) == (30522, 512)
    ids = token_ids(SENTENCES[6])
    emb, traces = bert.forward(weights, ids)
    assert len(traces) == N_LAYERS
    for t in traces:
        assert (t.n_heads, t.d_head, t.d_ff, t.activation, t.eps) == (N_HEADS, D_HEAD, D_FF, "gelu", EPS)
        assert t.scale == pytest.approx(math.sqrt(32))
        assert t.weights.shape == (N_HEADS, len(ids), len(ids))
    for a, b in zip(traces, traces[1:]):
        np.testing.assert_array_equal(b.x, a.out)  # each layer reads the previous layer's output
    np.testing.assert_array_equal(traces[0].x, emb.out)


def test_traces_are_read_only(weights):
    """Views cannot change the numbers another view draws."""
    emb, traces = bert.forward(weights, token_ids(SENTENCES[0]))
    for a in (emb.word, emb.out, traces[3].weights):
        with pytest.raises(ValueError):
            a[0, 0] = 1.0


# --------------------------------------------------------------------------
# a check that needs no reference: the model does its job
# --------------------------------------------------------------------------


def test_paraphrases_embed_closer_than_unrelated_sentences(weights):
    """Mean-pooled, normalised final states (the model's sentence embedding) put paraphrases together."""

    def embedding(sentence):
        return bert.sentence_embedding(bert.forward(weights, token_ids(sentence))[1][-1].out)

    guitar, guitar2 = embedding("A man is playing a guitar."), embedding("A person plays the guitar.")
    market = embedding("The stock market fell sharply today.")
    cat, cat2 = embedding("The cat sat on the mat."), embedding("A cat was sitting on a rug.")
    assert np.linalg.norm(guitar) == pytest.approx(1.0)
    assert guitar @ guitar2 > 0.7 > 0.3 > max(guitar @ market, guitar2 @ market, guitar @ cat)
    assert cat @ cat2 > 0.6 > 0.3 > max(cat @ market, cat2 @ guitar2)


# --------------------------------------------------------------------------
# loading: names, prefixes, failures that name the culprit
# --------------------------------------------------------------------------


def test_bert_prefixed_names_load_the_same_model(weights):
    """Checkpoints saved from BertForMaskedLM & co. prefix every name with 'bert.'."""
    prefixed = bert.load_weights({"bert." + k: v for k, v in fp32_tensors().items()})
    ids = token_ids(SENTENCES[9])
    for a, b in zip(bert.forward(weights, ids)[1], bert.forward(prefixed, ids)[1]):
        np.testing.assert_array_equal(a.weights, b.weights)


def test_missing_or_misshapen_tensor_is_named():
    tensors = dict(fp32_tensors())
    del tensors["encoder.layer.3.attention.self.key.bias"]
    with pytest.raises(ValueError, match=r"encoder\.layer\.3\.attention\.self\.key\.bias"):
        bert.load_weights(tensors)
    tensors = dict(fp32_tensors())
    tensors["encoder.layer.2.output.dense.weight"] = tensors["encoder.layer.2.output.dense.weight"].T
    with pytest.raises(ValueError, match=r"encoder\.layer\.2\.output\.dense\.weight must have shape \(384, 1536\)"):
        bert.load_weights(tensors)
    tensors = {k: v for k, v in fp32_tensors().items() if not k.startswith("encoder.layer.4.")}
    with pytest.raises(ValueError, match=r"layers 0\.\.L-1"):
        bert.load_weights(tensors)


def test_config_must_describe_what_is_computed():
    with pytest.raises(ValueError, match="hidden_act"):
        bert.load_weights(fp32_tensors(), {"hidden_act": "gelu_new"})
    with pytest.raises(ValueError, match="hidden_size=768"):
        bert.load_weights(fp32_tensors(), {"hidden_size": 768})


@pytest.mark.parametrize(
    "ids, message",
    [
        ([101, 30522, 102], r"token_ids must lie in \[0, 30522\)"),
        ([101, -1, 102], r"token_ids must lie in"),
        ([[101, 102]], r"token_ids must be a 1-D integer array"),
        ([101.0, 102.0], r"token_ids must be a 1-D integer array"),
        ([], r"token_ids must hold 1\.\.512 tokens"),
        ([101] * 513, r"token_ids must hold 1\.\.512 tokens"),
    ],
)
def test_bad_token_ids_are_refused(weights, ids, message):
    with pytest.raises(ValueError, match=message):
        bert.forward(weights, ids)
