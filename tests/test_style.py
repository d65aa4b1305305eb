"""The code's style is checked, not argued: ruff's linter and formatter (pyproject.toml's [tool.ruff]:
lines of at most 120 characters, imports sorted, no unused names) pass on the whole repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "command",
    [["check", "--no-fix", "."], ["format", "--check", "."]],
    ids=["lint", "format"],
)
def test_ruff_finds_nothing(command):
    run = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, f"ruff {' '.join(command)} failed:\n{run.stdout}{run.stderr}"
