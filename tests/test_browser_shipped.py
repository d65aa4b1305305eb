"""Nothing is shipped that nothing loads (issue 37, item 1), in Chromium.

The reader's paths are walked on the built bundle (the page ready, every folded part opened, the code
editor, the trained model chosen, a panel saved as PNG, the embed page, the credits page) and every
request recorded: every file of dist/ must have been asked for, or be a licence or model card (read by
people), or the tab's icon the page links, or .nojekyll (read by GitHub Pages, not the page).
"""

from __future__ import annotations

import pytest

from conftest import SUBPATH, open_page, wait_ready

pytestmark = pytest.mark.browser
MATRIX = 'svg[data-view="attention-matrix"]'


def test_every_file_in_the_bundle_is_loaded_by_some_path_of_the_page(browser, base_url, bundle):
    asked: set[str] = set()

    def record(request):
        url = request.url.split("#")[0].split("?")[0]
        if url.startswith(base_url):
            asked.add(url[len(base_url) :] or "index.html")

    context, page, problems = open_page(browser, base_url, viewport={"width": 1280, "height": 900})
    asked.add("index.html")  # the page itself, opened before the recording could start
    context.on("request", record)
    try:
        wait_ready(page)
        page.evaluate("""() => { for (const d of document.querySelectorAll('details.more')) d.open = true;
            document.getElementById('code-card').scrollIntoView(); }""")
        page.wait_for_selector("#code-card .code-mirror .cm-content", timeout=60_000)
        page.evaluate("scrollTo(0, 0)")
        page.select_option("#model", "minilm")
        page.wait_for_selector(f'{MATRIX}[data-model="minilm"]', timeout=120_000)
        with page.expect_download():
            page.click('[data-action="png"][data-target="attention-matrix"]')
        for other in ("embed.html", "credits.html"):
            extra = context.new_page()
            extra.goto(base_url + other)
            if other == "embed.html":
                wait_ready(extra)
        problems.assert_none()
    finally:
        context.close()
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file())
    icon = "favicon.svg" if 'rel="icon" href="favicon.svg"' in (bundle / "index.html").read_text("utf-8") else None
    read_by_people = {f for f in files if f.startswith("licenses/") or f.endswith("-README.md")}
    never_asked = [f for f in files if f not in asked and f not in read_by_people and f not in (icon, ".nojekyll")]
    assert never_asked == [], f"shipped but loaded by no path of the page: {never_asked}"
    assert SUBPATH  # the pages were served from the sub-path, as GitHub Pages serves them
