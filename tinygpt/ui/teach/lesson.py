"""The lesson: the course the app teaches, as steps an instructor runs in order, each with a check computed from
the run it set up.

A `Step` is data: the section of the course, the page it happens on, what one click sets up (`Setup`: start the
lecture run, move its live knobs, open an experiment, start the induction runs), what to ask the room to predict,
what the room should see, and `check`, a function from `Evidence` (numbers read from the step's run folders) to a
`Check`: passed True (the effect appeared, with its numbers), False (the run did not show it, with its numbers),
or None (not enough data yet, saying what is missing). Nothing here is a fixed sentence about the usual case.

The room's position (which step the instructor has moved everyone to, and the runs each step uses) is one small
JSON file in the runs folder (`read_room` / `write_room`), so every learner's page reads the same lesson on its
next refresh. Pure: no Streamlit; the checks are in tinygpt/ui/teach/lesson_checks.py (the lecture run's in
lecture_checks.py), the drawing and the evidence gathering in tinygpt/ui/teach/lesson_view.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinygpt.errors import RunStoreError
from tinygpt.lab.prepare import HEADS_STEPS
from tinygpt.presets import PRESETS
from tinygpt.runs.files import read_json, write_json_atomic
from tinygpt.ui.teach.heads_check import SPECIALIST_RATIO, heads_differ
from tinygpt.ui.teach.lecture_checks import (  # noqa: F401 - the lecture run's checks, re-exported too
    GROUP_STEPS,
    MIN_KNOB_CHANGE,
    PATIENCE,
    WINDOW,
    knob_effect,
    loss_from_uniform,
)
from tinygpt.ui.teach.lesson_checks import (  # noqa: F401 - the checks, re-exported: lesson.Check, lesson.PITFALLS, ...
    HEADS,
    INDUCTION,
    LECTURE,
    PITFALLS,
    PREPARE_ORDER,
    Check,
    Evidence,
    RunData,
    ablation_hurts,
    experiment_verdict,
    health_catches,
    induction_formed,
    lens_sharpens,
    number_word,
)
from tinygpt.ui.teach.pitfall_checks import ALMOST, CRASH_SHORT, all_pitfalls, answer_choices
from tinygpt.ui.teach.predictions import Answers

ROOM_FILE = "lesson.json"  # in the runs folder: {"step", "runs": {role: {label: run_id}}, "measured", "moved_at"}


def lecture_settings() -> dict[str, Any]:
    """The run the live-knob steps steer: the Lecture preset (trains until stopped) where this build has one,
    else the Demo preset with a step budget no class reaches (so no knob demo starts by raising Max steps)."""
    if "lecture" in PRESETS:
        return {"preset": "lecture"}
    return {"preset": "demo", "max_steps": 1_000_000}


# ---------------------------------------------------------------- the lesson itself


@dataclass(frozen=True)
class Setup:
    """What the step's one click does."""

    train: bool = False  # make sure the lecture run trains (start it if there is none, or it ended)
    heads: bool = False  # the Demo preset's model (4 heads per layer), HEADS_STEPS steps, for the multiple-heads step
    knobs: Mapping[str, Any] = field(default_factory=dict)  # live knobs to set on the lecture run, in order
    experiment: str | None = None  # an Experiments-page pitfall to open (and start if the room has none)
    induction: bool = False  # the induction experiment's runs (started if the room has none)
    measure: tuple[str, ...] = ()  # in-process measurements (memory) to take
    pitfalls: bool = False  # every pitfall's runs (those the room has not started yet)
    rest: bool = False  # pause the lecture run: the long runs of the steps from here on need its training slot
    tab: str | None = None  # the tab of the step's page its check talks about, opened by the click


@dataclass(frozen=True)
class Step:
    key: str
    section: str
    page: str  # the page file the click opens, e.g. "pages/train.py"
    setup: Setup
    predict: str
    watch: str
    check: Callable[[Evidence], Check]
    long: bool = False  # needs minutes of training: prepared ahead (Prepare the room) or trained in the background
    answers: Answers | None = None  # the choices for `predict`, graded by the check (tinygpt.ui.teach.predictions)
    reset: bool = False  # breaks the lecture run on purpose: the instructor may branch it from before (lesson_reset)


PAGE_NAMES = {"pages/train.py": "Train", "pages/attention.py": "Attention", "pages/experiments.py": "Experiments",
              "pages/circuits.py": "Circuits", "pages/gradients.py": "Gradients"}  # fmt: skip

STEPS: tuple[Step, ...] = (
    Step(
        "tensors",
        "Tensors: watch a transformer learn",
        "pages/train.py",
        Setup(train=True),
        "The model starts knowing nothing: what loss does uniform guessing over 65 characters give?",
        "The loss starts on the dashed ln(V) line and falls within seconds; the sample turns from noise to words.",
        loss_from_uniform,
        answers=Answers(("under 2", "between 3 and 5", "over 10"), "between 3 and 5", ()),
    ),
    Step(
        "shapes",
        "Shape contracts",
        "pages/experiments.py",
        Setup(experiment="shape_drift"),
        "A softmax over the wrong dimension broadcasts without an error. Will its loss look wrong?",
        "The buggy run's loss looks fine, even better; its rows don't sum to 1; with contracts it stops at step 0.",
        experiment_verdict("shape_drift", "Shape drift"),
        answers=Answers(
            ("it looks wrong: higher", "it looks fine, or even better", "it crashes"),
            "it looks fine, or even better",
            (),
        ),
    ),
    Step(
        "scaling",
        "Attention and 1/√d scaling",
        "pages/experiments.py",
        Setup(experiment="scaling"),
        "Without 1/√d_head the scores grow with the width: sharper or flatter attention? Better or worse loss?",
        "Unscaled: near one-hot attention (entropy toward 0), smaller attention gradients, a higher loss.",
        experiment_verdict("scaling", "Unscaled attention logits"),
        answers=Answers(
            ("sharper, and a worse loss", "flatter, and a worse loss", "about the same"),
            "sharper, and a worse loss",
            (),
        ),
    ),
    Step(
        "mask",
        "Causal masking, and a broken mask",
        "pages/train.py",
        Setup(train=True, knobs={"mask": "none"}),
        "The mask is switched off while the model trains: it can now see the character it must predict. What does "
        "the loss do?",
        "Within seconds the loss plunges toward zero: the model copies the answer instead of predicting it.",
        knob_effect("mask", "none", rise=False, min_change=1.0),
        answers=Answers(("the loss plunges", "the loss goes up", "it stays about the same"), "the loss plunges", ()),
        reset=True,
    ),
    Step(
        "heads",
        "Multiple heads",
        "pages/attention.py",
        Setup(train=True, knobs={"mask": "causal"}, heads=True),
        # Not "its loss jumps back up": after step 4's Reset the lecture run is a branch that never lost its mask
        # (a review read the jump promised of a run that had none), nor "again": a class that skipped step 4 never
        # switched it off (a review)
        "The lecture run trains with the causal mask. A run of the Demo preset's model, 4 heads per "
        f"layer, trains {HEADS_STEPS:,} steps beside it: will its heads all learn the same pattern?",
        f"Different heads, different patterns: by the run's end, on held-out windows, a head puts "
        f"{SPECIALIST_RATIO:g}x or more of the uniform share on its own key (most often one character back) while "
        "another stays under that there, each beyond its noise; sometimes two heads on different keys (one back, "
        "itself): two jobs. See them on the Attention page.",
        heads_differ,
        # "not seen" (no two heads specialised on different jobs) refutes "different patterns" only: a run whose
        # heads stayed near uniform did not show "all the same pattern" either
        answers=Answers(("different patterns", "all the same pattern"), "different patterns", ()),
    ),
    Step(
        "residual",
        "Residual connections and pre-LayerNorm",
        "pages/experiments.py",
        Setup(experiment="residual"),
        "Detach the residual path in a 4-layer model: what happens to the first layer's gradient?",
        "The detached run's first-layer gradient norm falls to the floor and its loss stalls.",
        experiment_verdict("residual", "Detached residual path"),
        answers=Answers(("it falls toward zero", "it grows", "about the same"), "it falls toward zero", ()),
    ),
    Step(
        "optim",
        "Optimisation: AdamW, clipping, warmup",
        "pages/train.py",
        Setup(train=True, knobs={"learning_rate": 0.1}),
        "The learning rate jumps to 0.1 mid-run, tens of times the preset's. AdamW moves every weight by about "
        "lr per step, whatever its gradient: and then?",
        "The loss jumps up within a few steps; clipping the gradient norm does not stop it (Adam divides the "
        "clipped gradient by its own running size).",
        knob_effect("learning_rate", 0.1, rise=True),
        answers=Answers(("the loss goes up", "it falls faster", "not much changes"), "the loss goes up", ()),
        reset=True,
    ),
    Step(
        "pitfalls",
        f"The {number_word(len(PITFALLS))} pitfalls",
        "pages/experiments.py",
        Setup(experiment="softmax", pitfalls=True, measure=("memory",), rest=True),
        # Short: the banner's question ran to four lines at 1280x720 (a review); the check says CRASH whole
        f"{number_word(len(PITFALLS)).capitalize()} classic bugs, each a correct and a broken run one setting apart: "
        f"how many crash ({CRASH_SHORT})?",
        f"Almost none crash ({ALMOST} at most): each verdict names the numbers that give the bug away.",
        all_pitfalls,
        answers=Answers(answer_choices(), answer_choices()[-1], ()),
        long=True,
    ),
    Step(
        "health",
        "The health checklist",
        "pages/experiments.py",
        Setup(experiment="shape_drift", tab="Model health"),
        "The silent shape bug trained to a fine-looking loss. Can a checklist catch it?",
        "Model health: the buggy run fails the attention-rows and future-leak checks; the correct one passes them.",
        health_catches,
        answers=Answers(("yes, it fails a check", "no, it passes"), "yes, it fails a check"),
    ),
    Step(
        "induction",
        "Circuits: induction heads",
        "pages/circuits.py",
        Setup(induction=True),
        "Text that repeats: can a 2-layer model learn to copy what came after the last occurrence?",
        "A phase change: one layer-1 head's induction score jumps, and the second copy's loss falls with it.",
        induction_formed,
        answers=Answers(("yes, a head learns to copy", "no"), "yes, a head learns to copy"),
        long=True,
    ),
    Step(
        "ablation",
        "Circuits: ablation",
        "pages/circuits.py",
        Setup(induction=True, tab="Head ablation"),
        "Switch the induction head off: which loss goes up, and by how much?",
        "The loss on the repeated text's second copy rises by 0.1 nats or more with the induction head off, more "
        "than a typical head's; a head it reads from may matter as much: the circuit is more than one head (the "
        "heatmap's panel 'second copy' draws the numbers the check reads).",
        ablation_hurts,
        answers=Answers(
            ("the second copy's, by 0.1 nats or more", "the second copy's, by less than 0.1", "the first copy's"),
            "the second copy's, by 0.1 nats or more",
            ("the second copy's, by less than 0.1",),
        ),
        long=True,
    ),
    Step(
        "lens",
        "Circuits: the logit lens",
        "pages/circuits.py",
        Setup(induction=True, tab="Logit lens"),
        "Read the residual stream after each layer as if it were the output: where does the answer appear?",
        "The embedding alone guesses little; by the last layer the right character is the top guess far more often.",
        lens_sharpens,
        answers=Answers(
            # "in the layers", not "only in the last layers": in a 2-layer model the first layer gave 22 of the 39
            # points the check saw, and "only the last" was graded right against it (a review)
            ("already after the embedding", "in the layers, not the embedding", "nowhere"),
            "in the layers, not the embedding", ()
        ),
        long=True,
    ),
)
STEP_KEYS = tuple(s.key for s in STEPS)


def page_name(step: Step) -> str:
    return PAGE_NAMES.get(step.page, step.page)


def clamp(index: Any) -> int:
    try:
        return max(0, min(int(index), len(STEPS) - 1))
    except (TypeError, ValueError):
        return 0


# ---------------------------------------------------------------- the room's position (a file in the runs folder)


def read_room(root: str | Path) -> dict:
    """{"step": int | None, "runs": {role: {label: run_id}}, "measured": {key: results}, "moved_at": t}; a
    missing or unreadable file is a room with no lesson yet."""
    try:
        data = read_json(Path(root) / ROOM_FILE, default=None)
    except RunStoreError:  # a hand-edited or torn file: no lesson, rather than an error on every page
        data = None
    if not isinstance(data, dict):
        data = {}
    step = data.get("step")
    return {
        "step": None if step is None else clamp(step),
        "runs": {k: dict(v) for k, v in (data.get("runs") or {}).items() if isinstance(v, dict)},
        "measured": dict(data.get("measured") or {}),
        "moved_at": float(data.get("moved_at") or 0.0),
    }


def write_room(root: str | Path, **changes: Any) -> dict:
    """Update the room's lesson file (atomically: learners read it at any moment) and return it."""
    room = read_room(root)
    if "step" in changes:
        room["step"] = None if changes["step"] is None else clamp(changes["step"])
        room["moved_at"] = time.time()
    for role, runs in (changes.get("runs") or {}).items():
        room["runs"][role] = dict(runs)
    room["measured"].update(changes.get("measured") or {})
    Path(root).mkdir(parents=True, exist_ok=True)  # a fresh server's runs folder exists only after its first run
    write_json_atomic(Path(root) / ROOM_FILE, room)
    return room


def follow(local: int | None, seen_room: int | None, room_step: int | None) -> tuple[int, int | None]:
    """(step to show, room step seen) for a learner's pane: a move of the room takes the pane with it; between
    moves the learner may look around (Back / Next) without being pulled back."""
    if room_step is not None and room_step != seen_room:
        return room_step, room_step
    return clamp(local if local is not None else (room_step or 0)), seen_room


def roles_needed(step: Step) -> list[str]:
    """The room's run roles a step's check reads, each once: the pitfalls step opens the softmax experiment and
    checks every pitfall, softmax among them (its pane listed "softmax · stable softmax" twice, its check read
    both runs twice)."""
    roles = []
    if step.setup.train:
        roles.append(LECTURE)
    if step.setup.heads:
        roles.append(HEADS)
    if step.setup.experiment:
        roles.append(f"exp:{step.setup.experiment}")
    if step.setup.pitfalls:
        roles += [f"exp:{k}" for k in PITFALLS if k != "memory"]
    if step.setup.induction:
        roles.append(INDUCTION)
    return list(dict.fromkeys(roles))


def roles_checked(step: Step) -> list[str]:
    """The run roles a step's check measures, whose lines the pane shows under it: `roles_needed`, less the lecture
    run where the step sets up another run beside it (the heads step puts the lecture run's mask back on, and its
    check reads the Demo run's heads: the pane said "lecture · run: step 13,890 · running" under a check of that
    finished Demo run)."""
    roles = roles_needed(step)
    return roles if roles == [LECTURE] else [r for r in roles if r != LECTURE]
