"""worker_main.py, the worker's small main script: it exports what worker.py offers (plus load_numpy),
each call reaching worker.py unchanged (load_model with worker_main's `fetched` added), and it stays
small and imports nothing at start (PyScript compiles it from source at every start; worker.py comes
from the start-up zip as bytecode). worker.py never imports it back: no import circle."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import build
from attention_explorer import worker, worker_main


def test_it_exports_every_call_of_the_worker_and_load_numpy():
    assert set(worker_main.__export__) == set(worker.__export__) | {"load_numpy"}
    assert len(worker_main.__export__) == len(set(worker_main.__export__))
    for name in worker_main.__export__:
        assert callable(getattr(worker_main, name)), name
    assert inspect.iscoroutinefunction(worker_main.load_numpy)


def test_each_forwarded_call_is_async_exactly_when_the_workers_is():
    for name in worker.__export__:
        ours, theirs = getattr(worker_main, name), getattr(worker, name)
        assert inspect.iscoroutinefunction(ours) == inspect.iscoroutinefunction(theirs), name
        assert ours.__name__ == name


def test_the_download_is_handed_the_main_scripts_fetch_and_the_worker_never_imports_it(monkeypatch):
    seen = []

    async def load_model(*args):
        seen.append(args)
        return {"ok": True, "message": ""}

    monkeypatch.setattr(worker, "load_model", load_model)
    # run by hand: it awaits nothing that waits (and Playwright's browser tests may hold this thread's event loop)
    call = worker_main.load_model({"model": "minilm"})
    with pytest.raises(StopIteration) as done:
        call.send(None)
    assert done.value.value == {"ok": True, "message": ""}
    assert seen == [({"model": "minilm"}, worker_main.fetched)]
    tree = ast.parse(Path(worker.__file__).read_text(encoding="utf-8"))
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    ]
    assert not [m for m in imported if m and "worker_main" in m], imported


def test_a_forwarded_call_gives_what_the_worker_gives():
    direct = worker.boot("#q=2", "page")
    forwarded = worker_main.boot("#q=2", "page")
    assert forwarded == direct and forwarded["hash"]
    event = {"type": "set_query", "index": "3"}
    worker.boot("", "page")
    direct = worker.dispatch(event)
    worker.boot("", "page")  # the same state again: the forwarded event makes the same change
    forwarded = worker_main.dispatch(event)
    assert forwarded == direct and not forwarded["message"] and "q=3" in forwarded["hash"]
    assert worker_main.download_progress() == worker.download_progress()


def test_it_imports_nothing_of_ours_when_it_runs_and_stays_small():
    # in a fresh interpreter: running the main script defines its exports and imports no module of ours
    probe = (
        "import sys; from attention_explorer import worker_main; "
        "print(sorted(m for m in sys.modules if m.startswith('attention_explorer')))"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=build.ROOT,
        env={"PYTHONPATH": str(build.PY_SRC)},
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['attention_explorer', 'attention_explorer.worker_main']"
    size = (build.PY_SRC / "attention_explorer" / "worker_main.py").stat().st_size
    assert size < 6_000, f"worker_main.py is {size} bytes: PyScript compiles it from source at every start"


def test_the_page_starts_the_worker_from_it():
    launch = (build.SITE / "launch.js").read_text(encoding="utf-8")
    assert 'PyWorker("./py/attention_explorer/worker_main.py"' in launch
