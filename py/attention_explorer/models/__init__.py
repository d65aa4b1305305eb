"""The models behind the explorer, each implementing one small interface (base.Model).

    MODELS: {model id: model}, in the order the model picker lists them (the default first)
    get(model_id) -> the model

Only state.py (where the state meets the model) and build-time code import this;
views draw from the description and the run they are handed.
"""
from __future__ import annotations

from . import designed
from .base import Model

MODELS: dict[str, Model] = {designed.MODEL.description.id: designed.MODEL}
DEFAULT = next(iter(MODELS))


def get(model_id: str) -> Model:
    try:
        return MODELS[model_id]
    except KeyError:
        raise KeyError(f"no model {model_id!r}; the models are {', '.join(MODELS)}") from None
