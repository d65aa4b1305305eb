"""Your own attention: the reader's Python attention function, compiled, checked and run by the models.

The page shows ``SOURCE``, the attention of one head written the way a reader would write it, and lets
the reader edit it (or pick one of the ready-made ``EDITS``). ``compile_attention`` turns the text into
the ``attention_fn`` that ``core.transformer_block`` and every model's ``forward(..., attention_fn=...)``
accept; every view then draws what that function produced.

    SOURCE                      the built-in attention, the same maths as core (tests hold it to ~1e-12)
    EDITS                       tuple of Edit(id, title, look_for, source): ready-made changes to SOURCE
    MAX_CHARS                   the longest code accepted (4,000 characters)
    CodeError(message, line)    what went wrong, as a sentence for the reader; .line: 1-based line in
                                the reader's code, or None; .head: the 0-based head being computed, or None
    compile_attention(source)   -> attention_fn(q, k, v, mask, temperature, scale, head) -> (z, weights);
                                raises CodeError; the function it returns raises CodeError too, and
                                has .source (the code) and .declares_head (does it take head?)
    check_source(source)        -> None | CodeError: the editor's cheap pre-check (compiles, runs nothing)
    z_matches_weights(trace)    -> bool [n_heads]: does each head's z equal weights @ v?

The reader's function is called once per head with ``q, k`` [n, d_k], ``v`` [n, d_v], ``mask`` [n, n]
bool (True = query i may look at key j), ``temperature`` and ``scale`` (floats: √d_k unless the √d_k
slider moved it); it may declare a 7th parameter named ``head``, and is then also told the head's
0-based index (``head=``; in the trained model the same index in every layer). Its arguments are its
own copies: writing into them changes nothing else. It runs in a fresh namespace with ``np``/``numpy``
and ``math`` and the normal builtins; nothing of the explorer is handed to it. The code only ever runs
in the reader's own browser, typed or pasted by the reader (never loaded from a link), so it is not
sandboxed: it is the reader's own Python.

What comes back is checked (a CodeError says what is wrong, in words for the reader):

* a pair ``(z, weights)`` of real numbers; ``weights`` of shape [n, n], ``z`` of shape [n, d_v];
* no NaN or infinity in either;
* no negative weight (down to -1e-6: rounding is forgiven);
* every row of ``weights`` sums to 1 (within 1e-6, or n float steps for float32 weights); a row whose
  keys are all masked may instead sum to 0 (the explorer's own masks never mask a whole row).

Not checked, on purpose: that masked keys get no weight (the mask is the reader's to use or ignore:
the ``causal`` edit makes its own), and that ``z`` equals ``weights @ v``: the reader may change how
values are mixed, and the model carries on with the z it is given. Views that draw z as the weighted
sum of the values can ask ``z_matches_weights(trace)`` whether that still holds.

Rows and keys in messages are numbered from 0, as in Python (``weights[3]`` is "row 3"); so is
CodeError.head, which messages leave out (the page knows the heads' names). Messages are plain text
with no markup characters of ours; they may quote the reader's own exception text (cut at 300
characters), which the page escapes like any text.

Pure Python + NumPy, no browser imports: runs unchanged in CPython and Pyodide.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Optional

import numpy as np

MAX_CHARS = 4000
FILENAME = "<your attention>"  # the reader's code in tracebacks; how its frames are found
SIGNATURE = "attention(q, k, v, mask, temperature, scale)"
MISSING = f"define a function {SIGNATURE} that returns (z, weights)"
_NEGATIVE_TOLERANCE = 1e-6
_SUM_TOLERANCE = 1e-6
_MAX_QUOTE = 300  # characters of the reader's exception text quoted in a message

SOURCE = """\
import numpy as np


def attention(q, k, v, mask, temperature, scale):
    # q, k: [n, d_k]  one head's queries and keys;  v: [n, d_v]  its values
    # mask: [n, n] bool, True where query i may look at key j
    # temperature, scale: numbers (scale is √d_k unless its slider moved)
    scores = q @ k.T / (scale * temperature)    # [n, n] query i · key j
    scores = np.where(mask, scores, -np.inf)    # masked keys: exp(-inf) = 0
    scores = scores - scores.max(axis=-1, keepdims=True)  # exp can't overflow
    weights = np.exp(scores)                    # [n, n]
    weights = weights / weights.sum(axis=-1, keepdims=True)  # rows sum to 1
    z = weights @ v                             # [n, d_v] each query's mix
    return z, weights
"""


@dataclass(frozen=True)
class Edit:
    """A ready-made change to the attention function, offered as a button."""

    id: str  # stable, for events and permalinks: "no-scaling"
    title: str  # a button's label: "Drop the √d_k scaling"
    look_for: str  # one line: what to look for in the pictures once it runs
    source: str  # the whole edited program (SOURCE with a few lines changed)


def _edit(old: str, new: str, source: str = SOURCE) -> str:
    """source with the one line(s) `old` replaced by `new` (import time: the edits follow SOURCE)."""
    assert source.count(old) == 1, f"edit: {old!r} is not exactly once in the source"
    return source.replace(old, new)


_SCALED = "    scores = q @ k.T / (scale * temperature)    # [n, n] query i · key j\n"
_MASKED = "    scores = np.where(mask, scores, -np.inf)    # masked keys: exp(-inf) = 0\n"
_SOFTMAX = """\
    scores = scores - scores.max(axis=-1, keepdims=True)  # exp can't overflow
    weights = np.exp(scores)                    # [n, n]
    weights = weights / weights.sum(axis=-1, keepdims=True)  # rows sum to 1
"""
_HEADER = "def attention(q, k, v, mask, temperature, scale):\n"

EDITS = (
    Edit(
        "no-scaling",
        "Drop the √d_k scaling",
        "Every row saturates: with scores √d_k times larger, nearly all of a row's weight lands on one "
        "key, and even a high temperature barely softens it.",
        _edit(_SCALED, "    scores = q @ k.T / temperature              # no √d_k: √d_k times larger\n"),
    ),
    Edit(
        "argmax",
        "Hard attention (argmax)",
        "Each row of the heatmap is one cell at full weight and the rest exactly 0; the temperature "
        "slider no longer changes anything.",
        _edit(
            _SOFTMAX,
            """\
    best = scores.argmax(axis=-1)               # [n] each query's top key
    weights = np.zeros_like(scores)
    weights[np.arange(len(q)), best] = 1.0      # one-hot: all on the top key
""",
        ),
    ),
    Edit(
        "relu",
        "ReLU instead of exp",
        "Keys with a negative score get exactly 0 and the rest share in proportion to their score, so "
        "rows are far less peaked; the temperature and √d_k sliders stop mattering (they scale every "
        "score alike, and normalising cancels that).",
        _edit(
            _MASKED + _SOFTMAX,
            """\
    weights = np.where(mask, np.maximum(scores, 0), 0)  # ReLU, not exp
    total = weights.sum(axis=-1, keepdims=True)
    # no positive score in a row: nothing to share, so every allowed key
    # gets the same weight (a row of zeros would not sum to 1)
    weights = np.where(total > 0, weights, mask)
    weights = weights / weights.sum(axis=-1, keepdims=True)  # rows sum to 1
""",
        ),
    ),
    Edit(
        "causal",
        "A causal mask, inside the function",
        "The upper-right triangle of every heatmap goes dark: each token looks only at itself and "
        "the tokens before it, so the first token can only attend to itself.",
        _edit(_SCALED, "    mask = np.tril(mask)                        # causal: query i sees keys 0..i\n" + _SCALED),
    ),
    Edit(
        "alibi",
        "ALiBi: distance costs score",
        "Weight drifts toward the diagonal: each token of distance costs 1 of score, so "
        "far keys fade unless their match is strong enough to pay for the distance.",
        _edit(
            _SCALED,
            _SCALED
            + """\
    slope = 1.0                                 # score lost per token of distance
    i = np.arange(len(q))
    distance = np.abs(i[:, None] - i[None, :])  # [n, n] |i - j|
    scores = scores - slope * distance          # ALiBi (Press et al. 2022)
""",
        ),
    ),
    Edit(
        "per-head-temperature",
        "A temperature per head",
        "The heads no longer share a temperature: from the same scores, the first head (×0.5) gets "
        "sharper and the fourth (×4) blurs; the trained model's heads repeat the cycle every four.",
        _edit(
            _HEADER,
            "def attention(q, k, v, mask, temperature, scale, head):\n",
            _edit(
                _SCALED,
                """\
    # head: this head's index, 0 for the first
    temperature = temperature * [0.5, 1, 2, 4][head % 4]
"""
                + _SCALED,
            ),
        ),
    ),
)


class CodeError(Exception):
    """The reader's code cannot run, or returned something attention cannot be.

    message: one sentence for the reader, starting "line N: " when a line is known (plain text; it may
    quote the reader's own exception text); line: that 1-based line in the reader's code, or None;
    head: the 0-based head being computed when it went wrong, or None (compiling, or no head known).
    """

    def __init__(self, message: str, line: Optional[int] = None, head: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.head = head

    def __repr__(self):
        return f"CodeError({self.message!r}, line={self.line!r}, head={self.head!r})"


# --------------------------------------------------------------------------
# compiling
# --------------------------------------------------------------------------


def _syntax_error(e: BaseException, source: str) -> CodeError:
    n_lines = max(1, source.count("\n") + (0 if source.endswith("\n") else 1))
    line = getattr(e, "lineno", None)
    msg = getattr(e, "msg", None) or str(e) or type(e).__name__
    if msg == "invalid syntax":  # Python's least helpful message: say where to look
        msg = "invalid syntax (a missing colon, bracket, comma or operator, here or on the line before?)"
    if not isinstance(line, int) or line < 1:
        return CodeError(msg[:1].upper() + msg[1:], None)
    line = min(line, n_lines)  # "unexpected end of file" can point past the last line
    return CodeError(f"line {line}: {msg}", line)


def _compile(source: str):  # -> (module ast, code object); raises CodeError
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if len(source) > MAX_CHARS:
        raise CodeError(
            f"Your code is {len(source):,} characters; the limit is {MAX_CHARS:,}: shorten it (comments count too)."
        )
    try:
        tree = ast.parse(source, FILENAME)
        return tree, compile(tree, FILENAME, "exec")  # the compiler finds more, e.g. 'return' outside a function
    except (SyntaxError, ValueError) as e:  # ValueError: a NUL character (Python 3.11)
        raise _syntax_error(e, source) from None
    except (RecursionError, MemoryError):
        raise CodeError("Your code is nested too deeply for Python to read.") from None


def _binds_attention(tree: ast.Module) -> bool:  # does the code define (or assign, or import) `attention`?
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "attention":
            return True
        if isinstance(node, ast.Name) and node.id == "attention" and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == "attention":
            return True
    return False


def check_source(source: str) -> Optional[CodeError]:
    """None if the code compiles and defines `attention`, else the CodeError to show (nothing is run)."""
    try:
        tree, _ = _compile(source)
    except CodeError as e:
        return e
    return None if _binds_attention(tree) else CodeError(MISSING)


def _reader_line(e: BaseException) -> Optional[int]:  # the innermost line of the reader's code in e's traceback
    line, tb = None, e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _runtime_error(e: BaseException, head: Optional[int] = None) -> CodeError:
    text = "" if isinstance(e, (SystemExit, KeyboardInterrupt)) else str(e)  # exit(): its text is its code
    if len(text) > _MAX_QUOTE:  # an exception can carry a whole array's repr
        text = text[: _MAX_QUOTE - 1] + "…"
    what = f"{type(e).__name__}: {text}" if text else type(e).__name__
    line = _reader_line(e)
    return CodeError(f"line {line}: {what}" if line is not None else what, line, head)


def _declares_head(fn) -> bool:  # checks fn can be called as attention(q, k, v, mask, temperature, scale)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to read (a builtin): the call will tell
        return False
    p = sig.parameters.get("head")
    head = p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    try:
        sig.bind(*range(6), **({"head": 0} if head else {}))
    except TypeError as e:
        code = getattr(fn, "__code__", None)
        line = code.co_firstlineno if code is not None and code.co_filename == FILENAME else None
        what = f"attention must take (q, k, v, mask, temperature, scale), and may add head: {e}"
        raise CodeError(f"line {line}: {what}" if line else what, line) from None
    return head


def compile_attention(source: str):
    """The reader's code -> attention_fn(q, k, v, mask, temperature, scale, head) -> (z, weights).

    Raises CodeError when the code is too long, does not compile, fails while it is run to define
    its function, or defines no usable `attention`. The returned function (core's attention_fn)
    calls the reader's `attention` (with head= only when it declares a parameter named head) and
    checks what comes back (module docstring); it raises CodeError, with .head set, when the
    reader's code raises or returns something that is not attention. NumPy's floating-point
    warnings are silenced while the reader's code runs: the checks report NaN and infinity instead.
    """
    _, code = _compile(source)
    namespace = {"__name__": "your_attention", "__builtins__": builtins, "np": np, "numpy": np, "math": math}
    try:
        with np.errstate(all="ignore"):
            exec(code, namespace)
    except BaseException as e:  # SystemExit, KeyboardInterrupt too: the reader's code, the reader's message
        raise _runtime_error(e) from None
    fn = namespace.get("attention")
    if not callable(fn):
        raise CodeError(MISSING)
    pass_head = _declares_head(fn)

    def attention_fn(q, k, v, mask, temperature, scale, head):
        # q, k [n, d_k], v [n, d_v], mask [n, n] bool, floats, int -> (z [n, d_v], weights [n, n]), checked
        try:
            with np.errstate(all="ignore"):
                out = fn(q, k, v, mask, temperature, scale, **({"head": head} if pass_head else {}))
        except BaseException as e:
            raise _runtime_error(e, head) from None
        try:
            return _checked(out, np.shape(q)[0], np.shape(k)[0], np.shape(v)[1], np.asarray(mask, bool))
        except CodeError as e:
            e.head = head
            raise

    attention_fn.source = source
    attention_fn.declares_head = pass_head
    return attention_fn


# --------------------------------------------------------------------------
# checking what the reader's function returned
# --------------------------------------------------------------------------


def _describe(x) -> str:  # a short phrase for what the function returned instead of a pair
    if x is None:
        return "None (is the return statement missing?)"
    if isinstance(x, np.ndarray):
        return f"one array of shape {x.shape}"
    if isinstance(x, (tuple, list)):
        return f"{len(x)} things"
    return f"a value of type {type(x).__name__}"


def _numbers(name: str, x) -> np.ndarray:  # -> float ndarray (float32 stays float32), or CodeError
    try:
        a = np.asarray(x)
    except Exception as e:  # a ragged list, say
        raise CodeError(f"{name} is not an array of numbers: {e}") from None
    if a.dtype.kind == "c":
        raise CodeError(f"{name} holds complex numbers: attention works with real numbers only")
    if a.dtype.kind not in "biufO":  # text, bytes, dates...
        holds = {"U": "text", "S": "bytes"}.get(a.dtype.kind, f"{a.dtype} values")
        raise CodeError(f"{name} is not an array of numbers (it holds {holds})")
    if a.dtype.kind != "f":
        try:
            a = a.astype(np.float64)
        except (TypeError, ValueError):
            raise CodeError(f"{name} is not an array of numbers (some of its entries are not numbers)") from None
    return a


def _first_row(bad: np.ndarray) -> int:  # bad: bool [n, m] -> the first row with a True
    return int(np.flatnonzero(bad.any(axis=-1))[0])


def _non_finite(name: str, a: np.ndarray) -> Optional[CodeError]:
    bad = ~np.isfinite(a)
    if not bad.any():
        return None
    r = _first_row(bad)
    if np.isnan(a[r]).any():
        return CodeError(f"{name} row {r} has NaN (not a number): did exp overflow, or a 0/0?")
    return CodeError(f"{name} row {r} has an infinite value: did exp overflow, or a division by 0?")


def _sum_text(s: float) -> str:  # enough digits that a sum which is not 1 does not print as "1"
    for digits in (3, 8, 17):
        text = f"{s:.{digits}g}"
        if float(text) != 1.0:
            return text
    return repr(s)


def _checked(out, n_q: int, n_k: int, d_v: int, mask: np.ndarray):
    # out: what attention returned; mask [n_q, n_k] bool -> (z [n_q, d_v], weights [n_q, n_k]) or CodeError
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise CodeError(f"attention must return two things, (z, weights); it returned {_describe(out)}")
    z, weights = _numbers("z", out[0]), _numbers("weights", out[1])
    if weights.shape != (n_q, n_k):
        raise CodeError(
            f"weights has shape {weights.shape}: expected {(n_q, n_k)}, one row per query and one column per key"
        )
    if z.shape != (n_q, d_v):
        raise CodeError(f"z has shape {z.shape}: expected {(n_q, d_v)}, one row per query, as wide as v")
    for name, a in (("weights", weights), ("z", z)):
        err = _non_finite(name, a)
        if err is not None:
            raise err
    negative = weights < -_NEGATIVE_TOLERANCE
    if negative.any():
        r = _first_row(negative)
        j = int(np.flatnonzero(negative[r])[0])
        raise CodeError(
            f"weights row {r} has a negative weight ({float(weights[r, j]):.3g} on key {j}): "
            "a weight says how much of a key to take, from 0 to 1"
        )
    sums = weights.sum(axis=-1, dtype=np.float64)  # [n_q]
    tol = max(_SUM_TOLERANCE, n_k * float(np.finfo(weights.dtype).eps))  # float32: n rounding steps
    ok = np.abs(sums - 1.0) <= tol
    ok |= ~mask.any(axis=-1) & (np.abs(sums) <= tol)  # a row with no key to look at may stay all zero
    if not ok.all():
        r = int(np.flatnonzero(~ok)[0])
        if not np.any(weights[r]):
            raise CodeError(f"weights row {r} is all zeros: each query must share a weight of 1 among its keys")
        raise CodeError(f"weights row {r} sums to {_sum_text(float(sums[r]))}: did you forget to normalise?")
    return z, weights


# --------------------------------------------------------------------------
# the page's own Python, kept from the reader's code
# --------------------------------------------------------------------------


def _kept_modules() -> list:
    """The modules whose names the reader's code could rebind to break the page: ours, NumPy's top level,
    math and builtins (the reader's function runs in the page's Python, so `import attention_explorer.core;
    attention_explorer.core.softmax = ...` would otherwise outlive it)."""
    import sys

    return [
        m
        for name, m in list(sys.modules.items())
        if m is not None
        and (
            name == "attention_explorer"
            or name.startswith("attention_explorer.")
            or name in ("numpy", "math", "builtins")
        )
    ]


@contextmanager
def page_kept():
    """Run the reader's code, then put back every name it rebound or deleted in the page's own modules,
    and delete what it added (other than submodules an import adds). If it changed anything, raise
    CodeError naming it (the last good view stays); the page's Python is as it was either way."""
    snapshots = [(m, dict(vars(m))) for m in _kept_modules()]
    try:
        yield
    finally:
        changed = []
        for module, before in snapshots:
            names = vars(module)
            for key, value in before.items():
                if names.get(key, _ABSENT) is not value:
                    names[key] = value
                    changed.append(f"{module.__name__}.{key}")
            for key in [k for k in names if k not in before and not inspect.ismodule(names[k])]:
                del names[key]
                changed.append(f"{module.__name__}.{key}")
        if changed:
            shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            raise CodeError(
                f"it changed the page's own Python ({shown}); that was undone. A function here may "
                "change only its own variables."
            )


_ABSENT = object()


def z_matches_weights(trace, rtol: float = 1e-5, atol: float = 1e-6) -> np.ndarray:
    """bool [n_heads]: is each head's output z (trace.head_outputs) the weighted sum weights @ v?

    Always True for the built-in attention (and for SOURCE and every edit); False for a head whose
    custom function mixed the values some other way, where a picture of z as the sum of weight × value
    would not add up. An ablated head (z set to 0 after the function) counts by what the function
    returned, which the trace no longer has: it reports True.
    """
    w, v, z = (np.asarray(a, dtype=np.float64) for a in (trace.weights, trace.v, trace.head_outputs))
    mixed = w @ v  # [n_heads, n, d_head]
    on = np.ones(w.shape[0], bool) if trace.head_on is None else np.asarray(trace.head_on, bool)
    same = np.array([np.allclose(z[h], mixed[h], rtol=rtol, atol=atol) for h in range(w.shape[0])])
    return same | ~on
