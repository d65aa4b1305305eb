"""bench/bench_workarounds.py switches each runtime workaround off by editing a copy of the bundle; each edit
must still find what it replaces, exactly once, or the bench would stop (or, worse, measure nothing) the
next time someone runs it. Checked here on the built bundle, so a moved call fails the suite instead."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_workarounds as bw  # noqa: E402

from attention_explorer import runtime  # noqa: E402


def test_every_workaround_the_runtime_reports_can_be_switched_off_by_the_bench():
    engaged = set(runtime.engaged())  # the worker's own, by name
    assert engaged == set(bw.WORKER_REPORTED)
    assert engaged <= set(bw.OFF) and {"page_observer", "pyodide_progress"} <= set(bw.OFF)


@pytest.mark.parametrize("name", sorted(bw.OFF))
def test_each_switch_finds_its_code_once_in_the_bundle_and_changes_it(bundle, tmp_path, name):
    files = {e.where for e in bw.OFF[name]}
    copy = tmp_path / "dist"
    if bw.ANY_JS in files:
        shutil.copytree(bundle, copy, ignore=shutil.ignore_patterns("*.whl", "*.wasm", "*.zip", "models"))
    else:
        for rel in files:
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(bundle / rel, copy / rel)
    done = bw.apply_edits(copy, name)
    assert len(done) == len(bw.OFF[name])
    for change in done:
        assert change["before"] != change["after"], change
        assert (copy / change["file"]).read_text(encoding="utf-8") != (bundle / change["file"]).read_text(
            encoding="utf-8"
        )
