"""A script run by a fresh CPython with the package importable: what a new worker would import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PY_SRC = Path(__file__).resolve().parents[1] / "py"


def printed_lines(script: str) -> list[str]:
    """The lines `script` prints, run in a new interpreter from py/ (nothing imported before it)."""
    out = subprocess.run([sys.executable, "-c", script], cwd=PY_SRC, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()
