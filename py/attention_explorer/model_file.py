"""A downloaded model file, from the reader's cache or the server, never used unless its sha256 is right.

build.py records each trained model's file's full sha256 in the page's manifest (its name carries only a
prefix). `verified_file` takes the file from the cache if a copy is there and its digest is that one,
else from the server, verifies that copy too, and only then hands the bytes to `install`; a verified
server copy then replaces whatever the cache held for the model (older builds' files included). So:

- a cached copy that was changed (tampered, truncated, garbage, a quota-cut write) is never installed:
  it is evicted and the file downloaded again;
- a cached copy whose digest is right but which `install` cannot read (only possible if the reader's
  browser gave back other bytes than it stored) is evicted and downloaded again too;
- a server copy that differs raises FileMismatch; the cache is left without it;
- the cache failing in any way (Cache Storage missing in some private modes, a quota error on write,
  a read that throws) is the same as an empty cache: the file comes from the server.

Pure asyncio and hashlib, no browser imports: worker.py gives it the browser's cache, download and
digest (crypto.subtle's SHA-256 is native; hashlib in WebAssembly took longer for 24 MB), and the tests
give it fakes.

    verified_file(url, sha256, cache=, download=, install=, digest=) -> "cache" | "server"
    sha256_hex(blob) -> str   (hashlib, the default digest)
"""

from __future__ import annotations

import hashlib
from typing import Awaitable, Callable, Optional, Protocol


class FileMismatch(Exception):
    """The server's copy is not the file the page was built with; the message is for the reader."""


class Cache(Protocol):
    """The reader's cache for one page's model files. None of these may raise: a failing cache is empty."""

    async def read(self, url: str) -> Optional[bytes]: ...

    async def write(self, url: str, blob: bytes) -> None: ...

    async def delete(self, url: str) -> None: ...

    async def keep_only(self, url: str, prefix: str) -> None:
        """Delete every entry whose URL starts with prefix (the model's folder and id) but url."""


async def sha256_hex(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


async def verified_file(
    url: str,
    sha256: str,
    *,
    cache: Cache,
    download: Callable[[str], Awaitable[bytes]],
    install: Callable[[bytes], None],
    digest=sha256_hex,
    prefix: str = "",
    on_phase: Callable[[str], None] = lambda phase: None,
) -> str:
    """Install the file at url whose sha256 (64 hex digits) is sha256; -> where it came from.

    download(url) -> bytes raises the caller's own error for a failed download (it goes through);
    install(blob) raises for a file it cannot read (it goes through when the server's verified copy
    fails: the build shipped a bad file). prefix: the start of every URL this model's files ever had
    (for keep_only). on_phase("verify" | "download" | "install") says where it is, for a progress line.
    """
    assert len(sha256) == 64, f"a sha256 is 64 hex digits, not {sha256!r}"
    blob = await cache.read(url)
    if blob is not None:
        on_phase("verify")
        if await digest(blob) == sha256:
            on_phase("install")
            try:
                install(blob)
                return "cache"
            except Exception:  # verified yet unreadable: the cache gave back other bytes; heal it below
                pass
        await cache.delete(url)
    on_phase("download")
    blob = await download(url)
    on_phase("verify")
    if await digest(blob) != sha256:
        raise FileMismatch(
            f"the file that arrived ({len(blob):,} bytes) is not the one this page was built "
            "with (its sha256 differs); it was not used"
        )
    on_phase("install")
    install(blob)
    await cache.write(url, blob)
    await cache.keep_only(url, prefix or url)
    return "server"
