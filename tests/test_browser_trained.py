"""The trained model in a real browser: downloaded only when chosen, then every layer and head live.

The expected numbers come from CPython running the same shipped bundle (conftest installs it);
the tokens are checked against the pinned vocab.txt through the reference-tested tokenizer.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import build
from attention_explorer.models import minilm
from conftest import open_page, wait_ready
from test_browser_skeleton import heatmap_weights, wait_matrix

pytestmark = pytest.mark.browser

PIECES = "The unbelievably enthusiastic tokenizer split everything."
MODEL_FILE = "**/models/minilm.*.safetensors.gz"
DOWNLOAD_TIMEOUT_MS = 120_000  # 24 MB from 127.0.0.1 plus unpacking: seconds; generous for a busy machine


def _trained_requests(urls, base_url):
    """The requests for the trained model's files: its bundle (dist/models/) or its Python modules."""
    return [u for u in urls if u.startswith(base_url + build.MODELS_DIR + "/")
            or any(u.endswith("/py/" + m) for m in build.TRAINED_ONLY_MODULES)]


def expected_weights(text, layer, head, temperature=1.0, dk_scale=math.sqrt(32)):
    toks = minilm.MODEL.tokenize(text)
    run = minilm.MODEL.forward(toks, temperature=temperature, dk_scale=dk_scale, causal=False, activation="gelu")
    return list(toks), run.layers[layer].weights[head]


def choose_trained(page):
    page.select_option("#model", "minilm")
    page.wait_for_selector('svg[data-view="attention-matrix"][data-model="minilm"]', timeout=DOWNLOAD_TIMEOUT_MS)


@pytest.fixture(scope="module")
def trained(browser, base_url):
    """One page: its requests up to ready recorded, then the trained model chosen."""
    context, page, problems = open_page(browser, base_url, viewport={"width": 1280, "height": 900})
    urls = []
    page.on("request", lambda r: urls.append(r.url))
    wait_ready(page)
    before = list(urls)
    choose_trained(page)
    yield page, problems, before, urls
    context.close()


def test_the_default_page_fetches_nothing_of_the_trained_model(trained, base_url):
    page, problems, before, after = trained
    assert not _trained_requests(before, base_url), "the default page must not download the trained model's files"
    fetched = _trained_requests(after, base_url)
    assert len(fetched) == 1 + len(build.TRAINED_ONLY_MODULES), f"choosing the model fetches its files once: {fetched}"
    problems.assert_none()


def test_choosing_the_trained_model_shows_its_layers_heads_and_scale(trained):
    page, problems, *_ = trained
    layers = page.eval_on_selector_all("#layer option", "os => os.map(o => o.value)")
    heads = page.eval_on_selector_all("#head option", "os => os.map(o => o.textContent)")
    assert layers == [str(i) for i in range(6)] and len(heads) == 12
    labels = [h.split(": ", 1)[1] for h in heads]
    assert all(label.rsplit(", ", 1)[0] in minilm.PATTERN_TEXT for label in labels), labels
    assert math.isclose(float(page.input_value("#dk-scale")), 5.5, abs_tol=0.26)  # √32 on the slider's 0.5 grid
    assert "5.7" in page.inner_text("#dk-true")
    assert "MiniLM" in page.inner_text("#model-about")
    svg = page.query_selector('svg[data-view="attention-matrix"]')
    toks = json.loads(svg.get_attribute("data-tokens"))
    assert toks[0] == "[CLS]" and toks[-1] == "[SEP]"
    assert json.loads(svg.get_attribute("data-special")) == [0, len(toks) - 1]
    problems.assert_none()


def test_word_pieces_layer_and_head_match_cpython(trained):
    page, problems, *_ = trained
    page.fill("#tokens", PIECES)
    expected_tokens, _ = expected_weights(PIECES, 0, 0)
    page.wait_for_function(
        "t => document.querySelector('svg[data-view=\"attention-matrix\"]').dataset.tokens === t",
        arg=json.dumps(expected_tokens, ensure_ascii=False))
    assert any(t.startswith("##") for t in expected_tokens)
    page.select_option("#layer", "3")
    wait_matrix(page, layer="3")
    page.select_option("#head", "5")
    wait_matrix(page, layer="3", head="5")
    svg = page.query_selector('svg[data-view="attention-matrix"]')
    _, want = expected_weights(PIECES, 3, 5, dk_scale=float(svg.get_attribute("data-dk-scale")))
    np.testing.assert_allclose(heatmap_weights(page), want, atol=1e-6)
    assert page.url.split("#", 1)[1].count("m=minilm") == 1 and "l=3" in page.url
    problems.assert_none()


def test_a_failed_download_leaves_the_page_working_and_offers_a_retry(browser, base_url):
    context, page, problems = open_page(browser, base_url, viewport={"width": 1280, "height": 900})
    page.route(MODEL_FILE, lambda route: route.abort("connectionreset"))
    wait_ready(page)
    page.select_option("#model", "minilm")
    page.wait_for_selector("#model-retry:not([hidden])", timeout=DOWNLOAD_TIMEOUT_MS)
    assert "Could not download the trained model" in page.inner_text("#model-download-text")
    assert page.input_value("#model") == "designed"
    # still the designed model, and still live
    page.select_option("#head", "2")
    wait_matrix(page, model="designed", head="2")
    page.unroute(MODEL_FILE)
    page.click("#model-retry")
    page.wait_for_selector('svg[data-view="attention-matrix"][data-model="minilm"]', timeout=DOWNLOAD_TIMEOUT_MS)
    assert page.is_hidden("#model-download")
    # the failed request is a console error of the browser's own; nothing else may be
    problems.items = [p for p in problems.items if "ERR_CONNECTION_RESET" not in p and "Failed to load" not in p]
    problems.assert_none()
    context.close()


def test_a_link_to_the_trained_model_downloads_it_and_opens_the_layer(browser, base_url):
    context, page, problems = open_page(browser, base_url + "#m=minilm&l=2&h=7",
                                        viewport={"width": 1280, "height": 900})
    wait_ready(page)
    page.wait_for_selector('svg[data-view="attention-matrix"][data-model="minilm"][data-layer="2"][data-head="7"]',
                           timeout=DOWNLOAD_TIMEOUT_MS)
    assert page.input_value("#model") == "minilm" and page.input_value("#layer") == "2"
    problems.assert_none()
    context.close()
