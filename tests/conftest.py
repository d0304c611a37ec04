"""Shared fixtures for the whole test suite.

Tests must run offline on a 2-core CPU machine: nothing here downloads anything; the real corpus is the copy
embedded in the package (see `shakespeare_path`), so no test skips for want of it.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

try:  # Engine tests use tiny models: one thread is faster than several contending on a 2-core CI machine.
    import torch
except ImportError:  # pragma: no cover - torch is a hard requirement, but the browser tests don't need it here
    torch = None
else:
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_text() -> str:
    """A small deterministic corpus: ~3,000 characters over 16 distinct characters, with learnable structure."""
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "to", "hat"]
    rng = random.Random(1234)
    lines = []
    while sum(len(line) + 1 for line in lines) < 3000:
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 8))) + ".")
    text = "\n".join(lines) + "\n"
    assert len(text) > 2000
    return text


@pytest.fixture
def tmp_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty runs root for this test; TINYGPT_RUNS_DIR points at it for code that reads the environment."""
    runs = tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv("TINYGPT_RUNS_DIR", str(runs))
    return runs


@pytest.fixture(scope="session")
def shakespeare_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path to a plain-text Tiny Shakespeare: $TINYGPT_SHAKESPEARE (an override), else the package's embedded
    copy written out once per session (load_shakespeare checks its sha256)."""
    env = os.environ.get("TINYGPT_SHAKESPEARE")
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            pytest.fail(f"TINYGPT_SHAKESPEARE={env!r} is not a file")
        return path.resolve()
    from tinygpt.data import load_shakespeare

    saved = os.environ.pop("TINYGPT_SHAKESPEARE", None)
    try:
        text = load_shakespeare()
    finally:
        if saved is not None:
            os.environ["TINYGPT_SHAKESPEARE"] = saved
    path = tmp_path_factory.mktemp("corpus") / "tinyshakespeare.txt"
    path.write_text(text, encoding="utf-8", newline="")
    return path


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """A fresh runs folder for an app test (TINYGPT_RUNS_DIR); its RunManager, cached per folder, is shut down
    after the test so no worker outlives it. Imported lazily: engine tests must not load the app."""
    monkeypatch.setenv("TINYGPT_RUNS_DIR", str(tmp_path / "runs"))
    yield tmp_path / "runs"
    try:
        from tinygpt.ui import resources

        resources.manager_at(str((tmp_path / "runs").resolve())).shutdown()
    except Exception:
        pass
