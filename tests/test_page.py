"""The page template: every panel pre-rendered, the worker config embedded safely, links relative."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest

import build
from attention_explorer import page


def panel_contents(html: str) -> dict[str, str]:
    """What each <div data-panel> of a page holds, by panel id."""
    return {pid: re.search(rf'data-panel="{pid}"[^>]*>(.*?)</div>', html, re.S).group(1) for pid in page.PANELS}


def test_template_fills_every_panel_and_marker():
    """Every panel has its pre-rendered markup: in the page (the first screen) or in prerendered.json."""
    html = build.render_page()
    deferred = json.loads(build.render_prerendered())
    for pid, inside in panel_contents(html).items():
        markup = inside if pid in page.FIRST_SCREEN else deferred.get(pid, "")
        assert markup.strip(), f"panel {pid} has no pre-rendered markup"
    assert "<!--" not in re.sub(r"<!--\s*-->", "", html.split("<body>")[1]), "a template marker was left unfilled"


def test_only_the_first_screen_is_in_the_page():
    """Panels below the first screen are left out of index.html (a light first paint: a tenth of the
    HTML to parse), each with an empty slot the bridge fills from prerendered.json when it comes near."""
    from attention_explorer import models, state

    html = build.render_page()
    deferred = json.loads(build.render_prerendered())
    with models.as_on_first_load():
        drawn = page.render_panels(state.State())
    for pid, inside in panel_contents(html).items():
        if pid in page.FIRST_SCREEN:
            assert inside.strip() and drawn[pid] in html and pid not in deferred, pid
        else:
            assert inside == "<template data-prerendered></template>", pid
            assert deferred[pid] == drawn[pid], f"{pid}: prerendered.json does not hold the panel's markup"
    assert len(html.encode()) < 200_000, "index.html should hold the first screen only"


def test_pyscript_loads_no_editor_terminal_or_game_plugin():
    """The page has no editor, terminal or game: PyScript's config turns those plugins off."""
    html = build.render_page()
    for tag in ("py-config", "mpy-config"):
        raw = re.search(rf'<{tag} type="json">(.*?)</{tag}>', html, re.S).group(1)
        plugins = json.loads(raw)["plugins"]
        assert {"!py-editor", "!py-terminal", "!py-game"} <= set(plugins)


def test_worker_config_names_the_start_up_bundle_which_holds_every_start_up_module():
    html = build.render_page()
    raw = re.search(r'<script type="application/json" id="worker-config">(.*?)</script>', html, re.S).group(1)
    config = json.loads(raw)
    assert config.pop("startup_bundle") == build.STARTUP_BUNDLE
    assert config.pop("runtime_files") == {}, "render_page() without a bundle has no runtime sizes to give"
    assert config.pop("numpy_wheel") == {"src": build.RUNTIME_NUMPY, "integrity": None}, (
        "render_page() without a bundle has no wheel to check"
    )
    with zipfile.ZipFile(io.BytesIO(build.startup_bundle(build.startup_sources()))) as z:
        bundle = {name: z.read(name) for name in z.namelist()}
    modules = list(bundle)
    assert "attention_explorer/core.py" in modules and "attention_explorer/views/markup.py" in modules
    assert modules == sorted(build.startup_sources()), "without bytecode given, the sources alone"
    assert not set(build.TRAINED_ONLY_MODULES) & set(modules), "the trained model's modules come with its download"
    for rel, source in bundle.items():  # the files themselves, byte for byte
        assert source == (build.PY_SRC / rel).read_bytes(), rel
    assert config == {}, (
        "the rest is PyScript's: no files (the worker fetches the modules), no packages "
        "(NumPy comes from the lock file, not through micropip)"
    )


def test_the_page_carries_the_sizes_of_the_runtime_files_pyodide_fetches_to_start(tmp_path):
    """The bridge counts the runtime's bytes as they arrive against these sizes (its progress line)."""
    pins = json.loads((build.ROOT / "runtime-pins.json").read_text())
    pyodide = next(g for g in pins["groups"] if g["name"] == "pyodide")
    shipped = {f"{pyodide['dest']}/{name}" for name in pyodide["files"]}
    assert set(build.RUNTIME_COUNTED_FILES) <= shipped, "every file counted is one the bundle ships"
    assert {"vendor/pyodide/pyodide.asm.wasm", "vendor/pyodide/python_stdlib.zip"} <= set(build.RUNTIME_COUNTED_FILES)
    for k, rel in enumerate(build.RUNTIME_COUNTED_FILES):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x" * (100 + k))
    sizes = build.runtime_counted_bytes(tmp_path)
    assert sizes == {rel: 100 + k for k, rel in enumerate(build.RUNTIME_COUNTED_FILES)}
    html = build.render_page(runtime_bytes=sizes)
    raw = re.search(r'<script type="application/json" id="worker-config">(.*?)</script>', html, re.S).group(1)
    assert json.loads(raw)["runtime_files"] == sizes
    (tmp_path / build.RUNTIME_COUNTED_FILES[1]).unlink()
    with pytest.raises(build.BuildError, match="pyodide.asm.wasm"):
        build.runtime_counted_bytes(tmp_path)


def test_the_page_gives_the_worker_numpys_wheel_with_its_sha256_as_the_integrity(tmp_path):
    """The worker downloads NumPy's wheel itself (numpy_install); the browser checks it against this."""
    (tmp_path / build.RUNTIME_NUMPY).parent.mkdir(parents=True)
    (tmp_path / build.RUNTIME_NUMPY).write_bytes(b"abc")
    # sha256("abc") in base64 as Subresource Integrity writes it (openssl dgst -sha256 -binary | base64)
    assert build.numpy_wheel_integrity(tmp_path) == "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
    html = build.render_page(numpy_integrity=build.numpy_wheel_integrity(tmp_path))
    raw = re.search(r'<script type="application/json" id="worker-config">(.*?)</script>', html, re.S).group(1)
    assert json.loads(raw)["numpy_wheel"] == {
        "src": build.RUNTIME_NUMPY,
        "integrity": "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=",
    }


def test_all_links_are_relative():
    html = build.render_page()
    for url in re.findall(r'(?:href|src)="([^"]*)"', html):
        assert not url.startswith(("/", "http:", "https:")), f"non-relative URL {url}"


def test_every_panel_declares_each_state_field_its_markup_depends_on():
    """A panel is redrawn only when a declared field changes; one that draws an undeclared
    field would go stale. Change each field alone and compare every panel's markup.
    The model and the layer are changed on the toy model (the designed one has one layer)."""
    import dataclasses

    import toy_model
    from attention_explorer import state as st
    from attention_explorer.models import designed as model

    with toy_model.registered():
        designed, toy = st.State(), dataclasses.replace(st.State(), model="toy")
        other = {
            "text": (designed, model.PRESETS[3].text),
            "query": (designed, 1),
            "head": (designed, 2),
            "temperature": (designed, 2.5),
            "dk_scale": (designed, 3.0),
            "causal": (designed, True),
            "activation": (designed, "relu"),
            "stage": (designed, 4),
            "routing_all_heads": (designed, True),
            "demo_dk": (designed, 200),
            "panel": (designed, "ffn"),
            "model": (designed, "toy"),
            "layer": (toy, 1),
            "key": (designed, 2),
            "compare_head": (designed, 2),
            "pinned": (designed, (1, 3)),
            "ablated": (designed, (0,)),
            "pair_text": (designed, "The dog chased the cat because it was small"),
            "code": (designed, "def attention(q, k, v, mask, temperature, scale):\n    return v, mask"),
            "custom": (designed, True),
            "tour": (designed, 2),
            "tour_answer": (dataclasses.replace(designed, tour=1), 1),
        }
        assert set(other) == set(st.State.__dataclass_fields__), "give every state field another value here"
        for name, (base, value) in other.items():
            before = page.render_panels(base)
            changed = dataclasses.replace(base, **{name: value})
            after = page.render_panels(changed)
            for pid, markup in after.items():
                if markup != before[pid]:
                    assert name in page.PANELS[pid].depends, f"panel {pid} draws {name} but does not declare it"


def test_a_change_redraws_every_panel_it_changes_and_at_the_first_layer_no_more():
    """page.panels_to_redraw is what the worker redraws: a panel it leaves out must draw the same markup.
    At the first layer it leaves out a panel when the changed model input acts later in the layer than
    the panel reads (fields.Field.acts, page.Panel.reads): T does not redraw the projections (Q, K, V come
    before it), the FFN's activation not the heatmap. Checked on the designed model, the two-layer toy
    model at both layers and the trained model at its first and a later layer."""
    import dataclasses

    import toy_model
    from attention_explorer import state as st
    from attention_explorer.fields import FIELDS

    inputs = {
        "temperature": 2.5,
        "dk_scale": 3.0,
        "causal": True,
        "ablated": (0,),
        "activation": "relu",
        "code": "def attention(q, k, v, mask, temperature, scale):\n    return v, mask",
        "custom": True,
    }
    assert set(inputs) == {f.name for f in FIELDS if f.model_input} - {"model", "text"}
    trained = dataclasses.replace(st.State(), model="minilm", text="The cat sat on the mat.", query=2)
    with toy_model.registered():
        toy = dataclasses.replace(st.State(), model="toy")
        bases = [st.State(), toy, dataclasses.replace(toy, layer=1), trained, dataclasses.replace(trained, layer=2)]
        left_out = {}
        for base in bases:
            before = page.render_panels(base)
            for name, value in inputs.items():
                if name == "activation" and value not in st.description(base.model).activations:
                    continue
                new = dataclasses.replace(base, **{name: value})
                after = page.render_panels(new)
                changed = {pid for pid in after if after[pid] != before[pid]}
                redrawn = page.panels_to_redraw(base, new)
                assert changed <= redrawn, f"{base.model} layer {base.layer}, {name}: {changed - redrawn} go stale"
                # (a panel at rest, the tour's start button without a tour, draws the same for any of them)
                left_out[base.model, base.layer, name] = {
                    pid for pid, p in page.PANELS.items() if name in p.depends and not (p.resting and p.resting(base))
                } - redrawn
    assert "projections" in left_out["designed", 0, "temperature"]
    assert {"attention-matrix", "affinity", "multihead"} <= left_out["designed", 0, "activation"]
    assert not left_out["toy", 1, "temperature"] and not left_out["minilm", 2, "ablated"], "later layers: all redrawn"


def test_first_paint_holds_at_most_1500_elements():
    """The pre-rendered page, as parsed before any script runs: template contents are not in the DOM."""
    from html.parser import HTMLParser

    class Count(HTMLParser):
        VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

        def __init__(self):
            super().__init__()
            self.n, self.in_template = 0, 0

        def handle_starttag(self, tag, attrs):
            if self.in_template == 0:
                self.n += 1
            if tag == "template":
                self.in_template += 1

        def handle_endtag(self, tag):
            if tag == "template":
                self.in_template -= 1

    counter = Count()
    counter.feed(build.render_page())
    assert counter.n <= 1500, f"{counter.n} elements at first paint"


def _views_named_lazily() -> set[str]:
    """The modules page.py names as views.<module> (imported when first named): read from its source."""
    import ast

    with open(page.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {
        f"views.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "views"
        if not node.attr.startswith("__")  # the package's own __name__ and __path__ (warm_up)
    }


def test_start_up_leaves_the_later_views_unloaded_and_warm_up_loads_every_view():
    """The worker's start-up (import, boot for a plain link) executes none of the views page.py names lazily,
    nor page.LATER_ELSEWHERE: each one read at import would be compiled on the way to `ready` in the
    browser. warm_up, the first idle moment, imports every view and those."""
    from fresh_python import printed_lines

    later = sorted(_views_named_lazily() | set(page.LATER_ELSEWHERE))
    assert len(later) >= 10, later
    script = (
        "import pkgutil, sys\n"
        "from attention_explorer import page, views, worker\n"
        "worker.boot('', 'page')\n"
        f"later = {later!r}\n"
        "print(','.join(m for m in later if f'attention_explorer.{m}' in sys.modules))\n"
        "page.warm_up()\n"
        "every = [f'views.{m.name}' for m in pkgutil.iter_modules(views.__path__)] + later\n"
        "print(','.join(m for m in every if f'attention_explorer.{m}' not in sys.modules))\n"
    )
    loaded, missed = printed_lines(script)
    assert loaded == "", f"loaded at start-up: {loaded}"
    assert missed == "", f"not loaded by warm_up: {missed}"


def test_drawing_a_panel_imports_its_view():
    """views.<module> imports the view when first named (views.__getattr__, PEP 562)."""
    from fresh_python import printed_lines

    script = (
        "import sys\n"
        "from attention_explorer import page, state as st\n"
        "s = st.State()\n"
        "before = 'attention_explorer.views.ffn' in sys.modules\n"
        "page.PANELS['ffn'].render(s, st.compute(s))\n"
        "print(before, 'attention_explorer.views.ffn' in sys.modules)\n"
    )
    assert printed_lines(script) == ["False True"]
    with pytest.raises(AttributeError, match="no view 'nothing'"):
        page.views.nothing  # noqa: B018


def test_patch_fields_written_out_in_page_are_the_views_own():
    from attention_explorer.views import affinity, aggregates, head_grid

    for pid, view in (("affinity", affinity), ("head-grid", head_grid), ("aggregates", aggregates)):
        assert page.PANELS[pid].patch_fields == view.NUMBERS_ONLY, pid
