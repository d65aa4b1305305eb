"""Read and write .safetensors files with NumPy only (no torch, no Rust wheel).

Format (https://github.com/huggingface/safetensors): an 8-byte little-endian
unsigned header length N, N bytes of UTF-8 JSON, then one byte buffer. The
JSON maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
(offsets relative to the buffer) and may hold "__metadata__": {str: str}.
Tensors are C-order, little-endian, and together cover the buffer exactly.

Pyodide cannot load the `safetensors` wheel, and the file is simple enough that
reading it ourselves is shorter than explaining a dependency. Every malformed
header raises ``SafetensorsError`` (a ValueError) whose message says what is
wrong and with which tensor, because a truncated download must fail loudly,
not give a model with garbage weights.
"""

import json
import math
import os
import struct

import numpy as np

# safetensors dtype -> little-endian NumPy dtype. BF16 has no NumPy dtype: it is
# read as its raw uint16 bits and widened to float32 (the top half of an f32).
DTYPES = {
    "BOOL": np.dtype("?"),
    "U8": np.dtype("u1"),
    "I8": np.dtype("i1"),
    "I16": np.dtype("<i2"),
    "U16": np.dtype("<u2"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
    "I32": np.dtype("<i4"),
    "U32": np.dtype("<u4"),
    "F32": np.dtype("<f4"),
    "I64": np.dtype("<i8"),
    "U64": np.dtype("<u8"),
    "F64": np.dtype("<f8"),
}
_NAMES = {
    np.dtype(v).newbyteorder("<") if np.dtype(v).itemsize > 1 else np.dtype(v): k
    for k, v in DTYPES.items()
    if k != "BF16"
}  # writer: NumPy dtype -> safetensors name

MAX_HEADER = 100 * 1024 * 1024  # the reference implementation's limit: a larger "length" is a corrupt file
METADATA = "__metadata__"


class SafetensorsError(ValueError):
    """The bytes are not a valid safetensors file; the message says why."""


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------


def read_header(data):  # bytes-like -> (header dict without __metadata__, metadata dict, buffer offset)
    mv = memoryview(data).cast("B")
    if len(mv) < 8:
        raise SafetensorsError(f"file too short for the 8-byte header length: {len(mv)} bytes")
    (n,) = struct.unpack("<Q", mv[:8])
    if n > MAX_HEADER:
        raise SafetensorsError(f"header length {n} exceeds the {MAX_HEADER}-byte limit (corrupt file?)")
    if 8 + n > len(mv):
        raise SafetensorsError(f"header length {n} runs past the end of the file ({len(mv)} bytes)")
    raw = bytes(mv[8 : 8 + n])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SafetensorsError(f"header is not valid UTF-8: {e}") from None
    if not text.startswith("{"):
        raise SafetensorsError(f"header must be a JSON object starting with '{{', got {text[:20]!r}")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        dup = sorted({k for k in keys if keys.count(k) > 1})
        if dup:
            raise SafetensorsError(f"header names a key more than once: {dup}")
        return dict(pairs)

    try:
        header = json.loads(text, object_pairs_hook=no_duplicates)  # trailing spaces (padding) are fine
    except json.JSONDecodeError as e:
        raise SafetensorsError(f"header is not valid JSON: {e}") from None
    metadata = header.pop(METADATA, None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise SafetensorsError(f"{METADATA} must map strings to strings, got {metadata!r}")
    _check_entries(header, len(mv) - 8 - n)
    return header, metadata, 8 + n


def _check_entries(header, buffer_len):  # raises unless every entry is well-formed and they tile the buffer
    spans = []
    for name, e in header.items():
        if not isinstance(e, dict):
            raise SafetensorsError(f"tensor {name!r}: entry must be an object, got {e!r}")
        missing = {"dtype", "shape", "data_offsets"} - set(e)
        if missing:
            raise SafetensorsError(f"tensor {name!r}: entry lacks {sorted(missing)}")
        if e["dtype"] not in DTYPES:
            raise SafetensorsError(
                f"tensor {name!r}: unsupported dtype {e['dtype']!r} (supported: {', '.join(DTYPES)})"
            )
        shape, offs = e["shape"], e["data_offsets"]
        if not (isinstance(shape, list) and all(_is_uint(d) for d in shape)):
            raise SafetensorsError(f"tensor {name!r}: shape must be a list of non-negative integers, got {shape!r}")
        if not (isinstance(offs, list) and len(offs) == 2 and all(_is_uint(o) for o in offs)):
            raise SafetensorsError(f"tensor {name!r}: data_offsets must be [begin, end] integers, got {offs!r}")
        begin, end = offs
        if begin > end:
            raise SafetensorsError(f"tensor {name!r}: data_offsets begin {begin} > end {end}")
        if end > buffer_len:
            raise SafetensorsError(
                f"tensor {name!r}: data_offsets end {end} is past the data buffer ({buffer_len} bytes; truncated file?)"
            )
        nbytes = math.prod(shape) * DTYPES[e["dtype"]].itemsize
        if end - begin != nbytes:
            raise SafetensorsError(
                f"tensor {name!r}: shape {shape} of {e['dtype']} needs {nbytes} bytes, data_offsets span {end - begin}"
            )
        spans.append((begin, end, name))
    # the format requires the tensors to tile the buffer: no overlap, no holes
    pos, prev = 0, None
    for begin, end, name in sorted(spans):
        if begin < pos:
            raise SafetensorsError(f"tensor {name!r} overlaps tensor {prev!r} (begins at {begin} < {pos})")
        if begin > pos:
            raise SafetensorsError(f"hole in the data buffer before tensor {name!r} (bytes {pos}..{begin})")
        pos, prev = end, name
    if pos != buffer_len:
        raise SafetensorsError(f"data buffer has {buffer_len} bytes but the tensors cover {pos}")


def _is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def load(data):  # bytes | bytearray | memoryview | path -> {name: ndarray}
    """Every tensor, by name. From bytes the arrays are read-only views (no copy)."""
    return load_with_metadata(data)[0]


def load_with_metadata(data):  # bytes-like | path -> ({name: ndarray}, {str: str})
    if isinstance(data, (str, os.PathLike)):
        with open(data, "rb") as f:
            data = f.read()
    header, metadata, start = read_header(data)
    mv = memoryview(data).cast("B")
    out = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        dt = DTYPES[e["dtype"]]
        a = np.frombuffer(mv[start + begin : start + end], dtype=dt).reshape(e["shape"])
        if e["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)  # bf16 is the high half of an f32
        if a.flags.writeable:
            a.setflags(write=False)  # a bytearray source would be mutable through the view
        out[name] = a
    return out, dict(metadata)


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------


def save(tensors, metadata=None):  # {name: ndarray}, {str: str} -> bytes
    """Tensors in name order, header padded with spaces to 8 bytes so the data is aligned.

    Deterministic: the same tensors give the same bytes (the build hashes them).
    """
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise SafetensorsError(f"metadata must map strings to strings, got {metadata!r}")
    header, chunks, pos = {}, [], 0
    for name in sorted(tensors):
        if name == METADATA:
            raise SafetensorsError(f"{METADATA!r} is reserved and cannot name a tensor")
        a = np.asarray(tensors[name])
        key = a.dtype.newbyteorder("<") if a.dtype.itemsize > 1 else a.dtype
        if key not in _NAMES:
            raise SafetensorsError(f"tensor {name!r}: dtype {a.dtype} has no safetensors equivalent")
        raw = np.ascontiguousarray(a, dtype=key).tobytes()
        header[name] = {"dtype": _NAMES[key], "shape": list(a.shape), "data_offsets": [pos, pos + len(raw)]}
        chunks.append(raw)
        pos += len(raw)
    if metadata:
        header[METADATA] = dict(sorted(metadata.items()))
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def save_file(tensors, path, metadata=None):  # {name: ndarray}, path, {str: str} -> None
    with open(path, "wb") as f:
        f.write(save(tensors, metadata))
