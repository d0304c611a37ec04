"""Reading and running the pitfall lab's experiments: a run folder becomes a `RunResult`, and an experiment can
be trained to the end in this process.

`read_result(reader, probe)` reads a polled RunReader: losses (first, around a third of the run, last 20), early
clipping and gradient norms, per-layer gradient norms, the latest attention snapshot's entropy, max weight,
saturated rows, softmax gain and row-sum error, the first non-finite tensor of a diverged run, and, through
`probe(run_dir, step)` (`checkpoint_probe`), the leak score and no-peek loss of the last checkpoint. The app calls
it with a cached probe (tinygpt/ui/experiments/lab.py); `run_experiment` trains every variant one after another with
the same `run_training` the app's workers run (tests, tinygpt/bench/pitfalls.py).

Left out: parallel runs (the app's RunManager does that) and reading runs that are still being written faster than
a page refreshes (a reader sees whole lines only, so a verdict judges what was there).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..attention import attention_entropy
from .evals import eval_gap
from .experiment import Experiment
from .verdict import ENDED, FINAL_STEPS, SATURATED, RunResult, Verdict, clears, finite


def finite_mean(values) -> float | None:
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return float(np.mean(values)) if values else None


def finite_std(values) -> float | None:
    """Standard deviation of the finite numbers among `values`; None for fewer than two."""
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return float(np.std(values, ddof=1)) if len(values) > 1 else None


def attention_stats(weights) -> tuple[float, float]:
    """(mean entropy in nats, mean max weight) of attention weights (..., T, S), e.g. a (L, H, T, T) snapshot."""
    w = torch.as_tensor(weights, dtype=torch.float32)
    return float(attention_entropy(w).mean()), float(w.max(-1).values.mean())


def softmax_gain(weights) -> float:
    """Mean over rows of the spectral norm of the softmax Jacobian diag(w) - w w^T: the most a gradient arriving at
    a row's weights can be passed back to its scores. 0.5 at most (two keys at 50/50); near-one-hot rows have
    ~2(1 - max weight), so a saturated softmax passes almost nothing back. weights (..., T, S)."""
    rows = torch.as_tensor(weights, dtype=torch.float64).reshape(-1, np.shape(weights)[-1])  # (R, S)
    jacobian = torch.diag_embed(rows) - rows.unsqueeze(-1) * rows.unsqueeze(-2)  # (R, S, S), symmetric
    return float(torch.linalg.eigvalsh(jacobian).abs().amax(-1).mean())


def snapshot_numbers(weights) -> dict[str, float | None]:
    """Entropy, max weight, saturated fraction, softmax gain and row-sum error of one (L, H, T, T) snapshot."""
    w = np.asarray(weights, dtype=np.float32)
    if not np.isfinite(w).all():
        return {}
    entropy, max_weight = attention_stats(w)
    return {
        "mean_entropy": entropy,
        "mean_max_weight": max_weight,
        "saturated_rows": float((w.max(-1) > SATURATED).mean()),
        "softmax_gain": softmax_gain(w),
        "row_sum_error": float(np.abs(w.sum(-1) - 1).max()),
    }


PROBE_WINDOWS, LEAK_WINDOWS = 4, 2  # held-out windows of a checkpoint's probe; the leak costs a forward per position


def probe_batch(loaded, run_dir: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, y), each (PROBE_WINDOWS, T): the fixed held-out windows a checkpoint is probed on, by the shape step's
    verdict (checkpoint_probe) and the health checklist alike, so the same checkpoint gives the same numbers on
    both screens (a review read the two steps' different row sums of one model as contradicting)."""
    from ..data import load_corpus
    from ..runs.models import run_data

    corpus = load_corpus(run_data(run_dir, loaded.config), loaded.config.model.max_seq_len)  # text: corpus.txt
    return corpus.get_batch("val", PROBE_WINDOWS, torch.Generator().manual_seed(0))


def checkpoint_probe(run_dir: str, step: int) -> dict[str, Any]:
    """Leak score, no-peek loss and attention row-sum error of a run's checkpoint, on probe_batch's held-out
    windows of its own corpus, with the (windows, characters) each was measured on."""
    from ..probes import attention_forward
    from ..runs.models import load_model
    from .health import leak_score, no_peek_loss

    loaded = load_model(run_dir, int(step))
    x, y = probe_batch(loaded, run_dir)
    leak_batch = x[:LEAK_WINDOWS]  # (2, T)
    with torch.no_grad():
        _, maps = attention_forward(loaded.model, x)  # L tensors (B, H, T, T)
    rows = max(float((m.sum(-1) - 1).abs().max()) for m in maps)
    return {"leak": leak_score(loaded.model, leak_batch), "no_peek_loss": no_peek_loss(loaded.model, x, y),
            "leak_windows": tuple(int(n) for n in leak_batch.shape), "probe_row_sum_error": rows,
            "rows_windows": tuple(int(n) for n in x.shape)}  # fmt: skip


def _chars_read(config: dict, max_steps: int) -> int | None:
    """max_steps x batch size x context of a run's config.json: how much text its budget reads."""
    batch, context = (config.get("train") or {}).get("batch_size"), (config.get("model") or {}).get("max_seq_len")
    return int(max_steps * batch * context) if batch and context else None


VAL_FRACTION = 0.1  # tinygpt.data's split: the last tenth of a text is held out


@functools.lru_cache(maxsize=64)
def _text_chars(path: str, mtime_ns: int) -> int:
    return len(Path(path).read_text(encoding="utf-8", errors="replace"))


def _train_chars(run_dir: Path) -> int | None:
    """Characters of a run's training split where its text is its own (corpus.txt), else None (a named corpus)."""
    from ..runs.files import CORPUS_FILE

    path = Path(run_dir) / CORPUS_FILE
    try:
        return int(_text_chars(str(path), path.stat().st_mtime_ns) * (1 - VAL_FRACTION))
    except OSError:
        return None


def held_out_batches(record: dict) -> dict[str, Any]:
    """The RunResult fields an eval record's held-out batches give (trainer.evaluate_model), or none for a record
    from before the eval wrote them, or one whose numbers do not fit (the verdict then says it fell back)."""
    losses, tokens, shape = record.get("val_batch_losses"), record.get("val_tokens"), record.get("batch_shape")
    numbers = isinstance(losses, list) and all(isinstance(v, (int, float)) for v in losses)
    if not (numbers and isinstance(tokens, int) and isinstance(shape, list) and len(shape) == 2):
        return {}
    if not all(isinstance(v, int) and v > 0 for v in shape):
        return {}
    out = {"val_batch_losses": tuple(losses), "val_tokens": tokens, "eval_batch_shape": (shape[0], shape[1])}
    train, train_tokens = record.get("train_batch_losses"), record.get("train_tokens")
    if isinstance(train, list) and all(isinstance(v, (int, float)) for v in train) and isinstance(train_tokens, int):
        out |= {"train_batch_losses": tuple(train), "train_tokens": train_tokens}
    return out


def held_out_rose(evals: list[dict]) -> bool | None:
    """Whether a run's last held-out loss sits above its best beyond the two evals' noise (evals.eval_gap: paired
    batch by batch, counting the held-out text's size), as Train's caption reads it (words.clipping); False at its
    best; None where the evals recorded no batches or the last is not finite (the lab then falls back to
    experiment.OVER_FIT_RISE). A review: 0.059 over the best on 2 kB was "rose" beside "± 0.452"."""
    scored = [e for e in evals if finite(e.get("val_loss"))]
    if not scored or scored[-1] is not evals[-1]:
        return None
    best = min(scored, key=lambda e: e["val_loss"])
    if best is scored[-1]:
        return False
    rise = eval_gap(best, scored[-1])
    return None if rise is None else clears(rise, 0.0)[0] is True


def _eval_near(evals: list[dict], step: float, within: int) -> dict:
    """The eval nearest `step` (within `within` steps) as RunResult.mid_eval: its step, held-out loss and batches;
    {} where none was taken near it or its loss is not finite."""
    near = [e for e in evals if isinstance(e.get("step"), int) and abs(e["step"] - step) <= within]
    best = min(near, key=lambda e: abs(e["step"] - step), default=None)
    if best is None or not finite(best.get("val_loss")):
        return {}
    return {"step": best["step"], "val_loss": best["val_loss"], **held_out_batches(best)}


def read_result(reader, probe: Callable[[str, int], dict] | None = None) -> RunResult:
    """A RunResult from a polled RunReader; `probe(run_dir, step)` (e.g. checkpoint_probe) adds leak numbers."""
    status = reader.status() or {}
    metrics = reader.metrics
    max_steps = int(status.get("max_steps") or (metrics[-1]["step"] if metrics else 1))
    early = [m for m in metrics if m.get("step", 0) <= max(1, max_steps // 10)]
    third = max_steps / 3
    middle = [m for m in metrics if abs(m.get("step", 0) - third) <= max(1, max_steps // 30)]
    recent = metrics[-FINAL_STEPS:]  # the final loss and its spread: the window difference_margin assumes
    groups = recent[-1].get("layer_grad_norms", {}) if recent else {}
    layer_norms = {g: finite_mean([(m.get("layer_grad_norms") or {}).get(g) for m in recent]) for g in groups}
    attention: dict[str, float | None] = {}
    snapshot_at: dict[str, int] = {}  # the snapshot's step and probe length: what its numbers were measured on
    snapshots = (reader.attention_index() or {}).get("snapshots", [])
    if snapshots:
        try:
            weights = reader.load_attention(int(snapshots[-1]["step"]))  # (L, H, T, T) on the run's probe text
            attention = snapshot_numbers(weights)
            if attention:
                snapshot_at = {
                    "snapshot_step": int(snapshots[-1]["step"]),
                    "snapshot_chars": int(np.shape(weights)[-1]),
                }
        except Exception:  # noqa: BLE001 - a snapshot thinned away between reads: the next refresh reads another
            pass
    nonfinite = [e for e in reader.events if e.get("kind") == "nonfinite"]
    # A run can also diverge with finite numbers (the loss far above ln V for many steps: a "diverged" event)
    broke = nonfinite or [e for e in reader.events if e.get("kind") == "diverged"]
    probed: dict[str, float] = {}
    checkpoints = reader.checkpoints() or []
    if probe is not None and checkpoints and str(status.get("state")) in ENDED:
        probed = probe(str(reader.run_dir), checkpoints[-1]) or {}
    windows = probed.get("leak_windows")
    leak_on = {"probe_step": int(checkpoints[-1]), "leak_windows": tuple(windows)} if windows else {}
    if windows and probed.get("rows_windows"):  # an ended run's rows: the checkpoint's, on the leak's windows
        attention["row_sum_error"] = probed.get("probe_row_sum_error")
        leak_on["rows_windows"] = tuple(probed["rows_windows"])
    samples = reader.samples
    losses = [m.get("loss") for m in metrics]
    return RunResult(
        state=str(status.get("state", "?")),
        steps=int(status.get("step") or 0),
        max_steps=max_steps,
        reason=str(status.get("reason") or ""),
        initial_loss=losses[0] if losses and isinstance(losses[0], (int, float)) else None,
        final_train_loss=finite_mean([m.get("loss") for m in recent]),
        final_loss_std=finite_std([m.get("loss") for m in recent]),
        final_losses=tuple((int(m["step"]), m["loss"]) for m in recent if "step" in m and finite(m.get("loss"))),
        mid_loss=finite_mean([m.get("loss") for m in middle]),
        mid_losses=tuple((int(m["step"]), m["loss"]) for m in middle if "step" in m and finite(m.get("loss"))),
        mid_eval=_eval_near(reader.evals, third, max(1, max_steps // 10)),
        final_val_loss=(reader.evals[-1].get("val_loss") if reader.evals else None),
        final_eval_train_loss=(reader.evals[-1].get("train_loss") if reader.evals else None),
        best_val_loss=min((v for e in reader.evals if finite(v := e.get("val_loss"))), default=None),
        held_out_rose=held_out_rose(reader.evals),
        **held_out_batches(reader.evals[-1] if reader.evals else {}),
        chars_read=_chars_read(reader.config() or {}, max_steps),
        train_chars=_train_chars(reader.run_dir),
        max_loss_early=max([m["loss"] for m in early if isinstance(m.get("loss"), float)], default=None),
        clip_events_early=sum(1 for m in early if m.get("clipped")),
        max_grad_norm_early=max([m["grad_norm"] for m in early if isinstance(m.get("grad_norm"), float)], default=None),
        layer_grad_norms={g: v for g, v in layer_norms.items() if v is not None},
        first_attn_grads=tuple(
            (int(m["step"]), v)
            for m in recent
            if "step" in m and finite(v := (m.get("layer_grad_norms") or {}).get("L0.attn"))
        ),  # fmt: skip
        leak=probed.get("leak"),
        no_peek_loss=probed.get("no_peek_loss"),
        diverged_step=int(broke[0]["step"]) if broke else None,
        nonfinite_tensor=str(nonfinite[0].get("tensor", "")) if nonfinite else "",
        # the prompt first, then the model's text: "mid + + 1" alone started mid-line (a review)
        sample=(str(samples[-1].get("prompt") or "") + str(samples[-1].get("text") or "") if samples[-1].get("text")
                else str(samples[-1].get("error", ""))) if samples else "",  # fmt: skip
        sample_step=samples[-1].get("step") if samples and isinstance(samples[-1].get("step"), int) else None,
        **{k: attention.get(k) for k in ("mean_entropy", "mean_max_weight", "saturated_rows")},
        **{k: attention.get(k) for k in ("softmax_gain", "row_sum_error")},
        **snapshot_at,
        **leak_on,
    )


def run_experiment(
    experiment: Experiment,
    seed: int,
    root: str | Path,
    source: str = "shakespeare",
    threads: int | None = 1,
    overrides: dict[str, Any] | None = None,
    text: str = "",
) -> tuple[dict[str, Any], Verdict]:
    """Run every variant to the end in this process, one after another, into run folders under `root` (or take the
    measurement); returns (results, verdict). `text` is the corpus when `source` is "text". For tests and
    tinygpt/bench/pitfalls.py; the app uses the RunManager."""
    if experiment.measure is not None:
        results = experiment.measure(seed)
        return results, experiment.verdict(results)
    from ..runs.loop import run_training
    from ..runs.reader import RunReader
    from ..runs.store import RunStore

    store, results = RunStore(root), {}
    for label, config in experiment.configs(seed, source, text, overrides=overrides).items():
        with store.create(config.to_dict(), owner="app") as writer:
            run_dir = writer.run_dir
        run_training(run_dir, config, threads=threads)
        reader = RunReader(run_dir)
        reader.poll()
        results[label] = read_result(reader, checkpoint_probe if experiment.probes else None)
    return results, experiment.verdict(results)
