"""The trained model's compact weight format: int8 in small groups, one float16 scale per group.

Scheme (symmetric, round to nearest): every big matrix is cut along its last
axis (PyTorch's input dimension, or the 384 features of an embedding row) into
groups of ``g`` consecutive weights; each group stores ``q = round(w / s)`` as
int8 in [-127, 127] with ``s = max|w| / 127`` as float16, so ``w ~ q * s`` is off
by at most half a step. Small tensors (LayerNorm gains and shifts, biases, the
two token-type rows) stay float32: they cost nothing and the token-type row is
added to every token.

Why these group sizes (all-MiniLM-L6-v2; worst attention-weight error vs fp32
over every layer, head and query row at T = 1, on the 20 test sentences and on
100 held-out prose sentences of 4-64 word pieces; gzip -9 of the whole file):

    layers          embeddings               gzip -9   test    held-out
    groups of 32    groups of 32             23.0 MB   0.025   0.033
    groups of 16    groups of 32 (chosen)    23.6 MB   0.023   0.028
    groups of 8     groups of 32             24.5 MB   0.015   0.027
    groups of 16    one scale per row        22.6 MB   0.034   0.033

The worst cells are nearly always in layer 4, head 9 (0-based), a head that
splits its attention between a few keys; its error comes mostly from the
rounding of the layers below it, accumulated in the residual stream, not from
its own Q/K weights (float16 for every query and key matrix barely helps). So the layers
get the finer groups, while the word-piece table -- 52% of the weights, and
less sensitive -- keeps groups of 32. int8 codes fill nearly all 8 bits (gzip
saves ~5%), so the size is essentially 8 + 16/g bits per weight. Error-feedback
rounding (GPTQ), activation-aware column scaling (AWQ), MSE-optimal clipping
and bias correction were tried and did not lower the worst attention error.
The bound is for T = 1: a lower temperature sharpens the softmax and
magnifies the same logit errors (test sentences: 0.057 at T = 0.5, 0.12 at
T = 0.25; 0.011 at T = 2).

The file is a plain safetensors file (see ``safetensors.py``): a quantized
tensor ``name`` is int8 with its scales in ``name + SCALE``; everything else is
float32. Unused tensors (the pooler, the position-id buffer) are dropped.
"""

import json
import sys
from dataclasses import dataclass

import numpy as np

from . import safetensors

FORMAT = "attention-explorer/int8-groupwise"  # in the file's metadata: load() refuses anything else
FORMAT_VERSION = "1"
SCALE = ".qscale"  # suffix of a quantized tensor's scales; no Hugging Face name ends like this
QMAX = 127  # symmetric: -128 is never used, so negating a weight negates its code exactly
GROUP_LAYERS = 16  # encoder matrices: their errors accumulate through the layers (table above)
GROUP_EMBEDDINGS = 32  # word-piece and position tables: 52% of the weights, less sensitive
MIN_QUANTIZED_SIZE = 65536  # smaller tensors (token types: 2 x 384) stay float32


def group_size(name):  # tensor name -> weights per scale
    return GROUP_EMBEDDINGS if "embeddings." in name else GROUP_LAYERS


def _unused(name):  # tensors the explorer's forward pass never reads
    return "pooler" in name.split(".") or name.endswith("position_ids")


def _quantizable(name, a):
    return a.ndim == 2 and a.dtype.kind == "f" and a.size >= MIN_QUANTIZED_SIZE


# --------------------------------------------------------------------------
# one tensor
# --------------------------------------------------------------------------


def quantize_groups(
    w, g
):  # [rows, cols] float, int -> (q [rows, cols] int8, scale [rows, cols // g] float16 | float32)
    w = np.asarray(w, dtype=np.float64)
    assert w.ndim == 2, f"quantize_groups wants a matrix, got shape {w.shape}"
    rows, cols = w.shape
    assert cols % g == 0, f"group size {g} must divide the last axis ({cols})"
    wg = w.reshape(rows, cols // g, g)
    s = np.abs(wg).max(axis=-1) / QMAX  # [rows, n_groups]
    s16 = s.astype(np.float16)
    # float16 keeps 11 significant bits down to 6e-5; a scale that is lost or
    # rounded coarser than that (tiny or huge weights) keeps float32 instead
    scale = s16 if np.all(np.abs(s16.astype(np.float64) - s) <= s * 2.0**-10) else s.astype(np.float32)
    step = scale.astype(np.float64)
    step = np.where(step > 0, step, 1.0)  # an all-zero group: any step gives q = 0
    # codes are computed against the *stored* scale, so dequantization reproduces
    # exactly what was optimised; clip: a scale rounded down may push max|w| to 127.5
    q = np.clip(np.round(wg / step[..., None]), -QMAX, QMAX).astype(np.int8)
    return q.reshape(rows, cols), scale


def dequantize_groups(q, scale):  # [..., cols] int8, [..., cols // g] -> [..., cols] float32
    q = np.asarray(q)
    scale = np.asarray(scale, dtype=np.float32)
    n_groups = scale.shape[-1]
    assert q.shape[:-1] == scale.shape[:-1] and n_groups and q.shape[-1] % n_groups == 0, (
        f"scale {scale.shape} does not fit codes {q.shape}"
    )
    g = q.shape[-1] // n_groups
    w = q.reshape(q.shape[:-1] + (n_groups, g)).astype(np.float32) * scale[..., None]
    return w.reshape(q.shape)


@dataclass(frozen=True, eq=False)
class RowTable:
    """An embedding table kept quantized; rows are dequantized when looked up.

    The word-piece table is 30522 x 384: as float32 it would be 47 MB of the
    browser's memory and ~0.1 s to expand, for the <= 66 rows a sentence reads.
    """

    q: np.ndarray  # [vocab, d] int8
    scale: np.ndarray  # [vocab, d // g]

    @property
    def shape(self):
        return self.q.shape

    def __getitem__(self, ids):  # [n] int -> [n, d] float32
        return dequantize_groups(self.q[ids], self.scale[ids])


# --------------------------------------------------------------------------
# a whole model
# --------------------------------------------------------------------------


def quantize(tensors):  # {name: float array} -> {name: int8 | float16 | float32 array}, the file's tensors
    out = {}
    for name, a in tensors.items():
        if _unused(name):
            continue
        a = np.asarray(a)
        assert not name.endswith(SCALE), f"tensor name {name!r} collides with the scale suffix {SCALE!r}"
        if _quantizable(name, a):
            out[name], out[name + SCALE] = quantize_groups(a, group_size(name))
        elif a.dtype.kind == "f":
            out[name] = a.astype(np.float32)
        else:
            out[name] = a  # integer buffers pass through unchanged
    return out


def dequantize(qtensors, *, lazy_embeddings=False):  # {name: array} -> {name: float32 array | RowTable}
    # lazy_embeddings: the word-piece table stays a RowTable (for the browser)
    out = {}
    for name, a in qtensors.items():
        if name.endswith(SCALE):
            if name[: -len(SCALE)] not in qtensors:
                raise ValueError(f"{name!r} has no quantized tensor {name[: -len(SCALE)]!r}")
            continue
        if name + SCALE not in qtensors:
            out[name] = np.asarray(a, dtype=np.float32) if np.asarray(a).dtype.kind == "f" else a
            continue
        scale = qtensors[name + SCALE]
        if (
            a.dtype != np.int8
            or a.ndim != 2
            or scale.ndim != 2
            or scale.shape[0] != a.shape[0]
            or scale.shape[1] == 0
            or a.shape[1] % scale.shape[1]
        ):
            raise ValueError(
                f"{name!r}: int8 [rows, cols] codes with [rows, cols / g] scales expected, "
                f"got {a.dtype} {a.shape} and {scale.shape}"
            )
        if lazy_embeddings and name.endswith("word_embeddings.weight"):
            out[name] = RowTable(a, scale)
        else:
            out[name] = dequantize_groups(a, scale)
    return out


def to_bytes(qtensors, config=None):  # quantize()'s dict, config.json dict | None -> safetensors bytes
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION}
    if config is not None:
        meta["config"] = json.dumps(config, sort_keys=True)  # the file then describes its own model
    return safetensors.save(qtensors, meta)


def load(data, *, lazy_embeddings=False):  # bytes-like | path -> ({name: float32 array | RowTable}, config dict | None)
    tensors, meta = safetensors.load_with_metadata(data)
    if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"not a {FORMAT} v{FORMAT_VERSION} file (metadata {meta})")
    config = json.loads(meta["config"]) if "config" in meta else None
    return dequantize(tensors, lazy_embeddings=lazy_embeddings), config


def main(argv):  # python -m attention_explorer.models.quantize model.safetensors out.safetensors [config.json]
    import gzip
    import time

    src, dst = argv[0], argv[1]
    config = json.load(open(argv[2])) if len(argv) > 2 else None
    t = time.perf_counter()
    blob = to_bytes(quantize(safetensors.load(src)), config)
    with open(dst, "wb") as f:
        f.write(blob)
    print(
        f"{dst}: {len(blob):,} bytes, gzip -9 {len(gzip.compress(blob, 9)):,} bytes ({time.perf_counter() - t:.1f} s)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
