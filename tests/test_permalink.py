"""Permalinks: every view of the explorer survives a trip through the URL fragment, and no link,
however hostile, breaks the page: bad parts are ignored with a plain-text notice, the rest applies."""

from __future__ import annotations

import dataclasses
import math
import random
import string
from urllib.parse import quote_from_bytes, quote_plus

import pytest

from attention_explorer import page, permalink, state as st, tokens
from attention_explorer.models import designed as model

DEFAULT = st.State()
N_HEADS = model.CONFIG.n_heads


def replace(**changes) -> st.State:
    return dataclasses.replace(DEFAULT, **changes)


def assert_valid(s: st.State) -> None:
    """A state the page can draw: its sentence tokenizes and every field is in its range."""
    assert isinstance(s, st.State)
    toks = s.tokens  # raises if the sentence is unusable
    assert 1 <= len(toks) <= tokens.MAX_TOKENS + 1  # the words and the designed model's start token
    assert 0 <= s.query < len(toks)
    assert 0 <= s.head < N_HEADS
    assert st.TEMPERATURE_RANGE[0] <= s.temperature <= st.TEMPERATURE_RANGE[1]
    assert st.DK_SCALE_RANGE[0] <= s.dk_scale <= st.DK_SCALE_RANGE[1]
    assert isinstance(s.causal, bool) and isinstance(s.routing_all_heads, bool)
    assert s.activation in st.ACTIVATIONS
    assert 0 <= s.stage < len(st.STAGES)
    assert st.DEMO_DK_RANGE[0] <= s.demo_dk <= st.DEMO_DK_RANGE[1] and isinstance(s.demo_dk, int)
    assert s.panel == "" or s.panel in page.PANELS


def assert_clean_notices(notices: list[str]) -> None:
    """Notices are short plain text: no markup, no generic 'could not be read' (that means a codec bug)."""
    assert isinstance(notices, list)
    for n in notices:
        assert isinstance(n, str) and n
        bare = n.replace("start token <s>", "")  # the designed model's start token, named as plain text
        assert "<" not in bare and ">" not in bare, n
        assert len(n) <= 240, n
        assert "could not be read" not in n, n


# --- encoding -------------------------------------------------------------------------------------


def test_default_state_encodes_to_the_empty_fragment():
    assert permalink.encode(DEFAULT) == ""
    assert permalink.decode("") == (DEFAULT, [])
    assert permalink.decode("#") == (DEFAULT, [])
    assert permalink.decode(None) == (DEFAULT, [])


def test_every_state_field_has_a_key_and_keys_are_short_and_distinct():
    """A new State field must get a permalink key, or links would silently drop it (only the switch that
    runs the reader's code is left out on purpose: a link never runs code; and the tour question's answer:
    a link to a step asks the question anew)."""
    assert set(permalink.KEYS) == {f.name for f in dataclasses.fields(st.State)} - {"custom", "tour_answer"}
    assert len(set(permalink.KEYS.values())) == len(permalink.KEYS)
    assert all(len(k) <= 5 and k.isalnum() for k in permalink.KEYS.values())


def test_encode_writes_only_changed_fields_in_a_stable_order_with_compact_numbers():
    s = replace(
        panel="ffn",
        demo_dk=256,
        routing_all_heads=True,
        stage=2,
        activation="relu",
        causal=True,
        dk_scale=4.0,
        temperature=1.5,
        head=2,
        query=1,
    )
    assert permalink.encode(s) == "q=1&h=2&T=1.5&dk=4&mask=1&act=relu&stage=2&all=1&ddk=256&panel=ffn"
    assert permalink.encode(replace(temperature=0.05)) == "T=0.05"


def test_a_float_that_g_would_round_is_written_exactly():
    """'{:g}' keeps 6 digits; a slider value like 1.2345678 must still come back bit for bit."""
    s = replace(temperature=1.2345678912345)
    assert permalink.encode(s) == "T=1.2345678912345"
    assert permalink.decode(permalink.encode(s)) == (s, [])


def test_sentence_is_form_encoded_so_separators_inside_it_survive():
    s = replace(text="a+b = c & d%20e #f?", query=0)
    frag = permalink.encode(s)
    assert frag.startswith("s=a%2Bb+%3D+c+%26+d%2520e+%23f%3F")
    assert permalink.decode(frag) == (s, [])
    assert permalink.decode("#" + frag) == (s, [])


# --- round trips ----------------------------------------------------------------------------------

FIELD_VALUES = [
    ("text", "The cat sat on the mat because it was warm."),
    ("text", "Dogs bark."),
    ("text", "  spaced\tout\nover lines  "),
    ("text", "café שלום مرحبا 你好世界 👩‍👩‍👧 🇫🇷 didn't"),
    ("text", '<img src=x onerror="alert(1)"> & <script>'),
    ("query", 0),
    ("query", 7),
    ("head", 1),
    ("head", N_HEADS - 1),
    ("temperature", st.TEMPERATURE_RANGE[0]),
    ("temperature", st.TEMPERATURE_RANGE[1]),
    ("temperature", 0.7),
    ("temperature", 1 / 3),
    ("dk_scale", st.DK_SCALE_RANGE[0]),
    ("dk_scale", st.DK_SCALE_RANGE[1]),
    ("dk_scale", math.pi),
    ("causal", True),
    ("activation", "relu"),
    ("activation", "swiglu"),
    ("stage", 1),
    ("stage", len(st.STAGES) - 1),
    ("routing_all_heads", True),
    ("demo_dk", st.DEMO_DK_RANGE[0]),
    ("demo_dk", st.DEMO_DK_RANGE[1]),
    ("demo_dk", 100),
    ("pinned", (1, 3)),
    ("pinned", (0,)),
    ("ablated", (0, N_HEADS - 1)),
    ("pair_text", "The cat sat on the mat because it was tired"),
    ("pair_text", '<img src=x onerror="alert(1)"> & it'),
    *[("panel", pid) for pid in page.PANELS],
]


@pytest.mark.parametrize("field, value", FIELD_VALUES, ids=[f"{f}={str(v)[:12]}" for f, v in FIELD_VALUES])
def test_each_field_round_trips_through_the_link_on_its_own(field, value):
    s = replace(**{field: value})
    if field == "text":  # the state the page reaches by typing it: the query moves off the default's "it"
        s = st.apply_event(DEFAULT, {"type": "set_text", "value": value})
    assert_valid(s)
    assert permalink.decode(permalink.encode(s)) == (s, [])


def test_all_fields_together_round_trip():
    s = st.State(
        text="Je pense, donc je suis — 100% sûr & <certain>!",
        query=3,
        head=N_HEADS - 1,
        temperature=0.123456789,
        dk_scale=31.5,
        causal=True,
        activation="swiglu",
        stage=len(st.STAGES) - 1,
        routing_all_heads=True,
        demo_dk=512,
        panel="routing",
        pinned=(1, 5),
        ablated=(2,),
        pair_text="Je pense & <donc>",
    )
    assert_valid(s)
    assert permalink.decode(permalink.encode(s)) == (s, [])


@pytest.mark.parametrize("preset", model.PRESETS, ids=[p.id for p in model.PRESETS])
def test_every_preset_round_trips(preset):
    s = st.apply_event(DEFAULT, {"type": "preset", "value": preset.id})
    assert permalink.decode(permalink.encode(s)) == (s, [])


def test_longest_sentence_the_page_accepts_round_trips():
    """The length cap must not refuse a link the page itself wrote (2000 astral letters, 32 tokens)."""
    word = "\U0001d41a" * 62  # MATHEMATICAL BOLD SMALL A: a letter, 4 bytes in UTF-8, 12 characters escaped
    text = (word + " ") * 31 + word[: tokens.MAX_CHARS - 63 * 31]
    assert len(text) == tokens.MAX_CHARS
    s = st.apply_event(DEFAULT, {"type": "set_text", "value": text})
    frag = permalink.encode(s)
    assert len(frag) > 20_000
    assert permalink.decode(frag) == (s, [])


def random_reachable_state(rng: random.Random) -> st.State:
    """A state reached the way the page reaches states: a random sequence of events."""
    pieces = [
        "the",
        "cat",
        "it",
        "Zürich",
        "😀",
        "'s",
        "<b>",
        "&amp;",
        "%41",
        "+",
        "=",
        "#",
        "?",
        ",",
        "3.14",
        "didn't",
        "你好",
        "\u200d",
        "\t",
        "\n",
        "  ",
    ]
    s = DEFAULT
    for _ in range(rng.randint(1, 12)):
        kind = rng.choice(
            [
                "set_text",
                "set_query",
                "set_head",
                "set_temperature",
                "set_dk_scale",
                "set_causal",
                "set_activation",
                "set_stage",
                "set_routing_all",
                "set_demo_dk",
                "set_panel",
                "preset",
                "set_pinned",
                "set_ablated",
                "set_pair_text",
                "pick_head",
            ]
        )
        value = {
            "set_text": lambda: " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 20))),
            "set_query": lambda: rng.randrange(len(s.tokens)),
            "set_head": lambda: rng.randrange(N_HEADS),
            "set_temperature": lambda: rng.uniform(0, 6),
            "set_dk_scale": lambda: rng.choice([rng.uniform(0, 40), rng.randint(1, 32)]),
            "set_causal": lambda: rng.choice([True, False]),
            "set_activation": lambda: rng.choice(st.ACTIVATIONS),
            "set_stage": lambda: rng.randrange(len(st.STAGES)),
            "set_routing_all": lambda: rng.choice([True, False]),
            "set_demo_dk": lambda: rng.uniform(0, 600),
            "set_panel": lambda: rng.choice(["", *page.PANELS]),
            "preset": lambda: rng.choice(model.PRESETS).id,
            "set_pinned": lambda: "_".join(str(rng.randrange(len(s.tokens))) for _ in range(rng.randint(0, 3))),
            "set_ablated": lambda: "_".join(str(rng.randrange(N_HEADS)) for _ in range(rng.randint(0, 3))),
            "set_pair_text": lambda: " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 8))),
            "pick_head": lambda: f"0,{rng.randrange(N_HEADS)}",
        }[kind]()
        try:
            s = st.apply_event(s, {"type": kind, "value": value})
        except st.InputError:
            pass  # the page keeps the last good state too
    return s


def test_random_reachable_states_round_trip():
    rng = random.Random(20240601)
    for _ in range(400):
        s = random_reachable_state(rng)
        frag = permalink.encode(s)
        assert permalink.decode(frag) == (s, []), frag


def test_encode_never_raises_on_a_sentence_with_a_lone_surrogate():
    """Not Unicode, so not UTF-8: the one lossy case, written as U+FFFD (documented in the module)."""
    s = replace(text="broken \ud800 pair", query=0)
    back, notices = permalink.decode(permalink.encode(s))
    assert notices == [] and back.text == "broken \ufffd pair"


# --- hostile links --------------------------------------------------------------------------------

HOSTILE = [
    # (fragment, field whose notice is expected)
    ("s=%3Cscript%3Ealert(1)%3C%2Fscript%3E" + "+x" * 40, "sentence"),  # too many tokens
    ("s=", "sentence"),
    ("s=+++", "sentence"),
    ("s=%zz", "sentence"),
    ("s=abc%", "sentence"),
    ("s=%ff%fe%80", "sentence"),
    ("s=%ED%A0%80", "sentence"),  # an encoded lone surrogate is not UTF-8
    ("s=" + "x" * 10_000, "sentence"),
    ("q=99", "query token"),
    ("q=-1", "query token"),
    ("q=1.5", "query token"),
    ("q=%3Cb%3E", "query token"),
    ("q=" + "9" * 10_000, "query token"),
    ("h=99", "head"),
    ("h=-1", "head"),
    ("h=%22%27", "head"),
    ("h=٣", "head"),
    ("T=nan", "temperature"),
    ("T=NaN", "temperature"),
    ("T=inf", "temperature"),
    ("T=-inf", "temperature"),
    ("T=1e999", "temperature"),
    ("T=1e308", "temperature"),
    ("T=-5", "temperature"),
    ("T=0", "temperature"),
    ("T=warm", "temperature"),
    ("T=1_0", "temperature"),
    ("T=", "temperature"),
    ("T=" + "1" * 10_000, "temperature"),
    ("dk=99", "√d_k scale"),
    ("dk=%3Cscript%3E", "√d_k scale"),
    ("mask=yes", "causal mask"),
    ("mask=%3Cscript%3E", "causal mask"),
    ("act=tanh", "activation"),
    ("act=%3Cscript%3Ealert(1)%3C%2Fscript%3E", "activation"),
    ("act=GELU", "activation"),
    ("act=" + "a" * 10_000, "activation"),
    ("stage=99", "stage"),
    ("stage=-3", "stage"),
    ("all=2", "all-heads setting"),
    ("ddk=0", "demo d_k"),
    ("ddk=513", "demo d_k"),
    ("ddk=64.5", "demo d_k"),
    ("ddk=1e9", "demo d_k"),
    ("panel=nope", "panel"),
    ("panel=%22%3E%3Cimg+src%3Dx+onerror%3Dalert(1)%3E", "panel"),
    ("panel=" + "p" * 10_000, "panel"),
]


@pytest.mark.parametrize("fragment, label", HOSTILE, ids=[f[:30] for f, _ in HOSTILE])
def test_a_hostile_value_is_ignored_with_a_notice_naming_its_field(fragment, label):
    s, notices = page.decode_link(fragment)  # the worker's decode: permalink's, and the page's panels
    assert s == DEFAULT
    assert len(notices) == 1 and notices[0].startswith(f"Ignored the link's {label}"), notices
    assert_clean_notices(notices)


def test_notices_never_echo_more_than_a_short_plain_piece_of_the_bad_value():
    for fragment in [
        "act=" + "a" * 10_000,
        "panel=" + "b" * 100,
        "act=%22onmouseover%3Dalert(1)",
        "T=" + "7" * 39,
        "zzz" * 1000 + "=1",
    ]:
        _, notices = page.decode_link(fragment)
        assert notices and all(len(n) < 160 for n in notices), notices
        assert not any("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" in n or "onmouseover" in n for n in notices)
    assert permalink.decode("act=tanh")[1] == [
        'Ignored the link\'s activation: "tanh" is not one of relu, gelu, swiglu.'
    ]
    assert permalink.decode("T=warm")[1] == ["Ignored the link's temperature: not a number."]


def test_a_bad_field_does_not_spoil_the_good_ones():
    s, notices = permalink.decode("#s=Dogs+bark+loudly.&q=1&h=99&T=2&act=tanh&mask=1")
    assert (s.text, s.query, s.head, s.temperature, s.activation, s.causal) == (
        "Dogs bark loudly.",
        1,
        0,
        2.0,
        "gelu",
        True,
    )
    assert [n.split(":")[0] for n in notices] == ["Ignored the link's head", "Ignored the link's activation"]


def test_sentence_is_applied_before_the_query_whatever_the_key_order():
    """The query indexes the link's sentence, so q=9 is valid for a long sentence even if written first."""
    text = "one two three four five six seven eight nine ten"
    s, notices = permalink.decode("q=9&s=" + quote_plus(text))
    assert notices == [] and s.text == text and s.query == 9


def test_query_beyond_the_links_sentence_is_ignored():
    s, notices = permalink.decode("s=Dogs+bark.&q=5")
    assert s.tokens == ("<s>", "Dogs", "bark", ".")
    assert s.query == 3  # set_text's rule: no pronoun in the sentence, so the last token
    assert notices == ["Ignored the link's query token: 5 is out of range (0 to 3)."]


def test_a_link_with_a_sentence_keeps_a_query_that_equals_the_default_index():
    """The query follows its word when the sentence changes, so a link that gives a sentence must give
    its query too, even when the index happens to equal the default one (here 6, the default's "it")."""
    s = st.apply_event(DEFAULT, {"type": "preset", "value": "agreement"})
    assert s.query == DEFAULT.query, "this preset's query sits where the default's does"
    assert permalink.decode(permalink.encode(s)) == (s, [])
    typed = st.apply_event(
        st.apply_event(DEFAULT, {"type": "set_text", "value": "a b c d e f g h i"}),
        {"type": "set_query", "index": DEFAULT.query},
    )
    assert permalink.decode(permalink.encode(typed)) == (typed, [])


def test_query_into_an_ignored_sentence_is_ignored_too():
    """An index into a sentence the reader will not see would select an arbitrary token of the default."""
    s, notices = permalink.decode("s=%zz&q=1")
    assert s == DEFAULT and len(notices) == 2 and "sentence that was ignored" in notices[1]


def test_unknown_keys_give_one_notice_and_unreadable_names_are_not_shown():
    s, notices = permalink.decode("foo=1&bar=2&%3Cscript%3E=3&%zz=4&baz=5&qux=6&T=2")
    assert s == replace(temperature=2.0)
    assert notices == ["Ignored unknown settings in the link: foo, bar, (unreadable) and 3 more."]
    assert permalink.decode("utm_source=blog")[1] == ["Ignored an unknown setting in the link: utm_source."]


def test_keys_are_case_sensitive():
    assert permalink.decode("t=2")[1] == ["Ignored an unknown setting in the link: t."]


def test_duplicate_keys_last_one_wins_and_the_notice_says_so():
    """A repeated key is read one way everywhere (the last wins), and the reader is told (issue 39)."""
    state, notices = permalink.decode("T=2&T=3")
    assert state == replace(temperature=3.0)
    assert len(notices) == 1 and "T=" in notices[0] and "more than once" in notices[0] and "last" in notices[0]
    assert permalink.decode("T=warm&T=3")[0] == replace(temperature=3.0)
    s, notices = permalink.decode("T=3&T=warm")
    assert s == DEFAULT and len(notices) == 2  # repeated, and the last one unreadable


@pytest.mark.parametrize("fragment", ["m=designed&m=minilm&h=2", "m=minilm&m=designed&h=2"])
def test_the_model_downloaded_is_the_model_decoded(fragment):
    """requested_model (what the worker downloads first) and decode (what is shown) agree on a link that
    names the model twice: the last one, both times."""
    last = fragment.split("&")[1].split("=")[1]
    assert permalink.requested_model(fragment) == last
    assert permalink.requested_model("#" + fragment.replace("m=", "%6D=", 1)) == last  # an escaped key is the key
    state, notices = permalink.decode(fragment)
    assert state.model == last and any("more than once" in n for n in notices)


@pytest.mark.parametrize("key", ["p", "ab"])
@pytest.mark.parametrize("digits", ["%D9%A3", "%EF%BC%93", "1_%D9%A3", "+1", " 1", "1__2"])
def test_index_lists_take_ascii_digits_only(key, digits):
    """p= and ab= refuse digits of other scripts (Arabic-Indic three, fullwidth three) as q, k, l, h do."""
    state, notices = permalink.decode(f"{key}={digits}")
    assert state == DEFAULT and len(notices) == 1 and "not a list of whole numbers" in notices[0]


def test_empty_pairs_and_a_bare_key_are_harmless():
    assert permalink.decode("&&T=2&&") == (replace(temperature=2.0), [])
    s, notices = permalink.decode("mask")
    assert s == DEFAULT and notices == ["Ignored the link's causal mask: use 1 or 0."]


def test_an_overlong_link_is_ignored_whole_with_one_notice():
    s, notices = permalink.decode("T=2&s=" + "x" * (permalink.MAX_FRAGMENT_CHARS + 1))
    assert s == DEFAULT and len(notices) == 1 and "characters long" in notices[0]
    assert_clean_notices(notices)


def test_a_value_that_apply_event_would_clamp_is_refused_not_clamped():
    """A link means exactly what it says; 'T=99' is not a link the page wrote."""
    assert permalink.decode("T=99") == (DEFAULT, ["Ignored the link's temperature: 99 is outside 0.05 to 5."])
    assert permalink.decode("T=5") == (replace(temperature=5.0), [])


def test_random_bytes_as_a_value_never_raise():
    rng = random.Random(7)
    for _ in range(300):
        junk = rng.randbytes(rng.randint(0, 60))
        for key in permalink.KEYS.values():
            for frag in (f"{key}={quote_from_bytes(junk)}", f"{key}={junk.decode('latin-1')}"):
                s, notices = page.decode_link(frag)  # the worker's decode
                assert_valid(s)
                assert_clean_notices(notices)


def random_fragment(rng: random.Random) -> str:
    keys = [*permalink.KEYS.values(), "x", "", "T ", "%73", "S"]
    values = [
        "",
        "0",
        "1",
        "-1",
        "2",
        "7",
        "99",
        "1e999",
        "nan",
        "inf",
        "-0",
        "0.5",
        "3.14",
        "1e-9",
        "+3",
        "gelu",
        "relu",
        "tanh",
        "ffn",
        "routing",
        "%zz",
        "%",
        "%4",
        "%C3%A9",
        "%ff",
        "%ED%A0%80",
        "<script>",
        "\"'",
        "The+cat+sat.",
        "it",
        "%F0%9F%98%80",
        "\ud800",
        "\x00",
        "٣",
        "+",
        "=",
        "a" * 300,
    ]
    pieces = []
    for _ in range(rng.randint(0, 14)):
        r = rng.random()
        if r < 0.7:
            value = "".join(rng.choice(values) for _ in range(rng.randint(1, 3)))
            pieces.append(f"{rng.choice(keys)}={value}")
        elif r < 0.85:
            pieces.append("".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(rng.randint(0, 20))))
        else:
            pieces.append("".join(rng.choice(string.printable) for _ in range(rng.randint(0, 30))))
    return rng.choice(["", "#"]) + rng.choice(["&", "&", ";", "=", "#"]).join(pieces)


def test_fuzzed_fragments_never_raise_and_always_give_a_drawable_state():
    """Whatever the link, decode returns a valid state and plain-text notices; that state round-trips."""
    rng = random.Random(1234)
    for _ in range(3000):
        frag = random_fragment(rng)
        s, notices = page.decode_link(frag)  # the worker's decode
        assert_valid(s)
        assert_clean_notices(notices)
        assert permalink.decode(permalink.encode(s)) == (s, [])


def test_a_links_panel_must_be_a_panel_of_this_page():
    """permalink checks a panel='s form (state and permalink are below page, which declares the panels);
    page.decode_link, the worker's decode, drops one that names no panel, saying so, and keeps the rest."""
    s, notices = permalink.decode("T=2&panel=nope")
    assert (s.panel, s.temperature, notices) == ("nope", 2.0, []), "the form is right: permalink keeps it"
    s, notices = page.decode_link("T=2&panel=nope")
    assert (s.panel, s.temperature) == ("", 2.0)
    assert notices == ['Ignored the link\'s panel: "nope" is not a panel of this page.']
    for pid in page.PANELS:
        assert page.decode_link(f"panel={pid}") == (dataclasses.replace(DEFAULT, panel=pid), [])
