"""Which Chromium the browser tests and benchmarks use, on machines with and without apt-get
(and which Node runs Lighthouse 13 for `bash dev.sh bench`).

The promise (README, issue 8): `bash dev.sh test` works on Debian (Debian's Chromium, installed
with apt-get when missing) and where apt-get is not available, such as macOS or Fedora
(Playwright's own Chromium, installed by `python -m playwright install chromium`, with one line
saying so). The machines here have apt-get and no internet for Playwright's download, so these
tests drive the choosing code with fake existence checks and fake commands.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from conftest import DEBIAN_CHROMIUM, choose_chromium

ROOT = Path(__file__).resolve().parents[1]
FAKE_PLAYWRIGHT_CHROMIUM = "/fake/ms-playwright/chromium-1234/chrome-linux/chrome"


def never_called():
    raise AssertionError("Playwright's browser was asked for although another Chromium was chosen")


def test_ae_chromium_wins_over_everything():
    assert choose_chromium({"AE_CHROMIUM": "/opt/my/chrome"}, lambda p: True, never_called) == "/opt/my/chrome"


def test_debian_chromium_when_installed():
    assert choose_chromium({}, lambda p: p == DEBIAN_CHROMIUM, never_called) == DEBIAN_CHROMIUM


def test_playwright_chromium_without_debian_chromium():
    """macOS or Fedora: no /usr/bin/chromium, no AE_CHROMIUM -> Playwright's own browser."""
    assert choose_chromium({}, lambda p: False, lambda: FAKE_PLAYWRIGHT_CHROMIUM) == FAKE_PLAYWRIGHT_CHROMIUM


def test_empty_ae_chromium_counts_as_unset():
    assert choose_chromium({"AE_CHROMIUM": ""}, lambda p: True, never_called) == DEBIAN_CHROMIUM


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _setup_chromium(tmp_path: Path, tools: dict[str, str], env_extra: dict[str, str] | None = None):
    """Source dev.sh in bash and call its setup_chromium with no Debian Chromium, a PATH holding
    only `tools` (fake commands) and a fake .venv python that logs its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    for name, body in tools.items():
        _script(bin_dir / name, f'echo "{name} $*" >> {log}\n{body}')
    fake_py = tmp_path / "python"
    _script(fake_py, f'echo "python $*" >> {log}\nif [ "$1" = "-c" ]; then echo "{FAKE_PLAYWRIGHT_CHROMIUM}"; fi\n')
    script = (
        f"source {ROOT / 'dev.sh'}\n"
        f"DEBIAN_CHROMIUM={tmp_path / 'no-chromium-here'}; PY={fake_py}; PATH={bin_dir}\n"
        'setup_chromium\necho "AE_CHROMIUM=${AE_CHROMIUM:-}"\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "AE_CHROMIUM"} | (env_extra or {})
    done = subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return done, calls


def test_dev_sh_without_apt_get_installs_playwright_chromium_and_says_so(tmp_path):
    done, calls = _setup_chromium(tmp_path, tools={})
    assert done.returncode == 0, done.stderr
    assert calls[0] == "python -m playwright install chromium"
    assert done.stdout.strip().endswith(f"AE_CHROMIUM={FAKE_PLAYWRIGHT_CHROMIUM}"), (
        "the tests must be told to use Playwright's Chromium"
    )
    said = [line for line in done.stderr.splitlines() if "Playwright's own Chromium" in line]
    assert len(said) == 1, f"dev.sh should say in one line which browser it uses; stderr was:\n{done.stderr}"


def test_dev_sh_with_apt_get_installs_debian_chromium(tmp_path):
    done, calls = _setup_chromium(tmp_path, tools={"apt-get": "", "id": "echo 0"})
    assert done.returncode == 0, done.stderr
    assert any(c.startswith("apt-get install") and "chromium" in c for c in calls), calls
    assert not any(c.startswith("python") for c in calls), "Playwright's browser is not needed here"
    assert done.stdout.strip().endswith("AE_CHROMIUM=")


def test_dev_sh_leaves_a_chosen_browser_alone(tmp_path):
    done, calls = _setup_chromium(
        tmp_path, tools={"apt-get": "", "id": "echo 0"}, env_extra={"AE_CHROMIUM": "/opt/my/chrome"}
    )
    assert done.returncode == 0, done.stderr
    assert calls == []
    assert done.stdout.strip().endswith("AE_CHROMIUM=/opt/my/chrome")


# ---------------------------------------------------------------- the Node that runs Lighthouse 13


def _choose_node(**kw):
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_lighthouse import BenchError, choose_node

    try:
        return choose_node(**kw)
    except BenchError as exc:
        return "error: " + str(exc)


def test_lighthouse_uses_the_pinned_node_on_x86_64_linux():
    node, note = _choose_node(
        system="Linux",
        machine="x86_64",
        pinned=Path("/pinned/node"),
        version=lambda n: (22, 23, 5) if n == "/pinned/node" else None,
        which=lambda n: "/usr/bin/node",
    )
    assert node == "/pinned/node" and "22.23.5" in note


def test_lighthouse_says_when_the_pinned_node_is_not_installed():
    said = _choose_node(
        system="Linux",
        machine="x86_64",
        pinned=Path("/pinned/node"),
        version=lambda n: None,
        which=lambda n: "/usr/bin/node",
    )
    assert said.startswith("error: ") and "npm ci --prefix bench/lighthouse" in said


def test_lighthouse_elsewhere_uses_a_new_enough_system_node_and_says_why():
    node, note = _choose_node(
        system="Darwin",
        machine="arm64",
        pinned=Path("/pinned/node"),
        version=lambda n: (22, 19, 0),
        which=lambda n: "/opt/homebrew/bin/node",
    )
    assert node == "/opt/homebrew/bin/node"
    assert "not x86_64 Linux" in note


def test_lighthouse_elsewhere_stops_on_an_old_system_node():
    said = _choose_node(
        system="Darwin",
        machine="arm64",
        pinned=Path("/pinned/node"),
        version=lambda n: (20, 20, 2),
        which=lambda n: "/usr/local/bin/node",
    )
    assert said.startswith("error: ") and "not x86_64 Linux" in said and ">= 22.19" in said
