"""The trained model behind the interface: description, download-on-demand state, bundle, state and links.

The bundle is the one build.py ships (conftest installs it, as the page's worker does); expectations
are derived here from the pinned files (vocab.txt, config.json) and plain NumPy, not from the code
under test.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math

import numpy as np
import pytest

import build
from attention_explorer import core, head_patterns, models, page, permalink, state as st, worker
from attention_explorer.models import minilm, trained
from minilm_files import cached_file, token_ids

TROPHY = "The trophy didn't fit in the suitcase because it was too big."


@pytest.fixture
def not_downloaded(monkeypatch):
    """The registry as a fresh page has it: the trained model listed, its files not yet loaded."""
    fresh = trained.TrainedModel(minilm.SPEC)
    monkeypatch.setitem(models.MODELS, minilm.ID, fresh)
    st._tokenize.cache_clear()
    yield fresh
    st._tokenize.cache_clear()


def test_description_matches_the_pinned_config():
    config = json.loads(cached_file("config.json").read_text(encoding="utf-8"))
    d = minilm.MODEL.description
    assert "MiniLM" in d.name and d.id == "minilm"
    assert d.n_layers == config["num_hidden_layers"] and d.d_model == config["hidden_size"]
    assert all(len(layer) == config["num_attention_heads"] for layer in d.heads)
    assert d.d_k == config["hidden_size"] // config["num_attention_heads"]
    assert d.d_ff == config["intermediate_size"] and d.activations == ("gelu",)
    assert math.isclose(d.true_dk_scale, math.sqrt(32))
    assert d.max_tokens == 64
    assert list(models.MODELS)[0] == "designed", "the designed model stays first and default"


def test_before_the_download_the_model_is_listed_but_refuses_work(not_downloaded):
    assert not not_downloaded.available
    assert "minilm" in st.choices("models", st.State())
    with pytest.raises(trained.NotLoaded, match="download"):
        not_downloaded.tokenize("a cat")
    with pytest.raises(st.InputError) as err:
        st.apply_event(st.State(), {"type": "set_model", "value": "minilm"})
    assert err.value.field == "model" and "not loaded yet" in err.value.message


def test_a_link_to_the_trained_model_asks_the_bridge_to_download_it_first(not_downloaded):
    reply = worker.boot("#m=minilm&l=2&h=5", "page")
    assert reply["load_model"] == "minilm"
    assert reply["values"]["model"] == "designed" and reply["message"] == ""
    assert permalink.requested_model("s=a+cat&m=minilm") == "minilm"
    assert permalink.requested_model("s=a+cat") == ""


def test_tokens_are_word_pieces_with_cls_and_sep():
    vocab = cached_file("vocab.txt").read_text(encoding="utf-8").split("\n")
    toks = minilm.MODEL.tokenize("The unbelievably enthusiastic tokenizer split everything.")
    assert toks[0] == "[CLS]" and toks[-1] == "[SEP]" and any(t.startswith("##") for t in toks)
    assert [vocab[i] for i in token_ids("The unbelievably enthusiastic tokenizer split everything.")] == list(toks)
    run = minilm.MODEL.forward(
        toks, core.Settings(temperature=1.0, dk_scale=math.sqrt(32), causal=False, activation="gelu")
    )
    assert run.special == (0, len(toks) - 1)
    with pytest.raises(st.tokens.TokenError, match="limit is 64"):
        minilm.MODEL.tokenize(" ".join(["word"] * 70))


def _layer_norm(x, gamma, beta, eps):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps) * gamma + beta


def test_the_run_is_the_bundles_weights_computed_independently():
    """Embedding and layer-0 attention recomputed from the bundle's own tensors with plain NumPy."""
    from attention_explorer.models import quantize, safetensors

    tensors, meta = safetensors.load_with_metadata(gzip.decompress(build.minilm_bundle().read_bytes()))
    w = quantize.dequantize(tensors)
    ids = token_ids(TROPHY)
    toks = minilm.MODEL.tokenize(TROPHY)
    run = minilm.MODEL.forward(toks, core.Settings(temperature=0.8, dk_scale=4.0, causal=False, activation="gelu"))
    n = len(ids)
    summed = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    ).astype(np.float64)
    x = _layer_norm(summed, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], 1e-12)
    np.testing.assert_allclose(run.embedding.summed, summed, atol=1e-5)
    np.testing.assert_allclose(run.embedding.x, x, atol=1e-4)
    L = "encoder.layer.0.attention.self."
    q = x @ w[L + "query.weight"].T + w[L + "query.bias"]
    k = x @ w[L + "key.weight"].T + w[L + "key.bias"]
    for h in (0, 7, 11):
        cols = slice(32 * h, 32 * (h + 1))
        logits = q[:, cols] @ k[:, cols].T / (4.0 * 0.8)
        a = np.exp(logits - logits.max(axis=1, keepdims=True))
        a /= a.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(run.layers[0].weights[h], a, atol=1e-4)


def test_head_names_are_the_measured_patterns_of_the_shipped_weights():
    from attention_explorer.models import safetensors

    _, meta = safetensors.load_with_metadata(gzip.decompress(build.minilm_bundle().read_bytes()))
    labels = json.loads(meta["heads"])
    d = minilm.MODEL.description
    for layer, (infos, measured) in enumerate(zip(d.heads, labels)):
        for info, m in zip(infos, measured):
            assert info.name == f"{trained.PLAIN_NAMES[m['label']]}, {round(m['score'] * 100)} %"
            assert m["label"] in head_patterns.PATTERNS
    # the labels are the strongest pattern of each head, re-measured here on the installed model
    again = head_patterns.measure_heads(minilm.MODEL, head_patterns.CORPUS[:6], math.sqrt(32))
    assert len(again) == 6 and all(len(layer) == 12 for layer in again)


def test_presets_open_their_query_word():
    for p in minilm.MODEL.description.presets:
        assert minilm.MODEL.tokenize(p.text)[p.query] == p.query_word


def test_switching_model_keeps_the_sentence_and_sets_the_true_scale():
    s = st.apply_event(st.State(), {"type": "set_head", "value": "3"})
    s = st.apply_event(s, {"type": "set_model", "value": "minilm"})
    assert s.model == "minilm" and (s.layer, s.head) == minilm.MODEL.description.showcase
    assert math.isclose(s.dk_scale, math.sqrt(32))
    assert s.tokens[s.query] == st.State().tokens[st.State().query]  # the query stays on its word ("it")
    s = st.apply_event(s, {"type": "set_layer", "value": "4"})
    assert st.compute(s).trace is st.compute(s).run.layers[4]
    link = permalink.encode(s)
    assert "dk=" not in link, "the model's own √d_k is its default: a link need not carry it"
    assert permalink.decode(link)[0] == s
    back = st.apply_event(s, {"type": "set_model", "value": "designed"})
    assert back.layer == 0 and back.dk_scale == 8.0


def test_the_form_follows_the_model():
    s = st.apply_event(st.State(), {"type": "set_model", "value": "minilm"})
    form = page.model_form(s)
    assert [v for v, _ in form["options"]["layer"]] == [str(i) for i in range(6)]
    assert len(form["options"]["head"]) == 12
    assert form["options"]["activation"] == [["gelu", "GELU"]]
    assert [v for v, _ in form["options"]["model"]] == list(models.MODELS)
    assert "5.7" in form["text"]["dk-true"] and form["text"]["max-tokens"] == "64"
    lo, hi = st.DK_SCALE_RANGE
    assert math.isclose(form["marker"]["dk-scale"], 100 * (math.sqrt(32) - lo) / (hi - lo), abs_tol=0.01)
    assert form["text"]["model-about"] == minilm.MODEL.description.about
    designed_form = page.model_form(st.State())
    assert len(designed_form["options"]["layer"]) == 1 and len(designed_form["options"]["head"]) == 4


def test_the_startup_files_leave_out_the_trained_models_modules():
    startup = build.startup_sources()
    assert not set(build.TRAINED_ONLY_MODULES) & set(startup)
    assert set(build.TRAINED_ONLY_MODULES) <= set(build.python_sources())
    # every module the default page imports is among the start-up files
    assert "attention_explorer/models/minilm.py" in startup and "attention_explorer/worker.py" in startup


def test_the_bundle_fits_the_budget():
    assert build.minilm_bundle().stat().st_size <= 24_000_000


def test_the_trophy_preset_opens_a_head_whose_it_looks_at_the_nouns_it_could_mean():
    """What its note claims: 'it' mostly on 'trophy', then 'suitcase', and the same with 'small'."""
    p = next(p for p in minilm.MODEL.description.presets if p.id == "trophy")
    for text in (p.text, p.text.replace("big", "small")):
        toks = minilm.MODEL.tokenize(text)
        run = minilm.MODEL.forward(
            toks, core.Settings(temperature=1.0, dk_scale=math.sqrt(32), causal=False, activation="gelu")
        )
        row = run.layers[p.layer].weights[p.head][toks.index("it")]
        words = sorted((float(w), t) for t, w in zip(toks, row) if t not in ("[CLS]", "[SEP]"))
        assert [t for _, t in words[-2:]] == ["suitcase", "trophy"], words[-3:]


def test_the_page_is_prerendered_as_a_reader_first_gets_it(tmp_path):
    """Even when the building process has the trained model installed (as here), the pre-rendered
    comparison card offers the download instead of showing results the worker could not redraw."""
    assert minilm.MODEL.available
    markup = json.loads(build.render_prerendered())["compare"]  # the card is below the first screen
    assert 'data-verdict="not-loaded"' in markup and 'data-action="load-model"' in markup
    assert minilm.MODEL.available and models.get("minilm") is minilm.MODEL


# ------------------------------------------------------------------ what a reader sees first, and the presets


def _labels():
    from attention_explorer.models import safetensors

    _, meta = safetensors.load_with_metadata(gzip.decompress(build.minilm_bundle().read_bytes()))
    return json.loads(meta["heads"])


def _argmax_rows(s):
    """Each token's strongest key in the state's head, at T = 1 and the true √d_k."""
    w = st.compute(s).trace.weights[s.head]
    return [int(row.argmax()) for row in w], w


def test_the_trained_model_opens_on_its_clearest_measured_head():
    """Not on layer 1 head 1 ('broad', a haze): on the head whose measured pattern (one a reader sees at a
    glance: the previous, the next word, itself, punctuation) has the highest score, from the bundle."""
    labels = _labels()
    clear = [
        (m["score"], l, h)
        for l, layer in enumerate(labels)
        for h, m in enumerate(layer)
        if m["label"] in ("previous token", "next token", "self", "punctuation")
    ]
    _, layer, head = max(clear)
    s = st.apply_event(st.State(), {"type": "set_model", "value": "minilm"})
    assert (s.layer, s.head) == (layer, head) == minilm.MODEL.description.showcase
    # and it shows its pattern on the designed model's sentence, the one the reader had
    if labels[layer][head]["label"] == "previous token":
        best, _ = _argmax_rows(s)
        words = [i for i in range(2, len(s.tokens) - 1)]
        assert sum(best[i] == i - 1 for i in words) >= 0.8 * len(words)
    # a link to the model at layer 1, head 1 keeps them (a link says l= and h= for another model)
    at_first = dataclasses.replace(s, layer=0, head=0)
    assert permalink.decode(permalink.encode(at_first))[0] == at_first


def test_head_names_are_plain_words_and_a_percentage():
    for layer in minilm.MODEL.description.heads:
        for info in layer:
            words, _, share = info.name.rpartition(", ")
            assert words in trained.PLAIN_NAMES.values() and share.endswith(" %") and "0." not in info.name


def _preset_state(preset_id):
    return st.apply_event(
        st.apply_event(st.State(), {"type": "set_model", "value": "minilm"}), {"type": "preset", "value": preset_id}
    )


def test_six_presets_or_more_each_with_what_to_look_for():
    presets = minilm.MODEL.description.presets
    assert len(presets) >= 6 and len({p.id for p in presets}) == len(presets)
    assert all(len(p.look_for) > 40 for p in presets)


def test_the_previous_and_next_word_presets_show_their_diagonals():
    s = _preset_state("previous-word")
    best, _ = _argmax_rows(s)
    words = range(2, len(s.tokens) - 1)  # after "the": each word's previous one is a word
    assert all(best[i] == i - 1 for i in words)
    s = _preset_state("next-word")
    best, _ = _argmax_rows(s)
    words = range(1, len(s.tokens) - 2)
    assert sum(best[i] == i + 1 for i in words) > len(words) / 2  # "most words"
    assert best[s.query] == s.query + 1


def test_the_resting_and_broad_presets():
    s = _preset_state("rests")
    best, w = _argmax_rows(s)
    assert all(b == 0 for b in best) and (w[1:-1, 0] > 0.5).all()  # every token on [CLS], most of its attention
    s = _preset_state("broad")
    _, w = _argmax_rows(s)
    assert w[s.query].max() < 0.5 and (w[s.query] > 0.02).sum() >= len(s.tokens) // 2  # no cell stands out


def test_the_pieces_preset_shows_lowercase_no_accents_pieces_and_unknown():
    s = _preset_state("pieces")
    toks = s.tokens
    assert "cafe" in toks and "zoe" in toks and "[UNK]" in toks and any(t.startswith("##") for t in toks)
    assert all(t == t.lower() and t.isascii() for t in toks if t not in ("[CLS]", "[SEP]", "[UNK]"))
    best, _ = _argmax_rows(s)
    assert all(best[i] == i - 1 for i, t in enumerate(toks) if t.startswith("##"))  # each piece glued to the last
