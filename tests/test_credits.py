"""A licence and credits (issue 37, item 1): the project's MIT LICENSE, and dist/credits.html naming every
redistributed component with its version, source and licence, linked from every page's footer."""

from __future__ import annotations

import json
from pathlib import Path

import build
from attention_explorer import models
from markup_tree import parse

ROOT = Path(__file__).resolve().parents[1]


def test_the_project_is_mit_licensed():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Permission is hereby granted, free of charge" in text


def test_the_credits_name_every_shipped_component_with_its_version_and_licence(bundle):
    tree = parse((bundle / build.CREDITS).read_text(encoding="utf-8"))
    rows = {
        r.find_all("th")[0].all_text(): [td.all_text() for td in r.find_all("td")]
        for r in tree.find_all("tr")
        if r.find_all("td")
    }
    pins = {g["name"]: g for g in json.loads((ROOT / "runtime-pins.json").read_text(encoding="utf-8"))["groups"]}
    shipped = {"pyodide": "Pyodide", "numpy": "NumPy", "pyscript": "PyScript"}
    assert {g for g, p in pins.items() if p.get("dest")} == set(shipped), "a new shipped group needs its credit"
    for group, name in shipped.items():
        assert rows[name][0] == pins[group]["version"], name
    for model in models.TRAINED_MODELS:
        assert pins[model.spec.pins]["version"] in rows[model.spec.name][0]
    assert {"CPython (in Pyodide)", "CodeMirror 6", "Attention Explorer"} <= set(rows)
    assert all(row[-1] for row in rows.values()), "every component names its licence"
    for a in tree.find_all("a"):
        href = a.attrs["href"]
        if not href.startswith(("https://", "./")):
            assert (bundle / href).is_file(), f"the credits link {href}, which the bundle lacks"


def test_every_page_links_the_credits(bundle):
    for page in ("index.html", "embed.html"):
        links = [a.attrs.get("href") for a in parse((bundle / page).read_text(encoding="utf-8")).find_all("a")]
        assert build.CREDITS in links, page


def test_the_bundle_carries_the_licence_texts_of_what_it_ships(bundle):
    """The texts MIT, BSD, MPL-2.0, PSF and Apache-2.0 ask to go with the code, in dist/licenses/ and linked
    from their row, each from a pinned package."""
    tree = parse((bundle / build.CREDITS).read_text(encoding="utf-8"))
    links = {r.find_all("th")[0].all_text(): [a.attrs["href"] for a in r.find_all("a")] for r in tree.find_all("tr")}
    inside = {name: [h for h in hrefs if h.startswith(build.LICENSES_DIR + "/")] for name, hrefs in links.items()}
    texts = {name: (bundle / hrefs[0]).read_text(encoding="utf-8") for name, hrefs in inside.items() if hrefs}
    assert texts["PyScript"].lstrip().startswith("Apache License") and "Version 2.0" in texts["PyScript"]
    assert texts["NumPy"].startswith("Copyright (c) 2005-") and "NumPy Developers" in texts["NumPy"]
    codemirror = [name for name in texts if "codemirror" in name.lower()]
    assert len(codemirror) == 2, codemirror
    for name in codemirror:
        assert texts[name].startswith("MIT License") and "Marijn Haverbeke" in texts[name], name
    assert texts["Pyodide"].startswith("Mozilla Public License Version 2.0"), "Pyodide is MPL-2.0"
    assert "Exhibit B" in texts["Pyodide"], "the whole MPL-2.0 text, to its last section"
    cpython = texts["CPython (in Pyodide)"]
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in cpython and "A. HISTORY OF THE SOFTWARE" in cpython
    lock = json.loads((bundle / "vendor" / "pyodide" / "pyodide-lock.json").read_text(encoding="utf-8"))
    assert rows_version(tree, "CPython (in Pyodide)") == lock["info"]["python"], "the Python Pyodide is built from"


def rows_version(tree, component: str) -> str:
    for r in tree.find_all("tr"):
        if r.find_all("td") and r.find_all("th")[0].all_text() == component:
            return r.find_all("td")[0].all_text()
    raise AssertionError(f"no credits row for {component}")


def test_a_trained_model_is_credited_with_the_licence_its_card_declares():
    assert build.card_licence("---\nlanguage: en\nlicense: apache-2.0\n---\n# card", "m") == "Apache-2.0"
    assert build.card_licence("---\nlicense: cc-by-4.0\n---\n", "m") == "cc-by-4.0"
    for card in ("# no front matter\nlicense: mit", "---\nlanguage: en\n---\nlicense: mit"):
        try:
            build.card_licence(card, "tiny")
        except build.BuildError as exc:
            assert "tiny" in str(exc) and "license" in str(exc)
        else:
            raise AssertionError(f"a card without a licence in its front matter was accepted: {card!r}")
