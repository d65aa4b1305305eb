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
from conftest import PageProblems, open_page, wait_ready
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
    # first through the comparison card: it downloads the model without switching to it
    page.evaluate("document.getElementById('compare-card').scrollIntoView()")
    page.locator('[data-panel="compare"] [data-action="load-model"]').click()
    page.wait_for_selector('[data-view="compare"]:not([data-verdict="not-loaded"])', timeout=DOWNLOAD_TIMEOUT_MS)
    compared = {"verdict": page.get_attribute('[data-view="compare"]', "data-verdict"),
                "model": page.input_value("#model"),
                "maps": page.locator('svg[data-view="compare-designed"], svg[data-view="compare-trained"]').count()}
    page.evaluate("window.scrollTo(0, 0)")
    choose_trained(page)
    yield page, problems, before, urls, compared
    context.close()


def test_the_comparison_card_downloads_the_model_and_compares_without_switching(trained):
    page, problems, _, _, compared = trained
    assert compared["model"] == "designed", "the page stays on the designed model"
    # the default sentence's query "it": the designed coreference head has a job there to compare
    assert compared["verdict"] in ("match", "no-match") and compared["maps"] == 2
    problems.assert_none()


def test_the_default_page_fetches_nothing_of_the_trained_model(trained, base_url):
    page, problems, before, after, _ = trained
    assert not _trained_requests(before, base_url), "the default page must not download the trained model's files"
    fetched = _trained_requests(after, base_url)
    assert len(fetched) == 1 + len(build.TRAINED_ONLY_MODULES), f"the model's files are fetched once: {fetched}"
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


def test_a_link_to_the_trained_model_later_opens_it_from_storage_even_offline(trained):
    """A link naming the model loads it before its layer and head (m= first); on a later visit the
    bundle comes from Cache Storage (its content-hashed name never changes), so this new page of the
    same browser profile opens it with the model file unreachable."""
    page, problems, *_ = trained
    again = page.context.new_page()
    again_problems = PageProblems(again, problems.allowed)
    fetched = []
    again.route(MODEL_FILE, lambda route: (fetched.append(route.request.url), route.abort("internetdisconnected")))
    again.goto(page.url.split("#", 1)[0] + "#m=minilm&l=2&h=7")
    wait_ready(again)
    again.wait_for_selector('svg[data-view="attention-matrix"][data-model="minilm"][data-layer="2"][data-head="7"]',
                            timeout=DOWNLOAD_TIMEOUT_MS)
    assert again.input_value("#model") == "minilm" and again.input_value("#layer") == "2"
    assert not fetched, "the stored bundle is used: no request for the model file"
    again.close()
    again_problems.assert_none()
    problems.assert_none()
