"""What the pages say about runs that must read the run store: the readable run names, the Runs and Room tables'
rows, the runs the instructor holds, the learners' runs in play, and who else writes a run (the
CLI, torchrun). Each reads run folders through the engine's readers (tinygpt.runs); the words they use are the pure
ones of tinygpt/ui/words/runinfo.py. No Streamlit.
"""

from __future__ import annotations

import shlex
import time
from collections import Counter
from pathlib import Path

from tinygpt.config import LEAKING_MASKS, trains_until_stopped
from tinygpt.errors import RunStoreError
from tinygpt.runs.files import memo_by_file, read_config_json, read_evals, read_events, read_jsonl
from tinygpt.runs.knobs import knobs_at, knobs_now
from tinygpt.runs.lock import writer_lock_holder
from tinygpt.runs.names import store_names
from tinygpt.runs.owners import Actor, read_hold, run_learner
from tinygpt.runs.store import RunStore, RunSummary
from tinygpt.ui.words.run_words import reason_for
from tinygpt.ui.words.runinfo import best_eval, knob_history


def run_names(store: RunStore) -> dict[str, str]:
    """{run id: readable name} of every run in the store (tinygpt.runs.names): what a person reads wherever a run
    is shown, each one different from its neighbours; "" for an unreadable run (show its id)."""
    return store_names(store.root)


def best_val_text(step: int, loss: float, changed: list[str]) -> str:
    """ "2.0134 @2000", with the live changes in force then; a loss reached under a leaking mask leads with it
    ("mask none: 0.1558 @3300"): at 1280 px with Large fonts the column is cut, and a reviewer read a cheating
    model's 0.16 as the room's best run, its "(mask none)" cut off."""
    leak = [c for c in changed if c in {f"mask {m}" for m in LEAKING_MASKS}]  # a sliding window is causal: no leak
    rest = [c for c in changed if c not in leak]
    text = f"{loss:.4f} @{step}" + (f" ({', '.join(rest)})" if rest else "")
    return f"{leak[0]}: {text}" if leak else text


def run_rows(store: RunStore, me: Actor | None = None) -> list[dict]:
    """One plain row per run for the Runs table, `me`'s own runs first, each newest first: its owner, readable
    name, the mask as it is now (with its changes), and the best val loss with the knobs it was reached under."""
    rows, names = [], run_names(store)
    for s in sorted(store.list_runs(), key=lambda s: me is not None and run_learner(s.config).get("id") != me.id):
        config = s.config or {}
        model, train, data = (config.get(part) or {} for part in ("model", "train", "data"))
        events = read_events(store.path(s.run_id)) if s.config else []
        best = best_eval(config, events, read_evals(store.path(s.run_id))) if s.config else None
        best_text = "" if best is None else best_val_text(*best)
        now = knobs_now(config, events)
        rows.append(
            {
                "name": names.get(s.run_id) or s.run_id,  # first: what a person reads; the id at the end
                "owner": ("you" if me and run_learner(config).get("id") == me.id else run_learner(config).get("name"))
                or "-",
                "state": s.state,
                "step": s.step,
                "max steps": s.max_steps,
                "best val loss": best_text,
                "live changes": ", ".join(knob_history(events)),
                "mask now": now.get("mask") or model.get("mask"),
                "lr now": now.get("learning_rate") or train.get("learning_rate"),
                "corpus": data.get("source", ""),
                "context": model.get("max_seq_len"),
                "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.created)) if s.created else "",
                "reason": reason_for(s.reason or "", config, me),  # "stopped by you" only for who stopped it
                "run": s.run_id,
            }
        )
    return rows


def _newest_eval(path: Path) -> dict | None:
    evals = [e for e in read_jsonl(path) if isinstance(e.get("val_loss"), (int, float))]
    return dict(evals[-1]) if evals else None


def latest_held_out(run_dir, config: dict | None = None, events: list[dict] = ()) -> str:
    """The run's newest held-out loss and its step, "2.47 @1,200", "" before its first eval: the Room's rows had
    no loss at all, only the small charts' (a review). Under a leaking mask then it leads with it, as the Runs
    table's best val loss does ("mask none: 0.23 @12,450"): round 2 read a copying model's 0.23 as the room's best."""
    try:  # read again only once evals.jsonl changed: the Room redraws every 3 s, a run evals every few seconds
        last = memo_by_file(Path(run_dir) / "evals.jsonl", "newest eval", _newest_eval)
    except RunStoreError:
        return ""
    if last is None:
        return ""
    step = int(last.get("step") or 0)
    mask = knobs_at(config or {}, list(events), step).get("mask") if config else None
    said = f"{last['val_loss']:.2f} @{step:,}"
    return f"mask {mask}: {said}" if mask in LEAKING_MASKS else said


def room_rows(store: RunStore, me: Actor | None = None) -> list[dict]:
    """The instructor's table: one row per run, its learner first, then what the run is doing and did. "whose"
    says who started it (WHOSE: a learner, the instructor: the lecture run and the prepared runs, or no learner:
    the CLI or an older run), what the counter above the table counts by; "steps" is "step / max steps"; "paused"
    a paused run's reason in `me`'s words (run_words.reason_for)."""
    rows, names = [], run_names(store)
    for s in store.list_runs():
        config = s.config or {}
        events = read_events(store.path(s.run_id)) if s.config else []
        learner = config.get("learner") or {}
        whose = INSTRUCTOR if learner.get("instructor") else LEARNER if learner.get("id") else NOBODY
        position = s.reason if s.state == "queued" else ""
        until = s.max_steps is None or trains_until_stopped(s.max_steps)
        rows.append(
            {
                "learner": learner.get("name") or "(no learner: CLI or older run)",
                "name": names.get(s.run_id) or s.run_id,
                "state": s.state,
                "step": s.step,
                "max steps": s.max_steps,
                "steps": f"{s.step:,}" + ("" if until else f" / {s.max_steps:,}"),
                "held-out": latest_held_out(store.path(s.run_id), config, events),
                "queue": position,
                # A paused run's reason in the viewer's words (pages/room.py: who paused it, and a freed worker)
                "paused": reason_for(s.reason or "", config, me) if s.state == "paused" else "",
                "live changes": ", ".join(knob_history(events)),
                "whose": whose,
                "run": s.run_id,
            }
        )
    return rows


LEARNER, INSTRUCTOR, NOBODY = "learner", "instructor", "no learner"
# "The instructor's", not "Your": every instructor browser reads it, and a review's read "Your runs" over runs
# another instructor browser had started (its name in the owner column)
WHOSE = {LEARNER: "Learners' runs", INSTRUCTOR: "The instructor's runs (lecture and prepared)",
         NOBODY: "Runs of no learner (CLI)"}  # fmt: skip
# The counter's words for a run's state, in the order it lists them ("running" reads "training", as on Train).
STATE_WORDS = {"running": "training", "starting": "starting", "queued": "queued", "paused": "paused",
               "finished": "finished", "stopped": "stopped", "diverged": "diverged", "failed": "failed"}  # fmt: skip


def room_counts(rows: list[dict]) -> list[str]:
    """The Room's counter, one line per kind of owner that has runs (WHOSE, in that order): how many of its runs
    are in each state, "training" meaning state "running" (a worker holds a slot and steps) and "queued" waiting for
    one, both said even at 0; "0 training" is said of one owner's runs only, never of runs that train under another.
    Learners' runs always get a line."""
    lines = []
    for whose, title in WHOSE.items():
        mine = [r for r in rows if r.get("whose", LEARNER) == whose]
        if not mine and whose != LEARNER:
            continue
        states = Counter(str(r.get("state") or "unknown") for r in mine)
        parts = [f"{states.pop('running', 0)} training", f"{states.pop('queued', 0)} queued"]
        parts += [f"{states.pop(state)} {word}" for state, word in STATE_WORDS.items() if state in states]
        parts += [f"{n} {state}" for state, n in states.items()]  # a state the list above does not name
        lines.append(f"{title}: {' · '.join(parts)} ({len(mine)} in all)")
    return lines


def held_runs(store: RunStore) -> list[str]:
    """The runs the instructor holds (paused a learner's run: tinygpt.runs.files.HOLD_FILE), oldest first."""
    return [s.run_id for s in reversed(store.list_runs()) if read_hold(store.path(s.run_id))]


def own_runs(store: RunStore, actor: Actor) -> list[RunSummary]:
    """`actor`'s runs (a learner's, by their id), newest first."""
    return [s for s in store.list_runs() if run_learner(s.config or {}).get("id") == actor.id]


def held_of(store: RunStore, actor: Actor) -> list[RunSummary]:
    """The runs of `actor`'s that the instructor holds (hold.json: tinygpt.runs.owners.read_hold), oldest first,
    whatever their state (one paused before it started is neither training nor queued, and still held); [] for the
    instructor, whose runs are never held."""
    if actor.instructor:
        return []
    return [s for s in reversed(own_runs(store, actor)) if read_hold(store.path(s.run_id))]


def newest_own(store: RunStore, actor: Actor) -> RunSummary | None:
    """`actor`'s newest run (a learner's, by their id), or None for the instructor and for a learner without runs:
    what Train offers to reopen in a tab that has no run in view (a new tab, a server restart)."""
    if actor.instructor:
        return None
    return next(iter(own_runs(store, actor)), None)


def newest_own_experiment(store: RunStore, actor: Actor, variants: dict[str, dict]) -> dict[str, str] | None:
    """{label: run id} of `actor`'s newest runs of one experiment (its `variants`: {label: settings}), or None: runs
    started together (consecutive among the actor's runs, in variant order), on one text and seed, each with every
    setting of its variant. What the Experiments page offers to reopen in a tab that names none (a new tab, a
    server restart: a review's fresh tab read "Press Run side by side" beside the learner's finished pair)."""
    labels = list(variants)
    own = own_runs(store, actor)  # newest first
    for i in range(len(own) - len(labels) + 1):
        group = list(reversed(own[i : i + len(labels)]))  # started in variant order: oldest first
        configs = [s.config or {} for s in group]
        shared = {(str(c.get("data")), str((c.get("train") or {}).get("seed"))) for c in configs}
        if len(shared) == 1 and all(_has(c, variants[label]) for c, label in zip(configs, labels, strict=True)):
            return {label: s.run_id for label, s in zip(labels, group, strict=True)}
    return None


def _has(config: dict, settings: dict) -> bool:
    """Whether a config.json dict holds every one of `settings` ({name: value}) in one of its sections."""
    flat = {k: v for section in config.values() if isinstance(section, dict) for k, v in section.items()}
    return all(name in flat and flat[name] == wanted for name, wanted in settings.items())


def learners_in_play(store: RunStore, actor: Actor) -> list[str]:
    """The learners' runs training or queued now (not `actor`'s own, nor runs nobody owns): what "Pause every
    learner's run" holds."""
    return [
        s.run_id
        for s in store.list_runs()
        if s.state in ("queued", "starting", "running")
        and (owner := run_learner(s.config or {}))
        and owner["id"] != actor.id
    ]


def written_elsewhere(store: RunStore, run_id: str) -> str:
    """ "" for a run the app trains; for a run the CLI or torchrun wrote (owner "cli"), the command that continues
    it there: the run manager will not write into it for anyone, the instructor included."""
    if _owner(store, run_id) in ("app", None):
        return ""
    return f"python -m tinygpt train --resume {run_id} --runs-dir {shlex.quote(str(store.root))}"


def live_writer(store: RunStore, run_id: str) -> str:
    """ "" unless a process other than the app's own workers is writing the run now; then who, for the Delete
    button's help (RunStore.delete refuses it too)."""
    holder = writer_lock_holder(store.path(run_id)) if _owner(store, run_id) not in ("app", None) else None
    if not holder:
        return ""
    pid = f" (pid {holder['pid']})" if holder.get("pid") else ""
    return f"{holder.get('holder') or 'another process'}{pid} is training it: stop it there first, then delete it"


def _owner(store: RunStore, run_id: str) -> str | None:
    """config.json's owner ("app" or "cli"), read alone (not through a RunReader, which reads every file)."""
    try:
        config = read_config_json(store.path(run_id))
    except RunStoreError:
        return None
    return config.get("owner") if isinstance(config, dict) else None
