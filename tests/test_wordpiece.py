"""The trained model's tokenizer: the same word pieces and ids as Hugging Face's, and the 64-piece limit.

The reference is Hugging Face `tokenizers` (Rust; a test-only dependency,
pinned in pyproject.toml), set up as all-MiniLM-L6-v2's tokenizer is: BERT
WordPiece, uncased, over the model's own vocab.txt. Every expectation here
comes from that reference, never from wordpiece.py's output.
"""

from __future__ import annotations

import ast
import sys
import unicodedata
from pathlib import Path

import pytest
from tokenizers import BertWordPieceTokenizer

import build
from attention_explorer.models import wordpiece
from attention_explorer.models.wordpiece import MAX_PIECES, WordPiece
from attention_explorer.tokens import TokenError

VOCAB = build.cached_file("minilm", "vocab.txt")  # fetched and verified by `python build.py`

# Hand-written: everyday sentences, and the edges a reader's text reaches.
SENTENCES = [
    # everyday English, the presets' kind of sentence
    "The cat sat on the mat.",
    "The trophy didn't fit in the suitcase because it was too big.",
    "The animal didn't cross the street because it was too tired.",
    "Time flies like an arrow; fruit flies like a banana.",
    "The keys to the cabinet are on the table.",
    "She said that he said that they would come tomorrow.",
    "Colorless green ideas sleep furiously.",
    "The old man the boats.",
    "Buffalo buffalo Buffalo buffalo buffalo buffalo Buffalo buffalo.",
    "Yes.",
    "Why?",
    "a",
    # contractions and possessives, straight and typographic apostrophes
    "I can't, won't, shouldn't've and y'all'd've.",
    "It's John's dog, not the Smiths' cat.",
    "It\u2019s Mary\u2019s book \u2014 isn\u2019t it?",
    "rock 'n' roll, '90s music, o'clock",
    # hyphenation and dashes
    "A well-known state-of-the-art, mother-in-law-approved e-mail.",
    "Pages 10\u201320 were re-read\u2014twice\u2010over \u2212 5 \u2012 6.",
    "co-operate vs. cooperate; pre- and post-war",
    # digits and numbers
    "In 2024, 3.14159 \u00d7 2 = 6.28318 and 1,000,000 > 999,999.",
    "Call +1 (555) 010-9999 or 0800 123 456 before 09:30.",
    "The 1st, 2nd, 3rd and 4th places; 50% off; \u20ac12.50 / $9.99 / \u00a35.",
    "Version 2.0.1-beta+build.7 fixed bug #1234.",
    "\u0661\u0662\u0663 \u0967\u0968\u0969 \uff11\uff12\uff13 \u00bd \u2153 \u00b2 \u2460",
    # punctuation of every kind
    "Wait... what?! No!!! Really???",
    "\"Quoted\", 'single', \u201ccurly\u201d, \u2018also\u2019, \u00abguillemets\u00bb and \u201elow\u201c.",
    "(round) [square] {curly} <angle> \u3010lenticular\u3011",
    "a_b a-b a.b a,b a;b a:b a!b a?b a/b a\\b a|b a~b a`b a^b a$b a%b a&b a*b a+b a=b a@b a#b",
    "\u00bfD\u00f3nde est\u00e1? \u00a1Aqu\u00ed!",
    "Ellipsis\u2026 bullet \u2022 section \u00a7 pilcrow \u00b6 dagger \u2020 degree 20\u00b0C",
    # URLs, e-mail, code
    "See https://example.com/path/to/page?query=1&x=y#section for details.",
    "Mail me at first.last+tag@sub.example.co.uk or visit www.example.org.",
    "def f(x): return x ** 2  # squares",
    "<img src=x onerror=alert(1)>",
    "C:\\Users\\me\\file_name.txt and /usr/local/bin/python3.12",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
    # mixed case, all caps
    "NASA and the FBI met at McDonald's in the USA.",
    "THIS IS A SENTENCE IN ALL CAPS WITH ACRONYMS LIKE HTML AND JSON.",
    "iPhone eBay YouTube PowerPoint macOS",
    "tHe QuIcK bRoWn FoX",
    # accents and diacritics (Latin)
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 fa\u00e7ade co\u00f6perate \u00fcber Stra\u00dfe.",
    "Cr\u00e8me br\u00fbl\u00e9e, pi\u00f1a colada, jalape\u00f1o, smörgåsbord.",
    "Zo\u00eb Bront\u00eb and Ren\u00e9e Fleming sang in S\u00e3o Paulo.",
    "\u0141\u00f3d\u017a, Krak\u00f3w, Gda\u0144sk; \u010cesk\u00e9 Bud\u011bjovice; Reykjav\u00edk; \u0130stanbul.",
    "\u00c5ngstr\u00f6m \u00c6sir \u0152uvre \u00d8resund \u00d0\u00f3r \u00de\u00f3r",
    "Vi\u1ec7t Nam, H\u00e0 N\u1ed9i, Th\u00e0nh ph\u1ed1 H\u1ed3 Ch\u00ed Minh.",
    # other scripts
    "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 and "
    "\u1f48\u03b4\u03c5\u03c3\u03c3\u03b5\u03cd\u03c2 sailed home.",
    "\u041c\u043e\u0441\u043a\u0432\u0430 \u2014 \u0441\u0442\u043e\u043b\u0438\u0446\u0430 "
    "\u0420\u043e\u0441\u0441\u0438\u0438. \u0401\u043b\u043a\u0430!",
    "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd \u05e2\u05d5\u05dc\u05dd, "
    "\u05de\u05b7\u05d4 \u05e9\u05dc\u05d5\u05de\u05da?",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645\u060c "
    "\u0643\u064e\u064a\u0652\u0641\u064e \u062d\u064e\u0627\u0644\u064f\u0643\u061f",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e\u0964 "
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a "
    "\u0e1b\u0e23\u0e30\u0e40\u0e17\u0e28\u0e44\u0e17\u0e22",
    "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0 \u0532\u0561\u0580\u0565\u0582 \u1230\u120b\u121d",
    # CJK, kana, Hangul, full-width forms
    "\u6211\u7231\u81ea\u7136\u8bed\u8a00\u5904\u7406\u3002",
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002",
    "\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3068\u6f22\u5b57",
    "\ud55c\uad6d\uc5b4\ub294 \uc7ac\ubbf8\uc788\uc5b4\uc694!",
    "Mixing English\u548c\u4e2d\u6587in one\u53e5\u5b50.",
    "\uff28\uff45\uff4c\uff4c\uff4f\uff0c\u3000\uff37\uff4f\uff52\uff4c\uff44\uff01",
    "\u8c48\uf900\u6ed1\uf901 \U00020000\U0002a6d6 \U0002b820\U0002b920 x\U0002b820y x\U0002b920y \u3400",
    # emoji and symbols
    "I love pizza \U0001f355 and cats \U0001f431!",
    "Family: \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466, "
    "thumbs \U0001f44d\U0001f3fd, flag \U0001f1eb\U0001f1f7.",
    "\u2764\ufe0f \u2603 \u2600\ufe0f \u263a \u2714 \u2716 \u2605 \u2192 \u21d2 \u221e \u2211 \u221a",
    "\U0001f970\U0001f97a\U0001fae0 new emoji and old \U0001f600",
    "Math: \u03b1 + \u03b2 \u2264 \u03b3, \u2200x \u2203y, x\u00b2 + y\u00b2 = z\u00b2, \u222b f(x) dx",
    "Trademarks \u2122 \u00ae \u00a9 and ligatures \ufb01 \ufb02 \ufb00",
    # special tokens typed in the text (Hugging Face takes exact-case ones as those tokens)
    "Use [MASK] to hide a word.",
    "[CLS] is first and [SEP] is last.",
    "lower [cls] [sep] [mask] are plain text",
    "Glued[SEP]tokens and [PAD][UNK] pairs",
    "Almost [SEP ] [ SEP] [SEP[SEP]]",
    # whitespace, control and invisible characters
    "  leading and trailing spaces  ",
    "tabs\tand\nnewlines\r\nand\u000bvertical\u000cfeeds",
    "non\u00a0breaking\u2009thin\u3000ideographic\u2003em spaces",
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffBOM\u00adsoft hyphen",
    "null\x00char and \ufffd replacement and \x07bell\x1b[0m escape",
    "line\u2028separator\u2029paragraph\x85next line",
    "private \ue000 use \U000f0000 area",
    "bidi \u202ehidden\u202c marks \u200e\u200f",
    # words longer than any vocabulary entry, and longer than 100 characters
    "Supercalifragilisticexpialidocious is antidisestablishmentarianism.",
    "Pneumonoultramicroscopicsilicovolcanoconiosis and floccinaucinihilipilification.",
    "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch station",
    "x" * 100 + " boundary",
    "y" * 101 + " over the limit",
    "ab" * 60 + " long alternation",
    "\u00e9" * 101 + " accented and long",
    "e\u0301" * 60 + " decomposed accents make it long before stripping",
    "Donaudampfschifffahrtsgesellschaftskapit\u00e4nswitwe",
    "qwxzjqwxzj zzzzzz xqxqxq",
    "1234567890123456789012345678901234567890",
    # sentences long enough to pass the 64-piece limit
    "The quick brown fox jumps over the lazy dog while the five boxing wizards jump quickly, "
    "and a wizard's job is to vex chumps quickly in fog; meanwhile, sphinx of black quartz, judge my vow.",
    ", ".join(str(n) for n in range(40)),
]


def _variants(s: str) -> list[str]:
    """Systematic variants of one sentence: case, decomposed accents, and messy whitespace."""
    return [
        s.upper(),
        s.title(),
        unicodedata.normalize("NFD", s),
        "\t " + s.replace(" ", "  \n ") + " \r\n",
        s.replace(" ", "\u00a0").replace("e", "e\u200b"),
        s.replace(" ", ""),
    ]


CORPUS = list(dict.fromkeys(SENTENCES + [v for s in SENTENCES for v in _variants(s)]))


@pytest.fixture(scope="module")
def reference():
    return BertWordPieceTokenizer(str(VOCAB), lowercase=True)  # as all-MiniLM-L6-v2's tokenizer.json


@pytest.fixture(scope="module")
def wp():
    return WordPiece.from_text(VOCAB.read_text(encoding="utf-8"))


def test_corpus_is_large_and_varied():
    """The equality below is only as strong as the corpus: at least 200 different sentences."""
    assert len(CORPUS) >= 200, len(CORPUS)


def test_vocabulary_ids_are_the_line_numbers_the_reference_reads(wp, reference):
    assert wp.vocab == reference.get_vocab()


@pytest.mark.parametrize("text", CORPUS, ids=[f"s{i}" for i in range(len(CORPUS))])
def test_word_pieces_equal_the_reference(wp, reference, text):
    """Cleaning, CJK splitting, accents, lowercase, punctuation and WordPiece all agree with Hugging Face."""
    want = reference.encode(text, add_special_tokens=False).tokens
    assert wp.word_pieces(text) == want, f"text {text!r}"


@pytest.mark.parametrize("text", CORPUS, ids=[f"s{i}" for i in range(len(CORPUS))])
def test_tokenize_and_encode_equal_the_reference_within_the_limit(wp, reference, text):
    """[CLS] ... [SEP] with the reference's ids; over 64 pieces, or with no piece at all, a TokenError."""
    want = reference.encode(text)
    if len(want.tokens) > MAX_PIECES or len(want.tokens) == 2:
        with pytest.raises(TokenError):
            wp.tokenize(text)
        return
    assert wp.tokenize(text) == want.tokens, f"text {text!r}"
    assert wp.encode(text) == want.ids, f"text {text!r}"


def test_corpus_reaches_the_edges(reference):
    """Some sentences pass the 64-piece limit, some words are [UNK], some special tokens are typed."""
    encodings = [reference.encode(t) for t in CORPUS]
    assert sum(len(e.tokens) > MAX_PIECES for e in encodings) >= 2
    assert sum("[UNK]" in e.tokens[1:-1] for e in encodings) >= 10
    assert sum(any(p.startswith("##") for p in e.tokens) for e in encodings) >= 100
    assert sum("[MASK]" in e.tokens for e in encodings) >= 2


def test_64_pieces_pass_and_65_are_refused_with_a_specific_message(wp, reference):
    ok, over = "word " * (MAX_PIECES - 2), "word " * (MAX_PIECES - 1)
    assert len(reference.encode(ok).tokens) == MAX_PIECES
    assert len(reference.encode(over).tokens) == MAX_PIECES + 1
    assert len(wp.tokenize(ok)) == MAX_PIECES
    with pytest.raises(TokenError) as err:
        wp.tokenize(over)
    msg = str(err.value)
    assert "65 word pieces" in msg and "limit is 64" in msg, msg
    assert "[CLS] and [SEP]" in msg and "Shorten the sentence" in msg, msg


def test_the_message_counts_pieces_not_words(wp):
    """A reader with 20 words may still be over the limit: the message explains why."""
    text = " ".join(["Pneumonoultramicroscopicsilicovolcanoconiosis"] * 6)
    with pytest.raises(TokenError, match=r"has \d+ word pieces.*a long or rare word splits into several"):
        wp.tokenize(text)


def test_empty_or_invisible_text_asks_for_a_sentence(wp):
    for text in ("", "   ", "\x00\ufffd\u200b"):
        with pytest.raises(TokenError, match="Type a sentence"):
            wp.tokenize(text)


def test_pasted_novel_is_refused_before_tokenizing(wp):
    with pytest.raises(TokenError, match=r"characters long.*at most 64 word pieces"):
        wp.tokenize("word " * 1000)


def test_non_text_is_a_programming_error(wp):
    with pytest.raises(TypeError):
        wp.tokenize(None)


def test_a_vocabulary_without_the_special_tokens_is_refused():
    with pytest.raises(ValueError, match="special tokens"):
        WordPiece.from_text("a\nb\n")


def test_module_stands_alone():
    """Standard library only, and nothing from the package but tokens.TokenError: it runs in any worker."""
    tree = ast.parse(Path(wordpiece.__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert alias.name.split(".")[0] in sys.stdlib_module_names, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                assert (node.level, node.module, [a.name for a in node.names]) == (2, "tokens", ["TokenError"])
            else:
                assert node.module.split(".")[0] in sys.stdlib_module_names or node.module == "__future__"
