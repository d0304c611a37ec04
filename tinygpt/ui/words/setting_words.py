"""The word every setting goes by where people read it: banners, flashes, the lesson pane, the Room's flags, the
Train page's "changed since this run started" and the notes under a knob.

A config field's name ("learning_rate", "max_seq_len") is the CLI's and the URL's spelling; on a projector it read as
code. The words are the Train form's labels (tinygpt/ui/train/settings.py, FIELDS), lower-case so they sit inside a
sentence and without the field name some labels carry in brackets ("Context (max_seq_len)" -> "context"); a live
knob goes by its chart word (knob_words.KNOB_WORDS: "LR"), so a sentence names a change as the marker on the chart
does. tests/ui/words/test_setting_words.py holds these words to the form's labels.

`in_words` rewrites the field names inside a sentence someone else wrote (a ConfigError's message from the engine,
which speaks the CLI's names): "learning_rate must be > 0" -> "LR must be > 0".

Pure and light (no Streamlit, no torch), like knob_words.
"""

from __future__ import annotations

import re
from typing import Any

from tinygpt.ui.words.knob_words import KNOB_WORDS

# The form's fields that need a new run (settings.MODEL_FIELDS), by their label.
FIELD_WORDS = {
    "num_layers": "layers",
    "hidden_dim": "width",
    "num_heads": "heads",
    "max_seq_len": "context",
    "batch_size": "batch size",
    "max_steps": "max steps",
    "dropout": "dropout",
    "seed": "seed",
    "optimizer": "optimizer",
    "token_shift": "token shift",
    "device": "device",
}
# Settings outside the form that a run's config still shows people: the lab's switches and the engine's own.
OTHER_WORDS = {
    "softmax": "softmax",
    "detach_residual": "detached residual",
    "shape_bug": "shape bug",
    "shape_contracts": "shape contracts",
    "vocab_size": "vocabulary size",
    "weight_decay": "weight decay",
    "eval_interval": "eval interval",
    "eval_batches": "eval batches",
    "synthetic_examples": "synthetic examples",
    "synthetic_digits": "synthetic digits",
    "repeat_passages": "repeated passages",
}
WORDS = {**OTHER_WORDS, **FIELD_WORDS, **KNOB_WORDS}
# Whole snake_case names only: "mask" in a sentence is the word already, and a value such as "sliding_window" is
# not a field's name.
_NAMES = re.compile(r"\b(" + "|".join(sorted((n for n in WORDS if "_" in n), key=len, reverse=True)) + r")\b")


def setting_word(name: Any) -> str:
    """The word a setting goes by ("max_seq_len" -> "context", "learning_rate" -> "LR"); an unknown one by name."""
    return WORDS.get(str(name), str(name))


def in_words(text: Any) -> str:
    """`text` with every setting's field name written as its word: "learning_rate must be > 0" -> "LR must be > 0"."""
    return _NAMES.sub(lambda m: WORDS[m.group(1)], str(text))
