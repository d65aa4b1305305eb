"""The bundle served for the Firefox and WebKit tests, with what they need to see problems.

WebKit's WebDriver reports no console messages, page errors or requests, so this server makes the
page report them itself, the same way on every engine:
- every HTML page gets probe.js first in its <head> (window.__aeProblems: console errors, page
  errors, failed loads, security-policy violations);
- every response carries a Content-Security-Policy-Report-Only header that allows this origin only
  (and blob:/data:, inline code, eval and WebAssembly, which the page uses): a request to another
  host, from the page or from its worker, is reported to /__csp__ here and never blocked.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from pathlib import Path

from conftest import SUBPATH, SubpathHandler

PROBE = Path(__file__).with_name("probe.js").read_bytes()
PROBE_PATH = SUBPATH + "__probe__.js"
REPORT_PATH = "/__csp__"
POLICY = f"default-src 'self' blob: data: 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval'; report-uri {REPORT_PATH}"


class ProbedHandler(SubpathHandler):
    reports: list[str]  # set per server: the violations reported to REPORT_PATH, one line each

    def end_headers(self):
        self.send_header("Content-Security-Policy-Report-Only", POLICY)
        super().end_headers()

    def do_GET(self):
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if path == PROBE_PATH:
            return self._send(PROBE, "text/javascript")
        if path.endswith("/") or path.endswith(".html"):
            file = Path(self.translate_path(path + ("index.html" if path.endswith("/") else "")))
            if file.is_file():
                html = file.read_bytes().replace(b"<head>", b'<head><script src="__probe__.js"></script>', 1)
                return self._send(html, "text/html; charset=utf-8")
        return super().do_GET()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        if self.path.split("?", 1)[0] == REPORT_PATH:
            try:
                report = json.loads(body).get("csp-report", {})
                self.reports.append(
                    f"request to another host: {report.get('blocked-uri')} "
                    f"(from {report.get('document-uri')}, {report.get('violated-directive')})"
                )
            except ValueError:
                self.reports.append(f"an unreadable policy report: {body[:200]!r}")
        self.send_response(204)
        self.end_headers()

    def _send(self, data: bytes, mime: str):
        self.send_response(200)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve_probed(folder: Path):
    """(server, its reports list): folder served under SUBPATH on 127.0.0.1, on a free port."""
    reports: list[str] = []
    handler = type("Handler", (ProbedHandler,), {"reports": reports})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, reports
