"""A small English lexicon and tagger: the "knowledge" behind the illustrative model.

The designed model (designed.py) gives every token a vector of named, 0/1
features: part of speech, singular/plural, human/animal/thing, grammatical
role... A trained model learns such features in its earlier layers; ours is a
single block, so it gets them from this module instead, in three steps:

1. Look the word up (a few hundred common words, with their inflections).
   Unknown words are guessed from their spelling: "-ly" adverb, "-ous"/"-ful"/
   "-able" adjective, "-ing"/"-ed" verb, "-s" plural noun, a capitalised word
   inside a sentence a proper noun (a name, so human), digits a number, and
   anything else a singular noun. Guessed tokens carry the feature "guessed".
2. Pick one reading of an ambiguous word from its left neighbour: "the walk"
   is a noun, "they walk" a verb; "her" before a noun is a possessive; "'s"
   after a pronoun is "is", after a noun a possessive; "up" before a noun
   phrase is a preposition, otherwise an adverb particle ("sat down").
3. Chunk noun phrases and give roles: the last noun of a phrase is its head,
   the determiners/adjectives/numbers/possessives before it are *modifiers*;
   a head right after a preposition has no role; otherwise, in each clause
   (split at punctuation and conjunctions), the first head before the first
   verb is the *subject* (in a question, the first head after the auxiliary)
   and the heads after the verb are *objects*. A clause with no verb ("...,
   pears, bread and milk") continues the role of the phrase before it.

This is a toy tagger, right often enough to make the heads legible and wrong
in ways a reader can see: every feature is shown on the page.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

# ---------------------------------------------------------------------------
# parts of speech (each is also a feature name in model.FEATURE_NAMES)
# ---------------------------------------------------------------------------
DET, POSS, NOUN, PROPN, PRON = "determiner", "possessive", "noun", "proper noun", "pronoun"
VERB, AUX, ADJ, ADV, ADP = "verb", "auxiliary", "adjective", "adverb", "preposition"
CONJ, NUM, QW, NEG, INTJ = "conjunction", "number", "question word", "negation", "interjection"
COMMA, END, PUNCT, SYM = "comma", "sentence end", "other punctuation", "symbol"
POS_TAGS = (DET, POSS, NOUN, PROPN, PRON, VERB, AUX, ADJ, ADV, ADP, CONJ, NUM, QW, NEG, INTJ, COMMA, END, PUNCT, SYM)

NOMINAL = (NOUN, PROPN)  # what a noun phrase can end in
VERBAL = (VERB, AUX)

# ---------------------------------------------------------------------------
# word lists (lower case). "sg:pl" gives an irregular plural; "base:past" an irregular past.
# ---------------------------------------------------------------------------
_HUMAN_NOUNS = """
man:men woman:women boy girl child:children person:people kid baby teacher doctor nurse
student pupil king queen mother father mom dad sister brother son daughter husband wife:wives
uncle aunt grandmother grandfather grandma grandpa prince princess lady:ladies gentleman:gentlemen
guy friend neighbour neighbor farmer driver player singer artist writer author scientist
police:police officer soldier chef cook waiter waitress lawyer judge pilot captain
worker boss customer guest visitor stranger thief:thieves hero:heroes actor actress
parent cousin family:families team crowd girlfriend boyfriend engineer student clerk
baker butcher hunter fisherman:fishermen postman:postmen mayor president manager
""".split()

_MALE = set(
    """man men boy boys king kings father fathers dad dads brother brothers son sons
husband husbands uncle uncles grandfather grandfathers grandpa prince princes gentleman gentlemen
guy guys actor actors boyfriend boyfriends waiter waiters fisherman fishermen postman postmen""".split()
)
_FEMALE = set(
    """woman women girl girls queen queens mother mothers mom moms sister sisters
daughter daughters wife wives aunt aunts grandmother grandmothers grandma princess princesses
lady ladies actress actresses waitress waitresses girlfriend girlfriends""".split()
)

_ANIMAL_NOUNS = """
cat dog bird horse cow mouse:mice fox lion tiger bear fish:fish sheep:sheep rabbit duck chicken
monkey elephant snake wolf:wolves owl frog pig goat bee ant spider whale shark puppy:puppies
kitten animal pet deer:deer goose:geese squirrel parrot turtle camel donkey zebra giraffe
butterfly:butterflies fly:flies insect crow eagle hen dolphin penguin
""".split()

_THING_NOUNS = """
mat table chair house car book ball box door window tree cake apple water food bread trophy
suitcase bag road street city:cities town room bed kitchen garden park school river sea sky sun
moon rain snow day night morning evening afternoon time year week hour minute letter phone
computer key bottle cup glass plate hat shoe coat shirt bike train bus plane boat ship money
game song story:stories idea problem question answer word sentence music movie film picture
paper pen pencil bone milk fence wall floor roof hill mountain field forest lake island bridge
store shop office hospital library:libraries map gift toy dinner lunch breakfast party:parties
meeting class homework test report job rock stone tea coffee soup pizza sandwich cheese egg
flower grass leaf:leaves pear banana grape lemon plum carrot potato:potatoes wind storm fire ice light
clock watch lamp television radio cabinet
drawer shelf:shelves knife:knives fork spoon basket blanket pillow window gate yard wood
home village country:countries world earth ocean beach sand desert cloud weather thing
nothing:nothing something:something everything:everything lesson exam grade prize race match
ticket seat station airport hotel restaurant church castle tower wheel engine machine tool
hammer nail rope chain box candle mirror picture photo camera screen keyboard message email
noise sound voice language name number price cost plan rule law reason end start side top
bottom middle part piece way place point fact kind sort lot bit couple pair group line
""".split()

_PLURAL_ONLY = {
    "people": "human",
    "police": "human",
    "clothes": "thing",
    "scissors": "thing",
    "glasses": "thing",
    "trousers": "thing",
    "jeans": "thing",
    "pants": "thing",
}

# proper names: gendered first names, and places (inanimate)
_MALE_NAMES = set(
    """john james david paul mark peter tom bob michael robert william richard joseph
thomas charles daniel matthew george jack harry oliver noah liam ben sam adam luke max leo""".split()
)
_FEMALE_NAMES = set(
    """mary anna alice sarah emma lisa kate jane susan linda emily olivia sophia
mia lucy lily grace chloe ella julia laura rachel rose amy eve nora maria""".split()
)
_PLACE_NAMES = set(
    """paris london france england america europe africa asia china japan india
germany spain italy rome berlin tokyo york texas canada mexico brazil russia egypt""".split()
)

_VERBS = """
sit:sat run:ran eat:ate go:went chase see:saw like love hate want need know:knew think:thought
say:said tell:told give:gave take:took make:made come:came get:got find:found bring:brought
buy:bought catch:caught feel:felt leave:left meet:met read:read write:wrote speak:spoke sing:sang
drink:drank sleep:slept fly:flew fall:fell drive:drove ride:rode throw:threw break:broke win:won
lose:lost hold:held stand:stood hear:heard keep:kept teach:taught build:built send:sent
spend:spent sell:sold pay:paid put:put cut:cut hit:hit let:let set:set begin:began swim:swam
hide:hid bite:bit feed:fed fight:fought forget:forgot grow:grew draw:drew wear:wore choose:chose
become:became understand:understood lie:lay dig:dug shake:shook steal:stole wake:woke
walk jump play look open close help call ask answer start stop wait watch bark climb fit kick
push pull carry cry try smile laugh live move visit cook clean paint follow arrive finish
dance hope miss thank believe learn remember decide enjoy hunt scare notice fix return explain
agree refuse fear admire trust warn invite praise blame chew roll bounce purr growl hug kiss
touch taste smell listen talk shout whisper yell rest work study travel pick drop hurry worry
marry destroy save protect attack catch guard bake boil wash dress fill pour plant water wave
point show lift hang knock rain snow snore sneeze cough burn melt freeze:froze order share
""".split()

_AUX = {
    "is": "sg",
    "am": "sg",
    "are": "pl",
    "was": "sg",
    "were": "pl",
    "be": "",
    "been": "",
    "being": "",
    "have": "",
    "has": "sg",
    "had": "",
    "do": "",
    "does": "sg",
    "did": "",
    "will": "",
    "would": "",
    "can": "",
    "could": "",
    "shall": "",
    "should": "",
    "may": "",
    "might": "",
    "must": "",
    "'s": "sg",
    "'re": "pl",
    "'m": "sg",
    "'ve": "",
    "'ll": "",
    "'d": "",
    "ca": "",
    "wo": "",
    "sha": "",
}  # ca/wo/sha: what "can't", "won't", "shan't" leave before "n't"

_ADJECTIVES = set(
    """
big small little large tall short long old young new good bad happy sad tired hungry thirsty
angry red blue green black white yellow brown grey gray pink orange purple hot cold warm cool
fast slow quick lazy heavy soft hard loud quiet beautiful pretty ugly kind nice clever smart
strong weak rich poor full empty clean dirty wet dry dark bright funny scared afraid sick ill
busy ready sure late early famous important great whole same different easy difficult sleepy
friendly wild brave shy proud calm fresh sweet sour bitter delicious huge tiny favourite
favorite first last next other own only lovely lonely silly bored excited interested worried
surprised pleased upset broken lost open closed cheap expensive safe true false real free
fine wrong right glad curious gentle fierce sharp round square flat deep wide narrow thick thin
colorless colourless furious
""".split()
)

_ADVERBS = set(
    """
very really quickly slowly too also always often sometimes usually already still just now then
here there soon again yesterday today tomorrow tonight away back home well quite almost even
rather finally suddenly later once twice ever together outside inside everywhere somewhere
maybe perhaps probably certainly furiously instead yet
""".split()
)

_PARTICLES = set("up down out off over in on around through about along across behind past by".split())

_PREPOSITIONS = set(
    """
in on at by for with about against between into through during before after above below to
from up down of off over under near across behind beside around without inside outside onto
toward towards like than since until past among beyond within upon along per via despite
""".split()
)

_SUBORDINATORS = set("before after since until".split())  # preposition or conjunction

_CONJUNCTIONS = set(
    """and or but because so if while although though unless that whether nor
as once whereas""".split()
)

_DETERMINERS = {
    "the": "",
    "a": "sg",
    "an": "sg",
    "this": "sg",
    "that": "sg",
    "these": "pl",
    "those": "pl",
    "every": "sg",
    "each": "sg",
    "some": "",
    "any": "",
    "no": "",
    "all": "pl",
    "both": "pl",
    "another": "sg",
    "many": "pl",
    "few": "pl",
    "several": "pl",
    "much": "sg",
    "more": "",
    "most": "",
    "either": "sg",
    "neither": "sg",
    "such": "",
    "enough": "",
}

# possessive determiners: person, number, what a 3rd-person one refers to
_POSSESSIVES = {
    "my": ("1", "sg", ""),
    "your": ("2", "", ""),
    "his": ("3", "sg", "he"),
    "her": ("3", "sg", "she"),
    "its": ("3", "sg", "it"),
    "our": ("1", "pl", ""),
    "their": ("3", "pl", "they"),
}

# pronouns: person, number, what a 3rd-person one refers to, gender
_PRONOUNS = {
    "i": ("1", "sg", ""),
    "me": ("1", "sg", ""),
    "myself": ("1", "sg", ""),
    "mine": ("1", "sg", ""),
    "you": ("2", "", ""),
    "yourself": ("2", "sg", ""),
    "yours": ("2", "", ""),
    "yourselves": ("2", "pl", ""),
    "he": ("3", "sg", "he"),
    "him": ("3", "sg", "he"),
    "himself": ("3", "sg", "he"),
    "she": ("3", "sg", "she"),
    "her": ("3", "sg", "she"),
    "herself": ("3", "sg", "she"),
    "hers": ("3", "sg", "she"),
    "his": ("3", "sg", "he"),
    "it": ("3", "sg", "it"),
    "itself": ("3", "sg", "it"),
    "we": ("1", "pl", ""),
    "us": ("1", "pl", ""),
    "ourselves": ("1", "pl", ""),
    "ours": ("1", "pl", ""),
    "they": ("3", "pl", "they"),
    "them": ("3", "pl", "they"),
    "themselves": ("3", "pl", "they"),
    "theirs": ("3", "pl", "they"),
    "someone": ("3", "sg", ""),
    "somebody": ("3", "sg", ""),
    "everyone": ("3", "sg", ""),
    "everybody": ("3", "sg", ""),
    "anyone": ("3", "sg", ""),
    "anybody": ("3", "sg", ""),
    "nobody": ("3", "sg", ""),
    "this": ("3", "sg", ""),
    "that": ("3", "sg", ""),
    "these": ("3", "pl", ""),
    "those": ("3", "pl", ""),
}
_SUBJECT_PRONOUNS = set("i you he she it we they".split())

_QUESTION_WORDS = set("who whom whose what which where when why how".split())
_NOMINAL_QW = set("who whom what which".split())  # can head a noun phrase ("Who ate the cake?")

_NUMBERS = {
    "one": "sg",
    "two": "pl",
    "three": "pl",
    "four": "pl",
    "five": "pl",
    "six": "pl",
    "seven": "pl",
    "eight": "pl",
    "nine": "pl",
    "ten": "pl",
    "eleven": "pl",
    "twelve": "pl",
    "twenty": "pl",
    "hundred": "pl",
    "thousand": "pl",
    "million": "pl",
    "zero": "pl",
}

_NEGATIONS = {"not", "n't", "never"}
_INTERJECTIONS = set("oh hello hi hey yes wow please thanks ok okay ouch oops".split())

_COMMAS = set(",\u060c\u3001\uff0c")  # , and the Arabic, ideographic and full-width commas
_ENDS = set(".!?\u061f\u3002\uff01\uff1f\u0964\u2026")  # . ! ? and Arabic ?, 。 ！ ？ । …

_ADJ_SUFFIXES = ("ous", "ful", "able", "ible", "ive", "less", "ish", "ical", "ic")

# ---------------------------------------------------------------------------
# the lexicon: word -> readings, each a (pos, frozenset of feature names)
# ---------------------------------------------------------------------------
Reading = tuple  # (pos: str, feats: frozenset[str])
_PERSON = {"1": "1st person", "2": "2nd person", "3": "3rd person", "": ""}
_NUM = {"sg": "singular", "pl": "plural", "": ""}


def _plural(word: str) -> str:
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _verb_forms(base: str, past: str | None) -> dict[str, frozenset]:
    """Every inflection of a verb (over-generating spellings is harmless: nobody types them)."""
    stem_e = base[:-1] if base.endswith("e") and not base.endswith("ee") else base
    doubled = base + base[-1]
    y_stem = base[:-1] + "i" if base.endswith("y") and base[-2:-1] not in "aeiou" else None
    pasts = {past} if past else {stem_e + "ed", doubled + "ed"} | ({y_stem + "ed"} if y_stem else set())
    forms = {base: frozenset({"present"})}
    forms[_plural(base)] = frozenset({"present", "singular"})  # 3rd person singular agreement
    for p in pasts:
        forms[p] = frozenset({"past tense"})
    for ing in {base + "ing", stem_e + "ing", doubled + "ing"}:
        forms[ing] = frozenset({"-ing form"})
    return forms


def _build() -> dict[str, list]:
    lex: dict[str, list] = {}

    def add(word, pos, *feats):
        reading = (pos, frozenset(f for f in feats if f))
        if reading not in lex.setdefault(word, []):
            lex[word].append(reading)

    def nouns(entries, animacy):
        for entry in entries:
            sg, _, pl = entry.partition(":")
            pl = pl or _plural(sg)
            gender = lambda w: "male" if w in _MALE else "female" if w in _FEMALE else ""  # noqa: E731
            if sg == pl:
                add(sg, NOUN, "singular", "plural", animacy, "3rd person", gender(sg))
            else:
                add(sg, NOUN, "singular", animacy, "3rd person", gender(sg))
                add(pl, NOUN, "plural", animacy, "3rd person", gender(pl))

    # closed classes first: a word's first reading is its default
    for w, (person, num, _) in _POSSESSIVES.items():
        add(w, POSS, f"{_PERSON[person]}", _NUM[num])
    for w, (person, num, _) in _PRONOUNS.items():
        add(w, PRON, f"{_PERSON[person]}", _NUM[num])
    for w in _QUESTION_WORDS:
        add(w, QW)
    for w, num in _DETERMINERS.items():
        add(w, DET, _NUM[num])
    for w, num in _AUX.items():
        add(w, AUX, _NUM[num], "past tense" if w in ("was", "were", "had", "did") else "")
    for w in _NEGATIONS:
        add(w, NEG)
    for w in _CONJUNCTIONS:
        add(w, CONJ)
    for w in _PREPOSITIONS:
        add(w, ADP)
    for w in _PARTICLES:
        add(w, ADV)
    for w, num in _NUMBERS.items():
        add(w, NUM, _NUM[num])
    for w in _INTERJECTIONS:
        add(w, INTJ)
    nouns(_HUMAN_NOUNS, "human")
    nouns(_ANIMAL_NOUNS, "animal")
    nouns(_THING_NOUNS, "inanimate")
    for w, animacy in _PLURAL_ONLY.items():
        add(w, NOUN, "plural", animacy, "3rd person")
    for w in _ADJECTIVES:
        add(w, ADJ)
    for w in _ADVERBS:
        add(w, ADV)
    for entry in _VERBS:
        base, _, past = entry.partition(":")
        for form, feats in _verb_forms(base, past or None).items():
            add(form, VERB, *feats)
    return lex


@lru_cache(maxsize=1)
def lexicon() -> dict[str, list]:
    """{word: [reading, ...]}, built on first use: ~30 ms in the browser's worker, which the page's
    start-up does not need (its first screen is pre-rendered; the worker's warm-up builds it)."""
    return _build()


def _name_reading(low: str) -> Reading | None:
    if low in _MALE_NAMES:
        return (PROPN, frozenset({"singular", "human", "male", "3rd person"}))
    if low in _FEMALE_NAMES:
        return (PROPN, frozenset({"singular", "human", "female", "3rd person"}))
    if low in _PLACE_NAMES:
        return (PROPN, frozenset({"singular", "inanimate", "3rd person"}))
    return None


def _guess(word: str, low: str, sentence_initial: bool) -> list:
    """Readings of a word that is not in the lexicon, from its spelling (all flagged 'guessed')."""
    g = "guessed"
    if any(ch.isdigit() for ch in word):
        return [(NUM, frozenset({g}))]
    if word[:1].isupper() and not sentence_initial:
        # a capitalised word inside a sentence: most often a person's name
        return [(PROPN, frozenset({"singular", "human", "3rd person", g}))]
    if not any(ch.isalpha() for ch in word):
        return [(SYM, frozenset({g}))]
    if "-" in low:
        return [(ADJ, frozenset({g}))]  # "well-known", "ice-cold": compound modifiers
    if low.endswith("ly") and len(low) > 4:
        return [(ADV, frozenset({g}))]
    if low.endswith(_ADJ_SUFFIXES) and len(low) > 5:
        return [(ADJ, frozenset({g}))]
    if low.endswith("ing") and len(low) > 5:
        return [(VERB, frozenset({"-ing form", g})), (NOUN, frozenset({"singular", "inanimate", "3rd person", g}))]
    if low.endswith("ed") and len(low) > 4:
        return [(VERB, frozenset({"past tense", g})), (ADJ, frozenset({g}))]
    if low.endswith("s") and not low.endswith(("ss", "us", "is")) and len(low) > 3:
        return [
            (NOUN, frozenset({"plural", "inanimate", "3rd person", g})),
            (VERB, frozenset({"present", "singular", g})),
        ]
    return [(NOUN, frozenset({"singular", "inanimate", "3rd person", g}))]


def _readings(tok: str, sentence_initial: bool) -> list:
    """All readings of one token, the default first."""
    if tok in _COMMAS:
        return [(COMMA, frozenset())]
    if tok in _ENDS:
        return [(END, frozenset())]
    if len(tok) == 1 and not tok.isalnum() and tok not in "'\u2019":
        return [(PUNCT if unicodedata.category(tok)[0] == "P" else SYM, frozenset())]
    low = tok.lower().replace("\u2019", "'")
    if not any(ch.isalnum() for ch in tok):
        return [(SYM, frozenset())]  # emoji, multi-code-point symbols
    named = _name_reading(low) if tok[:1].isupper() else None
    if named and not sentence_initial:
        return [named]  # "Will", "Mark", "Rose" inside a sentence are names
    known = lexicon()
    found = list(known.get(low, ()))
    if named:
        found = [named] + found if low not in known or low in (_MALE_NAMES | _FEMALE_NAMES) else found + [named]
    if found:
        return found
    return _guess(tok, low, sentence_initial)


# ---------------------------------------------------------------------------
# analysis of a whole sentence
# ---------------------------------------------------------------------------
@dataclass
class TokenAnalysis:
    """What the tagger decided about one token."""

    token: str
    pos: str
    feats: set = field(default_factory=set)  # feature names besides the part of speech
    refers: str = ""  # "it" | "he" | "she" | "they" for a 3rd-person pronoun/possessive, else ""
    role: str = ""  # "subject" | "object" | "" (noun-phrase heads only)
    modifier: bool = False  # a determiner/adjective/number/possessive (or compound noun) before its noun
    guessed: bool = False


def _pick(readings: list, pos: str):
    return next((r for r in readings if r[0] == pos), None)


def _starts_np(readings: list) -> bool:
    """Could this token begin a noun phrase (det, possessive, adjective, number, noun, name, pronoun)?"""
    return bool(readings) and readings[0][0] in (DET, POSS, ADJ, NUM, NOUN, PROPN, PRON)


def _disambiguate(i: int, toks: list, readings: list, prev_pos: str) -> tuple:
    """One reading of token i, chosen from its left neighbour (already decided) and a peek right."""
    rs = readings[i]
    low = toks[i].lower().replace("\u2019", "'")
    nxt = readings[i + 1] if i + 1 < len(toks) else []
    nxt_pos = nxt[0][0] if nxt else ""
    if low == "'s":  # "it's" = it is; "John's" = possessive
        return _pick(rs, AUX) if prev_pos in (PRON, QW, ADV) else (POSS, frozenset({"3rd person"}))
    if low in _SUBORDINATORS:  # "before him", "after lunch" vs "before he left", "after it rained"
        nxt_low = toks[i + 1].lower() if i + 1 < len(toks) else ""
        verb_after = i + 2 < len(toks) and any(r[0] in VERBAL for r in readings[i + 2])
        clause = nxt_low in _SUBJECT_PRONOUNS - {"you", "it"} or (nxt_pos in (PRON, PROPN, NOUN) and verb_after)
        return (CONJ, frozenset()) if clause else _pick(rs, ADP)
    if len(rs) == 1:
        return _verb_as_modifier_or_noun(rs[0], prev_pos)
    if low == "her":  # possessive before a noun phrase ("her dog"), else a pronoun ("saw her", "let her go")
        noun_next = nxt_pos in (NOUN, PROPN, ADJ, NUM) and _pick(nxt, VERB) is None
        return _pick(rs, POSS) if noun_next else _pick(rs, PRON)
    if low == "his":  # possessive unless nothing of a phrase follows ("the book is his.")
        alone = not nxt or nxt_pos in (COMMA, END, PUNCT, CONJ, ADP, ADV, SYM)
        return _pick(rs, PRON) if alone else _pick(rs, POSS)
    if low in ("this", "that", "these", "those"):
        if nxt_pos in (NOUN, ADJ, NUM) and (_pick(nxt, VERB) is None or nxt_pos == NOUN):
            return _pick(rs, DET)  # "that dog"
        if low == "that" and (prev_pos in (NOUN, PROPN, VERB) or nxt_pos in (PRON, DET, POSS, PROPN)):
            return _pick(rs, CONJ)  # "the dog that barked", "said that he"
        return _pick(rs, PRON)  # "that is nice"
    if _pick(rs, ADP) and _pick(rs, ADV):  # "sat down" vs "down the road"
        return _pick(rs, ADP) if _starts_np(nxt) else _pick(rs, ADV)
    if low == "so":
        return (ADV, frozenset()) if nxt_pos in (ADJ, ADV) else _pick(rs, CONJ)
    if low in _QUESTION_WORDS and _pick(rs, QW):
        return _pick(rs, QW)
    noun, verb, adj, adv = _pick(rs, NOUN), _pick(rs, VERB), _pick(rs, ADJ), _pick(rs, ADV)
    if noun and adv and prev_pos == VERB:
        return adv  # "came home", "went outside"
    if adj and (prev_pos in (AUX, ADV) or nxt_pos == NOUN):
        return adj  # "was kind", "too light", "light blue"... "kind people"
    after_to = i > 0 and toks[i - 1].lower() == "to"
    if verb and (after_to or prev_pos in (PRON, PROPN, AUX, NEG)):
        return verb  # "to play", "they walk", "will play", "I like"
    if noun and verb:
        if prev_pos in (DET, POSS, ADJ, NUM, ADP):
            return noun  # "the walk", "his dance"
        if prev_pos in (NOUN, QW):
            return verb  # "the dog barks", "who runs"
        return rs[0]
    if adj and verb:  # "-ed"/"-ing" words: "the tired cat" vs "he tired"
        return adj if prev_pos in (DET, POSS, ADJ, AUX, ADV) or nxt_pos in (NOUN,) else verb
    return _verb_as_modifier_or_noun(rs[0], prev_pos)


def _verb_as_modifier_or_noun(reading: tuple, prev_pos: str) -> tuple:
    """After a determiner a verb form is a noun ("the walk") or, as -ing/-ed, an adjective ("the running dog")."""
    pos, feats = reading
    if pos != VERB or prev_pos not in (DET, POSS, ADJ, NUM):
        return reading
    if "-ing form" in feats or "past tense" in feats:
        return (ADJ, feats - {"-ing form", "past tense"})
    number = "plural" if "singular" in feats else "singular"  # "walks" is a 3rd-person verb, or a plural noun
    return (NOUN, frozenset({number, "inanimate", "3rd person"}) | (feats & {"guessed"}))


def _sentence_initial(i: int, toks: list) -> bool:
    j = i - 1
    while j >= 0 and len(toks[j]) == 1 and toks[j] in "\"'\u201c\u2018(\u00ab[":
        j -= 1  # skip opening quotes/brackets
    return j < 0 or toks[j] in _ENDS


def _in_question(i: int, toks: list) -> bool:
    """Is token i in a sentence that ends with a question mark?"""
    for t in toks[i:]:
        if t in _ENDS:
            return t in ("?", "\u061f", "\uff1f")
    return False


def _tag(toks: list) -> list:
    initial = [_sentence_initial(i, toks) for i in range(len(toks))]
    readings = [_readings(t, initial[i]) for i, t in enumerate(toks)]
    out = []
    prev_pos = ""
    for i, tok in enumerate(toks):
        pos, feats = _disambiguate(i, toks, readings, prev_pos)
        low = tok.lower().replace("\u2019", "'")
        a = TokenAnalysis(token=tok, pos=pos, feats=set(feats))
        a.guessed = "guessed" in a.feats
        a.feats.discard("guessed")
        if pos == QW and not _in_question(i, toks):
            a.pos = CONJ  # "the man who came", "When it rained, ...": a relative word, not a question
        if pos == PRON and low in _PRONOUNS:
            a.refers = _PRONOUNS[low][2]
        if pos == POSS and low in _POSSESSIVES:
            a.refers = _POSSESSIVES[low][2]
        if a.refers == "he":
            a.feats |= {"human", "male"}
        elif a.refers == "she":
            a.feats |= {"human", "female"}
        if low in _NEGATIONS or low == "no":
            a.feats.add(NEG)
        if tok[:1].isupper() and tok[:1].isalpha():
            a.feats.add("capitalised")
        out.append(a)
        prev_pos = a.pos
    return out


def _chunk(tags: list) -> list:
    """Noun phrases as (start, head or None, end) index triples, end exclusive."""
    phrases = []
    i, n = 0, len(tags)
    while i < n:
        t = tags[i]
        nominal_qw = t.pos == QW and t.token.lower() in _NOMINAL_QW
        if t.pos == PRON or (nominal_qw and not (i + 1 < n and tags[i + 1].pos in NOMINAL)):
            phrases.append((i, i, i + 1))  # a pronoun (or "who") is a phrase by itself
            i += 1
            continue
        if t.pos not in (DET, POSS, ADJ, NUM, NOUN, PROPN) and not nominal_qw:
            i += 1
            continue
        start, j, head = i, i, None
        while j < n:
            p = tags[j].pos
            if j > start and p in (DET, POSS):
                break  # a new determiner or "'s" starts a new phrase
            if p in (NOUN, PROPN):
                head = j  # the last noun so far: "tennis ball" is headed by "ball"
            elif head is not None:
                break  # after the noun(s): the phrase is over
            elif p == ADV and j + 1 < n and tags[j + 1].pos == ADJ:
                pass  # "a very big dog"
            elif p == COMMA and j > start and tags[j - 1].pos == ADJ and j + 1 < n and tags[j + 1].pos == ADJ:
                pass  # "a big, red ball"
            elif p not in (DET, POSS, ADJ, NUM) and not (j == start and nominal_qw):
                break
            j += 1
        phrases.append((start, head, j))
        i = max(j, i + 1)
    return phrases


def _roles(tags: list, phrases: list) -> None:
    n = len(tags)
    for start, head, end in phrases:
        if head is None:
            continue
        for j in range(start, head):
            if tags[j].pos in (DET, POSS, ADJ, NUM, NOUN, PROPN, QW):
                tags[j].modifier = True  # "the", "big", "three", "his", "tennis" (ball)
    # clauses: split at punctuation, conjunctions and interjections
    boundaries = {i for i, t in enumerate(tags) if t.pos in (COMMA, END, PUNCT, CONJ, INTJ, SYM)}
    heads = [(start, head) for start, head, _ in phrases if head is not None]
    prep_object = {h for s, h in heads if s > 0 and tags[s - 1].pos == ADP}
    possessor = {
        h
        for s, h in heads  # "John" in "John's dog"
        if h + 1 < n and tags[h + 1].pos == POSS and tags[h + 1].token.lower() in ("'s", "\u2019s")
    }
    clause, clauses = [], []
    for i in range(n):
        if i in boundaries:
            if clause:
                clauses.append(clause)
            clause = []
        else:
            clause.append(i)
    if clause:
        clauses.append(clause)
    last_role = ""
    for c in clauses:
        cset = set(c)
        args = [h for _, h in heads if h in cset and h not in prep_object and h not in possessor]
        verbs = [i for i in c if tags[i].pos in VERBAL]
        if not args:
            continue
        if not verbs:  # "..., pears, bread and milk": continue the list
            for h in args:
                tags[h].role = last_role or "subject"
        else:
            v = verbs[0]
            before = [h for h in args if h < v]
            if before:
                subject = before[0]
            elif tags[v].pos == AUX and _in_question(v, [t.token for t in tags]):  # "did the dog ...?"
                main = next((i for i in verbs if tags[i].pos == VERB), n)
                subject = next((h for h in args if v < h < main), None)
            else:
                subject = None  # an imperative: "Give the dog a bone"
            for h in args:
                if h == subject:
                    tags[h].role = "subject"
                elif h > v:
                    tags[h].role = "object"
        last_role = tags[args[-1]].role


@lru_cache(maxsize=256)
def analyze(toks: tuple) -> tuple:
    """TokenAnalysis for every token of a sentence (cached: the page asks once per token)."""
    tags = _tag(list(toks))
    _roles(tags, _chunk(tags))
    return tuple(tags)
