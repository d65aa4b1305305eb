"""Screenshots of the built page for looking at it: before and after `ready`, 360 and 1280 px, light and dark.

    .venv/bin/python scripts/screenshots.py [OUT_DIR] [--full]

Builds nothing: run `python build.py` first. Writes PNGs into OUT_DIR (default
/tmp/ae-shots) and prints their paths.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import CHROMIUM, CHROMIUM_ARGS, SUBPATH, serve_folder  # noqa: E402


def main() -> None:
    from playwright.sync_api import sync_playwright

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    full = "--full" in sys.argv
    out = Path(args[0] if args else "/tmp/ae-shots")
    out.mkdir(parents=True, exist_ok=True)
    srv = serve_folder(ROOT / "dist")
    url = f"http://127.0.0.1:{srv.server_address[1]}{SUBPATH}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width, height in ((1280, 900), (360, 740)):
            for scheme in ("light", "dark"):
                ctx = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
                page = ctx.new_page()
                page.goto(url, wait_until="domcontentloaded")
                before = out / f"{width}-{scheme}-loading.png"
                page.screenshot(path=str(before))
                page.wait_for_function(
                    "document.documentElement.dataset.state !== 'loading'", timeout=120_000, polling=100
                )  # not every frame (bench_browser.load_until_ready)
                after = out / f"{width}-{scheme}-{page.evaluate('document.documentElement.dataset.state')}.png"
                page.screenshot(path=str(after), full_page=full)
                print(before, after, sep="\n")
                ctx.close()
        browser.close()
    srv.shutdown()


if __name__ == "__main__":
    main()
