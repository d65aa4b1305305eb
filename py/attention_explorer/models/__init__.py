"""The models behind the explorer, each implementing one small interface (base.Model).

    MODELS: {model id: model}, in the order the model picker lists them (the default first)
    get(model_id) -> the model

Only state.py (where the state meets the model) and build-time code import this;
views draw from the description and the run they are handed.
"""
from __future__ import annotations

import contextlib

from . import designed, minilm
from .base import Model

MODELS: dict[str, Model] = {m.description.id: m for m in (designed.MODEL, minilm.MODEL)}
DEFAULT = next(iter(MODELS))  # the designed model
TRAINED = (minilm.ID,)  # models whose weights were learned (the comparison sets them against DEFAULT)


def get(model_id: str) -> Model:
    try:
        return MODELS[model_id]
    except KeyError:
        raise KeyError(f"no model {model_id!r}; the models are {', '.join(MODELS)}") from None


@contextlib.contextmanager
def as_on_first_load():
    """The registry as a reader's page has it before any download: the trained models not loaded.

    build.py pre-renders the page inside this, so the pre-rendered markup is what the worker draws
    at start-up even when the building process has a trained model installed (the tests do).
    """
    saved = dict(MODELS)
    for model_id in TRAINED:
        MODELS[model_id] = type(saved[model_id])()
    try:
        yield
    finally:
        MODELS.update(saved)
