"""Branching a run: a new run that continues from one checkpoint of another, with some settings changed.

A branch is an ordinary run folder. Its history up to the branch step is copied from the parent (metrics, evals,
samples, events, attention snapshots and scores, on the parent's current timeline: what a rewind abandoned stays
behind), and so is the checkpoint at the branch step, whose config carries the changes. The branch then trains by
the one resume rule (tinygpt.runs.resume, tinygpt.runs.loop): from its own copy of that checkpoint. Copying, not
pointing at the parent, because a branch must outlive its parent (a learner deletes the lecture run it branched)
and every page already reads one folder per run; the cost is a few checkpoint-sized files.

The checkpoint holds the batch generator's state and torch's (dropout), so from the branch step on a branch draws
exactly its parent's batches: with no change its losses equal the parent's to the bit (on CPU, as a resume does),
and with a change the two curves differ by that change alone, for as long as neither run takes a live change: each
run's knobs are its own from the branch step on, so a change made to the parent later never reaches the branch (the
Train page names those: tinygpt.ui.train.branching.parent_changes_after). Hence what may change
(`branch_refusal`): anything the checkpoint's weights and optimizer state still load into, and not what would
change the batches (the seed, the corpus) or the weights' shapes. config.json records the parent ("parent") and
{"step", "changes"} ("branch").

Changes apply as a live knob change would at that step: learning_rate carries min_lr along
(tinygpt.schedule.moved_floor) unless min_lr is given too, and weight_decay and the betas, which the optimizer keeps
in its saved parameter groups, are changed there as well, or the restored optimizer would undo them. Each change is
a "knob" event at the branch step (the charts' markers), after a "state" event naming the parent.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..checkpoint import load_checkpoint
from ..config import RUN_FIELDS, SECTIONS, RunConfig
from ..errors import TinyGPTError
from ..schedule import moved_floor
from .corpus import read_corpus
from .files import (
    checkpoint_stem,
    list_checkpoints,
    read_config_json,
    read_events,
    read_json,
    read_jsonl,
    read_scores,
    snapshot_name,
    write_json_atomic,
)
from .knobs import is_knob, knobs_now
from .store import RunStore

BRANCH_KEY = "branch"  # config.json: {"step": N, "changes": {name: new}} beside "parent" (an IDENTITY_KEYS entry)
_SERIES = ("metrics", "evals", "samples")  # the step-keyed .jsonl files a branch copies (events are their own)
_SHAPES = ("vocab_size", "hidden_dim", "num_layers", "num_heads", "max_seq_len", "bias", "token_shift")
_CORPUS = ("source", "text", "text_sha256", "synthetic_examples", "synthetic_digits")
# Why each setting a branch keeps as its parent had it cannot change; everything else may.
_REFUSED = {
    **{
        name: "it changes the shape of the weights, so the checkpoint would not load into the model" for name in _SHAPES
    },
    **{name: "it changes the corpus, so the branch would not train on its parent's batches" for name in _CORPUS},
    "seed": "a branch trains on its parent's batches from the branch step on (that is what makes the two curves "
    "differ only by the change); another seed is a new run",
    "optimizer": "the checkpoint's optimizer state belongs to the optimizer it was trained with",
    "probe_text": "the attention snapshots up to the branch step were taken on the parent's probe text",
}


class BranchError(TinyGPTError):
    """A branch that cannot be made as asked; the message says what to do instead. Raised before any folder."""


@dataclass
class BranchPlan:
    """Everything a branch needs, checked, before its folder exists (`plan_branch`)."""

    parent: str  # the parent's run id
    parent_dir: Path
    step: int  # the checkpoint it continues from
    config: RunConfig  # the checkpoint's config with the changes applied
    changed: list[tuple[str, Any, Any]]  # (setting, old, new) that differ, couplings included (min_lr)
    vocab: list[str]
    coupled: dict[str, str] = dataclasses.field(default_factory=dict)  # {"min_lr": "learning_rate"}: moved along


def section_of(name: str) -> str | None:
    """Which part of a RunConfig a setting lives in ("model", "train", "data", "interventions" or "run"), None if
    none."""
    for section, cls in SECTIONS.items():
        if name in {f.name for f in dataclasses.fields(cls)}:
            return section
    return "run" if name in RUN_FIELDS else None


def branch_refusal(name: str) -> str | None:
    """Why `name` cannot change in a branch, or None when it may."""
    if section_of(name) is None:
        return "it is not a setting of a run"
    return _REFUSED.get(name)


def apply_changes(config: RunConfig, changes: dict[str, Any]) -> tuple[RunConfig, list[tuple[str, Any, Any]]]:
    """A copy of `config` with `changes` ({setting: value}) applied and validated like any config, and the
    (setting, old, new) that differ. BranchError names every refused setting; ConfigError a refused value."""
    refused = {name: why for name in changes if (why := branch_refusal(name))}
    if refused:
        words = "; ".join(f"{name}: {why}" for name, why in refused.items())
        raise BranchError(f"a branch cannot change {', '.join(refused)} ({words}). Start a new run instead.")
    values = dict(changes)
    train = config.train
    if "learning_rate" in values and "min_lr" not in values:  # as the live knob does: the floor moves with the peak
        new = values["learning_rate"]
        if isinstance(new, int | float) and not isinstance(new, bool) and math.isfinite(new) and new > 0:
            values["min_lr"] = moved_floor(train.min_lr, train.learning_rate, float(new))
    mine: dict[str, dict[str, Any]] = {section: {} for section in (*SECTIONS, "run")}
    changed = []
    for name, value in values.items():
        section = section_of(name)
        old = getattr(config if section == "run" else getattr(config, section), name)
        if type(old) is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # 1 means 1.0 for a float setting, as a knob does
        mine[section][name] = value
        if value != old:
            changed.append((name, old, value))
    # dataclasses.replace and RunConfig run __post_init__: ConfigError for a value no config accepts
    parts = {section: dataclasses.replace(getattr(config, section), **mine[section]) for section in SECTIONS}
    run = {name: mine["run"].get(name, getattr(config, name)) for name in RUN_FIELDS}
    new_config = RunConfig(**parts, **run)
    return new_config, changed


def plan_branch(store: RunStore, run_id: str, step: int | None, changes: dict[str, Any]) -> BranchPlan:
    """Check a branch of `run_id` from its checkpoint at `step` (None: the newest) with `changes`, without writing
    anything. BranchError, ConfigError, CheckpointError or RunStoreError say what is wrong."""
    parent_dir = store.existing(run_id)
    steps = list_checkpoints(parent_dir)
    if not steps:
        raise BranchError(f"run {run_id} has no checkpoint yet to branch from: let it train a little first.")
    if step is None:
        step = steps[-1]
    if isinstance(step, bool) or not isinstance(step, int) or step not in steps:
        raise BranchError(f"run {run_id} has no checkpoint at step {step!r} to branch from; it has {steps}.")
    ckpt = load_checkpoint(checkpoint_stem(parent_dir, step))  # CheckpointError: damaged, with advice
    if ckpt.trainer_state is None:
        raise BranchError(f"checkpoint {step} of run {run_id} holds weights only, so it cannot be trained on.")
    base = ckpt.config  # as the run was at that step, live knob changes included
    base.model = dataclasses.replace(base.model, vocab_size=len(ckpt.vocab))
    config, changed = apply_changes(base, changes)
    if config.train.max_steps <= step:
        raise BranchError(
            f"max_steps {config.train.max_steps} leaves nothing to train after the branch step {step}: "
            f"give max_steps above {step}."
        )
    coupled = {"min_lr": "learning_rate"} if "learning_rate" in changes and "min_lr" not in changes else {}
    return BranchPlan(run_id, parent_dir, step, config, changed, ckpt.vocab, coupled)


def reset_point(run_dir: str | Path, knobs: tuple[str, ...] | list[str]) -> tuple[int, dict[str, Any]] | None:
    """Where to branch a run to undo the first change of any of `knobs` (the lesson's "reset the lecture run"
    after its mask or learning-rate step): (the newest checkpoint at or before that change, the changes a branch
    from it needs to be as the run was before it), or None when no such knob changed or no checkpoint precedes it.
    The changes are {} unless that checkpoint was saved after the change at the same step (a pause right after
    it): then they put the old values back. Usage: `manager.branch(run_id, *reset_point(run_dir, ["mask"]), actor)`.
    """
    changes = [e for e in read_events(run_dir) if e.get("kind") == "knob" and e.get("ok", True)]
    first = next((e for e in changes if e.get("knob") in knobs and e.get("old") != e.get("new")), None)
    if first is None:
        return None
    steps = [s for s in list_checkpoints(run_dir) if s <= first["step"]]
    if not steps:
        return None
    undo: dict[str, Any] = {}
    if steps[-1] == first["step"]:  # saved at the step of the change: maybe after it, so put what it had back
        config = checkpoint_settings(run_dir, steps[-1])
        for event in changes:
            if event["step"] == first["step"] and section_of(event["knob"]) in ("model", "train"):
                undo.setdefault(event["knob"], event.get("old"))  # the value before the first change at that step
        undo = {name: old for name, old in undo.items() if getattr(getattr(config, section_of(name)), name) != old}
    return steps[-1], undo


def checkpoint_settings(run_dir: str | Path, step: int) -> RunConfig:
    """The config a branch from checkpoint `step` of a run starts from, from the checkpoint's JSON alone (no
    tensors read): what the Runs page's branch control shows before anything is changed. TinyGPTError if the
    checkpoint is gone or its JSON damaged."""
    meta = read_json(checkpoint_stem(run_dir, step).with_suffix(".json"), None)
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise BranchError(f"checkpoint {step} of run {Path(run_dir).name} is gone or damaged: pick another.")
    return RunConfig.from_dict(meta["config"])


def create_branch(store: RunStore, plan: BranchPlan, owner: str, learner: dict | None = None) -> str:
    """Make the branch's folder from `plan` (its history and checkpoint copied, see the module's docstring) and
    return its id; it is "queued", to be trained from checkpoint `plan.step` (RunManager.branch, or the CLI's
    `train --branch`). `learner` ({"id", "name"}) owns it: a branch is a new run, whoever owned the parent."""
    parent_config = read_config_json(plan.parent_dir)
    config = plan.config.to_dict()
    if config["data"]["source"] == "text":  # the text goes to the branch's own corpus.txt (RunStore.create)
        config["data"]["text"] = read_corpus(plan.parent_dir, config["data"]["text_sha256"] or None)
    identity = {"vocab": plan.vocab, "num_params": parent_config.get("num_params")}
    identity[BRANCH_KEY] = {"step": plan.step, "changes": {name: new for name, _, new in plan.changed}}
    if learner:
        identity["learner"] = learner
    writer = store.create({**config, **identity}, owner=owner, parent=plan.parent, fill=lambda d: _fill(d, plan))
    writer.close()
    return writer.run_id


def _fill(run_dir: Path, plan: BranchPlan) -> None:
    """Copy the parent's history up to the branch step into the (not yet listed) folder `run_dir`."""
    source, step, now = plan.parent_dir, plan.step, time.time()
    copied = {name: [r for r in _timeline(source / f"{name}.jsonl") if r["step"] <= step] for name in _SERIES}
    copied["events"] = _events_until(source, step, _checkpoint_knobs(plan))
    # The copied history is moved on in time so that the branch step is now: the branch's own steps then follow it
    # by seconds, not by however long ago the parent got there, so its ETA (its pace over the last steps) and its
    # curve on the seconds axis ("time to quality") have no gap. Spacings, and so the parent's pace, are kept.
    stamps = [m["time"] for m in copied["metrics"] if isinstance(m.get("time"), int | float)]
    shift = now - stamps[-1] if stamps else 0.0
    for records in copied.values():
        for record in records:
            if isinstance(record.get("time"), int | float) and not isinstance(record["time"], bool):
                record["time"] += shift
    for name in _SERIES:
        _write_jsonl(run_dir / f"{name}.jsonl", copied[name])
    events = copied["events"]
    changes = ", ".join(f"{name} {old} -> {new}" for name, old, new in plan.changed) or "no change"
    events.append({"time": now, "step": step, "kind": "state", "branched_from": plan.parent,
                   "message": f"branched from run {plan.parent} at step {step}: {changes}"})  # fmt: skip
    for name, old, new in plan.changed:  # the charts mark each as a knob change at the branch step
        # "branch": True tells the settings table that config.json already says `new` (ui.charts.compare.config_diff)
        coupled = {"coupled_to": plan.coupled[name]} if name in plan.coupled else {}
        said = f"{name}: {old} -> {new} at step {step} (branch)"
        events.append({"time": now, "step": step, "kind": "knob", "knob": name, "ok": True, "old": old, "new": new,
                       "branch": True, **coupled, "message": said})  # fmt: skip
    _write_jsonl(run_dir / "events.jsonl", events)
    _copy_attention(source, run_dir, step)
    _copy_checkpoint(plan, run_dir)
    max_steps = plan.config.train.max_steps
    write_json_atomic(run_dir / "status.json", {
        "state": "queued", "reason": f"branched from run {plan.parent} at step {step}; waiting for a worker",
        "step": step, "max_steps": max_steps, "tokens_per_s": None, "best_val_loss": _best_val(run_dir),
        "device": None, "pid": None, "queue_position": None, "updated": now,
    })  # fmt: skip


def _timeline(path: Path) -> list[dict]:
    """The records of a step-keyed .jsonl on the run's current timeline: a step not after the one before is a
    rewind (a resume from an earlier checkpoint), which abandons the records from that step on (as RunReader)."""
    kept: list[dict] = []
    for record in read_jsonl(path):
        at = record.get("step")
        if isinstance(at, bool) or not isinstance(at, int | float):
            continue
        while kept and kept[-1]["step"] >= at:
            kept.pop()
        kept.append(record)
    return kept


def _checkpoint_knobs(plan: BranchPlan) -> dict[str, Any]:
    """The live knobs the branch's checkpoint was saved with: the plan's config, its branch changes undone."""
    knobs = knobs_now(plan.config.to_dict(), [])
    return knobs | {name: old for name, old, _ in plan.changed if name in knobs}


def _events_until(run_dir: Path, step: int, saved: dict[str, Any] | None = None) -> list[dict]:
    """The parent's events up to `step` on its current timeline. Events of one step come in several, so a rewind
    shows as the resume's own event ("resumed_from"), which abandons what came after its checkpoint. A knob change
    recorded at `step` itself applied after that step's checkpoint unless a pause wrote the checkpoint after it:
    kept only where the checkpoint (`saved`, its knobs) holds its new value. A review's Reset branched the lecture run
    at step 2000, the step its LR 0.1 was recorded at: the branch trained at 0.003 while every page said 0.1."""
    kept: list[dict] = []
    for event in read_jsonl(run_dir / "events.jsonl"):
        at = event.get("step")
        if isinstance(at, bool) or not isinstance(at, int | float):
            continue
        if isinstance(back := event.get("resumed_from"), int):
            kept = [e for e in kept if e["step"] <= back]
        kept.append(event)

    def after_the_checkpoint(e: dict) -> bool:  # a change of this step the checkpoint does not hold
        return is_knob(e) and saved is not None and e.get("knob") in saved and e.get("new") != saved[e["knob"]]

    return [e for e in kept if e["step"] < step or (e["step"] == step and not after_the_checkpoint(e))]


def _write_jsonl(path: Path, records: list[dict]) -> None:
    if records:
        path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _copy_attention(source: Path, run_dir: Path, step: int) -> None:
    """The attention snapshots and head-role scores up to `step` (a snapshot file gone meanwhile is left out)."""
    index = read_json(source / "attention" / "index.json", None)
    folder = run_dir / "attention"
    folder.mkdir(exist_ok=True)
    if isinstance(index, dict) and isinstance(index.get("snapshots"), list):
        kept = []
        for snap in index["snapshots"]:
            if isinstance(snap, dict) and isinstance(snap.get("step"), int) and snap["step"] <= step:
                try:
                    shutil.copyfile(
                        source / "attention" / snapshot_name(snap["step"]), folder / snapshot_name(snap["step"])
                    )
                except FileNotFoundError:  # thinned by the parent's writer while we copied
                    continue
                kept.append(snap)
        write_json_atomic(folder / "index.json", {**index, "snapshots": kept})
    _write_jsonl(folder / "scores.jsonl", [r for r in read_scores(source) if r["step"] <= step])


def _copy_checkpoint(plan: BranchPlan, run_dir: Path) -> None:
    """The branch step's checkpoint: its tensors byte for byte, its JSON with the branch's config (and the changed
    optimizer hyper-parameters in its parameter groups). The JSON last, as tinygpt.checkpoint writes it."""
    source, target = checkpoint_stem(plan.parent_dir, plan.step), checkpoint_stem(run_dir, plan.step)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        meta = json.loads(source.with_suffix(".json").read_text())
        shutil.copyfile(source.with_suffix(".safetensors"), target.with_suffix(".safetensors"))
    except FileNotFoundError:  # the parent's retention dropped it since plan_branch loaded it
        raise BranchError(
            f"checkpoint {plan.step} of run {plan.parent} was removed while the branch was being made: pick another."
        ) from None
    if target.with_suffix(".safetensors").stat().st_size != meta.get("weights_bytes"):
        raise BranchError(f"checkpoint {plan.step} of run {plan.parent} changed while it was copied: try again.")
    meta["config"] = plan.config.to_dict()
    changed = {name: new for name, _, new in plan.changed}
    train = plan.config.train
    for group in (meta.get("optimizer") or {}).get("param_groups", []):
        if "weight_decay" in changed and group.get("decays"):
            group["weight_decay"] = train.weight_decay
        if ("beta1" in changed or "beta2" in changed) and "betas" in group:
            group["betas"] = [train.beta1, train.beta2]
    target.with_suffix(".json").write_text(json.dumps(meta))


def _best_val(run_dir: Path) -> float | None:
    losses = [e.get("val_loss") for e in read_jsonl(run_dir / "evals.jsonl")]
    finite = [v for v in losses if isinstance(v, int | float) and math.isfinite(v)]
    return min(finite) if finite else None


def branch_of(config: dict) -> dict | None:
    """{"parent", "step", "changes"} of a branch's config.json, or None for a run that is not a branch."""
    branch = (config or {}).get(BRANCH_KEY)
    parent = (config or {}).get("parent")
    if not (isinstance(branch, dict) and isinstance(branch.get("step"), int) and isinstance(parent, str)):
        return None
    return {"parent": parent, "step": branch["step"], "changes": dict(branch.get("changes") or {})}


def read_branch(run_dir: str | Path) -> dict | None:
    """branch_of a run folder's config.json."""
    return branch_of(read_config_json(Path(run_dir)))
