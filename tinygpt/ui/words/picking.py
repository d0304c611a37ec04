"""How runs read where one is picked or drawn (Sample's picker and its notes, the Room's chart): the readable
name the Runs table shows (runlist.run_names, each one different from its neighbours), never a bare id."""

from __future__ import annotations

from collections import Counter

from tinygpt.runs.files import ACTIVE_STATES
from tinygpt.runs.knobs import knob_changes
from tinygpt.runs.owners import run_learner


def pick_label(
    run_id: str, name: str, config: dict, state: str, step: int, *, me_id: str | None, current: bool = False
) -> str:
    """How a run reads in a picker: its readable name first (the Runs table's, unique), then whose, state and
    step. No id: the name already tells two runs of the same settings apart ("… #2")."""
    owner = run_learner(config)
    whose = "yours" if me_id and owner.get("id") == me_id else f"{owner['name']}'s" if owner.get("name") else ""
    parts = [(name or run_id) + (" (current)" if current else ""), whose, state, f"step {step:,}"]
    return " · ".join(p for p in parts if p)


def sample_source(run_id: str, name: str, step: int) -> str:
    """Which run and checkpoint a sample comes from, in words (the id too: it is what a file or a link needs)."""
    return f"Sampling from **{name or run_id}** (run `{run_id}`), its checkpoint at step {step:,}."


_FUTURE_MASKS = {"none": "sees every position, the next characters included", "off_by_one": "sees the next character"}


def cheat_note(config: dict, events: list[dict], step: int) -> str | None:
    """Why a checkpoint's text looks broken when the run trained under a mask that shows the future (None if it
    did not): such a model learned to read the answer at the next position. Generating one character at a time,
    that position does not exist yet, so what it learned to rely on is missing and the text collapses."""
    mask = (config.get("model") or {}).get("mask", "causal")
    spans, start = [], 0  # (mask, first step, last step) of every stretch up to `step`
    for e in knob_changes(events):
        if e.get("knob") == "mask" and isinstance(e.get("step"), int) and e["step"] <= step:
            spans.append((mask, start, e["step"]))
            mask, start = e.get("new"), e["step"]
    spans.append((mask, start, step))
    bad = [(m, a, b) for m, a, b in spans if m in _FUTURE_MASKS and b > a]
    if not bad:
        return None
    where = ", ".join(f"mask {m} " + (f"from step {a:,}" if b == step else f"in steps {a:,}-{b:,}") for m, a, b in bad)
    why = "; ".join(f"mask {m} {_FUTURE_MASKS[m]}" for m in dict.fromkeys(m for m, _, _ in bad))
    return (
        f"This checkpoint trained with {where} ({why}). The model learned to copy the next character instead of "
        "predicting it; when it generates, that character is not there yet, so the text falls apart (repeats like "
        "`:::::`, or gibberish). Pick a checkpoint from before the change, or a run with the causal mask."
    )


ROOM_CHART_MAX = 36  # panels at most (under ReaderPool's 48 shared readers): learners' first, live first, then newest
FIRST_OWNER = "learner"  # tinygpt.ui.host.runlist.LEARNER: the rows' "whose" of a learner's run (a row without one)


def room_chart_runs(rows: list[dict]) -> tuple[list[tuple[str, str]], str]:
    """(run id, panel label) of the runs the Room's loss chart draws, in the order it draws them, and a note saying
    which of the table's runs it leaves out and why ("" when it draws them all). Every run with a step to draw is
    drawn, whoever owns it and whatever its state (a learner's finished run beside the prepared runs that train):
    the learners' runs first (a row's "whose", a learner's when it has none), then the others (the instructor's
    lecture and prepared runs, the CLI's), each of the two live first (queued, starting, running, paused), then in
    the table's order (newest first): compare.ROOM_ORDER says so under the chart. Up to ROOM_CHART_MAX panels, so
    the instructor's twenty prepared runs never push a learner's out. A run at step 0 has no loss yet: it is left
    out and counted in the note. Labels are the learner and the run's readable name (unique, so no two panels read
    the same; a row without a name falls back to its id)."""
    live_states = (*ACTIVE_STATES, "paused")
    with_steps = [r for r in rows if (r.get("step") or 0) > 0]
    ordered = []
    for learners in (True, False):
        mine = [r for r in with_steps if (r.get("whose", FIRST_OWNER) == FIRST_OWNER) == learners]
        ordered += [r for r in mine if r.get("state") in live_states]
        ordered += [r for r in mine if r.get("state") not in live_states]
    picked, over = ordered[:ROOM_CHART_MAX], ordered[ROOM_CHART_MAX:]
    left = []
    if no_step := [r for r in rows if (r.get("step") or 0) <= 0]:
        left.append(f"{len(no_step)} run(s) at step 0, no loss to draw yet ({_by_state(no_step)})")
    if over:
        left.append(f"{len(over)} run(s) past the chart's {ROOM_CHART_MAX} panels ({_by_state(over)})")
    note = (f"The chart draws {len(picked)} of the {len(rows)} runs in the table; not drawn: " + "; ".join(left)
            + "." if left else "")  # fmt: skip
    labels = [f"{r.get('learner')} · {r.get('name') or r['run']}" for r in picked]
    return [(r["run"], label) for r, label in zip(picked, labels, strict=True)], note


def _by_state(rows: list[dict]) -> str:
    """ "3 queued, 1 starting": how many of `rows` are in each state, in the order they come."""
    return ", ".join(f"{n} {state}" for state, n in Counter(str(r.get("state") or "unknown") for r in rows).items())
