"""build.py's runtime fetching: pinned, verified, cached, and failing with a useful message."""
from __future__ import annotations

import hashlib
import json

import pytest

import build
from conftest import serve_folder


def _pins(tmp_path, files: dict, base_url: str):
    pins = {"groups": [{"name": "demo", "version": "1", "dest": "vendor/demo",
                        "sources": [{"kind": "url", "base": base_url}], "files": files}]}
    path = tmp_path / "pins.json"
    path.write_text(json.dumps(pins))
    return path


@pytest.fixture
def origin(tmp_path):
    """A local 'CDN' serving tmp_path/origin/ (no network involved)."""
    folder = tmp_path / "origin"
    folder.mkdir()
    import http.server

    srv = serve_folder(folder, handler=http.server.SimpleHTTPRequestHandler)
    yield folder, f"http://127.0.0.1:{srv.server_address[1]}/"
    srv.shutdown()


def test_fetches_verifies_and_caches(tmp_path, origin, monkeypatch):
    """A file whose bytes match the pin is fetched into the cache, then served from it offline."""
    folder, url = origin
    data = b"print('hello')\n"
    (folder / "a.py").write_bytes(data)
    monkeypatch.setattr(build, "PINS_FILE", _pins(tmp_path, {"a.py": hashlib.sha256(data).hexdigest()}, url))
    cache = tmp_path / "cache"
    [(path, rel)] = build.ensure_runtime(cache)
    assert path.read_bytes() == data and rel == "vendor/demo/a.py"
    (folder / "a.py").unlink()  # the source is gone: the cache must be enough
    [(path2, _)] = build.ensure_runtime(cache)
    assert path2 == path


def test_hash_mismatch_stops_the_build_naming_file_and_source(tmp_path, origin, monkeypatch):
    folder, url = origin
    (folder / "a.py").write_bytes(b"tampered")
    monkeypatch.setattr(build, "PINS_FILE", _pins(tmp_path, {"a.py": "0" * 64}, url))
    with pytest.raises(build.BuildError) as err:
        build.ensure_runtime(tmp_path / "cache")
    msg = str(err.value)
    assert "a.py" in msg and url in msg and "does not match the pin" in msg and "What to do" in msg
    assert not (tmp_path / "cache" / "demo" / "1" / "a.py").exists(), "an unverified file was cached"


def test_failed_fetch_names_file_and_source(tmp_path, origin, monkeypatch):
    _, url = origin
    monkeypatch.setattr(build, "PINS_FILE", _pins(tmp_path, {"missing.js": "0" * 64}, url))
    with pytest.raises(build.BuildError, match=r"missing\.js[\s\S]*" + url.replace(".", r"\.")):
        build.ensure_runtime(tmp_path / "cache")


def test_corrupted_cache_entry_is_fetched_again(tmp_path, origin, monkeypatch):
    folder, url = origin
    data = b"good bytes"
    (folder / "a.bin").write_bytes(data)
    monkeypatch.setattr(build, "PINS_FILE", _pins(tmp_path, {"a.bin": hashlib.sha256(data).hexdigest()}, url))
    cached = tmp_path / "cache" / "demo" / "1" / "a.bin"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"bit rot")
    build.ensure_runtime(tmp_path / "cache")
    assert cached.read_bytes() == data


def test_pins_cover_the_runtime_of_RUNTIME_md():
    """The committed pins name the versions the project agreed on (../shared/RUNTIME.md)."""
    pins = json.loads(build.PINS_FILE.read_text())
    groups = {g["name"]: g for g in pins["groups"]}
    assert groups["pyodide"]["version"] == "0.27.7"
    assert groups["pyscript"]["version"] == "0.6.66"
    assert {"pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
            "pyodide-lock.json"} <= set(groups["pyodide"]["files"])
    numpy = groups["numpy"]["files"]
    assert numpy == {"numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl":
                     "ebb61241d962b98b21597d7ce43b67668a6d5bab3acec4fbe958657320d7cd08"}
    assert "core.js" in groups["pyscript"]["files"]
    for g in pins["groups"]:
        assert all(len(h) == 64 for h in g["files"].values())
