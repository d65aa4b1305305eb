"""Split a sentence into the tokens the explorer shows, one box per token.

Real models use learned sub-word vocabularies (BPE, WordPiece); an explainer
is clearer with whole words, so this tokenizer is a small, predictable rule
set instead, written so a reader can predict every box on the page:

* A *word* is a run of letters, digits and combining marks in any script
  (accented Latin, Greek, Cyrillic, Hebrew, Arabic, Devanagari...), so
  "café", "שלום" and "مرحبا" are one token each. Scripts written without
  spaces (Chinese, Japanese, Thai) come out as one token per unbroken run.
* Apostrophes and hyphens *inside* a word keep it together ("well-known",
  "o'clock"), with one exception borrowed from the Penn Treebank: the English
  clitics n't, 's, 're, 've, 'll, 'd and 'm become tokens of their own
  ("didn't" -> "did" + "n't", "it's" -> "it" + "'s", "can't" -> "ca" + "n't").
  The model's lexicon then sees a pronoun "it" and a verb "'s", which is what
  its coreference and verb heads need. Every token is still a substring of
  the text, in order.
* A number keeps its decimal point or thousands separator ("3.14", "1,000").
* Every punctuation mark is a token of its own ("..." is three tokens).
* Any other visible symbol (an emoji, "+", "<", "=") is a token of its own;
  an emoji built from several code points (skin tone, ZWJ family, flag,
  variation selector) stays one token.
* Whitespace, control characters and invisible format characters separate
  tokens and are dropped, so runs of spaces collapse.

Nothing here interprets the text: "<img src=x onerror=alert(1)>" is just
the tokens "<", "img", "src", "=", "x", ... (the page escapes what it shows).
"""

from __future__ import annotations

import unicodedata

MAX_TOKENS = 32  # the attention matrix must stay readable: 32x32 cells is the most a page width holds
MAX_CHARS = 2000  # checked before tokenizing, so a pasted novel costs nothing; a 32-token sentence is far shorter

# English clitics split off the end of a word (Penn Treebank convention), longest first
_CLITICS = ("n't", "'s", "'re", "'ve", "'ll", "'d", "'m")
_APOSTROPHES = "'\u2019"  # ASCII apostrophe and the typographic one (’)
_JOINERS = _APOSTROPHES + "-\u2010\u2011\u05be"  # apostrophes, hyphens, Hebrew maqaf: glue inside a word
_NUMBER_GLUE = ".,"  # inside a number: "3.14", "1,000"
_ZWJ, _ZWNJ = "\u200d", "\u200c"


class TokenError(ValueError):
    """The text cannot be shown as tokens; the message is meant for the reader (plain text)."""


def _is_word_char(ch: str) -> bool:
    # letters, digits (any script) and combining marks (accents, niqqud, harakat, virama)
    return unicodedata.category(ch)[0] in "LNM"


def _is_separator(ch: str) -> bool:
    # spaces, line breaks, control characters, invisible format characters (LRM, BOM, ...)
    return ch.isspace() or unicodedata.category(ch) in ("Zs", "Zl", "Zp", "Cc", "Cf")


def _is_emoji_modifier(ch: str) -> bool:
    # code points that extend the symbol before them into one visible emoji
    cp = ord(ch)
    return (
        0xFE00 <= cp <= 0xFE0F  # variation selectors (text/emoji style)
        or 0x1F3FB <= cp <= 0x1F3FF  # skin tones
        or 0xE0020 <= cp <= 0xE007F  # tag characters (subdivision flags)
        or cp == 0x20E3  # combining enclosing keycap
        or unicodedata.category(ch) == "Mn"
    )


def _is_regional_indicator(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF  # two of these make one flag


def _scan_word(text: str, i: int) -> int:
    """End index of the word starting at text[i] (a word character)."""
    n = len(text)
    j = i + 1
    while j < n:
        ch = text[j]
        nxt = text[j + 1] if j + 1 < n else ""
        if _is_word_char(ch):
            j += 1
        elif ch in _JOINERS and nxt and _is_word_char(nxt):
            j += 1  # "well-known", "didn't" (clitics are split afterwards)
        elif ch in _NUMBER_GLUE and nxt.isdigit() and text[j - 1].isdigit():
            j += 1  # "3.14", "1,000" (only between digits, so "cats,dogs" still splits)
        elif ch in (_ZWJ, _ZWNJ) and nxt and _is_word_char(nxt):
            j += 1  # Persian and Indic words use zero-width (non-)joiners inside words
        else:
            break
    return j


def _scan_symbol(text: str, i: int) -> int:
    """End index of the symbol (one visible emoji, at most) starting at text[i]."""
    n = len(text)
    j = i + 1
    if _is_regional_indicator(text[i]) and j < n and _is_regional_indicator(text[j]):
        return j + 1  # a flag: exactly two regional indicators
    while j < n:
        if _is_emoji_modifier(text[j]):
            j += 1
        elif text[j] == _ZWJ and j + 1 < n and not _is_separator(text[j + 1]) and not _is_word_char(text[j + 1]):
            j += 2  # a ZWJ sequence: family, profession, ...
        else:
            break
    return j


def _split_clitic(word: str) -> list[str]:
    """'didn't' -> ['did', "n't"]; a word without a final clitic comes back whole."""
    low = word.lower()
    for apostrophe in _APOSTROPHES:
        for clitic in _CLITICS:
            c = clitic.replace("'", apostrophe)
            if low.endswith(c) and len(word) > len(c):
                stem = word[: -len(c)]
                if clitic == "n't" or stem[-1] not in _JOINERS:
                    return [stem, word[-len(c) :]]
    return [word]


def _scan(text: str) -> list[str]:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if _is_separator(ch):
            i += 1
        elif _is_word_char(ch):
            j = _scan_word(text, i)
            out.extend(_split_clitic(text[i:j]))
            i = j
        elif unicodedata.category(ch)[0] == "P":
            out.append(ch)  # every punctuation mark on its own, even "..."
            i += 1
        else:
            j = _scan_symbol(text, i)
            out.append(text[i:j])
            i = j
    return out


def tokenize(text: str, start_token: str = "") -> list[str]:
    """The tokens of text, in order; raises TokenError with a reader-facing message. start_token: the
    token a model puts before them (the designed model's <s>), which its messages then count, as the
    page's hint ("at most 33 tokens") and token count ("9 tokens (8 from the sentence + start token
    <s>)") do."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    limit = MAX_TOKENS + (1 if start_token else 0)
    if len(text) > MAX_CHARS:
        raise TokenError(
            f"That text is {len(text):,} characters long; the explorer takes one sentence "
            f"of at most {limit} tokens. Paste a single, shorter sentence."
        )
    toks = _scan(text)
    if not toks:
        raise TokenError("Type a sentence: at least one word.")
    if len(toks) > MAX_TOKENS:
        counted = (
            f"makes {len(toks) + 1} tokens ({len(toks)} from the sentence + start token {start_token})"
            if start_token
            else f"has {len(toks)} tokens"
        )
        raise TokenError(
            f"That sentence {counted}; the limit is {limit}. "
            f"Shorten the sentence (every word, punctuation mark and symbol is one token)."
        )
    return toks


def word_span(tokens, j: int) -> tuple[int, int]:
    """(start, stop) of the whole word token j belongs to: a WordPiece word's pieces ("suit",
    "##case") together; any other token alone."""
    start = j
    while start > 0 and tokens[start].startswith("##"):
        start -= 1
    stop = j + 1
    while stop < len(tokens) and tokens[stop].startswith("##"):
        stop += 1
    return start, stop


def word_at(tokens, j: int) -> str:
    """The whole word token j belongs to, its word pieces joined back ("suit" + "##case" = "suitcase")."""
    start, stop = word_span(tokens, j)
    return tokens[start] + "".join(t[2:] for t in tokens[start + 1 : stop])
