"""Errors meant for the people using tinygpt, not for its developers.

Every error a learner can cause (a bad setting, a file in the wrong encoding, a prompt with characters the model
never saw, ...) is a `TinyGPTError`. Its message is shown verbatim in the app and the CLI, so it says what went
wrong *and* what to do about it. `TinyGPTError` subclasses `ValueError`, so code that already catches
`ValueError` keeps working.

Deliberately left out: error codes and translations. A bug in tinygpt itself should surface as an ordinary
exception with a traceback, never as one of these.
"""

from __future__ import annotations


class TinyGPTError(ValueError):
    """Base of user-facing errors; the message says what to do."""


class DataError(TinyGPTError):
    """A corpus cannot be loaded, downloaded, decoded or split."""


class TokenizerError(TinyGPTError):
    """Text holds characters outside the vocabulary, or a saved tokenizer is unreadable."""


class ShapeError(TinyGPTError):
    """A tensor has a shape the model cannot take (e.g. a prompt longer than the context)."""


class CheckpointError(TinyGPTError):
    """A checkpoint is missing, corrupt, or does not match the model it is loaded into."""


class NonFiniteError(TinyGPTError):
    """A loss or gradient became NaN or infinite: training diverged."""


class RunStoreError(TinyGPTError):
    """A run folder is missing, malformed, not writable, or a run id is not acceptable."""


class ResourceError(TinyGPTError):
    """A run does not fit: out of memory on the device, or too little memory or disk to start; says what to lower."""
