"""The selected head's attention weights as files a reader can download: CSV and JSON.

Pure functions of (state, computed), where `computed = state.compute(state)`:
they read the trace's numbers and format them, and compute no mathematics. The
worker hands `export(...)` (plain strings in a dict) to the page, which saves it.

CSV (`weights_csv`): one header line, then one row per (query i, key j), queries
in order and keys in order inside each query:

    query_index,query_token,key_index,key_token,weight,masked

* `weight` is A_ij of the selected head, written as the shortest decimal that
  reads back as exactly the trace's number (float64 for the designed model,
  float32 for the trained one), so nothing is lost.
* `masked` is 1 when the causal mask hides key j from query i (its weight is
  then 0), else 0.
* No comment lines, no byte-order mark, RFC 4180 quoting from the `csv` module
  (CRLF line ends): spreadsheets, pandas and R open it as it is.
* Formula injection: a spreadsheet runs a cell that starts with `=`, `+`, `-`
  or `@` (and some treat a leading tab or carriage return the same way) as a
  formula. The tokenizer makes `=`, `+`, `-` and `@` tokens of their own, so
  a token column cell that starts with one of these characters is written with
  a single quote in front: the token `=` is written `'=`. Strip one leading
  `'` from a token cell that starts with `'` followed by one of these characters
  to get the token back. Numbers are never prefixed.

JSON (`weights_json`): one object whose shape is JSON_SHAPE_DOC below.
"""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np

CSV_COLUMNS = ("query_index", "query_token", "key_index", "key_token", "weight", "masked")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list of cell starts a spreadsheet may evaluate
JSON_FORMAT = "attention-explorer/weights"
JSON_VERSION = 1  # bump when a key changes meaning or goes away; new keys may be added within a version
KINDS = {"csv": "text/csv;charset=utf-8", "json": "application/json"}  # kind -> MIME type

JSON_SHAPE_DOC = """\
```jsonc
{
  "format": "attention-explorer/weights", // always this string
  "version": 1,                           // the shape's version
  "sentence": "The cat sat down because it was tired",  // the text as typed
  "tokens": ["The", "cat", "..."],        // n tokens as the model sees them; index i is token i below
  "model": {"id": "designed", "name": "Designed model (1 layer × 4 heads)"},  // which model
  "layer": 0,                             // 0-based layer index (the page says "Layer 1")
  "head": {"index": 0, "name": "Coreference"},  // 0-based index within the layer (the page says "Head 1")
  "temperature": 1.0,                     // T
  "dk_scale": 8.0,                        // the √d_k actually divided by (the slider may move it)
  "d_k": 64,                              // the head's true dimension d_k
  "causal": false,                        // whether the causal mask was on
  "query": 5,                             // the selected query token's index
  "weights": [[0.97, 0.01, "..."], "..."],  // n × n numbers: weights[i][j] = A_ij, row i = query i,
                                          // column j = key j; each row sums to 1 (masked keys are 0)
  "mask": [[true, false, "..."], "..."]   // n × n booleans: mask[i][j] is true when query i MAY
                                          // attend to key j (false = hidden by the causal mask)
}
```

A_ij = softmax_j(Q_i·K_jᵀ / (dk_scale · temperature)) for the head named in
`head`. Numbers are the trace's (float64, or float32 for the trained model),
written as the shortest decimal that reads back exactly. The file is UTF-8 (tokens in any script
appear as themselves)."""


def _checked(state, computed):
    """The selected head's weights [n, n] and the mask [n, n], after checking computed belongs to state."""
    trace = computed.trace
    n = len(computed.tokens)
    assert tuple(computed.tokens) == tuple(state.tokens), "exports: computed was made for another sentence"
    assert trace.weights.shape == (trace.n_heads, n, n), f"exports: weights shape {trace.weights.shape}, n = {n}"
    assert 0 <= state.head < trace.n_heads, f"exports: head {state.head} out of range 0..{trace.n_heads - 1}"
    return trace.weights[state.head], trace.mask


def _plain_rows(weights) -> list:
    """[n, n] -> nested lists of floats whose repr is the shortest decimal that reads back as the
    trace's own number: float64 as it is; float32 (the trained model) through its own shortest
    decimal, so 0.1f is written 0.1, not 0.10000000149011612."""
    if weights.dtype == np.float32:
        return [[float(str(v)) for v in row] for row in weights]
    return weights.tolist()


def _cell_text(token: str) -> str:
    """A token as written in a CSV cell: formula starts get a leading ' (see the module docstring)."""
    return "'" + token if token.startswith(FORMULA_STARTS) else token


def weights_csv(state, computed) -> str:
    """The selected head's attention weights, one CSV row per (query, key); see the module docstring."""
    weights, mask = _checked(state, computed)
    toks = [_cell_text(t) for t in computed.tokens]
    rows = _plain_rows(weights)  # plain floats: repr gives the shortest exact decimal
    allowed = mask.tolist()
    out = io.StringIO()
    writer = csv.writer(out)  # excel dialect: RFC 4180 quoting, CRLF line ends
    writer.writerow(CSV_COLUMNS)
    for i, q_tok in enumerate(toks):
        for j, k_tok in enumerate(toks):
            writer.writerow((i, q_tok, j, k_tok, repr(rows[i][j]), 0 if allowed[i][j] else 1))
    return out.getvalue()


def weights_object(state, computed) -> dict:
    """The JSON export as a plain dict (the shape in JSON_SHAPE_DOC)."""
    weights, mask = _checked(state, computed)
    trace = computed.trace
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "sentence": state.text,
        "tokens": list(computed.tokens),
        "model": {"id": state.model, "name": computed.model.name},
        "layer": state.layer,
        "head": {"index": state.head, "name": computed.heads[state.head].name},
        "temperature": float(trace.temperature),
        "dk_scale": float(trace.scale),
        "d_k": int(trace.d_head),
        "causal": bool(state.causal),
        "query": state.query,
        "weights": _plain_rows(weights),
        "mask": mask.tolist(),
    }


def _dumps(value, indent: int = 1) -> str:
    # allow_nan=False: the core promises finite weights; a NaN would make invalid JSON, so fail loudly
    return json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)


def weights_json(state, computed) -> str:
    """The selected head's attention weights and their settings as JSON (shape: JSON_SHAPE_DOC).

    Indented by one space, like json.dumps(indent=1), except that each matrix row
    (and the token list) stays on one line, so the file reads as a matrix.
    """
    lines = []
    for key, value in weights_object(state, computed).items():
        if key in ("weights", "mask"):
            rows = ",\n  ".join(_dumps(row, None) for row in value)
            text = f"[\n  {rows}\n ]" if value else "[]"
        elif key == "tokens":
            text = _dumps(value, None)
        else:
            text = _dumps(value).replace("\n", "\n ")  # nested objects one level deeper
        lines.append(f" {_dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _short_number(x: float) -> str:
    """1.0 -> '1', 0.5 -> '0.5', 2.8284 -> '2.828': at most 3 decimals, no exponent."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def filename(state, computed, kind: str) -> str:
    """A download name such as 'attention-head1-coreference-t1-dk8.csv'.

    Only [a-z0-9-.] characters (lower case, so 't1' is T = 1 and 'dk8' is the
    √d_k of 8 divided by); built from the settings (1-based head number as
    the page shows it, the head's name, T, the √d_k divided by, causal), never
    from the reader's sentence.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown export kind {kind!r}: choose one of {', '.join(KINDS)}")
    parts = [
        "attention",
        f"head{state.head + 1}",
        _slug(computed.heads[state.head].name),
        f"t{_short_number(state.temperature)}",
        f"dk{_short_number(state.dk_scale)}",
    ]
    if state.causal:
        parts.append("causal")
    return "-".join(parts) + "." + kind


def export(state, computed, kind: str) -> dict:
    """{"filename", "mime", "text"} for kind "csv" or "json": plain data for the worker boundary."""
    if kind not in KINDS:
        raise ValueError(f"unknown export kind {kind!r}: choose one of {', '.join(KINDS)}")
    text = weights_csv(state, computed) if kind == "csv" else weights_json(state, computed)
    return {"filename": filename(state, computed, kind), "mime": KINDS[kind], "text": text}
