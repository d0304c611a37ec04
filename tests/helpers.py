"""Plain helpers shared by test modules (fixtures live in conftest.py): tiny run configs and a subprocess env."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from tinygpt.config import RunConfig
from tinygpt.presets import preset

REPO = Path(__file__).resolve().parent.parent


def tiny_config(text: str, **overrides) -> RunConfig:
    """The demo preset shrunk to seconds on CPU, training on `text`: 20 steps that publish everything."""
    settings = dict(
        source="text",
        text=text,
        hidden_dim=32,
        num_layers=2,
        num_heads=2,
        max_seq_len=16,
        batch_size=4,
        max_steps=20,
        warmup_steps=2,
        eval_interval=10,
        eval_batches=2,
        attention_every=5,
        sample_every=10,
        checkpoint_every=10,
        device="cpu",
    )
    settings.update(overrides)
    return preset("demo", **settings)


def losses_across_a_checkpoint(config: RunConfig, corpus, checkpoint_dir: Path, steps: int = 8, device="cpu"):
    """Train `config` on `corpus` for `steps` steps twice from the same seed: once straight through, once saved to a
    checkpoint halfway and resumed in a fresh Trainer. Returns (straight losses, resumed losses, the trainer that
    saved the checkpoint): a resume that restores everything gives the same losses bit for bit."""
    import torch

    from tinygpt.checkpoint import load_checkpoint, save_checkpoint
    from tinygpt.model import TinyGPT
    from tinygpt.trainer import Trainer

    def fresh() -> Trainer:
        torch.manual_seed(0)
        return Trainer(TinyGPT(config.model), config.train, corpus, device)

    whole = fresh()
    straight = [whole.step()["loss"] for _ in range(steps)]
    first = fresh()
    resumed = [first.step()["loss"] for _ in range(steps // 2)]
    stem = checkpoint_dir / f"step_{steps // 2}"
    save_checkpoint(stem, first.model, config, corpus.tokenizer.vocab, steps // 2, first.state())
    saved = load_checkpoint(stem, device=device)
    second = fresh()
    second.model.load_state_dict(saved.model_state, strict=False)
    second.load_state(saved.trainer_state)
    resumed += [second.step()["loss"] for _ in range(steps - steps // 2)]
    return straight, resumed, first


def cli_env() -> dict[str, str]:
    """The environment for `python -m tinygpt ...` in a subprocess: this checkout importable, one torch thread."""
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def tiny_train_args(runs_dir: Path, text: str, max_steps: int, *extra: str) -> list[str]:
    """The arguments of `python -m tinygpt train` for a tiny demo run on `text` into `runs_dir` (width 32,
    context 16, one thread): the one CLI command line the tests build."""
    return ["train", "--preset", "demo", "--max-steps", str(max_steps), "--hidden-dim", "32", "--max-seq-len", "16",
            "--runs-dir", str(runs_dir), "--threads", "1", "--source", "text", "--text", text, *extra]  # fmt: skip


@contextlib.contextmanager
def mounted_tmpfs(path: Path, size: str = "4m"):
    """A real small file system at `path` (tmpfs of `size`, root only) for full-disk and read-only cases; yields
    a remount(read_only) function. Raises OSError where mounting is not allowed (the caller skips)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                                           capture_output=True).returncode:  # fmt: skip
        raise OSError(f"cannot mount a tmpfs at {path} here (needs root and mount rights)")

    def remount(read_only: bool) -> None:
        subprocess.run(["mount", "-o", f"remount,{'ro' if read_only else 'rw'}", str(path)], check=True)

    try:
        yield remount
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def wait_for(predicate, timeout: float = 60.0, what: str = "condition", poll: float = 0.02):
    """`predicate()`'s first truthy value, polled every `poll` s; AssertionError naming `what` after `timeout` s.
    The one wait of the test suite (AppTest's own is tests/ui/test_app.py's, on a script run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out waiting for {what}")


def write_run(root: Path, hidden_dim: int = 32, steps: int = 20) -> str:
    """A finished run folder as a worker would leave it: config, status, metrics, evals, events, attention
    snapshots and a checkpoint of a real (untrained) model on a synthetic corpus."""
    import dataclasses

    import torch

    from tinygpt.checkpoint import save_checkpoint
    from tinygpt.data import load_corpus
    from tinygpt.model import TinyGPT
    from tinygpt.probes import attention_forward
    from tinygpt.runs.files import checkpoint_stem
    from tinygpt.runs.store import RunStore

    config = preset("demo", source="synthetic:copy", hidden_dim=hidden_dim, max_steps=steps)
    corpus = load_corpus(config.data, config.model.max_seq_len)
    config.model = dataclasses.replace(config.model, vocab_size=corpus.tokenizer.vocab_size)
    store = RunStore(root)
    with store.create(config.to_dict(), owner="app") as w:
        w.write_config({"vocab": corpus.tokenizer.vocab})
        groups = ["emb", "L0.attn", "L0.mlp", "L1.attn", "L1.mlp", "ln_f"]
        for s in range(1, steps + 1):
            w.append_metric(
                {
                    "step": s,
                    "loss": 3.0 - s / steps,
                    "lr": 1e-3,
                    "grad_norm": 1.5 / s,
                    "clipped": s < 3,
                    "layer_grad_norms": {g: 0.1 * s for g in groups},
                    "update_ratios": {g: 1e-3 for g in groups},
                    "tokens_per_s": 1000.0,
                }
            )
        w.append_eval({"step": steps, "train_loss": 2.0, "val_loss": 2.1})
        w.append_event({"step": 5, "kind": "knob", "knob": "mask", "old": "causal", "new": "none", "message": "m"})
        model = TinyGPT(config.model)
        probe = corpus.probe_text(16)
        ids = torch.tensor([corpus.tokenizer.encode(probe)])
        with torch.no_grad():
            _, maps = attention_forward(model, ids)
        weights = torch.stack([m[0] for m in maps]).numpy()
        for s in (0, steps):
            w.write_attention(s, weights, probe, list(probe))
        save_checkpoint(checkpoint_stem(w.run_dir, steps), model, config, corpus.tokenizer.vocab, steps)
        w.write_status(state="finished", reason="reached max_steps", step=steps, best_val_loss=2.1)
        return w.run_id


# ---------------------------------------------------------------- the app through Streamlit's AppTest

REPO = Path(__file__).resolve().parents[1]


def app_as(actor=None, query: dict | None = None, timeout: float = 60, clean: bool = True):
    """The app's first page run in AppTest as `actor` (a tinygpt.runs.owners.Actor; None: nobody in particular),
    with `query` as its URL's query parameters; with `clean`, no exception box (a probe that looks for them
    passes False)."""
    from streamlit.testing.v1 import AppTest

    from tinygpt.ui.people import people_keys

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=timeout)
    if actor is not None:
        at.session_state[people_keys.LEARNER] = actor
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    assert not clean or not at.exception, at.exception
    return at


def page_texts(at, expanders: bool = False) -> str:
    """What an AppTest page says in words (markdown, info, warning, success, captions; expander labels too)."""
    parts = [str(e.value) for kind in (at.markdown, at.info, at.warning, at.success, at.caption) for e in kind]
    parts += [str(e.label) for e in at.expander] if expanders else []
    return "\n".join(parts).replace("\\", "")


def rerun_until(at, predicate, timeout: float = 60) -> None:
    """Rerun an AppTest page (no exception box) until `predicate()` holds, or fail with what the page said."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        assert not at.exception, at.exception
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"not met in {timeout}s; page said:\n{page_texts(at)}")


def switching_scores(steps: int = 3000, every: int = 20) -> list[dict]:
    """Score records of a 2-layer, 4-head run where the best induction head switches (the reviewer's Circuits
    screen): L1H2 jumps to 0.5 at step 1260 and falls back to 0.3 at 1880, when L1H1 jumps to 0.8. The best series
    jumps at 1260 (L1H2's), ends on L1H1, whose own score jumped at 1880; the second copy gets cheap at 1260."""

    def grid(step: int) -> list[list[float]]:
        l1h1 = 0.8 if step >= 1880 else 0.05
        l1h2 = 0.3 if step >= 1880 else 0.5 if step >= 1260 else 0.05
        return [[0.05] * 4, [0.05, l1h1, l1h2, 0.05]]

    flat = [[0.1] * 4, [0.1] * 4]
    return [{"step": s, "roles": {"previous": flat, "induction": grid(s), "first": flat, "self": flat},
             "baselines": {"previous": 0.1, "induction": 0.05, "first": 0.1, "self": 0.1},
             "copy_loss": {"first": 3.3, "second": 0.5 if s >= 1260 else 3.3}}
            for s in range(0, steps + 1, every)]  # fmt: skip
