"""CharTokenizer: round trips over hard inputs, the unseen-character error, and the JSON file format."""

import json
import random

import numpy as np
import pytest
import torch

from tinygpt.errors import TinyGPTError, TokenizerError
from tinygpt.tokenizer import CharTokenizer


def _large_text() -> str:
    rng = random.Random(0)
    alphabet = "abcdefghijklmnopqrstuvwxyz ABCXYZ\n.,;:!?'-é日本🙂"
    return "".join(rng.choices(alphabet, k=200_000))


HARD_TEXTS = {
    "empty": "",
    "one char": "a",
    "one newline": "\n",
    "repeated": "aaaa",
    "ascii": "First Citizen:\nBefore we proceed any further, hear me speak.\n",
    "whitespace": " \t\r\n\x0b\x0c",
    "accents": "naïve café, Ærø, ß",
    "cjk": "日本語のテキスト",
    "emoji": "🙂 👍🏽 👩‍👩‍👧 🇫🇷",  # skin tones, ZWJ sequences and flags are several code points each
    "combining": "e\u0301 vs \u00e9",
    "control": "\x00\x01\x7f",
    "large": _large_text(),
}


@pytest.mark.parametrize("text", HARD_TEXTS.values(), ids=HARD_TEXTS.keys())
def test_round_trip(text):
    tok = CharTokenizer.from_text(text or "x")
    ids = tok.encode(text)
    assert len(ids) == len(text)  # one token per code point
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text
    assert tok.decode(torch.tensor(ids, dtype=torch.long)) == text
    assert tok.decode(np.array(ids, dtype=np.int64)) == text


@pytest.mark.parametrize("text", HARD_TEXTS.values(), ids=HARD_TEXTS.keys())
def test_json_round_trip(text, tmp_path):
    tok = CharTokenizer.from_text(text or "x")
    again = CharTokenizer.from_json(tok.to_json())
    assert again == tok and again.vocab == tok.vocab
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    loaded = CharTokenizer.load(path)
    assert loaded == tok
    assert loaded.decode(tok.encode(text)) == text


def test_vocab_is_sorted_distinct_characters():
    tok = CharTokenizer.from_text("hello world")
    assert tok.vocab == [" ", "d", "e", "h", "l", "o", "r", "w"]
    assert tok.vocab_size == len(tok) == 8
    assert tok.encode("hello") == [3, 2, 4, 4, 5]


def test_json_format_is_documented_shape():
    data = json.loads(CharTokenizer.from_text("ba\n").to_json())
    assert data == {"type": "char", "vocab": ["\n", "a", "b"]}


def test_encode_empty_string():
    assert CharTokenizer.from_text("abc").encode("") == []
    assert CharTokenizer.from_text("abc").decode([]) == ""


def test_from_empty_text_raises():
    with pytest.raises(TokenizerError, match="empty"):
        CharTokenizer.from_text("")


def test_unseen_characters_are_named():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(TokenizerError) as info:
        tok.encode("a€bZ€")
    message = str(info.value)
    assert "the prompt has characters the model has never seen: 'Z', '€' (2 characters)." in message
    assert "Remove them or train on a corpus that contains them." in message
    assert isinstance(info.value, TinyGPTError) and isinstance(info.value, ValueError)


def test_unseen_characters_are_listed_up_to_a_limit():
    tok = CharTokenizer.from_text("a")
    with pytest.raises(TokenizerError) as info:
        tok.encode("".join(chr(0x4E00 + i) for i in range(50)))
    message = str(info.value)
    assert "(50 characters)" in message and "and 30 more" in message
    assert repr(chr(0x4E00 + 19)) in message and repr(chr(0x4E00 + 20)) not in message


def test_single_unseen_character_and_what():
    with pytest.raises(TokenizerError, match=r"the text has .*'\\n' \(1 character\)"):
        CharTokenizer.from_text("ab").encode("a\nb", what="text")


def test_unknown_chars():
    tok = CharTokenizer.from_text("abc")
    assert tok.unknown_chars("cabbage!") == ["!", "e", "g"]
    assert tok.unknown_chars("abc") == []
    assert tok.unknown_chars("") == []


@pytest.mark.parametrize("ids", [[3], [-1], [0, 99], [1.0], [True]])
def test_decode_rejects_ids_outside_the_vocabulary(ids):
    with pytest.raises(TokenizerError, match="not in this vocabulary"):
        CharTokenizer.from_text("abc").decode(ids)


def test_decode_zero_dim_tensor():
    assert CharTokenizer.from_text("abc").decode(torch.tensor(2)) == "c"


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "",
        "[]",
        '{"vocab": ["a"]}',
        '{"type": "bpe", "vocab": ["a"]}',
        '{"type": "char", "vocab": "ab"}',
        '{"type": "char", "vocab": []}',
        '{"type": "char", "vocab": ["ab"]}',
        '{"type": "char", "vocab": [1]}',
        '{"type": "char", "vocab": ["a", "a"]}',
    ],
)
def test_bad_json_raises_tokenizer_error(text):
    with pytest.raises(TokenizerError):
        CharTokenizer.from_json(text)


def test_load_missing_file(tmp_path):
    with pytest.raises(TokenizerError, match="cannot read"):
        CharTokenizer.load(tmp_path / "nope.json")
