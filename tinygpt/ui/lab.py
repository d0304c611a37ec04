"""Support for the Experiments page: start a pitfall experiment's runs side by side, and read their numbers.

`results()` turns each run folder into an `experiments.RunResult` (final losses, early spikes, attention entropy
of the latest snapshot, per-layer gradient norms, the leak score of the latest checkpoint), which the experiment's
own `verdict()` turns into sentences. Nothing here is canned: every number comes from the runs.
"""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from tinygpt.checkpoint import load_model
from tinygpt.config import TransformerConfig
from tinygpt.data import load_corpus
from tinygpt.experiments import Experiment, RunResult, attention_stats, memory_rows
from tinygpt.health import leak_score, run_health_checks
from tinygpt.runstore import RunReader
from tinygpt.ui.resources import head_stats


def start_experiment(manager, experiment: Experiment, source: str, seed: int = 1337) -> dict[str, str]:
    """Start every variant of an experiment (same data, same seed); returns {label: run_id}."""
    runs = {}
    for label, config in experiment.configs(seed=seed, source=source).items():
        runs[label] = manager.start(config)
    return runs


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if isinstance(v, (int, float)) and np.isfinite(v)]
    return float(np.mean(values)) if values else None


def result_of(reader: RunReader) -> RunResult:
    status = reader.status() or {}
    metrics = reader.metrics
    max_steps = int(status.get("max_steps") or (metrics[-1]["step"] if metrics else 1))
    early = [m for m in metrics if m.get("step", 0) <= max(1, max_steps // 10)]
    recent = metrics[-20:]
    groups = recent[-1].get("layer_grad_norms", {}) if recent else {}
    layer_norms = {g: _mean([(m.get("layer_grad_norms") or {}).get(g) for m in recent]) for g in groups}
    entropy = max_weight = None
    snapshots = (reader.attention_index() or {}).get("snapshots", [])
    if snapshots:
        try:
            entropy, max_weight = attention_stats(reader.load_attention(int(snapshots[-1]["step"])))
        except Exception:  # noqa: BLE001 - a snapshot thinned away between reads: try next refresh
            pass
    nonfinite = [e for e in reader.events if e.get("kind") == "nonfinite"]
    samples = reader.samples
    return RunResult(
        state=str(status.get("state", "?")),
        steps=int(status.get("step") or 0),
        final_train_loss=_mean([m.get("loss") for m in recent]),
        final_val_loss=(reader.evals[-1].get("val_loss") if reader.evals else None),
        max_loss_early=max([m["loss"] for m in early if isinstance(m.get("loss"), float)], default=None),
        clip_events_early=sum(1 for m in early if m.get("clipped")),
        mean_entropy=entropy,
        mean_max_weight=max_weight,
        layer_grad_norms={g: v for g, v in layer_norms.items() if v is not None},
        leak=leak_of(str(reader.run_dir), (reader.checkpoints() or [None])[-1]),
        diverged_step=int(nonfinite[0]["step"]) if nonfinite else None,
        sample=str(samples[-1].get("text") or samples[-1].get("error", "")) if samples else "",
    )


@st.cache_data(max_entries=200, show_spinner=False)
def leak_of(run_dir: str, step: int | None) -> float | None:
    """Leak score of a run's checkpoint on a val batch (cached: a checkpoint never changes once written)."""
    if step is None:
        return None
    try:
        loaded = load_model(run_dir, int(step))
        corpus = load_corpus(loaded.config.data, loaded.config.model.max_seq_len)
        x, _ = corpus.get_batch("val", 2, torch.Generator().manual_seed(0))
        return leak_score(loaded.model, x)
    except Exception:  # noqa: BLE001 - the verdict shows n/a rather than failing the page
        return None


def results(readers: dict[str, RunReader | None]) -> dict[str, RunResult]:
    """{variant label: its RunResult} for the runs that exist (readers already polled by the page)."""
    return {label: result_of(reader) for label, reader in readers.items() if reader is not None}


def health_checks(run_dir: str, step: int, metrics: list[dict]) -> list[dict]:
    """The model health checklist for one checkpoint of a run, as table rows."""
    loaded = load_model(run_dir, int(step))
    corpus = load_corpus(loaded.config.data, loaded.config.model.max_seq_len)
    x, y = corpus.get_batch("val", 4, torch.Generator().manual_seed(0))
    checks = run_health_checks(loaded.model, x, y, metrics, loaded.config.train.max_grad_norm)
    return [
        {
            "check": c.name,
            "result": "pass" if c.passed else "FAIL",
            "measured": "" if c.value is None else f"{c.value:.4g}",
            "detail": c.detail,
        }
        for c in checks
    ]


def extra_series(key: str, readers: dict[str, RunReader | None]) -> dict[str, dict[str, list[dict]]]:
    """The experiment-specific curves, {field: {run label: records}}: what its claim is about."""
    out: dict[str, dict[str, list[dict]]] = {}
    live = {label: rd for label, rd in readers.items() if rd is not None}
    if key == "scaling":
        entropy, max_weight = {}, {}
        for label, rd in live.items():
            by_step: dict[int, list[dict]] = {}
            for row in head_stats(rd):
                by_step.setdefault(row["step"], []).append(row)
            steps = sorted(by_step)
            entropy[label] = [
                {"step": s, "attention_entropy": _mean([r["entropy"] for r in by_step[s]])} for s in steps
            ]
            max_weight[label] = [
                {"step": s, "max_attention_weight": _mean([r["max_weight"] for r in by_step[s]])} for s in steps
            ]
        out = {"attention_entropy": entropy, "max_attention_weight": max_weight}
        out["attention_grad_norm"] = {
            label: [
                {
                    "step": m["step"],
                    "attention_grad_norm": _mean(
                        [v for g, v in (m.get("layer_grad_norms") or {}).items() if g.endswith(".attn")]
                    ),
                }
                for m in rd.metrics
            ]
            for label, rd in live.items()
        }
    elif key == "residual":
        out["first_layer_grad_norm"] = {
            label: [
                {"step": m["step"], "first_layer_grad_norm": (m.get("layer_grad_norms") or {}).get("L0.attn")}
                for m in rd.metrics
            ]
            for label, rd in live.items()
        }
    elif key == "warmup":
        out["lr"] = {label: rd.metrics for label, rd in live.items()}
    return out


def memory_comparison(width: int, context: int, batch: int) -> list[dict]:
    """Memory rows for the chosen settings next to twice the context (the T^2 term shows) and twice the batch."""
    heads = 4 if width % 4 == 0 else 1
    rows = []
    for label, t, b in (
        (f"B={batch}, T={context}", context, batch),
        (f"B={batch}, T={2 * context}", 2 * context, batch),
        (f"B={2 * batch}, T={context}", context, 2 * batch),
    ):
        config = TransformerConfig(vocab_size=65, hidden_dim=width, num_layers=4, num_heads=heads, max_seq_len=t)
        for row in memory_rows(config, b, measure=label.startswith(f"B={batch}, T={context}")):
            rows.append({**row, "label": label})
    return rows
