"""What the chart tests share: run data as the run store writes it, and readers of the figures they return
(Vega-Lite specs and plotly figures, read through `to_dict()`)."""

from __future__ import annotations

import base64
import math

import numpy as np

GROUPS = ["emb", "L0.attn", "L0.mlp", "L1.attn", "L1.mlp", "ln_f"]


def make_metrics(steps: int, nan_at: int | None = None) -> list[dict]:
    """Metrics records as the run store writes them (None where a value was not finite)."""
    ratios = {g: 1e-3 * (j + 1) / 3 for j, g in enumerate(GROUPS)}
    out = []
    for i in range(1, steps + 1):
        bad = i == nan_at
        out.append(
            {
                "step": i,
                "time": float(i),
                "loss": None if bad else 4.2 * math.exp(-i / 300) + 1.5,
                "lr": 1e-3 * min(1.0, i / 100),
                "grad_norm": None if bad else 3.0 / (1 + i / 50),
                "clipped": i <= 20,
                "layer_grad_norms": {g: (j + 1) * 0.1 / (1 + i / 100) for j, g in enumerate(GROUPS)}
                if steps < 10_000
                else ratios,  # shared for long runs: building 100k dicts would dominate the test's time
                "update_ratios": ratios,
                "tokens_per_s": 1000.0,
            }
        )
    return out


METRICS = make_metrics(400, nan_at=77)
EVALS = [{"step": s, "train_loss": 2.0, "val_loss": 4.2 * math.exp(-s / 300) + 1.6} for s in range(0, 401, 100)]
EVENTS = [
    {
        "step": 150,
        "time": 1.0,
        "kind": "knob",
        "message": "mask: causal -> none",
        "knob": "mask",
        "old": "causal",
        "new": "none",
    },
    {
        "step": 200,
        "time": 2.0,
        "kind": "knob",
        "message": "learning_rate: 0.001 -> 0.003",
        "knob": "learning_rate",
        "old": 0.001,
        "new": 0.003,
    },
    {"step": 77, "time": 3.0, "kind": "nonfinite", "message": "loss is nan at step 77"},
    {"step": 300, "time": 4.0, "kind": "checkpoint", "message": "saved"},
]


# ---------------------------------------------------------------- reading figures


def views(spec: dict) -> list[dict]:
    """Every unit view (one mark) of a spec, through layers and concatenations."""
    found = []
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for child in spec.get(key, []):
            found += views(child)
    if "mark" in spec:
        found.append(spec)
    return found


def mark_type(view: dict) -> str:
    return view["mark"]["type"] if isinstance(view["mark"], dict) else view["mark"]


def values(spec: dict, view: dict) -> list[dict]:
    """The rows a view draws (the top-level dataset its data names)."""
    return spec["datasets"][view["data"]["name"]] if "data" in view else []


def all_rows(spec: dict) -> list[dict]:
    """Every row of every dataset, each dataset once (several views often share one)."""
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


def array(value) -> np.ndarray:
    """A plotly array from `fig.to_dict()`: plotly ships numpy arrays as base64 typed arrays ({dtype, bdata, shape})."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return flat.reshape([int(n) for n in str(value.get("shape", len(flat))).split(",")])
    return np.asarray(value)


def title_text(spec: dict) -> str:
    title = spec.get("title", "")
    return title["text"] if isinstance(title, dict) else title


def axis_titles(spec: dict, channel: str) -> set[str]:
    """The axis titles along `channel`, as they read (a title drawn as lines joined by a space)."""
    found = [v["encoding"][channel]["title"] for v in views(spec) if "title" in v.get("encoding", {}).get(channel, {})]
    return {" ".join(title) if isinstance(title, list) else title for title in found}


def y_title_lines(spec: dict, height: int | None = None) -> list[tuple[list[str], int | None]]:
    """Every y title of a spec as (its lines, the height of the view or panel it runs along: the nearest `height`
    set on it or above it; None where the spec sets none)."""
    height = spec.get("height", height) if isinstance(spec.get("height"), int) else height
    found = []
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for child in spec.get(key, []):
            found += y_title_lines(child, height)
    if "mark" in spec and "title" in spec.get("encoding", {}).get("y", {}):
        title = spec["encoding"]["y"]["title"]
        found.append((title if isinstance(title, list) else [title], height))
    return found


def rules_at(spec: dict, channel: str) -> list[float]:
    """Values of the rules drawn along `channel` (a horizontal rule has a y and no x)."""
    out = []
    for v in views(spec):
        if mark_type(v) == "rule" and channel in v["encoding"]:
            field = v["encoding"][channel]["field"]
            out += [row[field] for row in values(spec, v)]
    return out


def texts(spec: dict) -> list[str]:
    out = []
    for v in views(spec):
        if mark_type(v) == "text" and "field" in v["encoding"].get("text", {}):
            out += [str(row[v["encoding"]["text"]["field"]]) for row in values(spec, v)]
    return out


def tooltips(spec: dict) -> list:
    return [v["encoding"]["tooltip"] for v in views(spec) if "tooltip" in v.get("encoding", {})]


# ---------------------------------------------------------------- attention maps


def attention(num_layers: int, num_heads: int, size: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    w = rng.random((num_layers, num_heads, size, size)) * np.tril(np.ones((size, size)))
    return (w / w.sum(-1, keepdims=True)).astype(np.float16)  # (L, H, T, T), as the run store saves it
