"""Permalinks: the whole UI state in the URL fragment, and back.

    encode(state) -> "s=The+cat+sat&q=2&T=1.5"        (no leading '#'; "" for the default state)
    decode("#s=The+cat+sat&q=2&T=1.5") -> (State(...), [])
    decode("#T=warm&zz=1") -> (State(), ["Ignored the link's temperature: not a number.",
                                         "Ignored an unknown setting in the link: zz."])

The fragment is a query string (application/x-www-form-urlencoded, as
`urllib.parse.urlencode` writes it: '+' for a space, UTF-8 percent-escapes),
with one short key per State field, in the fixed order of `KEYS`, and only the
fields that differ from `State()` (plus the query whenever the model or sentence is
written: the query follows its word, so its index must be explicit). Floats are written with `:g` when that is
exact, else with `repr` (shortest exact form), so a link always reproduces the
state bit for bit: decode(encode(s)) == (s, []) for every state the page can
reach. The one exception: a sentence holding a lone UTF-16 surrogate (not
Unicode, so not expressible in UTF-8) is written with U+FFFD in its place.

A link comes from anywhere, so decode trusts nothing in it. It starts from
State() and applies each known key through `state.apply_event` (the one place
that validates and clamps), the sentence before the query. A value that is
malformed, out of range (where apply_event would clamp it) or rejected is
ignored: its field keeps the default, and the reader gets a short plain-text
notice naming the field and the reason. Notices never contain markup
characters and quote at most a short, plain-looking part of the bad value.
decode never raises. If a key appears more than once, the LAST value wins (as
a hand-edited link that appends "&T=2" expects), and a notice says so;
requested_model reads the model the same way, so the model downloaded is the
model shown. Numbers, and lists of them, are ASCII digits only.

A link's panel= is checked here for its form only (fields.PANEL_ID): which panels the page has is
page.py's to say, above this module. page.decode_link is decode with that check; the worker uses it.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import re
import zlib
from functools import lru_cache
from urllib.parse import quote_plus, unquote_to_bytes, urlencode

from . import state as st, tokens
from .fields import BY_KEY, BY_NAME, FIELDS

# Key in the link for each State field, in the order they are written and applied (fields.FIELDS:
# the model before what it decides, the sentence before the query, an index into it).
KEYS: dict[str, str] = {f.name: f.key for f in FIELDS if f.in_link}
FIELDS_BY_KEY = {key: f.name for key, f in BY_KEY.items()}  # link key -> State field

# The longest fragment a reachable state can need: a sentence of tokens.MAX_CHARS code points, each
# up to 4 UTF-8 bytes written as %XX (12 characters), plus the short numeric fields. Longer is not
# ours; refusing it up front keeps a hostile megabyte link cheap.
MAX_FRAGMENT_CHARS = 12 * tokens.MAX_CHARS + 1000

# What the reader reads in a notice, per field: "Ignored the link's <label>: <reason>."
LABELS = {f.name: f.label for f in FIELDS}
_CODES = tuple(f.name for f in FIELDS if f.kind == "code")
_EVENTS = {f.name: f.event for f in FIELDS}
_FLOATS = {f.name: f.limits for f in FIELDS if f.kind == "number"}
_COUNTS = {f.name: f.limits for f in FIELDS if f.kind == "count"}
_INTS = tuple(f.name for f in FIELDS if f.kind in ("index", "count"))
_BOOLS = tuple(f.name for f in FIELDS if f.kind == "flag")
_SETS = tuple(f.name for f in FIELDS if f.kind == "indices")
_TEXTS = tuple(f.name for f in FIELDS if f.kind == "text")

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_DIGITS = re.compile(r"[+-]?[0-9]+\Z")  # ASCII digits only (int() would also take "٣", " 3", "1_0")
_DIGIT_LIST = re.compile(r"(?:[0-9]{1,9}(?:_[0-9]{1,9})*)?\Z")  # "", "3", "0_13": ASCII digits only
_INT = re.compile(r"[+-]?[0-9]{1,9}\Z")  # 9 digits is far past every range
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?\Z")
_PLAIN = re.compile(r"[A-Za-z0-9_.\-]{1,24}\Z")  # what a notice may quote back to the reader
_MAX_NUMBER_CHARS = 40


assert set(KEYS) == {f.name for f in dataclasses.fields(st.State)} - {f.name for f in FIELDS if not f.in_link}, (
    "every State field a link carries needs a permalink key (and nothing else has one)"
)

# A link with code never runs it: the reader sees it in the editor and presses Run (issue 12).
PANEL_UNKNOWN = "not a panel of this page"  # the reason a link's panel= is ignored (page.decode_link too)

CODE_NOTICE = (
    "This link carries an attention function: it is in the editor below and was not run. "
    "Read it, then press Run to use it."
)
_MAX_CODE_BYTES = 64_000  # a decompressed link's code: far past the editor's limit, refused beyond


def _pack_code(source: str) -> str:
    """Code for a link: UTF-8, zlib-compressed, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(zlib.compress(source.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def _unpack_code(packed: str) -> str:
    """The inverse of _pack_code; raises ValueError with the reason (no zip bomb: the output is capped)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]*", packed):
        raise ValueError("not readable code")
    try:
        raw = base64.urlsafe_b64decode(packed + "=" * (-len(packed) % 4))
        inflate = zlib.decompressobj()
        data = inflate.decompress(raw, _MAX_CODE_BYTES)
        if inflate.unconsumed_tail or not inflate.eof:
            raise ValueError("too long or cut short")
        return data.decode("utf-8")
    except (ValueError, zlib.error, UnicodeError):
        raise ValueError("not readable code") from None


class _SentenceRejected(ValueError):
    """The tokenizer refused the link's sentence; its message is a whole sentence for the reader."""


def _number_text(x: float) -> str:
    """Compact and exact: '1.5', '8', '0.05'; the shortest repr when :g would round."""
    short = f"{x:g}"
    return short if float(short) == x else repr(x)


def _field_text(name: str, value) -> str:
    if name in _BOOLS:
        return "1" if value else "0"
    if name in _FLOATS:
        return _number_text(float(value))
    if name in _INTS:
        return str(int(value))
    if name in _SETS:
        return "_".join(str(int(i)) for i in value)
    if name in _CODES:
        return _pack_code(value)
    if name in _TEXTS:
        # lone surrogates cannot be UTF-8 encoded: write U+FFFD (the only lossy case; see module doc)
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return str(value)


@lru_cache(maxsize=8)
def _default_state(model: str) -> st.State:
    """What decoding a link naming only `model` gives: State() on that model, with its true √d_k
    ("": State() itself). Kept: a slider move encodes the URL, and State() validates its sentence."""
    if not model:
        return st.State()
    return dataclasses.replace(st.State(), dk_scale=st.description(model).true_dk_scale)


def encode(state: st.State) -> str:
    """The URL fragment (without '#') for state: only non-default fields, in KEYS order."""
    default = _default_state(state.model)
    if state.tour >= 0:  # decoding applies the tour step first (fields.FIELDS): what differs from the step
        default = st.apply_event(st.State(), {"type": "tour_step", "value": state.tour})
        if state.model != default.model:
            default = dataclasses.replace(default, dk_scale=st.description(state.model).true_dk_scale)
    changed = {name for name in KEYS if getattr(state, name) != getattr(default, name)}
    changed |= {"model"} if state.model != _default_state("").model else set()
    changed |= {"tour"} if state.tour >= 0 else set()
    if changed & {"model", "text"}:
        # the query is an index into the sentence and follows its word when the model or the sentence
        # changes (state._follow_query), so decoding them would move a query left at the default index
        changed.add("query")
    if "model" in changed:  # another model opens on a head of its own choosing (state._with_model)
        changed |= {"layer", "head"}
    pairs = [(key, _field_text(name, getattr(state, name))) for name, key in KEYS.items() if name in changed]
    return urlencode(pairs, quote_via=quote_plus)


def _unescape(raw: str) -> str:
    """Form-decoding that refuses what urlencode never writes; raises ValueError with the reason."""
    if _BAD_ESCAPE.search(raw):
        raise ValueError("bad percent-encoding")
    try:
        return unquote_to_bytes(raw.replace("+", " ")).decode("utf-8")
    except UnicodeError:
        raise ValueError("not valid UTF-8 text") from None


def _unescape_or(raw: str, fallback: str) -> str:
    try:
        return _unescape(raw)
    except ValueError:
        return fallback


def _quote(value: str) -> str:
    """'"tanh" is ' for a notice when the bad value is short and plain (letters, digits, . _ -), else ''."""
    return f'"{value}" is ' if _PLAIN.match(value) else ""


def _plain_name(key: str) -> str:
    return key if _PLAIN.match(key) else "(unreadable)"


def _parse(name: str, value: str):
    """The value for field name's event, or raise ValueError with the reason for the reader."""
    if name in _CODES:
        return _unpack_code(value)
    if name in _BOOLS:
        if value not in ("0", "1"):
            raise ValueError("use 1 or 0")
        return value
    if name in _FLOATS:
        if len(value) > _MAX_NUMBER_CHARS or not _FLOAT.match(value):
            raise ValueError("not a number")
        x = float(value)
        if not math.isfinite(x):
            raise ValueError("too large")
        return x
    if name in _SETS:
        if not _DIGIT_LIST.match(value):
            raise ValueError("not a list of whole numbers (write them as 0_13)")
        return value
    if name in _INTS:
        if not _DIGITS.match(value):
            raise ValueError("not a whole number")
        if not _INT.match(value):
            raise ValueError("out of range")  # more than 9 digits: no int() on a hostile 100 000-digit string
        return int(value)
    return value


def _apply(state: st.State, name: str, raw: str) -> st.State:
    """state with one field from the link applied; raises ValueError with the reason for the reader."""
    value = _parse(name, _unescape(raw))
    event = {"type": _EVENTS[name], "value": value}
    try:
        new = st.apply_event(state, event)
    except st.InputError as exc:
        if name in _TEXTS:
            raise _SentenceRejected(exc.message) from None  # the tokenizer's reason: it quotes no text
        field = BY_NAME[name]
        if field.kind == "code":
            raise ValueError("it is longer than the editor takes") from None
        if field.kind == "indices":
            raise ValueError(f"not a list of numbers from 0 to {st.extent(field.of, state) - 1}") from None
        if field.kind == "index":
            raise ValueError(f"{value} is out of range (0 to {st.extent(field.of, state) - 1})") from None
        if field.kind == "panel":
            raise ValueError(f"{_quote(value)}{PANEL_UNKNOWN}") from None
        if field.kind == "choice":
            allowed = [c for c in st.choices(field.of, state) if c]
            raise ValueError(f"{_quote(value)}not one of {', '.join(allowed)}") from None
        raise ValueError("not accepted") from None
    limits = _FLOATS.get(name) or _COUNTS.get(name)
    if limits and getattr(new, name) != value:  # apply_event clamped it: a link means exactly what it says
        lo, hi = limits
        raise ValueError(f"{value:g} is outside {lo:g} to {hi:g}")
    return new


def requested_model(fragment: str | None) -> str:
    """The model id a link's fragment names (its m=), or "" when it names none or an unreadable one.

    The worker asks before decoding: a model whose weights are downloaded on demand must be
    loaded before the link's sentence can be tokenized by it.
    """
    if not isinstance(fragment, str) or len(fragment) > MAX_FRAGMENT_CHARS:
        return ""
    key = BY_NAME["model"].key
    found = ""
    for pair in fragment.lstrip("#").split("&"):  # the last m= wins, as in decode
        k, _, value = pair.partition("=")
        if _unescape_or(k, "") == key:
            found = _unescape_or(value, "")
    return found


def decode(fragment: str | None) -> tuple[st.State, list[str]]:
    """The state a link's fragment (with or without '#') describes, and notices about what was ignored.

    Never raises: every unusable part is left at its default and explained in a notice.
    """
    if fragment is None:  # no fragment at all
        fragment = ""
    if not isinstance(fragment, str):
        return st.State(), ["Ignored the link's settings: they are not text."]
    if fragment.startswith("#"):
        fragment = fragment[1:]
    if len(fragment) > MAX_FRAGMENT_CHARS:
        return st.State(), [
            f"Ignored the link's settings: the link is {len(fragment):,} characters long, "
            f"more than the {MAX_FRAGMENT_CHARS:,} any view of the explorer needs."
        ]
    raw: dict[str, str] = {}  # field name -> raw value; a later duplicate replaces an earlier one
    repeated: dict[str, None] = {}  # keys given more than once, first-seen order
    unknown: dict[str, None] = {}  # raw keys, first-seen order, once each
    for pair in fragment.split("&"):
        if not pair:
            continue
        key_raw, _, value = pair.partition("=")
        try:
            key = _unescape(key_raw)
        except ValueError:
            key = None
        if key in FIELDS_BY_KEY:
            if FIELDS_BY_KEY[key] in raw:
                repeated[key] = None
            raw[FIELDS_BY_KEY[key]] = value
        else:
            unknown[key_raw] = None

    state, notices, rejected = st.State(), [], set()
    if repeated:
        names = ", ".join(f"{k}= ({LABELS[FIELDS_BY_KEY[k]]})" for k in repeated)
        notices.append(f"The link gives {names} more than once; the last one was used.")
    for name in KEYS:  # fixed order: text before query
        if name not in raw:
            continue
        if name in ("query", "pinned") and "text" in rejected:
            notices.append(f"Ignored the link's {LABELS[name]}: it points into the sentence that was ignored.")
            continue
        try:
            state = _apply(state, name, raw[name])
        except _SentenceRejected as exc:
            rejected.add(name)
            notices.append(f"Ignored the link's {LABELS[name]}. {exc}")
        except ValueError as exc:
            rejected.add(name)
            notices.append(f"Ignored the link's {LABELS[name]}: {exc}.")
        except Exception:  # a bug, not a bad link: keep the page usable (the tests assert this never shows)
            rejected.add(name)
            notices.append(f"Ignored the link's {LABELS[name]}: it could not be read.")
        else:
            if name in _CODES and getattr(state, name):
                notices.append(CODE_NOTICE)
    if unknown:
        names = [_plain_name(_unescape_or(k, "")) for k in unknown]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        notices.append(
            f"Ignored {'an unknown setting' if len(names) == 1 else 'unknown settings'} in the link: {shown}."
        )
    return state, notices
