"""The Train form as data: one table of fields, from which everything about the form is computed.

Each `Field` is one setting: its config name (also its URL parameter and CLI flag), label, widget, range, and
whether it is a live knob (changes the running model at its next step) or needs a new run. From `FIELDS` come
the preset values, the values shown when a tab reattaches to a run, the "changed since this run started" list, the
widget keys a workshop link sets or hides, and the page's widgets themselves (tinygpt/ui/train/form.py draws them,
and builds the run's config from their values with `tinygpt.presets.preset`, the function the CLI calls too).
Adding a setting means adding one row here.

Pure: no Streamlit calls (the widget keys are plain strings from tinygpt/ui/train/train_keys.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tinygpt.config import (
    ATTN_SCALES,
    LIVE_KNOBS,
    MASKS,
    MAX_TEXT_NAME,
    MAX_TOKEN_SHIFT,
    OPTIMIZERS,
    ConfigError,
    DataConfig,
    RunConfig,
)
from tinygpt.data import (
    SHAKESPEARE_BYTES,
    SHAKESPEARE_ENV,
    SYNTHETIC_TASKS,
    load_shakespeare,
    min_corpus_chars,
    text_from_user,
)
from tinygpt.presets import PRESET_NOTES, preset
from tinygpt.runs.corpus import corpus_sha256
from tinygpt.runs.knobs import knobs_now
from tinygpt.ui.train import train_keys
from tinygpt.ui.words.setting_words import setting_word

PRESET_LABELS = {
    "Demo (CPU, seconds)": "demo",
    "Lecture (until stopped)": "lecture",
    "nanoGPT CPU": "nanogpt-cpu",
    "Fast (CPU speedrun)": "fast",
    "Fast, 3 minutes (val 1.70)": "fast-3min",
    "GPU": "gpu",
}
SOURCE_SHAKESPEARE = "Tiny Shakespeare"
# Any file of text, not only .txt: two reviews' calendar.py and configparser.py were refused by Streamlit's bare
# "text/x-python files are not allowed"; a file that is not UTF-8 text gets data.text_from_user's message instead
SOURCE_UPLOAD = "Upload a text file"
UPLOAD_LABEL = "A UTF-8 text file (.txt, .py, .md, .csv, …)"
SOURCE_PASTE = "Paste text"
SOURCES = [SOURCE_SHAKESPEARE, *(f"Synthetic: {t}" for t in SYNTHETIC_TASKS), SOURCE_UPLOAD, SOURCE_PASTE]
# What the Train form says under Tiny Shakespeare: the copy ships in the package (tinygpt/corpora), so nothing is
# fetched; it said "downloaded once on first use" while the README said it works offline.
SHAKESPEARE_CAPTION = (
    f"{SHAKESPEARE_BYTES / 1e6:.1f} MB of Shakespeare's plays, shipped inside tinygpt: nothing is downloaded "
    f"(set {SHAKESPEARE_ENV} to train on another copy)."
)
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
WIDTHS = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)
# Log-spaced stops (1, 2, 5 per decade) for the sliders whose useful values span decades.
# A log slider's stops span its exact box's range, floor to top: a review found the LR slider's floor at 1e-5 beside
# a box that takes 1e-6 (FIELDS below: 1e-6..10 and 0.01..100)
LR_GRID = tuple(m * 10.0**e for e in range(-6, 1) for m in (1, 2, 5)) + (10.0,)
SCALE_MULT_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
OPTIMIZER_LABELS = {"adamw": "AdamW", "muon": "Muon"}  # short: a half-width select must show them whole
assert set(SCALE_LABELS) == set(ATTN_SCALES) and set(MASK_LABELS) == set(MASKS)
assert set(OPTIMIZER_LABELS) == set(OPTIMIZERS) and set(PRESET_LABELS.values()) == set(PRESET_NOTES)


@dataclass(frozen=True)
class Field:
    """One setting of the Train form."""

    name: str  # the config field (and URL parameter, and CLI flag in kebab case)
    label: str
    key: str  # its widget's session-state key
    widget: str = "number"  # "number", "select", "heads" (divisors of the width) or "device"
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    format: str | None = None
    options: tuple = ()  # for "select"
    labels: Mapping[str, str] | None = None  # option -> what the select shows
    wide: bool = False  # a whole row instead of half of one
    in_preset: bool = True  # a preset sets it (the device is the machine's, not the preset's)
    help: str | None = None

    @property
    def live(self) -> bool:
        """A live knob: changes the running model at its next step; every other field needs a new run."""
        return self.name in LIVE_KNOBS


FIELDS: tuple[Field, ...] = (
    # Data and model: changing these starts a new run. Two per row, in this order.
    Field("num_layers", "Layers", train_keys.W_LAYERS, minimum=1, maximum=12),
    Field("hidden_dim", "Width (hidden_dim)", train_keys.W_WIDTH, "select", options=WIDTHS),
    Field(
        "num_heads",
        "Heads",
        train_keys.W_HEADS,
        "heads",
        help="Only head counts that divide the width: each head gets width / heads dimensions.",
    ),  # fmt: skip
    Field("max_seq_len", "Context (max_seq_len)", train_keys.W_CONTEXT, minimum=4, maximum=1024),
    Field("batch_size", "Batch size", train_keys.W_BATCH, minimum=1, maximum=1024),
    Field("max_steps", "Max steps", train_keys.W_MAX_STEPS, minimum=1, maximum=1_000_000),
    Field("dropout", "Dropout", train_keys.W_DROPOUT, minimum=0.0, maximum=0.9, step=0.05),
    Field("seed", "Seed", train_keys.W_SEED, minimum=0, maximum=2**31 - 1),
    Field(
        "optimizer",
        "Optimizer",
        train_keys.W_OPTIMIZER,
        "select",
        options=OPTIMIZERS,
        labels=OPTIMIZER_LABELS,
        help="AdamW: the classic, on every parameter. Muon orthogonalizes each block weight matrix's update, so "
        "every direction of it learns at the same rate (fewer steps to a given loss; the Fast preset uses it). "
        "Embeddings and gains stay on AdamW. Train one of each and compare their curves on Runs.",
    ),  # fmt: skip
    Field(
        "token_shift",
        "Token shift",
        train_keys.W_TOKEN_SHIFT,
        "select",
        options=tuple(range(MAX_TOKEN_SHIFT + 1)),
        labels={0: "Off", **{k: f"{k} back" for k in range(1, MAX_TOKEN_SHIFT + 1)}},  # short: a half-width select
        help="Each MLP also reads the inputs of the last few characters before its own (a learned per-channel "
        "mix), so it learns which letters follow which from the first steps, before any attention head has learned "
        "to look back (so expect weaker previous-token heads on Circuits). The Fast presets read 2 back: nanoGPT's "
        "loss in ~40% fewer steps. Off is the plain GPT.",
    ),  # fmt: skip
    Field("device", "Device", train_keys.W_DEVICE, "device", wide=True, in_preset=False),
    # Live knobs: sliders (a slider sends its value when released, so dragging makes one knob event, not fifty),
    # log-scale where the useful values span decades, with the exact value typeable beside them.
    Field(
        "learning_rate",
        "Learning rate",
        train_keys.W_LR,
        "log_slider",
        minimum=1e-6,
        maximum=10.0,
        format="%.1e",
        options=LR_GRID,
        wide=True,
    ),  # fmt: skip
    Field("warmup_steps", "Warmup steps", train_keys.W_WARMUP, "slider", minimum=0, maximum=2000, wide=True),
    Field(
        "attn_scale",
        "Attention scaling",
        train_keys.W_SCALE,
        "radio",
        options=ATTN_SCALES,
        labels=SCALE_LABELS,
        wide=True,
    ),
    Field(
        "attn_scale_mult",
        "Scale multiplier",
        train_keys.W_SCALE_MULT,
        "log_slider",
        minimum=0.01,
        maximum=100.0,
        format="%.2f",
        options=SCALE_MULT_GRID,
        wide=True,
    ),  # fmt: skip
    Field("mask", "Mask", train_keys.W_MASK, "radio", options=MASKS, labels=MASK_LABELS, wide=True),
    Field("window", "Window", train_keys.W_WINDOW, "slider", minimum=1, maximum=1024, wide=True),
    Field("max_grad_norm", "Clip grad norm (0 = off)", train_keys.W_CLIP, minimum=0.0, maximum=1000.0, step=0.1),
)
FIELD_BY_NAME = {f.name: f for f in FIELDS}
MODEL_FIELDS = tuple(f for f in FIELDS if not f.live)
KNOB_FIELDS = tuple(f for f in FIELDS if f.live)
# What a workshop link may set or hide besides the fields: the preset and the corpus.
EXTRA_KEYS = {"preset": train_keys.W_PRESET, "source": train_keys.W_SOURCE}


def heads_options(width: int) -> list[int]:
    """Head counts that divide the width (so d_head = width / heads is whole), at most 16."""
    return [h for h in range(1, min(width, 16) + 1) if width % h == 0]


def closest_heads(width: int, wanted: int | None) -> int:
    """The valid head count nearest to `wanted` for a new width (ties go to fewer heads)."""
    return min(heads_options(width), key=lambda h: (abs(h - (wanted or 1)), h))


def preset_name(label: str) -> str:
    if label not in PRESET_LABELS:
        raise ConfigError(f"unknown preset {label!r}; choose one of {', '.join(PRESET_LABELS)}.")
    return PRESET_LABELS[label]


def preset_note(label: str | None) -> str:
    """What the preset is for and why it has its values (tinygpt.presets.PRESET_NOTES); "" for no preset."""
    return PRESET_NOTES.get(PRESET_LABELS.get(label or ""), "")


def preset_label(name: str) -> str | None:
    return next((label for label, n in PRESET_LABELS.items() if n == name), None)


def _field_values(config: RunConfig) -> dict[str, Any]:
    parts = (config.model, config.train, config.data)
    return {f.name: getattr(next(p for p in parts if hasattr(p, f.name)), f.name) for f in FIELDS}


def preset_values(label: str) -> dict[str, Any]:
    """The form's values for a preset, keyed by field name (fields the preset does not set are left out)."""
    values = _field_values(preset(preset_name(label)))
    return {name: value for name, value in values.items() if FIELD_BY_NAME[name].in_preset}


def source_label(source: str) -> str | None:
    """The corpus select's label for a DataConfig.source (None for one the form cannot show)."""
    if source == "shakespeare":
        return SOURCE_SHAKESPEARE
    if source.startswith("synthetic:"):
        return "Synthetic: " + source.removeprefix("synthetic:")
    if source == "text":
        return SOURCE_PASTE
    return None


def values_from_config(config: dict, events: list[dict] | None = None) -> tuple[dict[str, Any], str | None]:
    """The form's values and corpus label for a run's saved config.json (a reattached tab shows the settings of
    the run it watches); with `events`, the live knobs as they are now, not as the run started."""
    sections = [config.get(part) or {} for part in ("model", "train", "data")]
    values = {f.name: s[f.name] for f in FIELDS for s in sections if f.name in s}
    if events is not None:
        knobs = knobs_now(config, events)
        values |= {f.name: knobs[f.name] for f in KNOB_FIELDS if knobs.get(f.name) is not None}
    return values, source_label(str((config.get("data") or {}).get("source", "")))


def with_text_name(config: RunConfig, name: str) -> RunConfig:
    """`config` with its text's file name (DataConfig.text_name): the presets and the lab's experiments build
    configs from a source and a text; the name is the upload's, kept beside them for the run's name."""
    return dataclasses.replace(config, data=dataclasses.replace(config.data, text_name=name))


def exact_step(name: str, value: float) -> float | None:
    """The −/+ step of a learning rate's exact box: a tenth of the value's decade (2.0e-3 → 1.9e-3, 5.0e-2 → 4.9e-2),
    so each press shows in its "%.1e". Streamlit's default 0.01 left "−" greyed at any usual rate, and a fixed 1e-4
    stuck at 5.0e-2, each press undone by the rounding it is shown with (reviews 3 and 4). None: the default."""
    if name != "learning_rate" or not isinstance(value, (int, float)) or value <= 0:
        return None
    return 10.0 ** (math.floor(math.log10(value)) - 1)


def kept_text_name(pasted: str, kept: tuple[str, str] | None) -> str:
    """The file name of the run text the form was seeded with (`kept`: (name, corpus_sha256)), while the box still
    holds that very text, else "": a review's learner pressed Train again beside her calendar.py run and the new run
    was named "text d3510a", the form showing the run's text as a paste (the room could not tell which text it was)."""
    if not kept or not kept[0]:
        return ""
    return kept[0] if corpus_sha256(pasted or "") == kept[1] else ""


def data_config(
    source: str, pasted: str = "", uploaded: bytes | None = None, block_size: int = 32, uploaded_name: str = ""
) -> DataConfig:
    """The DataConfig of a corpus choice; user text is decoded and checked here (DataError says what to fix). An
    upload keeps its file's name (`uploaded_name`, its last MAX_TEXT_NAME characters) for the run's name, and so
    does a paste that is a run's text unedited (kept_text_name)."""
    if source == SOURCE_SHAKESPEARE:
        return DataConfig(source="shakespeare")
    if source.startswith("Synthetic: "):
        return DataConfig(source="synthetic:" + source.removeprefix("Synthetic: "))
    name = str(uploaded_name or "").replace("\\", "/").rsplit("/", 1)[-1][-MAX_TEXT_NAME:]
    if source == SOURCE_UPLOAD:
        if uploaded is not None and len(uploaded) == 0 and name:  # chosen, but 0 bytes: a review was told to choose one
            raise ConfigError(f"{name} is empty (0 bytes): choose a file with some text in it (or pick another "
                              "corpus).")  # fmt: skip
        if not uploaded:
            raise ConfigError("choose a text file to upload first (or pick another corpus).")
        return DataConfig(source="text", text=text_from_user(uploaded, min_chars=min_corpus_chars(block_size)),
                          text_name=name)  # fmt: skip
    if source == SOURCE_PASTE:
        return DataConfig(source="text", text=text_from_user(pasted or "", min_chars=min_corpus_chars(block_size)),
                          text_name=name)  # fmt: skip
    raise ConfigError(f"unknown corpus {source!r}; choose one of {', '.join(SOURCES)}.")


def ensure_corpus(data: DataConfig, progress=None) -> None:
    """Load Tiny Shakespeare before a run needs it (embedded; downloaded only when that copy is damaged), with a
    progress callback; DataError says why it failed."""
    if data.source == "shakespeare":
        load_shakespeare(progress=progress)


def changed_since_start(
    run_values: Mapping[str, Any], run_source: str | None, form: Mapping[str, Any], form_source: str
) -> list[str]:
    """The settings the form changed that cannot change live, e.g. ["corpus A → B", "heads 4 → 8"] (each by its
    word, setting_words): they take effect only in a new run, so the page says so."""
    changed = [
        f"{setting_word(f.name)} {run_values[f.name]} → {form[f.name]}"
        for f in MODEL_FIELDS
        if f.name in run_values and f.name in form and run_values[f.name] != form[f.name]
    ]
    if run_source and run_source != form_source:
        changed.insert(0, f"corpus {run_source} → {form_source}")
    return changed


def ghost_label(parent_config: dict, config: dict) -> str:
    """The label of the replaced run's faint curve on Train: what this run changed, e.g.
    "the run before this one: heads 4 → 8" (or "... (same settings)")."""
    before, before_source = values_from_config(parent_config)
    after, after_source = values_from_config(config)
    # A run's own text is said as one, not by the menu item the form reloads it into ("Tiny Shakespeare → Paste
    # text" of an uploaded file, a review), and not as "of your own": a watcher reads this label too
    own = {SOURCE_PASTE: "a pasted or uploaded text"}
    changed = changed_since_start(before, own.get(before_source, before_source), after,
                                  own.get(after_source, after_source) or "")  # fmt: skip
    # Two texts of the same kind (two uploads, two pastes) differ by their hash: a review's "previous run: max steps
    # 3000 → 2000" hid that the grey curve trained on another text (a 23 kB licence, this run on 1.5 kB of it)
    texts = [((c or {}).get("data") or {}).get("text_sha256") for c in (parent_config, config)]
    if before_source == after_source and texts[0] != texts[1] and all(texts):
        changed.insert(0, f"another text (sha256 {texts[0][:8]}… → {texts[1][:8]}…)")
    # The live knobs each started with: a review's new run started under mask none (the previous run's last live
    # change) beside "previous run: max steps 300 → 4000"
    changed += [f"{setting_word(f.name)} {before[f.name]} → {after[f.name]}" for f in KNOB_FIELDS
                if f.name in before and f.name in after and before[f.name] != after[f.name]]  # fmt: skip
    # "the run before this one", not "previous run": a review's watcher, who had trained nothing, took "previous"
    # for her own browser's; the grey curve is the run this one replaced, whoever watches it
    if len(changed) > GHOST_SETTINGS + 1:  # a preset's dozen differences ran 7 lines over a 120 px plot (a review)
        changed = [*changed[:GHOST_SETTINGS], f"{len(changed) - GHOST_SETTINGS} more settings"]
    return "the run before this one: " + ", ".join(changed) if changed else "the run before this one (same settings)"


GHOST_SETTINGS = 3  # the differences the grey curve's label names; past one more, the rest are counted
