"""What the Train form shows for the run in view (issue 32: "widgets show the run, not the browser"): the run's
settings as the form's widget values, its preset where the run is one as is, and the top of the Window slider.

Pure: no Streamlit calls; tinygpt/ui/train/form.py puts these values into the form once, when the run comes into
view, and from then on the form is this viewer's draft for a new run."""

from __future__ import annotations

from typing import Any

from tinygpt.runs.knobs import knobs_now
from tinygpt.ui.train import settings, train_keys
from tinygpt.ui.words.knob_words import knob_value


def preset_of(values: dict[str, Any]) -> str | None:
    """The label of the preset whose every setting that only a new run takes equals the run's (`values`:
    settings.values_from_config of its config), or None. The live knobs are left out: they are turned during a
    run (the Lecture run's mask, set before Train or after, is still the Lecture preset's run). config.json does
    not record the preset a run came from; without this, the Preset select kept whatever this browser chose last,
    beside another preset's run (a learner's Demo over the Lecture run). A run changed from its preset in the form
    is no preset's: the select then keeps the viewer's choice, which is only for their next run (the form says
    so). The seed is left out too: another draw of the same recipe is still its preset's run (a review's Lecture run
    with seed 2468 read "the run matches no preset")."""
    for label in settings.PRESET_LABELS:
        wanted = settings.preset_values(label)
        if all(values.get(f.name) == wanted[f.name] for f in settings.MODEL_FIELDS
               if f.name in wanted and f.name != "seed"):  # fmt: skip
            return label
    return None


def form_of(config: dict, events: list[dict]) -> dict[str, Any]:
    """The form's widget values (by session key) for a run: its settings, its live knobs as they are now
    (`events`), its corpus, and its preset when it is one as is (preset_of: the live knobs aside)."""
    values, source = settings.values_from_config(config, events)
    form = {settings.FIELD_BY_NAME[name].key: value for name, value in values.items()}
    if source:
        form[train_keys.W_SOURCE] = source
    if label := preset_of(values):
        form[train_keys.W_PRESET] = label
    return form


def next_run_note(run_preset: str | None, form_preset: str | None) -> str:
    """What the form says while a run is in view: which of its values are the run's and which this viewer's draft
    for a new run (`run_preset`: preset_of the run in view; `form_preset`: the Preset select's value)."""
    # Short: on a projector (Large fonts) this sits above the live knobs, which the first screen is for.
    if run_preset and run_preset == form_preset:
        return "Preset and model: the run's, until you change them for **your next run**."
    run_is = f"the run is {run_preset}" if run_preset else "the run matches no preset"
    return f"Preset: **your next run**'s ({run_is}). Model: the run's, until you change it."


def window_top(run_context: int | None, form_context: int) -> int:
    """The Window slider's top: the context of the run its live knobs show (`run_context`), else the form's. The
    window is a live knob of that run, bounded by that run's context; bounded by the form's, a viewer whose draft
    for a new run had a shorter context saw the run's window cut to it."""
    return int(run_context) if run_context else int(form_context)


def ended_knobs_note(config: dict, events: list[dict], form: dict[str, Any]) -> str:
    """Above the knobs of a run that takes no change (ended, or paused): they set the viewer's next run, so where
    they show other values than the run's last ones, the run's are said ("... Warmup steps 230 (below: 30) · ..."),
    else "". A review's learner watched a finished off-by-one run and read her own warmup 30,
    1/√d_head and causal beside its curves."""
    run = knobs_now(config, events)
    differ = [f for f in settings.KNOB_FIELDS if run.get(f.name) is not None and form.get(f.name) != run[f.name]]
    if not differ:
        return ""

    def shown(field: settings.Field, value: Any) -> str:
        label = (field.labels or {}).get(value)
        return label.split(" (")[0] if label else knob_value(value)

    said = " · ".join(f"{f.label} {shown(f, run[f.name])} (below: {shown(f, form.get(f.name))})" for f in differ)
    return f"This run's own values, where the knobs below show others: {said}."
