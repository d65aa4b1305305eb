"""The page template: every panel pre-rendered, the worker config embedded safely, links relative."""
from __future__ import annotations

import json
import re

import build
from attention_explorer import page


def test_template_fills_every_panel_and_marker():
    html = build.render_page()
    for pid in page.PANELS:
        m = re.search(rf'data-panel="{pid}"[^>]*>(.*?)</div>', html, re.S)
        assert m and m.group(1).strip(), f"panel {pid} is empty at first paint"
    assert "<!--" not in re.sub(r"<!--\s*-->", "", html.split("<body>")[1]), "a template marker was left unfilled"


def test_worker_config_lists_every_module_and_is_valid_json():
    html = build.render_page()
    raw = re.search(r'<script type="application/json" id="worker-config">(.*?)</script>', html, re.S).group(1)
    config = json.loads(raw)
    files = config["files"]
    assert "./py/attention_explorer/core.py" in files and "./py/attention_explorer/views/markup.py" in files
    assert all(src.startswith("./py/") and dst.startswith("./attention_explorer/") for src, dst in files.items())
    assert "packages" not in config, "NumPy is loaded from the lock file, not through micropip"


def test_all_links_are_relative():
    html = build.render_page()
    for url in re.findall(r'(?:href|src)="([^"]*)"', html):
        assert not url.startswith(("/", "http:", "https:")), f"non-relative URL {url}"
