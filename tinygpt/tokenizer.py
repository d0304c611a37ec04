"""A character-level tokenizer: one token per Unicode code point seen in the training text.

The vocabulary is the sorted set of distinct characters of the corpus, and a character's token id is its index
in that list (Tiny Shakespeare gives 65 tokens: newline, space, punctuation and letters). This is the tokenizer of
Karpathy's char-rnn and nanoGPT's `shakespeare_char`: it needs no training beyond `sorted(set(text))`, and every
token is something a learner can read in an attention map.

The tokenizer saves itself as JSON, `{"type": "char", "vocab": [...]}`, the same list that a run's `config.json`
and a checkpoint carry as `vocab`.

Deliberately left out: byte-pair encoding (minbpe, tiktoken), an unknown-character token (an unseen character is
an error that names it, not a silent substitution), and grapheme clusters (an emoji with a skin tone is two
code points, so two tokens).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .errors import TokenizerError

MAX_LISTED = 20  # unseen characters named in an error message; the rest are counted


def _describe_chars(chars: Sequence[str]) -> str:
    """ "'Z', '€' (2 characters)": repr'd so that whitespace and control characters stay visible."""
    shown = ", ".join(repr(c) for c in chars[:MAX_LISTED])
    more = f", ... and {len(chars) - MAX_LISTED} more" if len(chars) > MAX_LISTED else ""
    noun = "character" if len(chars) == 1 else "characters"
    return f"{shown}{more} ({len(chars)} {noun})"


class CharTokenizer:
    """Maps characters to token ids and back; `vocab[i]` is the character of token id i."""

    def __init__(self, vocab: Sequence[str]):
        vocab = list(vocab)
        bad = [c for c in vocab if not isinstance(c, str) or len(c) != 1]
        if bad:
            raise TokenizerError(f"a character vocabulary holds single characters only; got {bad[:5]!r}.")
        if len(set(vocab)) != len(vocab):
            dupes = sorted({c for c in vocab if vocab.count(c) > 1})
            raise TokenizerError(f"the vocabulary lists characters twice: {_describe_chars(dupes)}.")
        if not vocab:
            raise TokenizerError("the vocabulary is empty: build the tokenizer from a non-empty text.")
        self.vocab: list[str] = vocab
        self._ids: dict[str, int] = {c: i for i, c in enumerate(vocab)}  # "stoi" in nanoGPT

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The tokenizer whose vocabulary is every distinct character of `text`, sorted by code point."""
        if not isinstance(text, str):
            raise TokenizerError(f"a tokenizer is built from a str, got {type(text).__name__}.")
        if not text:
            raise TokenizerError("the text is empty, so there is no vocabulary to learn: give it some text.")
        return cls(sorted(set(text)))

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def __len__(self) -> int:
        return len(self.vocab)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharTokenizer) and self.vocab == other.vocab

    def __hash__(self) -> int:
        return hash(tuple(self.vocab))

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"

    def unknown_chars(self, text: str) -> list[str]:
        """The distinct characters of `text` that are not in the vocabulary, sorted."""
        return sorted(set(text) - self._ids.keys())

    def encode(self, text: str, *, what: str = "prompt") -> list[int]:
        """Token ids of `text`, one per character. `what` names the text in the error ("prompt", "text", ...)."""
        if not isinstance(text, str):
            raise TokenizerError(f"encode takes a str, got {type(text).__name__}.")
        try:
            return [self._ids[c] for c in text]
        except KeyError:
            # Only on failure do we pay for a second pass that collects every offender, not just the first.
            unknown = self.unknown_chars(text)
            raise TokenizerError(
                f"the {what} has characters the model has never seen: {_describe_chars(unknown)}. "
                "Remove them or train on a corpus that contains them."
            ) from None

    def decode(self, ids: Iterable[int] | Any) -> str:
        """The text of a sequence of token ids: a list, a 1-D torch tensor or a 1-D numpy array."""
        if hasattr(ids, "tolist"):  # torch.Tensor and np.ndarray; a 0-d one gives a bare int
            ids = ids.tolist()
            ids = [ids] if isinstance(ids, int) else ids
        chars = []
        for i in ids:
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < self.vocab_size:
                raise TokenizerError(
                    f"token id {i!r} is not in this vocabulary of {self.vocab_size} characters (ids 0.."
                    f"{self.vocab_size - 1}): was the model trained with a different tokenizer?"
                )
            chars.append(self.vocab[i])
        return "".join(chars)

    # --- persistence -------------------------------------------------------------------------------------------

    def to_json(self) -> str:
        # ensure_ascii=False keeps "é" readable in the file; json still escapes control characters.
        return json.dumps({"type": "char", "vocab": self.vocab}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> CharTokenizer:
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as e:
            raise TokenizerError(f"the tokenizer file is not valid JSON ({e}): save it again with to_json().") from None
        if not isinstance(data, dict) or data.get("type") != "char" or not isinstance(data.get("vocab"), list):
            raise TokenizerError(
                'a saved tokenizer must be a JSON object {"type": "char", "vocab": [...]}; '
                f"got {str(text)[:80]!r}. Save it again with to_json()."
            )
        return cls(data["vocab"])

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> CharTokenizer:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise TokenizerError(f"cannot read the tokenizer file {str(path)!r} ({e}): check the path.") from None
        return cls.from_json(text)
