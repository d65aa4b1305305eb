"""Serve a folder as GitHub Pages serves a project site: under a sub-path, gzip-compressed.

    with GzipServer(Path("dist")) as srv:   # http://127.0.0.1:<free port>/attention-explorer/
        print(srv.url)
    GzipServer(Path("dist"), extra={"floor.html": b"..."})  # also serves .../attention-explorer/floor.html
    GzipServer(Path("dist"), head_script="...")  # that JS first in every HTML page's <head>

    python bench/gzip_server.py [folder] [--port N]   # by hand (Ctrl-C to stop)

What it does, like GitHub Pages: files only under SUBPATH (anything else is a 404, which
catches absolute URLs in the bundle); `/sub` redirects to `/sub/`, a folder serves its
index.html; text, JavaScript, JSON, SVG and wasm go out with `Content-Encoding: gzip` to a
client that accepts it (zip and wheel files are compressed already and go out as they are);
MIME types include application/wasm and text/javascript for .mjs; `Cache-Control:
max-age=600`. Compressed bodies are made once per file version (gzip -9) and kept in memory;
the whole folder is compressed before the server answers, so no timed request pays for it.
`extra` adds files that are not in the folder (a benchmark's own page, written at run time
and served beside the bundle's files without touching them). `head_script` puts a script first in
every HTML page's <head> (a benchmark's instrumentation, on engines whose driver has no way to
run a script before the page's own: bench_engines.py), again without touching the files.

Standard library only; listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import posixpath
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

SUBPATH = "/attention-explorer/"
MIME = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".svg": "image/svg+xml",
    ".py": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".wasm": "application/wasm",
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".webmanifest": "application/manifest+json",
}
COMPRESSED_TYPES = (
    "text/",
    "application/javascript",
    "application/json",
    "application/wasm",
    "application/manifest+json",
    "image/svg+xml",
    "image/x-icon",
)


def mime_type(path: Path) -> str:
    return MIME.get(path.suffix.lower(), "application/octet-stream")


class _Handler(http.server.BaseHTTPRequestHandler):
    server: "_Server"

    def do_GET(self):
        self._respond(send_body=True)

    def do_HEAD(self):
        self._respond(send_body=False)

    def _respond(self, send_body: bool):
        sub = self.server.subpath
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if path == sub.rstrip("/"):
            return self._send(301, b"", "text/plain", {"Location": sub}, send_body)
        extra = self.server.extra.get(path[len(sub) :]) if path.startswith(sub) else None
        file = None if extra else self.server.resolve(path)
        if file is None and extra is None:
            return self._send(404, b"404 not found\n", "text/plain; charset=utf-8", {}, send_body)
        ctype = mime_type(Path(path) if extra else file)
        headers = {"Cache-Control": "max-age=600", "Vary": "Accept-Encoding"}
        accepts_gzip = "gzip" in self.headers.get("Accept-Encoding", "")
        if ctype.startswith(COMPRESSED_TYPES) and accepts_gzip:
            body = extra[1] if extra else self.server.gzipped(file)
            headers["Content-Encoding"] = "gzip"
        else:
            body = extra[0] if extra else self.server.with_head(file.name, file.read_bytes())
        self._send(200, body, ctype, headers, send_body)

    def _send(self, status, body, ctype, headers, send_body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, *args):  # quiet: benchmarks print their own figures
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, folder: Path, subpath: str, port: int, extra: dict[str, bytes], head_script: str | None):
        self.folder, self.subpath = folder.resolve(), subpath
        self.head = f"<head><script>{head_script}</script>".encode() if head_script else None
        for rel in extra:
            if (self.folder / rel).exists():
                raise ValueError(f"{rel} is in {folder} already: an extra file must not hide a real one")
        # path under subpath -> (body, gzip -9 body)
        extra = {rel: self.with_head(rel, body) for rel, body in extra.items()}
        self.extra = {rel: (body, gzip.compress(body, 9, mtime=0)) for rel, body in extra.items()}
        self._cache: dict[Path, tuple[tuple[int, int], bytes]] = {}
        self._lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def resolve(self, url_path: str) -> Path | None:
        """The file url_path names under subpath, or None (outside it, missing, or escaping)."""
        if not url_path.startswith(self.subpath):
            return None
        rel = posixpath.normpath("/" + url_path[len(self.subpath) :]).lstrip("/")
        file = (self.folder / rel).resolve()
        if not file.is_relative_to(self.folder):
            return None
        if file.is_dir():
            file = file / "index.html"
        return file if file.is_file() else None

    def with_head(self, name: str, body: bytes) -> bytes:
        """body, with head_script first in its <head> if name is an HTML page and there is one."""
        if self.head is None or not name.endswith(".html"):
            return body
        if b"<head>" not in body:  # a page the script cannot go into would be measured without it, unseen
            raise ValueError(f"{name} has no <head> tag to put the head script in")
        return body.replace(b"<head>", self.head, 1)

    def gzipped(self, file: Path) -> bytes:
        st = file.stat()
        key = (st.st_mtime_ns, st.st_size)
        with self._lock:
            hit = self._cache.get(file)
        if hit and hit[0] == key:
            return hit[1]
        body = gzip.compress(self.with_head(file.name, file.read_bytes()), 9, mtime=0)
        with self._lock:
            self._cache[file] = (key, body)
        return body

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that left early is normal
            super().handle_error(request, client_address)


class GzipServer:
    """A running server for `folder` at `self.url`; `close()` (or leaving `with`) stops it."""

    def __init__(
        self,
        folder: Path,
        subpath: str = SUBPATH,
        port: int = 0,
        start_timeout: float = 10.0,
        extra: dict[str, bytes] | None = None,
        head_script: str | None = None,
    ):
        if not (folder / "index.html").is_file():
            raise FileNotFoundError(f"{folder}/index.html is missing: build the bundle first")
        self._server = _Server(folder, subpath, port, extra or {}, head_script)
        for f in folder.rglob("*"):  # compress everything up front: no request pays for it
            if f.is_file() and mime_type(f).startswith(COMPRESSED_TYPES):
                self._server.gzipped(f)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}{subpath}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        try:  # the server answers before anyone relies on it, or we say so
            urllib.request.urlopen(self.url, timeout=start_timeout).close()
        except urllib.error.HTTPError as exc:  # it answered, but not with the page
            self.close()
            raise RuntimeError(
                f"the gzip server at {self.url} answered {exc.code} {exc.reason} (is {folder} being rebuilt?)"
            )
        except (OSError, urllib.error.URLError) as exc:
            self.close()
            raise RuntimeError(f"the gzip server at {self.url} did not answer within {start_timeout:g} s: {exc}")

    def close(self):
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=Path(__file__).resolve().parents[1] / "dist")
    ap.add_argument("--port", type=int, default=8001)
    args = ap.parse_args()
    with GzipServer(args.folder, port=args.port) as srv:
        print(f"serving {args.folder} gzip-compressed at {srv.url}  (Ctrl-C to stop)", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
