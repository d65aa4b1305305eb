"""A trained BERT encoder (all-MiniLM-L6-v2) computed by the explorer's own core.

The embedding step (word piece + learned position + token type, then
LayerNorm) is done here; every layer is one ``core.transformer_block``, the
same post-LN block the designed model uses, so each trained layer yields the
same ``BlockTrace`` the views already draw. Temperature and the sqrt(d_k)
scale go to the softmax of every layer. Activations are float32, the weights'
own precision (core keeps the dtype it is given, and takes its faster float32
routes in Pyodide); they stay within 1e-5 of a float64 reference
(tests/test_bert.py).

Weights come as a {name: array} dict in Hugging Face ``BertModel`` naming
(``embeddings.word_embeddings.weight``, ``encoder.layer.N.attention.self.query.weight``,
...), with or without a prefix such as ``bert.``: the fp32 safetensors file
read by ``safetensors.load`` or the dequantized dict from ``quantize``.
PyTorch's ``nn.Linear`` stores weight as [out, in] for ``W x``; core wants
[in, out] for ``x @ W``, so each matrix is transposed once at load time.

NumPy only; runs unchanged in CPython and Pyodide.
"""

from dataclasses import dataclass

import numpy as np

from .. import core

WORD = "embeddings.word_embeddings.weight"

# config.json of all-MiniLM-L6-v2; load_weights checks the tensors against these
MINILM_CONFIG = dict(
    num_attention_heads=12,  # d_k = 384 / 12 = 32, so the true scale is sqrt(32) ~ 5.66
    layer_norm_eps=1e-12,  # BERT's eps (not PyTorch's default 1e-5): it matters for near-constant rows
    hidden_act="gelu",  # exact erf GELU, not the tanh approximation ("gelu_new")
    position_embedding_type="absolute",  # learned table of 512 rows, indexed 0..n-1
)


@dataclass(frozen=True, eq=False)
class BertWeights:
    """A BERT-style encoder's weights (embeddings, LayerNorm, one BlockParams per layer)."""

    word_embeddings: np.ndarray  # [vocab, d_model] (or any table with .shape and table[ids] -> [n, d_model])
    position_embeddings: np.ndarray  # [max_positions, d_model]
    token_type_embeddings: np.ndarray  # [n_token_types, d_model]
    emb_ln_gamma: np.ndarray  # [d_model]
    emb_ln_beta: np.ndarray  # [d_model]
    layers: tuple  # of core.BlockParams, one per layer, x @ W convention
    n_heads: int
    eps: float  # both LayerNorms of every block and the embedding LayerNorm
    activation: str = "gelu"

    @property
    def n_layers(self):
        return len(self.layers)

    @property
    def d_model(self):
        return self.word_embeddings.shape[1]

    @property
    def d_head(self):
        return self.d_model // self.n_heads

    @property
    def d_ff(self):
        return self.layers[0].d_ff

    @property
    def vocab_size(self):
        return self.word_embeddings.shape[0]

    @property
    def max_positions(self):
        return self.position_embeddings.shape[0]


@dataclass(frozen=True, eq=False)
class EmbeddingTrace:
    """The embedding step of one forward pass: word, position and type rows, summed, normalised."""

    token_ids: np.ndarray  # [n] int
    token_type_ids: np.ndarray  # [n] int
    word: np.ndarray  # [n, d_model] rows of the word-piece table
    position: np.ndarray  # [n, d_model] rows 0..n-1 of the learned position table
    token_type: np.ndarray  # [n, d_model] rows of the token-type table (all type 0 for one sentence)
    summed: np.ndarray  # [n, d_model] word + position + token_type
    ln_mean: np.ndarray  # [n]
    ln_std: np.ndarray  # [n] sqrt(var + eps)
    out: np.ndarray  # [n, d_model] LayerNorm(summed): the input of layer 0
    eps: float

    def __post_init__(self):
        core.freeze_arrays(self)  # read-only private copies, as core.BlockTrace

    @property
    def n_tokens(self):
        return self.out.shape[0]


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------


def _prefix(tensors):  # {name: array} -> "" or e.g. "bert."
    hits = [k[: -len(WORD)] for k in tensors if k.endswith(WORD)]
    if len(hits) != 1:
        raise ValueError(f"tensors must hold exactly one '*{WORD}', found {len(hits)}")
    return hits[0]


def _layer_count(tensors, prefix):  # -> number of encoder layers, checked to be 0..L-1
    head = prefix + "encoder.layer."
    found = {int(k[len(head) :].split(".", 1)[0]) for k in tensors if k.startswith(head)}
    n = len(found)
    if n == 0 or found != set(range(n)):
        raise ValueError(f"tensors must hold encoder layers 0..L-1, found {sorted(found)}")
    return n


def _get(tensors, name, shape):  # -> float32 array of the given shape
    if name not in tensors:
        # TF-converted checkpoints name LayerNorm parameters gamma/beta
        alt = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        if alt not in tensors:
            raise ValueError(f"tensors lack {name!r}")
        name = alt
    a = tensors[name]
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(a.shape)}")
    return np.asarray(a, dtype=np.float32)


def _table(tensors, name, d_model):  # -> float32 [rows, d_model], any number of rows
    if name not in tensors:
        raise ValueError(f"tensors lack {name!r}")
    return _get(tensors, name, (np.shape(tensors[name])[0], d_model))


def _linear(tensors, name, d_in, d_out):  # -> (W [d_in, d_out], b [d_out]) from nn.Linear's [out, in]
    w = np.ascontiguousarray(_get(tensors, name + ".weight", (d_out, d_in)))
    # the transposed *view*, not a copy: nothing to copy at load time, and in Pyodide (no BLAS) core's
    # float32 product (einsum) is as fast on it as on a C-ordered W (16x384 @ 384x1536: 4.4-4.7 ms either
    # way), while NumPy's matmul there wants this layout too (9 ms against 19 ms)
    return w.T, _get(tensors, name + ".bias", (d_out,))


def load_weights(tensors, config=None):  # {name: array}, config.json dict | None -> BertWeights
    """Map Hugging Face BertModel tensors to one core.BlockParams per layer.

    Unused tensors (pooler, position_ids) are ignored; a missing or misshapen
    one raises ValueError naming it. ``config`` (the parsed config.json) is
    checked against what this code computes; None means all-MiniLM-L6-v2's.
    """
    cfg = dict(MINILM_CONFIG, **(config or {}))
    for key in ("hidden_act", "position_embedding_type"):
        if cfg[key] != MINILM_CONFIG[key]:
            raise ValueError(f"config {key}={cfg[key]!r} is not supported (only {MINILM_CONFIG[key]!r})")
    p = _prefix(tensors)
    vocab, d_model = tensors[p + WORD].shape
    n_heads = int(cfg["num_attention_heads"])
    assert d_model % n_heads == 0, f"n_heads={n_heads} must divide d_model={d_model}"
    first_ffn = p + "encoder.layer.0.intermediate.dense.weight"
    if first_ffn not in tensors:
        raise ValueError(f"tensors lack {first_ffn!r}")
    d_ff = tensors[first_ffn].shape[0]
    for key, want in (("hidden_size", d_model), ("vocab_size", vocab), ("intermediate_size", d_ff)):
        if key in cfg and cfg[key] != want:
            raise ValueError(f"config {key}={cfg[key]} but the tensors have {want}")

    word = tensors[p + WORD]
    if isinstance(word, np.ndarray):
        word = np.asarray(word, dtype=np.float32)  # else a lazy table (quantize.RowTable): keep it
    layers = []
    for i in range(_layer_count(tensors, p)):
        L = f"{p}encoder.layer.{i}."
        w_q, b_q = _linear(tensors, L + "attention.self.query", d_model, d_model)
        w_k, b_k = _linear(tensors, L + "attention.self.key", d_model, d_model)
        w_v, b_v = _linear(tensors, L + "attention.self.value", d_model, d_model)
        w_o, b_o = _linear(tensors, L + "attention.output.dense", d_model, d_model)
        w_1, b_1 = _linear(tensors, L + "intermediate.dense", d_model, d_ff)
        w_2, b_2 = _linear(tensors, L + "output.dense", d_ff, d_model)
        layers.append(
            core.BlockParams(
                w_q=w_q,
                w_k=w_k,
                w_v=w_v,
                w_o=w_o,
                b_q=b_q,
                b_k=b_k,
                b_v=b_v,
                b_o=b_o,
                # BERT's "attention.output.LayerNorm" is the post-attention LN (our ln1),
                # "output.LayerNorm" the post-FFN LN (our ln2)
                ln1_gamma=_get(tensors, L + "attention.output.LayerNorm.weight", (d_model,)),
                ln1_beta=_get(tensors, L + "attention.output.LayerNorm.bias", (d_model,)),
                w_1=w_1,
                b_1=b_1,
                w_2=w_2,
                b_2=b_2,
                ln2_gamma=_get(tensors, L + "output.LayerNorm.weight", (d_model,)),
                ln2_beta=_get(tensors, L + "output.LayerNorm.bias", (d_model,)),
            )
        )
    return BertWeights(
        word_embeddings=word,
        position_embeddings=_table(tensors, p + "embeddings.position_embeddings.weight", d_model),
        token_type_embeddings=_table(tensors, p + "embeddings.token_type_embeddings.weight", d_model),
        emb_ln_gamma=_get(tensors, p + "embeddings.LayerNorm.weight", (d_model,)),
        emb_ln_beta=_get(tensors, p + "embeddings.LayerNorm.bias", (d_model,)),
        layers=tuple(layers),
        n_heads=n_heads,
        eps=float(cfg["layer_norm_eps"]),
    )


# --------------------------------------------------------------------------
# the forward pass
# --------------------------------------------------------------------------


def _ids(name, ids, upper):  # -> int64 [n] in [0, upper)
    a = np.asarray(ids)
    if a.ndim != 1 or (a.dtype.kind not in "iu" and a.size):
        raise ValueError(f"{name} must be a 1-D integer array, got {a.dtype} of shape {a.shape}")
    if a.size and (a.min() < 0 or a.max() >= upper):
        raise ValueError(f"{name} must lie in [0, {upper}), got min {a.min()} max {a.max()}")
    return a.astype(np.int64)


def embed(weights, token_ids, token_type_ids=None):  # BertWeights, [n] int, [n] int | None -> EmbeddingTrace
    w = weights
    ids = _ids("token_ids", token_ids, w.vocab_size)
    n = ids.shape[0]
    if not 1 <= n <= w.max_positions:
        raise ValueError(f"token_ids must hold 1..{w.max_positions} tokens (learned positions), got {n}")
    types = _ids(
        "token_type_ids",
        np.zeros(n, np.int64) if token_type_ids is None else token_type_ids,
        w.token_type_embeddings.shape[0],
    )
    if types.shape != ids.shape:
        raise ValueError(f"token_type_ids must have the length of token_ids ({n}), got {types.shape[0]}")
    # in the tables' dtype (float32 from load_weights): core keeps it through every layer
    word = np.asarray(w.word_embeddings[ids])  # [n, d_model] (a RowTable dequantizes just these)
    position = np.asarray(w.position_embeddings[:n])  # positions 0..n-1
    token_type = np.asarray(w.token_type_embeddings[types])
    summed = word + position + token_type
    # core's LayerNorm, the very function the blocks use (it also returns the mean and std the views show)
    out, mean, std = core._layer_norm(summed, w.emb_ln_gamma, w.emb_ln_beta, w.eps)
    return EmbeddingTrace(
        token_ids=ids,
        token_type_ids=types,
        word=word,
        position=position,
        token_type=token_type,
        summed=summed,
        ln_mean=mean,
        ln_std=std,
        out=out,
        eps=w.eps,
    )


def forward(weights, token_ids, *, token_type_ids=None, settings=None):
    # BertWeights, [n] int -> (EmbeddingTrace, tuple of n_layers BlockTrace)
    # settings (core.Settings; None: as trained) act on every layer: the explorer's knobs act on the
    # whole model; the activation is the weights' own (a trained FFN knows no other)
    settings = core.Settings(activation=weights.activation) if settings is None else settings
    if settings.activation != weights.activation:
        raise ValueError(f"this model was trained with {weights.activation}; got activation {settings.activation!r}")
    emb = embed(weights, token_ids, token_type_ids)
    x, traces = emb.out, []
    for layer, params in enumerate(weights.layers):
        t = core.run_block(x, params, weights.n_heads, settings, layer=layer, eps=weights.eps)
        traces.append(t)
        x = t.out
    return emb, tuple(traces)


def sentence_embedding(hidden):  # [n, d_model] final hidden states -> [d_model], unit length
    # sentence-transformers' pooling for all-MiniLM-L6-v2: the mean over every
    # token ([CLS] and [SEP] included), then L2 normalisation
    v = np.mean(np.asarray(hidden, dtype=np.float64), axis=0)
    return v / np.linalg.norm(v)
