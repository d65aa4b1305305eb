"""One small page interface over the two other engines' drivers, for tests/test_browser_engines.py.

- Firefox ESR (Debian's firefox-esr): WebDriver BiDi through puppeteer-core, in a Node process
  (firefox_driver.mjs) that this module talks to with JSON lines.
- WebKit (WebKitGTK, Debian's webkit2gtk-driver): WebDriver classic through Selenium (PyPI) and
  WebKitWebDriver, driving WebKitGTK's MiniBrowser on a virtual screen (Xvfb).

Both pages offer: goto, run (a JS function's source, awaited in the page), wait (a predicate polled
in the page, with a time limit and what it waits for), click, press (a key on a focused element),
resize, screenshot, problems (console and page errors, requests to other hosts), close.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIREFOX = "/usr/bin/firefox-esr"
WEBKIT_DRIVER = "/usr/bin/WebKitWebDriver"
MINIBROWSER = Path("/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser")
XVFB = "/usr/bin/Xvfb"

# In the page: poll a predicate every 100 ms until it returns something truthy (returned), or fail
# after ms naming what was awaited. A predicate that throws counts as not yet.
WAIT = """async (source, arg, ms, what) => {
    const test = (0, eval)(`(${source})`), end = Date.now() + ms;
    for (;;) {
        let value;
        try { value = await test(arg); } catch (e) { value = undefined; }
        if (value) return value;
        if (Date.now() > end) throw new Error(`after ${ms / 1000} s still waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 100));
    }
}"""

# The probe's problems (probe.js), each once.
TAKE_PROBLEMS = "() => (window.__aeProblems || []).splice(0)"


class EnginePage:
    """What both drivers share: waits and problems built on run()."""

    name = ""
    version = ""

    def __init__(self, reports: list[str]):
        self.reports = reports  # the server's policy reports (server.serve_probed)

    def wait(self, predicate: str, arg=None, *, timeout: float = 60, what: str, frame: int | None = None):
        """Poll predicate(arg) in the page (or in its frame-th iframe) until truthy: its value."""
        return self.run(WAIT, predicate, arg, int(timeout * 1000), what, frame=frame)

    def problems(self) -> list[str]:
        seen = self.run(TAKE_PROBLEMS) + self.reports[:]
        self.reports.clear()
        return seen

    def assert_no_problems(self):
        seen = self.problems()
        assert not seen, f"{self.name} reported problems:\n" + "\n".join(seen)


class FirefoxPage(EnginePage):
    name = "firefox"

    def __init__(self, reports, allowed_origins: list[str], width=1280, height=900):
        super().__init__(reports)
        node = shutil.which("node")
        if not (HERE / "node_modules" / "puppeteer-core").is_dir():
            raise RuntimeError(
                "puppeteer-core is not installed: run `bash dev.sh test` (npm ci --prefix tests/engines)"
            )
        self._proc = subprocess.Popen(
            [node, str(HERE / "firefox_driver.mjs"), FIREFOX, *allowed_origins],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._next = 0
        self.version = self._call("open", width=width, height=height)

    def _call(self, op: str, **args):
        self._next += 1
        self._proc.stdin.write(json.dumps({"id": self._next, "op": op, **args}) + "\n")
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Firefox driver ended (exit code {self._proc.wait()}) during {op}")
        reply = json.loads(line)
        if "error" in reply:
            raise AssertionError(f"Firefox, {op}: {reply['error']}")
        return reply["value"]

    def goto(self, url: str):
        self._call("goto", url=url)

    def run(self, source: str, *args, frame: int | None = None):
        return self._call("run", source=source, args=list(args), frame=frame)

    def click(self, selector: str):
        self._call("click", selector=selector)

    def press(self, selector: str, key: str):
        self._call("press", selector=selector, key=key)

    def resize(self, width: int, height: int):
        self._call("resize", width=width, height=height)

    def screenshot(self, path):
        self._call("screenshot", path=str(path))

    def problems(self) -> list[str]:
        return self._call("problems") + super().problems()

    def close(self):
        try:
            self._call("close")
        finally:
            self._proc.stdin.close()
            self._proc.wait(timeout=30)


# Selenium runs a script with a callback as its last argument; this one awaits the function.
SELENIUM_RUN = """const done = arguments[arguments.length - 1];
Promise.resolve().then(() => (0, eval)(`(${arguments[0]})`)(...arguments[1])).then(
    (value) => done({ value: value === undefined ? null : value }),
    (e) => done({ error: String(e) + (e && e.stack ? "\\n" + e.stack : "") }));"""

KEYS = {"ArrowRight": "\ue014", "ArrowLeft": "\ue012", "End": "\ue010", "Home": "\ue011"}


class VirtualScreen:
    """An Xvfb display of its own (the first free number, which Xvfb itself picks with -displayfd)."""

    def __init__(self):
        read, write = os.pipe()
        self._proc = subprocess.Popen(
            [XVFB, "-displayfd", str(write), "-screen", "0", "1600x1200x24", "-nolisten", "tcp"],
            pass_fds=(write,),
            stderr=subprocess.DEVNULL,
        )
        os.close(write)
        with os.fdopen(read) as f:
            number = f.readline().strip()
        if not number:
            raise RuntimeError(f"Xvfb did not start (exit code {self._proc.poll()})")
        self.display = f":{number}"

    def close(self):
        self._proc.terminate()
        self._proc.wait(timeout=10)


class WebKitPage(EnginePage):
    name = "webkit"

    def __init__(self, reports, width=1280, height=900):
        super().__init__(reports)
        from selenium import webdriver
        from selenium.webdriver.webkitgtk.options import Options
        from selenium.webdriver.webkitgtk.service import Service

        self.screen = VirtualScreen()
        options = Options()
        options.binary_location = str(MINIBROWSER)
        options.add_argument("--automation")
        service = Service(executable_path=WEBKIT_DRIVER, env={**os.environ, "DISPLAY": self.screen.display})
        try:
            self.driver = webdriver.WebKitGTK(options=options, service=service)
        except Exception:
            self.screen.close()
            raise
        self.driver.set_script_timeout(300)
        self.driver.set_page_load_timeout(120)
        self.version = self.driver.capabilities.get("browserVersion", "")
        self.resize(width, height)

    def goto(self, url: str):
        self.driver.get(url)

    def run(self, source: str, *args, frame: int | None = None):
        if frame is not None:
            from selenium.webdriver.common.by import By

            frames = self.driver.find_elements(By.TAG_NAME, "iframe")
            if len(frames) <= frame:
                raise AssertionError(f"WebKit: the page has {len(frames)} iframes, no frame {frame}")
            self.driver.switch_to.frame(frames[frame])
        try:
            reply = self.driver.execute_async_script(SELENIUM_RUN, source, list(args))
        finally:
            if frame is not None:
                self.driver.switch_to.default_content()
        if "error" in reply:
            raise AssertionError(f"WebKit: {reply['error']}")
        return reply["value"]

    def _element(self, selector: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def click(self, selector: str):
        self._element(selector).click()

    def press(self, selector: str, key: str):
        self._element(selector).send_keys(KEYS[key])

    def resize(self, width: int, height: int):
        """The page's viewport to width × height (the window is that plus what MiniBrowser draws around it)."""
        self.driver.set_window_size(width, height)
        inner = self.run("() => [innerWidth, innerHeight]")
        self.driver.set_window_size(2 * width - inner[0], 2 * height - inner[1])

    def screenshot(self, path):
        self.driver.save_screenshot(str(path))

    def close(self):
        try:
            self.driver.quit()
        finally:
            self.screen.close()
