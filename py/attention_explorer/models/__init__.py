"""The models behind the explorer, each implementing one small interface (base.Model).

    MODELS: {model id: model}, in the order the model picker lists them (the default first)
    TRAINED: the ids of the trained models (their weights are downloaded when chosen)
    get(model_id) -> the model

A trained BERT-like model is a module of configuration (a trained.TrainedSpec, like minilm.py), its
line in TRAINED_MODELS below and its files pinned in runtime-pins.json; build.py, the page and the
comparison card take their models from here.

Who imports this registry: state.py (descriptions, tokenizing, the memoised run: the views get the
models' numbers through it), worker.py (whether a link's model is still to be downloaded; installing
a download), and outside the
package build.py, scripts/measure_heads.py and the tests. Importing any module of this package
runs this file, so `pairs.py`, which imports `models.base`, loads designed and minilm too. No view
imports a model module by name: views draw from the description and the run they are handed.
"""

from __future__ import annotations

import contextlib

from . import designed, minilm
from .base import Model
from .trained import TrainedModel

TRAINED_MODELS: tuple[TrainedModel, ...] = (minilm.MODEL,)
MODELS: dict[str, Model] = {m.description.id: m for m in (designed.MODEL, *TRAINED_MODELS)}
DEFAULT = next(iter(MODELS))  # the designed model
TRAINED = tuple(m.spec.id for m in TRAINED_MODELS)  # the comparison sets the first against DEFAULT


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
        MODELS[model_id] = TrainedModel(saved[model_id].spec)
    try:
        yield
    finally:
        MODELS.update(saved)


@contextlib.contextmanager
def registered(model: TrainedModel):
    """Another trained model in the registry for a while (tests: a tiny BERT-like model), after the others."""
    global TRAINED
    saved, saved_trained = dict(MODELS), TRAINED
    MODELS[model.spec.id] = model
    TRAINED = (*TRAINED, model.spec.id)
    try:
        yield model
    finally:
        MODELS.clear()
        MODELS.update(saved)
        TRAINED = saved_trained
