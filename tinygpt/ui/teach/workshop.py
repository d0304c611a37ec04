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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from tinygpt.config import SECTIONS, ConfigError
from tinygpt.lab.registry import EXPERIMENTS
from tinygpt.presets import PRESETS, preset
from tinygpt.ui import state
from tinygpt.ui.people import people_keys
from tinygpt.ui.screen import fonts
from tinygpt.ui.teach import lesson, teach_keys
from tinygpt.ui.train import settings, train_keys

SETTING_TYPES: dict[str, type] = {
    f.name: type(f.default)
    for cls in SECTIONS.values()
    for f in dataclasses.fields(cls)
    if f.name not in ("vocab_size", "text")
}
# Not settings: the workshop's own words and the app's (a run, its read-only share, experiment runs).
RESERVED = ("preset", "hide", "lock", "tutorial", "experiment", "large", "run", "view", "lab", "induction")


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


def _within_widget(name: str, value: Any) -> tuple[str | None, Any]:
    """(message or None, value to use) for a link's value against the Train widget's range and options: a number
    outside the range is clamped to the nearest allowed value and reported (a widget given an out-of-range value
    silently falls back to its minimum: ?learning_rate=100 trained at 1e-06); an option it does not offer is
    reported and dropped (value None)."""
    field = settings.FIELD_BY_NAME.get(name)
    if field is None:
        return None, value
    if field.widget in ("select", "radio") and value not in field.options:  # a log slider takes any value
        offered = ", ".join(map(str, field.options))
        return f"the link's {name}={value!r} is not one of the choices ({offered}); ignored.", None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if field.minimum is not None and value < field.minimum:
            clamped = type(value)(field.minimum)
            return f"the link's {name}={value!r} is below the smallest allowed {clamped!r}; using {clamped!r}.", clamped
        if field.maximum is not None and value > field.maximum:
            clamped = type(value)(field.maximum)
            return f"the link's {name}={value!r} is above the largest allowed {clamped!r}; using {clamped!r}.", clamped
    return None, value


def _heads_within(width: int, value: Any) -> tuple[str | None, Any]:
    """The Heads widget offers the head counts that divide the width, up to 16 (settings.heads_options): a count
    above them is clamped to the largest, with a message; one that does not divide the width is reported and
    dropped (the preset's count stays)."""
    options = settings.heads_options(width)
    if not isinstance(value, int) or value in options:
        return None, value
    if value > options[-1]:
        return f"the link's num_heads={value!r} is above the largest allowed {options[-1]} for width {width}; " \
               f"using {options[-1]}.", options[-1]  # fmt: skip
    offered = ", ".join(map(str, options))
    return f"the link's num_heads={value!r} does not divide the width {width} (choices: {offered}); ignored.", None


def _consistent(preset_name: str, overrides: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    """The link's settings that work together, one at a time in the form's order (the width before the heads):
    each that fails with those kept so far is reported and left out, and the rest still apply (before, num_heads=3
    dropped every setting of the link)."""
    order = {f.name: i for i, f in enumerate(settings.FIELDS)}
    overrides = dict(overrides)
    if "num_heads" in overrides:  # the Heads widget's own range, against the width the run will have
        try:
            width = int(overrides.get("hidden_dim") or preset(preset_name).model.hidden_dim)
        except (ConfigError, TypeError, ValueError):
            width = int(preset(preset_name).model.hidden_dim)
        problem, overrides["num_heads"] = _heads_within(width, overrides["num_heads"])
        if problem:
            errors.append(problem)
        if overrides["num_heads"] is None:
            del overrides["num_heads"]
    try:
        preset(preset_name, **overrides)
        return overrides  # they all work together
    except ConfigError:
        pass
    kept: dict[str, Any] = {}
    for name in sorted(overrides, key=lambda n: order.get(n, len(order))):
        value = overrides[name]
        try:
            preset(preset_name, **{**kept, name: value})
        except ConfigError as exc:
            errors.append(f"the link's {name}={value!r} does not work with the rest: {exc} Ignored; the rest applies.")
            continue
        kept[name] = value
    return kept


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
        if name not in settings.FIELD_BY_NAME and name != "source":  # the form would drop it without a word
            flag = "--" + name.replace("_", "-")
            shop.errors.append(
                f"the link sets {name}={text!r}, which the Train form has no control for, so a run from this page "
                f"cannot use it; ignored (the command line takes it: python -m tinygpt train {flag} ...)."
            )
            continue
        try:
            value = _typed(name, str(text))
        except ValueError as exc:
            shop.errors.append(f"the link's {name}={text!r} is not valid ({exc}); ignored.")
            continue
        problem, value = _within_widget(name, value)
        if problem:
            shop.errors.append(problem)
        if value is not None:
            shop.overrides[name] = value
    shop.overrides = _consistent(shop.preset or "demo", shop.overrides, shop.errors)
    hidable = {f.name for f in settings.FIELDS} | set(settings.EXTRA_KEYS)
    asked = {h.strip() for h in str(params.get("hide", "")).split(",") if h.strip()}
    shop.hidden = asked & hidable
    if asked - hidable:
        unknown = ", ".join(repr(h) for h in sorted(asked - hidable))
        shop.errors.append(f"the link hides {unknown}, which is not a control; controls: {', '.join(sorted(hidable))}.")
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

# The lesson (tinygpt/ui/teach/lesson.py): ?tutorial=N opens its pane at step N (0-based), as the old guided path did.
TUTORIAL: list[dict[str, str]] = [
    {"title": f"{i + 1}. {step.section}", "page": lesson.page_name(step), "text": step.predict}
    for i, step in enumerate(lesson.STEPS)
]


# ---------------------------------------------------------------- the Streamlit side (called from the frame)

WORKSHOP_KEYS = ("preset", "hide", "lock", "tutorial", "experiment", "large")


def sync_workshop(on_experiments: bool = True) -> Workshop:
    """Read the workshop link once per session, keep it, and put it back into the URL on every run.

    Page switches clear query parameters (Streamlit behaviour), so like the run id the workshop settings live in
    session state and are written back to the URL; a refresh or a shared link then reopens the same lesson. The
    experiment is the Experiments page's own: kept, but in the URL only there (`on_experiments`); a review's
    lesson read "/attention?run=...&experiment=scaling" on the projector two steps after the scaling experiment.
    """

    params = {k: v for k, v in st.query_params.to_dict().items() if k not in ("run", "view", "lab")}
    kept: dict[str, str] | None = state.get(people_keys.WORKSHOP_PARAMS)
    if kept is not None and "experiment" in kept:
        if not on_experiments:
            st.query_params.pop("experiment", None)  # another page: the experiment stays kept, out of its URL
        params = {"experiment": kept["experiment"], **params}  # the Experiments page's own pick, when in its URL
    if kept is None or (params and params != kept):
        # Only a change of preset or settings reloads the Train widgets (a new tutorial step or experiment must
        # not undo what the learner set).
        reseed = kept is None or _settings_part(params) != _settings_part(kept)
        kept = params
        state.put(people_keys.WORKSHOP_PARAMS, kept)
        if reseed:
            _seed_settings(parse_workshop(kept))
    for key, value in kept.items():
        if st.query_params.get(key) != value and (on_experiments or key != "experiment"):
            st.query_params[key] = value
    shop = parse_workshop(kept)
    state.put(people_keys.WORKSHOP_LOCKED, shop.locked)
    if shop.large:
        state.init(fonts.W_LARGE, True)
    return shop


def _settings_part(params: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in params.items() if k not in ("tutorial", "experiment", "large", "hide", "lock")}


def _seed_settings(shop: Workshop) -> None:
    """Load the link's preset and overrides into the Train page's widgets (before the page draws them)."""

    if not (shop.preset or shop.overrides):
        return
    label = settings.preset_label(shop.preset or "demo")
    if label is None:
        return
    state.put(train_keys.W_PRESET, label)
    values = {**settings.preset_values(label), **shop.overrides}
    for name, value in values.items():
        if name in settings.FIELD_BY_NAME:
            state.put(settings.FIELD_BY_NAME[name].key, value)
    source = shop.overrides.get("source")
    if isinstance(source, str) and settings.source_label(source) and source != "text":
        state.put(train_keys.W_SOURCE, settings.source_label(source))


def hide_controls(shop: Workshop) -> None:
    """Hide the controls the link names: Streamlit tags each widget's container with the class st-key-<key>, where
    a live knob's key carries its widget's generation ("w_mask@2", class st-key-w_mask-2: knob_widgets.py)."""

    keys = {**{f.name: f.key for f in settings.FIELDS}, **settings.EXTRA_KEYS}
    hidden = [keys[name] for name in sorted(shop.hidden) if name in keys]
    if hidden:
        rules = ", ".join(f'.st-key-{key}, [class*="st-key-{key}-"]' for key in hidden)
        st.markdown(f"<style>{rules} {{ display: none !important; }}</style>", unsafe_allow_html=True)


def lesson_started_unseen() -> bool:
    """The room has a lesson going and this session's page, drawn without its pane, does not show it yet."""
    from tinygpt.ui.teach import lesson_view

    return state.get(teach_keys.LESSON_SHOWN) is False and lesson_view.room()["step"] is not None


def tutorial_pane(shop: Workshop) -> None:
    """The lesson, one step at a time, in the sidebar (tinygpt/ui/teach/lesson_view.py draws it), or on the projector
    (the instructor with Large fonts) as a banner above the page (tinygpt/ui/teach/presenter.py)."""
    from tinygpt.ui.people import room
    from tinygpt.ui.teach import lesson_view, presenter  # imports torch: after the frame's first paint

    st.html(f"<style>{lesson_view.ONLY_THIS_STEPS_CHECK_CSS}</style>")  # on every run: one place in the page
    actor = room.current()
    if presenter.shown(actor):
        presenter.banner(shop, actor)
    else:
        lesson_view.pane(shop, actor)
