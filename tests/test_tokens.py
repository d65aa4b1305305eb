"""The tokenizer: what becomes a token, and the reader-facing errors at the edges."""

import pytest

from attention_explorer.tokens import MAX_CHARS, MAX_TOKENS, TokenError, tokenize


def test_words_and_punctuation_marks_are_separate_tokens():
    assert tokenize("Hello, world! How are you?") == ["Hello", ",", "world", "!", "How", "are", "you", "?"]


def test_every_punctuation_mark_is_its_own_token():
    assert tokenize("Wait... what?!") == ["Wait", ".", ".", ".", "what", "?", "!"]


def test_whitespace_of_any_kind_is_collapsed():
    assert tokenize("  The   cat\n\tsat \u00a0 down  ") == ["The", "cat", "sat", "down"]


def test_internal_hyphens_and_apostrophes_keep_a_word_together():
    assert tokenize("a well-known o'clock train") == ["a", "well-known", "o'clock", "train"]


def test_english_clitics_are_split_off_penn_treebank_style():
    assert tokenize("I didn't know it's John's") == ["I", "did", "n't", "know", "it", "'s", "John", "'s"]
    assert tokenize("can't won't we'll they're I'm") == [
        "ca",
        "n't",
        "wo",
        "n't",
        "we",
        "'ll",
        "they",
        "'re",
        "I",
        "'m",
    ]


def test_typographic_apostrophe_behaves_like_the_ascii_one():
    assert tokenize("it\u2019s didn\u2019t") == ["it", "\u2019s", "did", "n\u2019t"]


def test_tokens_are_substrings_of_the_text_in_order():
    text = "The trophy didn't fit, so Mary's well-known dog \U0001f436 barked: \"woof\"!"
    pos = 0
    for tok in tokenize(text):
        found = text.find(tok, pos)
        assert found >= 0, f"{tok!r} is not in the text after position {pos}"
        assert text[pos:found].strip() == "", f"something was skipped before {tok!r}"
        pos = found + len(tok)
    assert text[pos:].strip() == ""


def test_each_emoji_is_one_token_even_when_built_from_several_code_points():
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man ZWJ woman ZWJ girl
    thumbs = "\U0001f44d\U0001f3fd"  # thumbs up + medium skin tone
    heart = "\u2764\ufe0f"  # heart + emoji-style variation selector
    flag = "\U0001f1eb\U0001f1f7"  # regional indicators F + R
    text = f"I {heart} pizza\U0001f355 {thumbs} {family} {flag}!"
    assert tokenize(text) == ["I", heart, "pizza", "\U0001f355", thumbs, family, flag, "!"]


def test_hebrew_words_are_tokens_and_punctuation_still_splits():
    assert tokenize("שלום עולם, מה שלומך?") == ["שלום", "עולם", ",", "מה", "שלומך", "?"]


def test_arabic_words_keep_their_vowel_marks_and_arabic_punctuation_splits():
    # harakat are combining marks: they belong to the word; the Arabic comma and ? are punctuation
    assert tokenize("مَرْحَبًا، كيف حالك؟") == ["مَرْحَبًا", "،", "كيف", "حالك", "؟"]


def test_accented_latin_letters_are_word_characters():
    assert tokenize("café naïve Ångström") == ["café", "naïve", "Ångström"]


def test_quotes_are_separate_tokens():
    assert tokenize('"Stop," she said.') == ['"', "Stop", ",", '"', "she", "said", "."]
    assert tokenize("\u201cYes\u201d") == ["\u201c", "Yes", "\u201d"]


def test_html_is_just_tokens_nothing_special():
    assert tokenize("<img src=x onerror=alert(1)>") == [
        "<",
        "img",
        "src",
        "=",
        "x",
        "onerror",
        "=",
        "alert",
        "(",
        "1",
        ")",
        ">",
    ]


def test_numbers_keep_decimal_points_and_thousands_separators():
    assert tokenize("pi is 3.14, not 1,000.") == ["pi", "is", "3.14", ",", "not", "1,000", "."]
    assert tokenize("cats,dogs") == ["cats", ",", "dogs"]


def test_invisible_format_characters_are_dropped():
    assert tokenize("\u200fשלום\u200e ok\ufeff") == ["שלום", "ok"]


def test_a_single_token():
    assert tokenize("Hello") == ["Hello"]
    assert tokenize("  !  ") == ["!"]


def test_the_limit_is_at_least_32_tokens():
    assert MAX_TOKENS >= 32


def test_exactly_max_tokens_is_allowed():
    words = [f"w{i}" for i in range(MAX_TOKENS)]
    assert tokenize(" ".join(words)) == words


def test_with_a_start_token_the_message_counts_it_too():
    """The designed model's <s> is a token the page counts (its hint and token count): so does the limit."""
    with pytest.raises(TokenError) as err:
        tokenize(" ".join(["word"] * (MAX_TOKENS + 1)), start_token="<s>")
    message = str(err.value)
    assert f"makes {MAX_TOKENS + 2} tokens ({MAX_TOKENS + 1} from the sentence + start token <s>)" in message
    assert f"the limit is {MAX_TOKENS + 1}." in message
    with pytest.raises(TokenError, match=f"of at most {MAX_TOKENS + 1} tokens"):
        tokenize("word " * MAX_CHARS, start_token="<s>")
    assert tokenize(" ".join(["word"] * MAX_TOKENS), start_token="<s>") == ["word"] * MAX_TOKENS


def test_one_token_over_the_limit_raises_a_message_with_the_count_and_the_limit():
    with pytest.raises(TokenError) as err:
        tokenize(" ".join(["word"] * (MAX_TOKENS + 1)))
    message = str(err.value)
    assert str(MAX_TOKENS + 1) in message and str(MAX_TOKENS) in message
    assert "shorten" in message.lower()


def test_punctuation_counts_towards_the_limit():
    n_words = MAX_TOKENS // 2 + 1
    text = ", ".join(["a"] * n_words)  # n_words words and n_words - 1 commas
    assert 2 * n_words - 1 > MAX_TOKENS
    with pytest.raises(TokenError, match=str(2 * n_words - 1)):
        tokenize(text)


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", "\u200b\u200e"])
def test_empty_or_blank_input_raises_asking_for_a_word(text):
    with pytest.raises(TokenError, match="word"):
        tokenize(text)


def test_absurdly_long_text_is_refused_before_tokenizing():
    with pytest.raises(TokenError) as err:
        tokenize("x" * (MAX_CHARS + 1))
    assert "characters" in str(err.value)
    assert MAX_CHARS >= 1000  # well above any 32-token sentence


def test_token_error_is_a_value_error_for_callers_that_catch_those():
    assert issubclass(TokenError, ValueError)


def test_non_string_input_is_a_type_error():
    with pytest.raises(TypeError):
        tokenize(None)


def test_same_text_gives_the_same_tokens():
    text = "The cat sat down because it was tired"
    assert tokenize(text) == tokenize(text)
