"""What the app's pages need besides charts: settings -> RunConfig, the shared RunManager, models from
checkpoints, attention probes, head statistics, generation, and run bundles.

Pages stay thin by calling these. Everything here returns plain data (numbers, numpy arrays, dicts, bytes) except
the few functions that draw (`show_chart`) or hold Streamlit caches (`get_store`, `get_manager`, `load_model`).

Deliberately left out: chart construction (tinygpt/ui/charts.py) and session-state keys (tinygpt/ui/state.py).
"""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import json
import math
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
import torch

from tinygpt.attention import build_mask
from tinygpt.checkpoint import load_checkpoint
from tinygpt.config import (
    ATTN_SCALES,
    LIVE_MODEL_KNOBS,
    LIVE_TRAIN_KNOBS,
    MASKS,
    PRESETS,
    ConfigError,
    DataConfig,
    RunConfig,
    TrainConfig,
    TransformerConfig,
)
from tinygpt.data import SYNTHETIC_TASKS, load_shakespeare, min_corpus_chars, text_from_user
from tinygpt.errors import TinyGPTError
from tinygpt.model import TinyGPT
from tinygpt.probes import capture
from tinygpt.runstore import RunReader, RunStore
from tinygpt.tokenizer import CharTokenizer
from tinygpt.trainer import lr_at

# ---------------------------------------------------------------- the run store and the worker manager

ACTIVE_STATES = ("queued", "starting", "running")  # charts refresh by themselves in these


@st.cache_resource(show_spinner=False)
def _store_at(root: str) -> RunStore:
    return RunStore(root)


def get_store() -> RunStore:
    """The run store ($TINYGPT_RUNS_DIR, default ./runs), one per server process."""
    return _store_at(str(RunStore().root))


@st.cache_resource(show_spinner=False)
def _manager_at(root: str):
    from tinygpt.worker import RunManager  # imported late: the Streamlit script must not pay for it twice

    return RunManager(_store_at(root))


def get_manager():
    """The one RunManager of this server: owns the training worker processes of every browser session."""
    return _manager_at(str(RunStore().root))


def is_live(run_id: str | None) -> bool:
    if not run_id:
        return False
    try:
        return bool(get_manager().is_live(run_id))
    except TinyGPTError:
        return False


def device_options() -> list[str]:
    """Devices this machine can train on, "auto" first."""
    try:
        from tinygpt.device import available_devices

        found = [str(d) for d in available_devices()]
    except ImportError:  # the device module is optional for the pages; torch can answer directly
        found = ["cpu"]
        if torch.cuda.is_available():
            found.append("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            found.append("mps")
    return ["auto", *[d for d in found if d != "auto"]]


# ---------------------------------------------------------------- settings -> RunConfig

PRESET_LABELS = {"Demo (CPU, seconds)": "demo", "nanoGPT CPU": "nanogpt-cpu", "GPU": "gpu"}
SOURCE_SHAKESPEARE = "Tiny Shakespeare"
SOURCE_UPLOAD = "Upload a .txt file"
SOURCE_PASTE = "Paste text"
SOURCES = [SOURCE_SHAKESPEARE, *(f"Synthetic: {t}" for t in SYNTHETIC_TASKS), SOURCE_UPLOAD, SOURCE_PASTE]
SCALE_LABELS = {
    "head_dim": "1/√d_head (correct)",
    "hidden_dim": "1/√d_model (common bug)",
    "none": "none (scores grow with d_head)",
}
MASK_LABELS = {
    "causal": "causal (language model)",
    "none": "none (sees the future)",
    "off_by_one": "off by one (sees the next token)",
    "sliding_window": "sliding window",
}
# Which settings widget drives which live knob (the rest start a new run).
KNOB_OF_SETTING = {
    "learning_rate": "learning_rate",
    "warmup_steps": "warmup_steps",
    "max_grad_norm": "max_grad_norm",
    "attn_scale": "attn_scale",
    "attn_scale_mult": "attn_scale_mult",
    "mask": "mask",
    "window": "window",
}
assert set(KNOB_OF_SETTING.values()) <= set(LIVE_TRAIN_KNOBS + LIVE_MODEL_KNOBS)
assert set(SCALE_LABELS) == set(ATTN_SCALES) and set(MASK_LABELS) == set(MASKS)


def heads_options(width: int) -> list[int]:
    """Head counts that divide the width (so d_head = width / heads is whole), at most 16."""
    return [h for h in range(1, min(width, 16) + 1) if width % h == 0]


def preset_values(label: str) -> dict[str, Any]:
    """The settings form's values for a preset (keys: the config field names the form shows)."""
    spec = PRESETS[PRESET_LABELS[label]]
    model = TransformerConfig(**spec["model"])
    train = TrainConfig(**spec["train"])
    return {
        "num_layers": model.num_layers,
        "hidden_dim": model.hidden_dim,
        "num_heads": model.num_heads,
        "max_seq_len": model.max_seq_len,
        "batch_size": train.batch_size,
        "learning_rate": train.learning_rate,
        "warmup_steps": train.warmup_steps,
        "attn_scale": model.attn_scale,
        "attn_scale_mult": model.attn_scale_mult,
        "mask": model.mask,
        "window": model.window,
        "dropout": model.dropout,
        "max_grad_norm": train.max_grad_norm,
        "seed": train.seed,
        "max_steps": train.max_steps,
    }


def values_from_config(config: dict) -> tuple[dict[str, Any], str | None]:
    """The settings form's values and corpus label for a run's saved config (a reattached tab shows the
    settings of the run it watches). Fields the config lacks are left out."""
    model, train, data = config.get("model") or {}, config.get("train") or {}, config.get("data") or {}
    values = {k: model[k] for k in ("num_layers", "hidden_dim", "num_heads", "max_seq_len") if k in model}
    values |= {k: model[k] for k in ("attn_scale", "attn_scale_mult", "mask", "window", "dropout") if k in model}
    keys = ("batch_size", "learning_rate", "warmup_steps", "max_grad_norm", "seed", "max_steps")
    values |= {k: train[k] for k in keys if k in train}
    source = data.get("source", "")
    label = SOURCE_SHAKESPEARE if source == "shakespeare" else None
    if source.startswith("synthetic:"):
        label = "Synthetic: " + source.removeprefix("synthetic:")
    elif source == "text":
        label = SOURCE_PASTE
    return values, label


def touch(run_id: str | None) -> None:
    """Renew the lease of a live run: the run pauses itself when no page has looked at it for a while."""
    if run_id and is_live(run_id):
        get_manager().touch(run_id)


def data_config(source: str, pasted: str = "", uploaded: bytes | None = None, block_size: int = 32) -> DataConfig:
    """The DataConfig of a corpus choice; user text is decoded and checked here (DataError says what to fix)."""
    if source == SOURCE_SHAKESPEARE:
        return DataConfig(source="shakespeare")
    if source.startswith("Synthetic: "):
        return DataConfig(source="synthetic:" + source.removeprefix("Synthetic: "))
    if source == SOURCE_UPLOAD:
        if not uploaded:
            raise ConfigError("choose a .txt file to upload first (or pick another corpus).")
        return DataConfig(source="text", text=text_from_user(uploaded, min_chars=min_corpus_chars(block_size)))
    if source == SOURCE_PASTE:
        return DataConfig(source="text", text=text_from_user(pasted or "", min_chars=min_corpus_chars(block_size)))
    raise ConfigError(f"unknown corpus {source!r}; choose one of {', '.join(SOURCES)}.")


def build_config(preset_label: str, values: dict[str, Any], data: DataConfig, device: str = "auto") -> RunConfig:
    """A validated RunConfig: the preset's settings, overridden by the form's `values`. Raises ConfigError."""
    if preset_label not in PRESET_LABELS:
        raise ConfigError(f"unknown preset {preset_label!r}; choose one of {', '.join(PRESET_LABELS)}.")
    spec = PRESETS[PRESET_LABELS[preset_label]]
    v = values
    lr = float(v["learning_rate"])
    if not (math.isfinite(lr) and lr > 0):
        raise ConfigError(f"learning_rate must be > 0, got {lr}: try 1e-3.")
    if v["mask"] == "sliding_window" and int(v["window"]) > int(v["max_seq_len"]):
        raise ConfigError(
            f"the sliding window ({v['window']}) is longer than the context ({v['max_seq_len']}): "
            "it would be the causal mask. Pick a window smaller than the context."
        )
    model = TransformerConfig(
        hidden_dim=int(v["hidden_dim"]),
        num_layers=int(v["num_layers"]),
        num_heads=int(v["num_heads"]),
        max_seq_len=int(v["max_seq_len"]),
        dropout=float(v["dropout"]),
        attn_scale=v["attn_scale"],
        attn_scale_mult=float(v["attn_scale_mult"]),
        mask=v["mask"],
        window=int(v["window"]),
    )
    max_steps = int(v["max_steps"])
    train_spec = dict(spec["train"])
    train_spec.update(
        learning_rate=lr,
        min_lr=lr / 10,  # the cosine floor follows the peak, as in nanoGPT
        warmup_steps=int(v["warmup_steps"]),
        max_grad_norm=float(v["max_grad_norm"]),
        batch_size=int(v["batch_size"]),
        max_steps=max_steps,
        seed=int(v["seed"]),
        device=device,
    )
    # Short runs still get a few eval points and checkpoints to look at.
    train_spec["eval_interval"] = max(1, min(train_spec["eval_interval"], max(max_steps // 4, 1)))
    train = TrainConfig(**train_spec)
    run = dict(spec["run"])
    run["checkpoint_every"] = max(1, min(run["checkpoint_every"], max(max_steps // 3, 1)))
    return RunConfig(model=model, train=train, data=data, **run)


def ensure_corpus(data: DataConfig, progress: Callable[[int, int], None] | None = None) -> None:
    """Fetch Tiny Shakespeare into the cache before a run needs it (with a progress callback); DataError offline."""
    if data.source == "shakespeare":
        load_shakespeare(progress=progress)


def apply_knob(run_id: str, knob: str, value: Any, current: dict[str, Any]) -> str:
    """Change a live knob of a running run; returns what was asked, for the page to show."""
    manager = get_manager()
    if knob == "learning_rate":
        # min_lr must stay <= learning_rate, so move them in an order that is valid at every moment.
        value = float(value)
        if value < float(current.get("min_lr", 0.0)):
            manager.set_knob(run_id, "min_lr", value / 10)
            manager.set_knob(run_id, "learning_rate", value)
        else:
            manager.set_knob(run_id, "learning_rate", value)
            manager.set_knob(run_id, "min_lr", value / 10)
    else:
        manager.set_knob(run_id, knob, value)
    return f"{knob} -> {value}"


def current_knobs(config: dict, events: list[dict]) -> dict[str, Any]:
    """The run's knob values now: its config, then every knob event in order."""
    model, train = config.get("model", {}), config.get("train", {})
    knobs = {k: model.get(k) for k in LIVE_MODEL_KNOBS}
    knobs.update({k: train.get(k) for k in LIVE_TRAIN_KNOBS})
    for event in events:
        if event.get("kind") == "knob" and event.get("knob") in knobs:
            knobs[event["knob"]] = event.get("new")
    return knobs


def knob_result(events: list[dict], knob: str, since: float) -> tuple[int | None, str | None]:
    """(step at which the worker applied a change of `knob` requested at unix time `since`, or the error it
    reported instead); (None, None) while it has not answered yet."""
    for event in reversed(events):
        if float(event.get("time") or 0) < since - 1:
            break
        if event.get("kind") == "knob" and event.get("knob") == knob:
            return int(event.get("step") or 0), None
        if event.get("kind") == "error" and f"knob {knob}" in str(event.get("message", "")):
            return None, str(event.get("message"))
    return None, None


def lr_schedule(config: dict, knobs: dict[str, Any], points: int = 300) -> list[tuple[int, float]]:
    """The planned learning rate over the whole run with the current knobs: [(step, lr)], ~`points` long."""
    train = config.get("train") or {}
    max_steps = int(train.get("max_steps") or 0)
    if max_steps < 1:
        return []

    def knob(name: str, default: Any) -> Any:
        value = knobs.get(name)
        return value if value is not None else train.get(name, default)

    lr, min_lr, warmup = float(knob("learning_rate", 1e-3)), float(knob("min_lr", 0.0)), int(knob("warmup_steps", 0))
    stride = max(1, max_steps // points)
    steps = sorted(set(range(1, max_steps + 1, stride)) | {max_steps, min(max(warmup, 1), max_steps)})
    # metrics' `step` is the step just completed (1-based); lr_at takes the 0-based step being taken
    return [(s, lr_at(s - 1, lr, min_lr, warmup, max_steps)) for s in steps]


# ---------------------------------------------------------------- status line


def eta_seconds(metrics: list[dict], step: int, max_steps: int | None) -> float | None:
    """Seconds left at the recent pace (the last ~50 step records)."""
    if not max_steps or len(metrics) < 2 or step >= max_steps:
        return None
    recent = [m for m in metrics[-50:] if isinstance(m.get("time"), (int, float))]
    if len(recent) < 2:
        return None
    steps = recent[-1]["step"] - recent[0]["step"]
    seconds = recent[-1]["time"] - recent[0]["time"]
    if steps <= 0 or seconds <= 0:
        return None
    return (max_steps - step) * seconds / steps


def format_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def status_line(status: dict, metrics: list[dict]) -> str:
    """`step N / M · X tokens/s · ETA · state: reason`."""
    step = int(status.get("step") or 0)
    max_steps = status.get("max_steps")
    parts = [f"step {step:,} / {max_steps:,}" if max_steps else f"step {step:,}"]
    tps = status.get("tokens_per_s")
    if tps:
        parts.append(f"{tps:,.0f} tokens/s")
    state = status.get("state", "unknown")
    if state in ("running", "starting"):
        parts.append(f"ETA {format_duration(eta_seconds(metrics, step, max_steps))}")
    text = state
    if status.get("queue_position"):
        text += f" (position {status['queue_position']} in the queue)"
    if status.get("reason"):
        text += f": {status['reason']}"
    parts.append(text)
    return " · ".join(parts)


def progress_fraction(status: dict) -> float:
    max_steps = status.get("max_steps") or 0
    return min(1.0, max(0.0, (status.get("step") or 0) / max_steps)) if max_steps else 0.0


# ---------------------------------------------------------------- drawing with help text


def event_notes(events: list[dict], limit: int = 5) -> str:
    """The newest knob changes and non-finite events as one line of text (the charts draw them as markers)."""
    marked = [e for e in events if e.get("kind") in ("knob", "nonfinite")][-limit:]
    return " · ".join(str(e.get("message") or f"{e.get('knob')} at step {e.get('step')}") for e in marked)


def show_chart(fig: Any, help_name: str | None = None, key: str | None = None, code: bool = True) -> None:
    """Draw a plotly, Altair or Vega-Lite figure, then the chart's 'what to look for' sentence from CHART_HELP and
    (with `code`) a "Show the code" expander. Live fragments pass code=False and call `show_code` outside."""
    from tinygpt.ui.charts import CHART_HELP

    if fig is None:
        return
    if hasattr(fig, "to_plotly_json"):
        st.plotly_chart(fig, key=key, config={"displaylogo": False}, theme=None)
    elif isinstance(fig, dict):  # a Vega-Lite spec with named datasets (charts.VegaLite): updates in place
        # Stacked panels keep their own width: "stretch" would widen each panel to the page and push the axis
        # labels past its edge.
        stacked = any(k in fig for k in ("vconcat", "hconcat", "concat"))
        st.vega_lite_chart(fig, key=key, width="content" if stacked else "stretch")
    else:
        st.altair_chart(fig, key=key, width="stretch")
    if help_name and CHART_HELP.get(help_name):
        st.caption(CHART_HELP[help_name])
    if code and help_name:
        show_code([help_name])


def show_code(help_names: list[str], label: str = "Show the code") -> None:
    """One expander with the library functions whose numbers the named charts draw (each function once)."""
    from tinygpt.ui.workshop import code_of_chart, source_of

    functions = list(dict.fromkeys(f for name in help_names for f in code_of_chart(name)))
    if functions:
        with st.expander(label, icon=":material/code:"):
            for function in functions:
                st.code(source_of(function), language="python")


@st.cache_resource(show_spinner=False)
def _blank_plotly_figure():
    import plotly.graph_objects as go

    return go.Figure(layout={"height": 10, "width": 10, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}})


def preload_plotly() -> None:
    """An invisible 10-pixel plotly chart, so the browser fetches and compiles plotly.js (a 4.7 MB chunk that
    Streamlit loads lazily, with the first plotly chart of a page load) while the learner is on Train. Measured in
    headless Chromium: it was half of the first Attention view's ~1.1 s; later views took ~0.35 s."""
    with st.container(key="plotly_preload"):
        st.html("<style>.st-key-plotly_preload { display: none !important; }</style>")
        st.plotly_chart(_blank_plotly_figure(), config={"staticPlot": True}, theme=None, key="plotly_preload_chart")


# ---------------------------------------------------------------- models from checkpoints


def checkpoint_stem(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / "checkpoints" / f"step_{int(step):08d}"


_PROBE_LOCK = threading.Lock()


@st.cache_resource(max_entries=6, show_spinner=False)
def load_model(run_dir: str, step: int) -> tuple[TinyGPT, CharTokenizer, dict]:
    """The model of one checkpoint (CPU, eval mode), its tokenizer, and the config it was saved with."""
    ckpt = load_checkpoint(checkpoint_stem(Path(run_dir), step))
    if ckpt.config.model.vocab_size != len(ckpt.vocab):  # a config saved before the tokenizer set vocab_size
        ckpt.config.model = dataclasses.replace(ckpt.config.model, vocab_size=len(ckpt.vocab))
    model = ckpt.build_model("cpu").eval()
    return model, CharTokenizer(ckpt.vocab), ckpt.config.to_dict()


def nearest_checkpoint(steps: list[int], step: int | None) -> int | None:
    """The latest checkpoint at or before `step` (the first one if all are later); None if there is none."""
    if not steps:
        return None
    if step is None:
        return steps[-1]
    before = [s for s in steps if s <= step]
    return before[-1] if before else steps[0]


@torch.no_grad()
def attention_from_model(model: TinyGPT, tokenizer: CharTokenizer, text: str) -> np.ndarray:
    """(L, H, T, T) attention weights of `text` (cropped to the context), through the explicit path."""
    ids = tokenizer.encode(text, what="probe text")[-model.config.max_seq_len :]
    idx = torch.tensor([ids], dtype=torch.long)  # (1, T)
    _, maps = model(idx, return_attention=True)
    return torch.stack([m[0] for m in maps]).float().numpy()  # L x (H, T, T) -> (L, H, T, T)


@torch.no_grad()
def attention_steps(model: TinyGPT, tokenizer: CharTokenizer, text: str, layer: int, head: int) -> dict[str, Any]:
    """One head's attention, step by step: QK^T, scaled, the mask, masked scores and softmax weights (T, T) each."""
    ids = tokenizer.encode(text, what="probe text")[-model.config.max_seq_len :]
    idx = torch.tensor([ids], dtype=torch.long)  # (1, T)
    prefix = f"blocks.{layer}.attn."
    # Cached models are shared by every browser session: hooks attached by one session must not fire (and
    # overwrite this cache) during another session's forward pass.
    with _PROBE_LOCK, capture(model, [prefix + "hook_scores", prefix + "hook_mask", prefix + "hook_weights"]) as cache:
        model(idx)
    scaled = cache[prefix + "hook_scores"][0, head].double()  # (T, T): q.k * scale, before the mask
    mask = cache[prefix + "hook_mask"].bool()  # (T, T), True = may attend
    scale = model.config.scale
    qk = scaled / scale if scale else scaled
    masked = scaled.masked_fill(~mask, float("-inf"))
    weights = cache[prefix + "hook_weights"][0, head]
    return {
        "qk": qk.numpy(),
        "scaled": scaled.numpy(),
        "mask": mask.numpy(),
        "masked": masked.numpy(),
        "weights": weights.double().numpy(),
        "tokens": [tokenizer.vocab[i] for i in ids],
        "scale": scale,
    }


def mask_of(mode: str, size: int, window: int) -> np.ndarray:
    return build_mask(mode, size, int(window)).numpy()


# ---------------------------------------------------------------- head statistics over training time


@st.cache_data(max_entries=20_000, show_spinner=False)
def snapshot_head_stats(run_dir: str, step: int) -> list[dict]:
    """Per head of one attention snapshot: mean row entropy (nats) and mean max weight. A snapshot file never
    changes once written, so this is cached per (run, step) and each file is read once per server."""
    path = Path(run_dir) / "attention" / f"step_{int(step):08d}.npy"
    try:
        weights = np.load(path, allow_pickle=False).astype(np.float64)  # (L, H, T, T)
    except (FileNotFoundError, ValueError):
        return []
    p = np.clip(weights, 1e-12, 1.0)
    entropy = -(weights * np.log(p)).sum(axis=-1).mean(axis=-1)  # (L, H): mean over query rows
    max_weight = weights.max(axis=-1).mean(axis=-1)  # (L, H)
    rows = []
    for layer in range(weights.shape[0]):
        for head in range(weights.shape[1]):
            rows.append(
                {
                    "step": int(step),
                    "layer": layer,
                    "head": head,
                    "entropy": float(entropy[layer, head]),
                    "max_weight": float(max_weight[layer, head]),
                }
            )
    return rows


def head_stats(reader: RunReader) -> list[dict]:
    rows: list[dict] = []
    for snap in reader.attention_index().get("snapshots", []):
        rows.extend(snapshot_head_stats(str(reader.run_dir), int(snap["step"])))
    return rows


# ---------------------------------------------------------------- generation


def stream_text(
    model: TinyGPT,
    tokenizer: CharTokenizer,
    prompt: str,
    num_chars: int,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    seed: int,
    last: dict,
) -> Iterator[str]:
    """Yield generated characters one by one; `last` receives the final step's probabilities and attention
    (for the charts under the text). Raises TinyGPTError (e.g. unknown prompt characters) before yielding."""
    ids = tokenizer.encode(prompt, what="prompt")
    if not ids:
        raise TinyGPTError("the prompt is empty: type at least one character to continue from.")
    idx = torch.tensor([ids], dtype=torch.long)  # (1, T)
    generator = torch.Generator().manual_seed(int(seed))
    context = list(ids)  # every token so far; the model sees the last max_seq_len of them
    for _next_ids, step in model.stream(
        idx, num_chars, temperature, top_k or None, top_p, generator, use_cache=True, with_attention=True
    ):
        row = None if step.attention is None else step.attention.float().numpy()  # (L, H, S)
        keys = context[-row.shape[-1] :] if row is not None else []  # the S positions the newest query saw
        context.append(step.token)
        char = tokenizer.vocab[step.token]
        last.update(
            probs_raw=step.probs_raw.double().numpy(),
            probs=step.probs.double().numpy(),
            attention=row,
            keys=[tokenizer.vocab[i] for i in keys],
            char=char,
        )
        yield char


# ---------------------------------------------------------------- runs: tables and bundles


def run_rows(store: RunStore) -> list[dict]:
    """One plain row per run for the Runs table, newest first."""
    rows = []
    for s in store.list_runs():
        model = s.config.get("model", {}) if s.config else {}
        train = s.config.get("train", {}) if s.config else {}
        data = s.config.get("data", {}) if s.config else {}
        rows.append(
            {
                "run": s.run_id,
                "state": s.state,
                "step": s.step,
                "max steps": s.max_steps,
                "best val loss": s.best_val_loss,
                "corpus": data.get("source", ""),
                "layers x heads x width": (
                    f"{model.get('num_layers')} x {model.get('num_heads')} x {model.get('hidden_dim')}" if model else ""
                ),
                "context": model.get("max_seq_len"),
                "mask": model.get("mask"),
                "lr": train.get("learning_rate"),
                "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.created)) if s.created else "",
                "reason": s.reason,
            }
        )
    return rows


def _flatten(record: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def metrics_csv(run_dir: Path) -> bytes:
    """metrics.jsonl as CSV, nested groups flattened to columns (layer_grad_norms.L0.attn, ...)."""
    path = Path(run_dir) / "metrics.jsonl"
    rows, fields = [], []
    if path.exists():
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a torn last line
                if isinstance(record, dict):
                    flat = _flatten(record)
                    rows.append(flat)
                    fields.extend(k for k in flat if k not in fields)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields or ["step"])
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def _slug(title: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_") or "figure"


def figures_html(figures: dict[str, Any]) -> str:
    """The plotly figures as one self-contained HTML page (plotly.js embedded once, nothing fetched from the
    internet); Altair charts are listed with the name of their Vega-Lite spec file in the bundle."""
    parts, first = [], True
    for title, fig in figures.items():
        if fig is None:
            continue
        if hasattr(fig, "to_plotly_json"):
            parts.append(f"<h2>{html.escape(title)}</h2>" + fig.to_html(full_html=False, include_plotlyjs=first))
            first = False
        else:  # rendering Vega-Lite needs vega.js, which an offline page cannot fetch: ship the spec instead
            parts.append(
                f"<h2>{html.escape(title)}</h2><p>Vega-Lite chart: <code>figures/{_slug(title)}.vl.json</code> "
                "(open it in the Vega editor, or with Altair: <code>alt.Chart.from_json(...)</code>).</p>"
            )
    body = "\n".join(parts) or "<p>No figures.</p>"
    head = "<meta charset='utf-8'><title>tinygpt figures</title>"
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>"


def make_bundle(run_dir: Path, figures: dict[str, Any] | None = None) -> bytes:
    """A zip of one run: config.json, metrics.csv, evals/events/samples, the latest checkpoint, figures.html."""
    run_dir = Path(run_dir)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("config.json", "status.json", "evals.jsonl", "events.jsonl", "samples.jsonl"):
            if (run_dir / name).exists():
                z.write(run_dir / name, name)
        z.writestr("metrics.csv", metrics_csv(run_dir))
        ckpts = sorted((run_dir / "checkpoints").glob("step_*.json")) if (run_dir / "checkpoints").is_dir() else []
        if ckpts:
            latest = ckpts[-1]
            z.write(latest, f"checkpoint/{latest.name}")
            weights = latest.with_suffix(".safetensors")
            if weights.exists():
                z.write(weights, f"checkpoint/{weights.name}")
        if figures:
            z.writestr("figures.html", figures_html(figures))
            for title, fig in figures.items():
                if fig is not None and not hasattr(fig, "to_plotly_json"):
                    z.writestr(f"figures/{_slug(title)}.vl.json", json.dumps(fig.to_dict()))
    return buf.getvalue()
