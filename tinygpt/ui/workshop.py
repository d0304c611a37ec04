"""Workshop mode: settings, hidden controls and a tutorial pane, all carried in the URL.

An instructor shares a link; every learner's app opens the same way (the TensorFlow Playground pattern):

    ?preset=demo&num_heads=2&attn_scale=none          load a preset, then override settings
    &hide=mask,attn_scale                               hide these controls (config field names)
    &lock=1                                             every setting read-only (the preset is the lesson)
    &tutorial=0                                         show the guided tutorial pane at step 0
    &experiment=scaling                                 open the Experiments page on this experiment
    &large=1                                            large fonts for a projector

`parse_workshop()` is pure (a mapping in, a dataclass out) so it is tested without a browser; bad values are
collected as messages for the page to show, never raised.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tinygpt.config import PRESETS, ConfigError, DataConfig, TrainConfig, TransformerConfig, preset
from tinygpt.experiments import EXPERIMENTS

SETTING_TYPES: dict[str, type] = {
    f.name: type(f.default)
    for cls in (TransformerConfig, TrainConfig, DataConfig)
    for f in dataclasses.fields(cls)
    if f.name not in ("vocab_size", "text")
}
RESERVED = ("preset", "hide", "lock", "tutorial", "experiment", "large", "run", "lab")


@dataclass
class Workshop:
    preset: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)
    locked: bool = False
    tutorial: int | None = None
    experiment: str | None = None
    large: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return bool(self.preset or self.overrides or self.hidden or self.locked or self.tutorial is not None)


def _typed(name: str, text: str) -> Any:
    kind = SETTING_TYPES[name]
    if kind is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} must be true or false, got {text!r}")
    return kind(text)


def parse_workshop(params: Mapping[str, str]) -> Workshop:
    """Read workshop settings from URL query parameters; unknown or invalid ones become messages."""
    shop = Workshop()
    if params.get("preset"):
        if params["preset"] in PRESETS:
            shop.preset = params["preset"]
        else:
            shop.errors.append(f"unknown preset {params['preset']!r} in the link; presets: {', '.join(PRESETS)}.")
    for name, text in params.items():
        if name in RESERVED:
            continue
        if name not in SETTING_TYPES:
            shop.errors.append(f"the link sets {name!r}, which is not a setting; ignored.")
            continue
        try:
            shop.overrides[name] = _typed(name, str(text))
        except ValueError as exc:
            shop.errors.append(f"the link's {name}={text!r} is not valid ({exc}); ignored.")
    if shop.overrides or shop.preset:
        try:
            preset(shop.preset or "demo", **shop.overrides)
        except ConfigError as exc:
            shop.errors.append(f"the link's settings don't work together: {exc}")
            shop.overrides = {}
    shop.hidden = {h.strip() for h in str(params.get("hide", "")).split(",") if h.strip()}
    shop.locked = str(params.get("lock", "")).lower() in ("1", "true", "yes")
    shop.large = str(params.get("large", "")).lower() in ("1", "true", "yes")
    if "tutorial" in params:
        try:
            shop.tutorial = max(0, min(int(params["tutorial"] or 0), len(TUTORIAL) - 1))
        except ValueError:
            shop.tutorial = 0
    if params.get("experiment"):
        if params["experiment"] in EXPERIMENTS:
            shop.experiment = params["experiment"]
        else:
            shop.errors.append(f"unknown experiment {params['experiment']!r}; try {', '.join(EXPERIMENTS)}.")
    return shop


def workshop_link(
    base_url: str, preset_name: str, overrides: Mapping[str, Any], hidden=(), locked=False, tutorial: int | None = None
) -> str:
    """The URL an instructor shares (the inverse of parse_workshop)."""
    from urllib.parse import urlencode

    query: dict[str, Any] = {"preset": preset_name, **{k: v for k, v in overrides.items()}}
    if hidden:
        query["hide"] = ",".join(sorted(hidden))
    if locked:
        query["lock"] = 1
    if tutorial is not None:
        query["tutorial"] = tutorial
    return f"{base_url}?{urlencode(query)}"


# ---------------------------------------------------------------- the guided path

TUTORIAL: list[dict[str, str]] = [
    {
        "title": "1. Watch a transformer learn",
        "page": "Train",
        "text": "Press Train on the Demo preset. The loss starts near the dashed ln(V) line — the model guesses "
        "uniformly — and falls within seconds. Predict: how low will it go in 300 steps?",
    },
    {
        "title": "2. Heads form",
        "page": "Attention",
        "text": "Open Attention and drag the step slider from 0 to now. At step 0 every row is flat. Which heads "
        "learn to look one character back? Find the bright off-diagonal.",
    },
    {
        "title": "3. Why 1/sqrt(d_head)?",
        "page": "Experiments",
        "text": "Run the 'Unscaled attention logits' experiment. Predict first: with no scaling, will attention "
        "become sharper or flatter? Then compare entropy and max weight per head.",
    },
    {
        "title": "4. The mask that cheats",
        "page": "Experiments",
        "text": "Run 'Causal mask misalignment'. The off-by-one run's training loss drops below the causal one. "
        "Is it a better model? Read the leak detector and the samples.",
    },
    {
        "title": "5. Warmup and stability",
        "page": "Experiments",
        "text": "Run 'No learning-rate warmup' and 'Unstable softmax'. Look at the first steps of the gradient-norm "
        "chart and at the step where the naive softmax run stopped.",
    },
    {
        "title": "6. Residuals carry the gradient",
        "page": "Experiments",
        "text": "Run 'Detached residual path' and open Gradients: the first layer's line falls to the floor.",
    },
]


def source_of(function: Callable) -> str:
    """The source text of a library function, for the 'Show the code' expanders."""
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return f"# source of {getattr(function, '__qualname__', function)} is not available"
