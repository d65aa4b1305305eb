"""BERT's uncased WordPiece tokenizer, in pure Python (Pyodide cannot load the Rust `tokenizers`).

It turns a sentence into the word pieces all-MiniLM-L6-v2 was trained on,
exactly as Hugging Face's BertWordPieceTokenizer (lowercase=True) does with
the model's vocab.txt; tests/test_wordpiece.py checks that on a corpus:

1. The five special tokens ([PAD] [UNK] [CLS] [SEP] [MASK]) typed in the text,
   case and brackets exact, are taken as those tokens, as Hugging Face does:
   the model then sees what it would see in sentence-transformers.
2. Clean: drop NUL, U+FFFD and every control, format, private-use and
   surrogate character except tab, CR and LF (which are whitespace).
3. Put spaces around CJK ideographs, so each is a word of its own.
4. Strip accents (NFD, then drop the non-spacing marks), then lowercase.
5. Split on whitespace, and around every punctuation character (BERT's
   definition: ASCII symbols such as $ + < = > ^ ` | ~ count too).
6. Each word becomes pieces by greedy longest match against the vocabulary;
   pieces after the first carry the "##" prefix. A word that cannot be split
   that way, or is longer than 100 characters, becomes [UNK].
7. [CLS] ... [SEP] around the sentence.

One known difference, on rare characters only: the reference classifies
punctuation, non-spacing marks and format characters with Unicode 8.0 tables
(2015), this module with those of the running Python (14.0 in CPython 3.11,
15.0 in Pyodide's 3.12). About 500 code points added or re-categorised since,
such as the marks of scripts encoded later (Newa, Adlam, Masaram Gondi) and
punctuation like U+2E43-2E4F, may split differently; everyday text in any
script, and emoji, split the same.

Standard library only; runs unchanged in CPython 3.11 and 3.12 (Pyodide).
"""

from __future__ import annotations

import re
import unicodedata

from ..tokens import TokenError

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
CONTINUATION = "##"  # marks a piece that continues the word before it
MAX_PIECES = 64  # [CLS] and [SEP] included (issue 10): the matrix stays readable, a forward pass short
MAX_WORD_CHARS = 100  # BERT's max_input_chars_per_word: a longer "word" is [UNK] outright
MAX_CHARS = 2000  # checked before tokenizing, so a pasted novel costs nothing; 64 pieces are far shorter

_SPECIAL_RE = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")

# BERT's "Chinese characters": the CJK Unified Ideographs blocks. Kana and Hangul are
# not in them, so Japanese kana and Korean words stay whole words (and split into pieces).
# Extension E starts at 0x2B920 here, not 0x2B820: the Rust reference has that typo, and it
# is the tokenizer sentence-transformers runs (Google's Python BERT says 0x2B820).
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_dropped(ch: str) -> bool:
    # Hugging Face's Rust normalizer (the reference) drops control, format, private-use and surrogate
    # characters (Python's BertTokenizer only the first two); unassigned code points (Cn) it keeps
    if ch in "\t\n\r":
        return False  # controls, but BERT counts them as whitespace
    return ch in "\x00\ufffd" or unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs")


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    # every non-alphanumeric printable ASCII character, although $ + < = > ^ ` | ~ are not Unicode P*
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch)[0] == "P"


def _normalize(text: str) -> str:
    """Steps 2-4: cleaned, CJK spaced, accents stripped, lowercased."""
    out = []
    for ch in text:
        if _is_dropped(ch):
            continue
        if _is_cjk(ch):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    text = unicodedata.normalize("NFD", "".join(out))
    # lowercase one character at a time, as the reference does: no final-sigma rule ("ΟΔΟΣ" -> "οδοσ")
    return "".join(ch.lower() for ch in text if unicodedata.category(ch) != "Mn")


def _split_words(text: str) -> list[str]:
    """Step 5: words and single punctuation characters, in order."""
    words = []
    for chunk in text.split():  # any Unicode whitespace: tab, no-break space, U+3000, U+2028, ...
        start = 0
        for i, ch in enumerate(chunk):
            if _is_punctuation(ch):
                if i > start:
                    words.append(chunk[start:i])
                words.append(ch)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class WordPiece:
    """A WordPiece vocabulary and the tokenizer over it (ids are line numbers of vocab.txt)."""

    specials = SPECIAL_TOKENS

    def __init__(self, vocab: dict[str, int], max_pieces: int = MAX_PIECES):
        missing = [t for t in SPECIAL_TOKENS if t not in vocab]
        if missing:
            raise ValueError(f"the vocabulary lacks the special tokens {missing}: is it a BERT vocab.txt?")
        self.vocab = vocab
        self.max_pieces = max_pieces
        self._longest = max(map(len, vocab))  # no match can be longer: bounds the greedy search

    @classmethod
    def from_text(cls, vocab_txt: str, **kwargs) -> "WordPiece":
        """From the text of a vocab.txt: one token per line, its id the line number (from 0)."""
        # split("\n"), not splitlines(): a token may itself contain U+2028 or U+0085
        lines = vocab_txt.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline that ends the last line
        return cls({line.rstrip("\r"): i for i, line in enumerate(lines)}, **kwargs)

    def word_to_pieces(self, word: str) -> list[str]:
        """Step 6 for one normalized word: greedy longest match first, else [UNK]."""
        if len(word) > MAX_WORD_CHARS:
            return [UNK]
        pieces, start = [], 0
        while start < len(word):
            prefix = CONTINUATION if start else ""
            for end in range(min(len(word), start + self._longest), start, -1):
                piece = prefix + word[start:end]
                if piece in self.vocab:
                    break
            else:
                return [UNK]  # one unmatched stretch makes the whole word unknown, as in BERT
            pieces.append(piece)
            start = end
        return pieces

    def word_pieces(self, text: str) -> list[str]:
        """The pieces of text, without [CLS]/[SEP] and without any length limit."""
        pieces = []
        for part in _SPECIAL_RE.split(text):
            if part in SPECIAL_TOKENS:
                pieces.append(part)
                continue
            for word in _split_words(_normalize(part)):
                pieces.extend(self.word_to_pieces(word))
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """[CLS] + pieces + [SEP]; raises TokenError with a reader-facing message."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if len(text) > MAX_CHARS:
            raise TokenError(
                f"That text is {len(text):,} characters long; the explorer takes one sentence "
                f"of at most {self.max_pieces} word pieces. Paste a single, shorter sentence."
            )
        pieces = [CLS] + self.word_pieces(text) + [SEP]
        if len(pieces) == 2:
            raise TokenError("Type a sentence: at least one word.")
        if len(pieces) > self.max_pieces:
            raise TokenError(
                f"That sentence has {len(pieces)} word pieces ([CLS] and [SEP] included); the limit is "
                f"{self.max_pieces}. Shorten the sentence (every punctuation mark is one piece, and a "
                "long or rare word splits into several)."
            )
        return pieces

    def encode(self, text: str) -> list[int]:
        """The ids of tokenize(text), as the model's embedding table indexes them."""
        return [self.vocab[p] for p in self.tokenize(text)]
