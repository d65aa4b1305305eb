"""The reader's work is never lost and the page's own Python never changes under it (issue 39), in CPython:
the worker's side of restarts, links and the editor, and the guard around the reader's function. The
bridge's side (the worker replaced, the model brought back) is in tests/test_browser_reader_work.py."""

from __future__ import annotations

import pytest

from attention_explorer import custom_attention, permalink, state as st, worker
from attention_explorer.models import minilm

NO_SCALING = next(e for e in custom_attention.EDITS if e.id == "no-scaling").source


def link_with_code(code: str) -> str:
    return permalink.encode(st.apply_event(st.State(), {"type": "run_code", "value": code}))


def test_a_strangers_link_puts_its_code_in_the_editor_with_the_notice():
    reply = worker.boot(link_with_code(NO_SCALING))
    assert reply["values"]["attention-code"] == NO_SCALING
    assert permalink.CODE_NOTICE in reply["notice"]


@pytest.mark.parametrize(
    "options", [{"restart": True}, {"own_code": NO_SCALING}], ids=["after-a-restart", "the-readers-own-page-reloaded"]
)
def test_the_pages_own_link_never_calls_its_code_a_links_and_leaves_the_editor_alone(options):
    reply = worker.boot(link_with_code(NO_SCALING), "page", options)
    assert "attention-code" not in reply["values"], "the editor keeps what the reader typed"
    assert permalink.CODE_NOTICE not in reply["notice"]


def test_other_code_than_the_readers_own_is_still_a_links():
    reply = worker.boot(link_with_code(NO_SCALING), "page", {"own_code": custom_attention.SOURCE + "# mine\n"})
    assert permalink.CODE_NOTICE in reply["notice"] and reply["values"]["attention-code"] == NO_SCALING


def test_reset_of_the_view_keeps_the_editor_and_the_editors_reset_clears_it():
    worker.boot("")
    ran = worker.dispatch({"type": "run_code", "value": NO_SCALING})
    assert not ran["message"]
    assert "attention-code" not in worker.dispatch({"type": "reset"})["values"]
    worker.dispatch({"type": "run_code", "value": NO_SCALING})
    assert worker.dispatch({"type": "reset_code"})["values"]["attention-code"] == custom_attention.SOURCE


def test_a_replayed_link_after_a_restart_says_nothing_about_code():
    worker.boot("")
    reply = worker.dispatch({"type": "load_hash", "value": "#" + link_with_code(NO_SCALING), "restart": True})
    assert permalink.CODE_NOTICE not in reply["notice"] and "attention-code" not in reply["values"]


def test_a_pasted_link_to_a_model_not_downloaded_asks_for_it(monkeypatch):
    """Pasting a link (a hashchange, not a fresh load) to the trained model before it was downloaded:
    the worker asks the bridge to download it and changes nothing meanwhile (it used to answer
    '"minilm" is not one of designed, minilm' and stay on the designed model)."""
    monkeypatch.setattr(minilm.MODEL, "_weights", None)  # not downloaded yet
    worker.boot("")
    before = worker._state
    reply = worker.dispatch({"type": "load_hash", "value": "#m=minilm&h=3&T=2"})
    assert reply["load_model"] == "minilm" and worker._state == before and not reply["notice"]


def test_a_function_that_patches_the_pages_python_is_refused_and_the_patch_undone():
    from attention_explorer import core

    softmax = core.softmax
    patch = NO_SCALING.replace(
        "import numpy as np\n",
        "import numpy as np\nimport attention_explorer.core\n"
        "attention_explorer.core.softmax = lambda x, *a, **k: x\nnp.exp = abs\n",
        1,
    )
    exp = custom_attention.np.exp
    worker.boot("")
    try:
        reply = worker.dispatch({"type": "run_code", "value": patch})
        assert core.softmax is softmax and custom_attention.np.exp is exp
    finally:  # never leave a broken core to the tests after this one
        core.softmax, custom_attention.np.exp = softmax, exp
    assert "changed the page's own Python" in reply["message"] and "attention_explorer.core.softmax" in reply["message"]
    # the page computes as before: Reset and a slider work
    worker.dispatch({"type": "reset"})
    moved = worker.dispatch({"type": "set_temperature", "value": "2"})
    assert not moved["message"] and worker._state.temperature == 2.0


def test_page_kept_deletes_what_the_code_added_but_keeps_submodules():
    import math
    import sys

    with pytest.raises(custom_attention.CodeError, match="math.extra"):
        with custom_attention.page_kept():
            math.extra = 1
    assert not hasattr(math, "extra")
    with custom_attention.page_kept():  # importing a module of ours is no change
        import attention_explorer.models.wordpiece  # noqa: F401
    assert "attention_explorer.models.wordpiece" in sys.modules


@pytest.mark.parametrize("statement", ["raise KeyboardInterrupt", "raise SystemExit(3)", "raise GeneratorExit"])
def test_every_way_out_of_the_function_is_the_readers_message(statement):
    """KeyboardInterrupt used to escape the checks and be reported under the sentence box."""
    code = custom_attention.SOURCE.replace("    return z, weights", f"    {statement}\n    return z, weights")
    worker.boot("")
    reply = worker.dispatch({"type": "run_code", "value": code})
    assert reply["field"] == "attention-code" and "Your attention function" in reply["message"]


def test_the_pages_own_bookkeeping_is_never_taken_for_the_readers_change():
    """A refused function after a good one gets its own message (the worker's reply bookkeeping, inside the
    guard, was once reported as 'changed the page's own Python')."""
    worker.boot("")
    assert not worker.dispatch({"type": "run_code", "value": NO_SCALING})["message"]
    broken = worker.dispatch({"type": "run_code", "value": NO_SCALING.replace("return z, weights", "return z, +")})
    assert "line" in broken["message"] and "changed the page" not in broken["message"]
    moved = worker.dispatch({"type": "set_temperature", "value": "1.5"})
    assert not moved["message"] and worker._state.custom
