"""The trained model's file is used only when every byte is right, and a bad cached copy heals itself
(model_file.verified_file, with a fake cache and server; the browser tests drive the real ones).

Every state of the cache that the browser can be in is tried: empty, the right file, a changed file of
the same size, garbage, a truncated copy, an older build's file, a cache that throws on every call, one
whose writes fail (quota), and a cache that gives back other bytes than it was given."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import hashlib

import pytest

from attention_explorer import model_file

BASE = "http://127.0.0.1/site/models/"
GOOD = gzip.compress(b"weights " * 5000, mtime=0)
SHA = hashlib.sha256(GOOD).hexdigest()
URL = BASE + f"tiny.{SHA[:12]}.safetensors.gz"
OLDER = BASE + "tiny.0123456789ab.safetensors.gz"


class FakeCache:
    """A dict behind model_file.Cache; `broken` makes every call fail as a missing Cache Storage does
    (the worker's cache turns those failures into 'empty'), `quota` makes writes store nothing."""

    def __init__(self, entries=None, *, broken=False, quota=False, gives_back=None):
        self.entries = dict(entries or {})
        self.broken, self.quota, self.gives_back = broken, quota, gives_back

    async def read(self, url):
        if self.broken:
            return None
        blob = self.entries.get(url)
        return self.gives_back if blob is not None and self.gives_back is not None else blob

    async def write(self, url, blob):
        if not (self.broken or self.quota):
            self.entries[url] = blob

    async def delete(self, url):
        self.entries.pop(url, None)

    async def keep_only(self, url, prefix):
        for key in [k for k in self.entries if k.startswith(prefix) and k != url]:
            del self.entries[key]


class Server:
    def __init__(self, blob=GOOD):
        self.blob, self.requests = blob, []

    async def download(self, url):
        self.requests.append(url)
        return self.blob


def install_checked(installed):
    """An install that reads the file as the model does: gzip, then the content must be ours."""

    def install(blob):
        raw = gzip.decompress(blob)
        if not raw.startswith(b"weights "):
            raise ValueError("not a model")
        installed.append(blob)

    return install


def complete(coro):
    """Run a coroutine to its end in a thread of its own: in a pytest-xdist worker that also ran the
    browser tests, Playwright's event loop is running in this thread, and asyncio.run refuses."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def run(cache, server, installed, **kw):
    return complete(
        model_file.verified_file(
            URL,
            SHA,
            cache=cache,
            download=server.download,
            install=install_checked(installed),
            prefix=BASE + "tiny.",
            **kw,
        )
    )


def changed(blob: bytes) -> bytes:
    """The same file with one byte of its content changed, still a valid gzip stream of the same size."""
    raw = bytearray(gzip.decompress(blob))
    raw[100] ^= 0x01
    return gzip.compress(bytes(raw), mtime=0)


def test_a_good_cached_copy_is_used_without_a_download():
    cache, server, installed = FakeCache({URL: GOOD}), Server(), []
    assert run(cache, server, installed) == "cache"
    assert installed == [GOOD] and server.requests == []


def test_an_empty_cache_downloads_verifies_and_stores():
    cache, server, installed, phases = FakeCache(), Server(), [], []
    assert run(cache, server, installed, on_phase=phases.append) == "server"
    assert installed == [GOOD] and cache.entries == {URL: GOOD}
    assert phases == ["download", "verify", "install"]


@pytest.mark.parametrize(
    "bad",
    [changed(GOOD), b"garbage" * 10, GOOD[: len(GOOD) // 2], b""],
    ids=["changed-weights", "garbage", "truncated", "empty-body"],
)
def test_a_bad_cached_copy_is_never_installed_and_is_replaced_by_the_server_copy(bad):
    assert hashlib.sha256(bad).hexdigest() != SHA, "premise: the bad copy differs"
    cache, server, installed = FakeCache({URL: bad}), Server(), []
    assert run(cache, server, installed) == "server"
    assert installed == [GOOD], "only the verified server copy is installed, never the cached one"
    assert cache.entries == {URL: GOOD}, "the cache now holds the good file"


def test_a_changed_copy_is_not_installed_even_though_it_would_read_as_a_model():
    """The tampering the issue found: a well-formed file with other weights. It reads fine; only the
    digest tells it apart."""
    bad, installed = changed(GOOD), []
    install_checked(installed)(bad)  # premise: the model would accept it
    installed.clear()
    run(FakeCache({URL: bad}), Server(), installed)
    assert installed == [GOOD]


def test_an_older_builds_file_is_dropped_once_the_new_one_is_stored():
    other = BASE + "other-model.0123456789ab.gz"
    cache = FakeCache({OLDER: b"old", other: b"someone else's"})
    run(cache, Server(), [])
    assert cache.entries == {URL: GOOD, other: b"someone else's"}


def test_a_cache_that_fails_or_refuses_to_store_still_gives_the_model():
    for cache in (FakeCache(broken=True), FakeCache(quota=True)):
        server, installed = Server(), []
        assert run(cache, server, installed) == "server"
        assert installed == [GOOD] and server.requests == [URL]
        assert run(cache, server, installed) == "server", "nothing stored: the next visit downloads again"


def test_a_verified_copy_the_model_cannot_read_is_evicted_and_downloaded_again():
    """The cache hands back other bytes than it holds (the digest matched what was read but install
    failed): only possible if the digest and the read disagree; heal all the same."""
    calls = []

    async def digest_once_wrong(blob):
        calls.append(blob)
        return SHA if len(calls) == 1 else hashlib.sha256(blob).hexdigest()

    cache, server, installed = FakeCache({URL: b"not gzip"}), Server(), []
    assert run(cache, server, installed, digest=digest_once_wrong) == "server"
    assert installed == [GOOD] and cache.entries == {URL: GOOD}


def test_a_server_copy_that_differs_is_refused_with_a_message_and_not_stored():
    cache, server, installed = FakeCache(), Server(changed(GOOD)), []
    with pytest.raises(model_file.FileMismatch, match="sha256 differs"):
        run(cache, server, installed)
    assert installed == [] and cache.entries == {}


def test_a_failed_download_goes_through_as_the_callers_error():
    class Offline(Exception):
        pass

    async def download(url):
        raise Offline("no network")

    cache = FakeCache({URL: b"garbage"})
    with pytest.raises(Offline):
        complete(model_file.verified_file(URL, SHA, cache=cache, download=download, install=lambda b: None))
    assert cache.entries == {}, "the bad copy is gone even though the download failed: the next try downloads"


def test_the_build_records_the_full_digest_of_the_file_it_ships(tmp_path):
    """build.write_models: the manifest's sha256 is that of the file it wrote, whose name carries its prefix."""
    import build

    manifest = build.write_models(tmp_path)["minilm"]
    data = (tmp_path / manifest["src"]).read_bytes()
    assert manifest["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["sha256"][:12] in manifest["src"] and manifest["bytes"] == len(data)
