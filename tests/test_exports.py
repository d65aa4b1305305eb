"""Downloads of the selected head's attention weights (py/attention_explorer/exports.py).

What the product promises: the CSV opens in ordinary tools (no comment lines,
exactly the documented columns, one row per query-key pair), carries the trace's
numbers without loss, cannot smuggle a formula into a spreadsheet, and keeps any
token intact; the JSON has the documented shape and the trace's numbers; file
names carry settings only, in safe characters, never the reader's text.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from attention_explorer import exports, state as st
from attention_explorer.models import designed as model

HOSTILE_TEXT = 'He said "=cmd()", +1 @home -x then <script>alert(1)</script> 1,000 times'


def make(**changes):
    s = dataclasses.replace(st.State(), **changes)
    return s, st.compute(s)


def read_csv(text):
    return list(csv.DictReader(io.StringIO(text, newline="")))


def untrap(cell: str) -> str:
    """A token cell back to the token: the documented reverse of the formula-injection prefix."""
    if cell.startswith("'") and cell[1:].startswith(exports.FORMULA_STARTS):
        return cell[1:]
    return cell


# ----------------------------------------------------------------------------- CSV


def test_csv_has_exactly_the_documented_columns_and_no_preamble():
    s, c = make()
    text = exports.weights_csv(s, c)
    assert text.startswith("query_index,query_token,key_index,key_token,weight,masked\r\n"), (
        "the first line must be the header: no comment lines, no byte-order mark"
    )
    reader = csv.DictReader(io.StringIO(text, newline=""))
    assert tuple(reader.fieldnames) == exports.CSV_COLUMNS
    rows = list(reader)
    assert all(None not in r and len(r) == 6 for r in rows), "every row has exactly the six columns"


@pytest.mark.parametrize("head", range(model.CONFIG.n_heads))
def test_csv_rows_are_every_query_key_pair_with_the_traces_exact_weights(head):
    s, c = make(head=head)
    rows = read_csv(exports.weights_csv(s, c))
    n = len(c.tokens)
    assert len(rows) == n * n
    assert [(int(r["query_index"]), int(r["key_index"])) for r in rows] == [(i, j) for i in range(n) for j in range(n)]
    got = np.array([float(r["weight"]) for r in rows]).reshape(n, n)
    assert np.array_equal(got, c.trace.weights[head]), "weights must read back as exactly the trace's float64s"
    assert np.allclose(got.sum(axis=1), 1.0, atol=1e-12), "each query's row is a softmax: sums to 1"
    assert [r["query_token"] for r in rows] == [t for t in c.tokens for _ in range(n)]
    assert [r["key_token"] for r in rows] == list(c.tokens) * n


def test_csv_masked_flags_follow_the_causal_mask():
    s, c = make(causal=True, head=2)
    rows = read_csv(exports.weights_csv(s, c))
    for r in rows:
        i, j = int(r["query_index"]), int(r["key_index"])
        assert r["masked"] == ("1" if j > i else "0"), f"({i}, {j}): a key after the query is masked"
        if j > i:
            assert float(r["weight"]) == 0.0, "a masked key gets no weight"
    by_query = {}
    for r in rows:
        by_query.setdefault(r["query_index"], 0.0)
        by_query[r["query_index"]] += float(r["weight"])
    assert all(abs(v - 1.0) < 1e-12 for v in by_query.values())


def test_csv_without_causal_mask_flags_nothing():
    s, c = make()
    assert {r["masked"] for r in read_csv(exports.weights_csv(s, c))} == {"0"}


def test_csv_keeps_hostile_tokens_and_defuses_formula_starts():
    """Commas and quotes are quoted by the csv module; =, +, -, @ starts get the documented ' prefix."""
    s, c = make(text=HOSTILE_TEXT)
    toks = list(c.tokens)
    assert {"=", "+", "-", "@", '"', ",", "<", "script", "1,000"} <= set(toks), toks
    rows = read_csv(exports.weights_csv(s, c))
    cells = [r["key_token"] for r in rows[: len(toks)]]
    assert [untrap(x) for x in cells] == toks, "every token round-trips"
    for cell in (r[k] for r in rows for k in ("query_token", "key_token")):
        assert not cell.startswith(exports.FORMULA_STARTS), f"cell {cell!r} would run as a formula"
    assert "'=" in cells and "'+" in cells and "'-" in cells and "'@" in cells
    assert '"' in cells and "1,000" in cells and "<" in cells


def test_csv_quoting_of_arbitrary_multi_character_tokens():
    """Tokens the tokenizer never makes, to test the writer itself: commas, quotes, formulas inside one cell."""
    s, c = make(text="a b c d e")  # the start token + 5 words: 6 tokens, as many as below
    toks = ("=cmd()", 'say "hi", then', "<script>", "+SUM(A1)", "@x", "plain")
    fake_state = SimpleNamespace(**{**dataclasses.asdict(s), "tokens": toks})
    fake = dataclasses.replace(c, run=dataclasses.replace(c.run, tokens=toks))
    rows = read_csv(exports.weights_csv(fake_state, fake))
    cells = [r["key_token"] for r in rows[:6]]
    assert cells == ["'=cmd()", 'say "hi", then', "<script>", "'+SUM(A1)", "'@x", "plain"]
    assert [untrap(x) for x in cells] == list(toks)


def test_csv_tokens_in_any_script_are_written_as_themselves():
    s, c = make(text="café שלום 猫 🐈‍⬛")
    rows = read_csv(exports.weights_csv(s, c))
    assert [r["key_token"] for r in rows[: len(c.tokens)]] == list(c.tokens)


# ----------------------------------------------------------------------------- JSON


def _check_shape(doc):
    """The shape documented in exports.JSON_SHAPE_DOC, checked key by key."""
    expected_keys = [
        "format",
        "version",
        "sentence",
        "tokens",
        "model",
        "layer",
        "head",
        "temperature",
        "dk_scale",
        "d_k",
        "causal",
        "query",
        "weights",
        "mask",
    ]
    assert list(doc) == expected_keys
    assert doc["format"] == "attention-explorer/weights" and doc["version"] == 1
    assert isinstance(doc["sentence"], str)
    n = len(doc["tokens"])
    assert n >= 1 and all(isinstance(t, str) for t in doc["tokens"])
    assert set(doc["model"]) == {"id", "name"} and all(isinstance(v, str) for v in doc["model"].values())
    assert isinstance(doc["layer"], int) and doc["layer"] >= 0
    assert set(doc["head"]) == {"index", "name"}
    assert isinstance(doc["head"]["index"], int) and isinstance(doc["head"]["name"], str)
    for key in ("temperature", "dk_scale"):
        assert isinstance(doc[key], float) and doc[key] > 0
    assert isinstance(doc["d_k"], int) and isinstance(doc["causal"], bool)
    assert isinstance(doc["query"], int) and 0 <= doc["query"] < n
    for key, kind in (("weights", float), ("mask", bool)):
        assert len(doc[key]) == n and all(len(row) == n for row in doc[key]), f"{key} is n × n"
        assert all(type(x) is kind for row in doc[key] for x in row), f"{key} holds {kind.__name__}s"


def test_json_shape_is_documented():
    doc = exports.JSON_SHAPE_DOC
    for key in (
        '"format"',
        '"version"',
        '"sentence"',
        '"tokens"',
        '"model"',
        '"layer"',
        '"head"',
        '"temperature"',
        '"dk_scale"',
        '"d_k"',
        '"causal"',
        '"query"',
        '"weights"',
        '"mask"',
    ):
        assert key in doc, f"JSON_SHAPE_DOC must describe {key}"
    assert doc.startswith("```") and doc.rstrip().count("```") == 2, "a markdown code block the README can quote"


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"causal": True, "head": 2},
        {"head": 1, "temperature": 0.3, "dk_scale": 3.5},
        {"text": HOSTILE_TEXT, "head": 3},
    ],
)
def test_json_matches_the_documented_shape_and_the_trace(changes):
    s, c = make(**changes)
    text = exports.weights_json(s, c)
    doc = json.loads(text)
    _check_shape(doc)
    assert doc["sentence"] == s.text and doc["tokens"] == list(c.tokens)
    assert doc["model"] == {"id": "designed", "name": model.DESCRIPTION.name} and doc["layer"] == 0
    assert doc["head"] == {"index": s.head, "name": model.HEADS[s.head].name}
    assert doc["temperature"] == c.trace.temperature and doc["dk_scale"] == c.trace.scale
    assert doc["d_k"] == c.trace.d_head == model.CONFIG.d_head
    assert doc["causal"] is s.causal and doc["query"] == s.query
    assert np.array_equal(np.array(doc["weights"]), c.trace.weights[s.head]), "exactly the trace's float64s"
    assert np.array_equal(np.array(doc["mask"]), c.trace.mask)
    assert np.allclose(np.array(doc["weights"]).sum(axis=1), 1.0, atol=1e-12)


def test_json_mask_is_true_where_the_query_may_attend():
    s, c = make(causal=True)
    mask = json.loads(exports.weights_json(s, c))["mask"]
    n = len(c.tokens)
    assert mask == [[j <= i for j in range(n)] for i in range(n)]


def test_json_keeps_text_readable_and_escapes_nothing_it_should_not():
    s, c = make(text="café said “hi” <b>")
    text = exports.weights_json(s, c)
    assert "café" in text and "“" in text, "ensure_ascii=False: tokens appear as themselves"
    assert json.loads(text)["sentence"] == "café said “hi” <b>"


# ----------------------------------------------------------------------------- file names and export()

SAFE_NAME = re.compile(r"^[a-z0-9.-]+$")


def test_filename_of_the_default_state():
    s = st.State()
    assert exports.filename(s, st.compute(s), "csv") == "attention-head1-coreference-t1-dk8.csv"
    assert exports.filename(s, st.compute(s), "json") == "attention-head1-coreference-t1-dk8.json"


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"head": 1, "temperature": 0.37, "causal": True},
        {"dk_scale": 2.8284271247461903, "head": 3},
        {"text": "../../etc/passwd <b>Evil</b> \\ C:\\x", "head": 2},
    ],
)
def test_filenames_are_safe_and_never_carry_the_readers_text(changes):
    s = dataclasses.replace(st.State(), **changes)
    for kind in ("csv", "json"):
        name = exports.filename(s, st.compute(s), kind)
        assert SAFE_NAME.match(name), name
        assert name.endswith("." + kind) and ".." not in name and not name.startswith(".")
        assert "passwd" not in name and "evil" not in name
        assert f"head{s.head + 1}" in name
        assert ("-causal" in name) == s.causal


def test_export_returns_plain_data_for_each_kind():
    s, c = make(head=2)
    csv_out = exports.export(s, c, "csv")
    json_out = exports.export(s, c, "json")
    assert set(csv_out) == set(json_out) == {"filename", "mime", "text"}
    assert all(isinstance(v, str) for v in (*csv_out.values(), *json_out.values()))
    assert csv_out["mime"].startswith("text/csv") and json_out["mime"] == "application/json"
    assert csv_out["text"] == exports.weights_csv(s, c) and json_out["text"] == exports.weights_json(s, c)
    assert csv_out["filename"] == "attention-head3-previous-token-t1-dk8.csv"


def test_export_rejects_an_unknown_kind_loudly():
    s, c = make()
    with pytest.raises(ValueError, match="csv"):
        exports.export(s, c, "xlsx")
    with pytest.raises(ValueError):
        exports.filename(s, st.compute(s), "../x")


def test_export_refuses_a_computation_of_another_sentence():
    s, _ = make()
    _, other = make(text="A completely different sentence")
    with pytest.raises(AssertionError, match="another sentence"):
        exports.weights_csv(s, other)
