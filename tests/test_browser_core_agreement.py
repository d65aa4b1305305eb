"""The numerical core computes in Pyodide (the browser) what it computes in CPython.

Fixed random inputs are made here, sent to the worker's core_selftest, run through
core.transformer_block in Pyodide/NumPy 2.0.2, and compared with the same call in
CPython, to 1e-12.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attention_explorer import core
from random_block import random_block_params

pytestmark = pytest.mark.browser

N, D_MODEL, N_HEADS, D_FF = 6, 32, 4, 64
CASES = [
    {"temperature": 1.0, "scale": None, "causal": False, "activation": "gelu"},
    {"temperature": 0.01, "scale": 3.0, "causal": True, "activation": "relu"},
    {"temperature": 100.0, "scale": None, "causal": False, "activation": "swiglu"},
    {"temperature": 0.37, "scale": 0.5, "causal": True, "activation": "gelu"},
]


def fixed_inputs():
    rng = np.random.default_rng(20261129)
    params = random_block_params(rng, D_MODEL, D_FF, 1.0, ln_scale=0.1, gated=True)
    return 3 * rng.normal(0, 1, (N, D_MODEL)), params, np.array([[1e4, -1e4, 0.0, 3.0], [-2.0, -2.0, -2.0, -2.0]])


def test_core_in_pyodide_agrees_with_cpython(live):
    x, params, logits = fixed_inputs()
    payload = {
        "x": x.tolist(),
        "n_heads": N_HEADS,
        "cases": CASES,
        "softmax": logits.tolist(),
        "params": {f.name: getattr(params, f.name).tolist() for f in dataclasses.fields(params)},
    }
    result = live.evaluate("(p) => attentionExplorer.call('core_selftest', p)", payload)
    assert result["numpy"] == "2.0.2", "the browser should run the pinned NumPy"
    np.testing.assert_allclose(result["softmax"], core.softmax(logits), rtol=0, atol=1e-12)
    for case, got in zip(CASES, result["traces"]):
        mask = core.causal_mask(N) if case["causal"] else None
        want = core.transformer_block(
            x,
            params,
            N_HEADS,
            temperature=case["temperature"],
            scale=case["scale"],
            mask=mask,
            activation=case["activation"],
        )
        for f in dataclasses.fields(want):
            expected = getattr(want, f.name)
            if isinstance(expected, np.ndarray):
                np.testing.assert_allclose(
                    np.asarray(got[f.name], dtype=expected.dtype),
                    expected,
                    rtol=1e-12,
                    atol=1e-12,
                    err_msg=f"{f.name} differs for {case}",
                )
            elif expected is None:
                assert got[f.name] is None, f.name
            elif isinstance(expected, str):
                assert got[f.name] == expected, f.name
            else:
                assert got[f.name] == pytest.approx(expected, rel=1e-12), f.name
