"""Print the measured pattern of every head of each trained model (fp32, as pinned), for humans.

    python scripts/measure_heads.py

The page's labels are measured the same way on the quantized weights, when build.py makes a bundle.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "py")]

import build  # noqa: E402  (the pinned, verified files)
from attention_explorer import head_patterns, models  # noqa: E402
from attention_explorer.models import bert, safetensors  # noqa: E402
from attention_explorer.models.trained import TrainedModel  # noqa: E402
from attention_explorer.models.wordpiece import WordPiece  # noqa: E402

for spec in (m.spec for m in models.TRAINED_MODELS):
    weights = bert.load_weights(
        safetensors.load(build.cached_file(spec.pins, "model.safetensors")),
        json.loads(build.cached_file(spec.pins, "config.json").read_text()),
    )
    model = TrainedModel(spec)
    model.install_weights(weights, WordPiece.from_text(build.cached_file(spec.pins, "vocab.txt").read_text("utf-8")))
    t0 = time.perf_counter()
    print(spec.name)
    print(head_patterns.table(head_patterns.measure_heads(model, head_patterns.CORPUS)))
    print(f"({len(head_patterns.CORPUS)} sentences, {time.perf_counter() - t0:.1f} s)")
