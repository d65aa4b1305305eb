"""The trained model's weight file: the safetensors reader/writer and the int8 group format.

The product promises that the trained model in the page, computed from the
compact weights, draws attention within 0.03 of the fp32 model on every layer,
head and query row; and that a damaged or foreign weight file fails loudly
with a message saying what is wrong, instead of drawing garbage.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from attention_explorer.models import bert, quantize, safetensors
from attention_explorer.models.safetensors import SafetensorsError
from minilm_files import SENTENCES, cached_file, fp32_tensors, token_ids

ATTENTION_BUDGET = 0.03  # absolute, on attention weights, vs the fp32 model (DESIGN.md)
HALF_STEP = 0.5 * (1 + 2.0**-10)  # error bound in steps: half a step, plus float16 rounding of the scale


# --------------------------------------------------------------------------
# safetensors: round trips
# --------------------------------------------------------------------------


def _sample_tensors():
    rng = np.random.default_rng(7)
    return {
        "f32": rng.standard_normal((3, 5)).astype(np.float32),
        "f16": rng.standard_normal(7).astype(np.float16),
        "f64": rng.standard_normal((2, 2, 2)),
        "i8": np.array([[-128, 0, 127]], dtype=np.int8),
        "u8": np.arange(10, dtype=np.uint8),
        "i16": np.array([-3, 4], dtype=np.int16),
        "u16": np.array([65535], dtype=np.uint16),
        "i32": np.array([-(2**31)], dtype=np.int32),
        "u32": np.array([2**32 - 1], dtype=np.uint32),
        "i64": np.arange(-3, 3, dtype=np.int64).reshape(2, 3),
        "u64": np.array([2**64 - 1], dtype=np.uint64),
        "bool": np.array([True, False, True]),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "big_endian": np.array([1.5, -2.0], dtype=">f4"),
    }


def test_safetensors_round_trip_every_dtype_and_shape(tmp_path):
    tensors = _sample_tensors()
    blob = safetensors.save(tensors, {"who": "test", "n": "15"})
    path = tmp_path / "t.safetensors"
    safetensors.save_file(tensors, path, {"who": "test", "n": "15"})
    assert path.read_bytes() == blob
    for source in (blob, bytearray(blob), memoryview(blob), path, str(path)):
        back, meta = safetensors.load_with_metadata(source)
        assert meta == {"who": "test", "n": "15"}
        assert set(back) == set(tensors)
        for name, a in tensors.items():
            assert back[name].shape == a.shape, name
            assert back[name].dtype == a.dtype.newbyteorder("="), name
            np.testing.assert_array_equal(back[name], a, err_msg=name)
            assert not back[name].flags.writeable, f"{name} must be read-only (it may view the file's bytes)"


def test_safetensors_writer_is_deterministic_and_aligned():
    """The build content-hashes the file: the same tensors must give the same bytes."""
    a = _sample_tensors()
    b = dict(reversed(list(a.items())))
    assert safetensors.save(a) == safetensors.save(b)
    blob = safetensors.save(a)
    (n,) = struct.unpack("<Q", blob[:8])
    assert n % 8 == 0, "data must start 8-byte aligned so float64 views are aligned"


def test_safetensors_reads_bf16_as_float32():
    values = np.array([1.0, -2.5, 0.15625], dtype=np.float32)
    bits = (values.view(np.uint32) >> 16).astype("<u2")  # exact: these values fit in bf16
    header = json.dumps({"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    out = safetensors.load(struct.pack("<Q", len(header)) + header + bits.tobytes())
    assert out["x"].dtype == np.float32
    np.testing.assert_array_equal(out["x"], values)


def test_safetensors_reads_the_pinned_model():
    tensors, meta = safetensors.load_with_metadata(cached_file("model.safetensors"))
    assert meta == {"format": "pt"}
    assert tensors["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert tensors["embeddings.word_embeddings.weight"].dtype == np.float32
    assert tensors["embeddings.position_ids"].dtype == np.int64
    assert sum(1 for k in tensors if k.startswith("encoder.layer.5.")) == 16


def test_safetensors_writer_refuses_what_it_cannot_write():
    with pytest.raises(SafetensorsError, match="complex64 has no safetensors equivalent"):
        safetensors.save({"c": np.zeros(2, np.complex64)})
    with pytest.raises(SafetensorsError, match="reserved"):
        safetensors.save({"__metadata__": np.zeros(2, np.float32)})
    with pytest.raises(SafetensorsError, match="metadata must map strings to strings"):
        safetensors.save({"a": np.zeros(2, np.float32)}, {"n": 3})


# --------------------------------------------------------------------------
# safetensors: malformed files are refused, each with its own message
# --------------------------------------------------------------------------


def _file(header, buffer=b""):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + buffer


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


MALFORMED = {
    "too short": (b"\x01\x02", r"too short for the 8-byte header length: 2 bytes"),
    "absurd header length": (struct.pack("<Q", 2**40) + b"{}", r"exceeds the .*-byte limit"),
    "header past end": (
        struct.pack("<Q", 100) + b"{}",
        r"header length 100 runs past the end of the file \(10 bytes\)",
    ),
    "not utf-8": (_file(b"\xff\xfe"), r"not valid UTF-8"),
    "not an object": (_file(b"[1, 2]"), r"must be a JSON object"),
    "not json": (_file(b'{"a": '), r"not valid JSON"),
    "duplicate name": (
        _file(
            b'{"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}, '
            b'"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}'
        ),
        r"names a key more than once: \['a'\]",
    ),
    "metadata not strings": (_file({"__metadata__": {"n": 1}}), r"__metadata__ must map strings to strings"),
    "entry not an object": (_file({"w": [1, 2]}), r"tensor 'w': entry must be an object"),
    "entry lacks a field": (
        _file({"w": {"dtype": "F32", "shape": [2]}}, bytes(8)),
        r"tensor 'w': entry lacks \['data_offsets'\]",
    ),
    "unsupported dtype": (
        _file({"w": _entry(dtype="F8_E4M3", shape=(8,))}, bytes(8)),
        r"tensor 'w': unsupported dtype 'F8_E4M3'",
    ),
    "bad shape": (
        _file({"w": _entry(shape=(-2,))}, bytes(8)),
        r"tensor 'w': shape must be a list of non-negative integers",
    ),
    "bad offsets": (
        _file({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}}, bytes(8)),
        r"tensor 'w': data_offsets must be \[begin, end\] integers",
    ),
    "offsets reversed": (_file({"w": _entry(offsets=(8, 0))}, bytes(8)), r"tensor 'w': data_offsets begin 8 > end 0"),
    "offsets past the end (truncated)": (
        _file({"w": _entry()}, bytes(6)),
        r"tensor 'w': data_offsets end 8 is past the data buffer \(6 bytes; truncated",
    ),
    "shape disagrees with offsets": (
        _file({"w": _entry(shape=(3,))}, bytes(8)),
        r"tensor 'w': shape \[3\] of F32 needs 12 bytes, data_offsets span 8",
    ),
    "overlap": (_file({"a": _entry(), "b": _entry(offsets=(4, 12))}, bytes(12)), r"tensor 'b' overlaps tensor 'a'"),
    "hole": (
        _file({"a": _entry(), "b": _entry(offsets=(12, 20))}, bytes(20)),
        r"hole in the data buffer before tensor 'b' \(bytes 8\.\.12\)",
    ),
    "trailing bytes": (_file({"a": _entry()}, bytes(12)), r"data buffer has 12 bytes but the tensors cover 8"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_safetensors_rejects_malformed_file(case):
    data, message = MALFORMED[case]
    with pytest.raises(SafetensorsError, match=message):
        safetensors.load(data)


def test_safetensors_rejects_a_truncated_download():
    blob = safetensors.save(_sample_tensors())
    with pytest.raises(SafetensorsError, match="past the data buffer"):
        safetensors.load(blob[:-3])
    assert issubclass(SafetensorsError, ValueError)


# --------------------------------------------------------------------------
# quantization of one tensor
# --------------------------------------------------------------------------


def _group_absmax(w, g):
    return np.abs(np.asarray(w, np.float64).reshape(w.shape[0], -1, g)).max(axis=-1)


def _assert_within_half_step(w, deq, g, name="w"):
    step = _group_absmax(w, g) / quantize.QMAX  # [rows, n_groups]
    err = np.abs(deq.astype(np.float64) - w).reshape(w.shape[0], -1, g).max(axis=-1)
    worst = np.max(err / np.where(step > 0, step, 1.0))
    assert np.all(err <= HALF_STEP * step + 1e-12), f"{name}: error {worst:.4f} steps > {HALF_STEP}"


@pytest.mark.parametrize("g", [16, 32])
def test_quantize_groups_error_is_at_most_half_a_step(g):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 128)) * rng.uniform(0.01, 3, (8, 1))
    w[0, :g] = 0.0  # an all-zero group
    w[1, 5] = 40.0  # an outlier only coarsens its own group
    q, scale = quantize.quantize_groups(w, g)
    assert q.dtype == np.int8 and scale.dtype == np.float16 and scale.shape == (8, 128 // g)
    assert q.min() >= -127 and q.max() <= 127
    deq = quantize.dequantize_groups(q, scale)
    assert deq.dtype == np.float32
    _assert_within_half_step(w, deq, g)
    np.testing.assert_array_equal(deq[0, :g], 0.0)
    assert np.abs(deq[1, 5] - 40.0) <= 40.0 / 127 * HALF_STEP
    np.testing.assert_array_equal(quantize.quantize_groups(-w, g)[0], -q)  # symmetric


def test_quantize_groups_keeps_float32_scales_when_float16_would_lose_them():
    w = np.full((2, 32), 1e-9)  # 1e-9 / 127 underflows float16
    q, scale = quantize.quantize_groups(w, 32)
    assert scale.dtype == np.float32
    _assert_within_half_step(w, quantize.dequantize_groups(q, scale), 32)


# --------------------------------------------------------------------------
# the quantized MiniLM
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quantized():
    return quantize.quantize(fp32_tensors())


@pytest.fixture(scope="module")
def config():
    return json.loads(cached_file("config.json").read_text())


@pytest.fixture(scope="module")
def blob(quantized, config):
    return quantize.to_bytes(quantized, config)


def test_every_big_matrix_is_int8_and_every_small_tensor_float32(quantized):
    """What the page downloads: int8 codes + float16 scales; LayerNorm, biases, token types exact."""
    source = fp32_tensors()
    assert not any("pooler" in k or k.endswith("position_ids") for k in quantized), "unused tensors are dropped"
    for name, a in source.items():
        if "pooler" in name or name.endswith("position_ids"):
            continue
        if a.ndim == 2 and a.size >= quantize.MIN_QUANTIZED_SIZE:
            g = 32 if name.startswith("embeddings.") else 16
            assert quantized[name].dtype == np.int8, name
            assert quantized[name + quantize.SCALE].shape == (a.shape[0], a.shape[1] // g), name
            assert quantized[name + quantize.SCALE].dtype == np.float16, name
        else:
            assert quantized[name].dtype == np.float32, name
            np.testing.assert_array_equal(quantized[name], a, err_msg=name)
    assert quantized["embeddings.token_type_embeddings.weight"].dtype == np.float32


def test_every_tensor_round_trips_within_its_bound(quantized):
    """Each weight is within half a quantization step of fp32; no tensor loses more than 1% (RMS)."""
    source, deq = fp32_tensors(), quantize.dequantize(quantized)
    assert set(deq) == {k for k in quantized if not k.endswith(quantize.SCALE)}
    for name, q in quantized.items():
        if name.endswith(quantize.SCALE) or q.dtype != np.int8:
            continue
        w = source[name].astype(np.float64)
        _assert_within_half_step(w, deq[name], quantize.group_size(name), name)
        rel = np.linalg.norm(deq[name] - w) / np.linalg.norm(w)
        assert rel < 0.01, f"{name}: relative RMS error {rel:.4f}"


def test_file_round_trip_is_exact(quantized, blob, config):
    """What the browser reads back is bit-for-bit what was quantized; the file carries its config."""
    dense = quantize.dequantize(quantized)
    back, back_config = quantize.load(blob)
    assert back_config == config
    assert set(back) == set(dense)
    for name in dense:
        np.testing.assert_array_equal(back[name], dense[name], err_msg=name)
    lazy, _ = quantize.load(blob, lazy_embeddings=True)
    table = lazy["embeddings.word_embeddings.weight"]
    assert isinstance(table, quantize.RowTable) and table.shape == (30522, 384)
    ids = [101, 0, 30521, 2023, 2023, 102]
    np.testing.assert_array_equal(table[ids], dense["embeddings.word_embeddings.weight"][ids])


def test_load_refuses_files_that_are_not_the_format(quantized):
    with pytest.raises(ValueError, match=r"not a attention-explorer/int8-groupwise v1 file"):
        quantize.load(safetensors.save({"a": np.zeros(2, np.float32)}, {"format": "pt"}))
    name = "encoder.layer.0.attention.self.query.weight"
    orphan = {name + quantize.SCALE: quantized[name + quantize.SCALE]}
    with pytest.raises(ValueError, match="has no quantized tensor"):
        quantize.dequantize(orphan)
    wrong = {name: quantized[name], name + quantize.SCALE: quantized[name + quantize.SCALE][:, :5]}
    with pytest.raises(ValueError, match=r"int8 \[rows, cols\] codes with \[rows, cols / g\] scales expected"):
        quantize.dequantize(wrong)


def test_quantized_attention_within_budget_on_20_sentences(blob):
    """Every layer, head and query row of the shipped weights within 0.03 of fp32 (T = 1, true sqrt(d_k))."""
    tensors, config = quantize.load(blob, lazy_embeddings=True)  # as the page loads it
    q_weights = bert.load_weights(tensors, config)
    f_weights = bert.load_weights(fp32_tensors(), config)
    assert len(SENTENCES) == 20
    worst, where = 0.0, None
    for sentence in SENTENCES:
        ids = token_ids(sentence)
        for layer, (tq, tf) in enumerate(zip(bert.forward(q_weights, ids)[1], bert.forward(f_weights, ids)[1])):
            err = np.abs(tq.weights - tf.weights)  # [head, query, key]
            if err.max() > worst:
                h, i, j = np.unravel_index(err.argmax(), err.shape)
                worst, where = float(err.max()), f"{sentence!r} layer {layer} head {h} query {i} key {j}"
    assert worst <= ATTENTION_BUDGET, f"worst attention error {worst:.4f} at {where}"
