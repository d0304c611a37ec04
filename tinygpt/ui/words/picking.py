"""How runs read where one is picked or drawn (Sample's picker and its notes, the Room's chart): the readable
name the Runs table shows (runlist.run_names, each one different from its neighbours), never a bare id."""

from __future__ import annotations

import math
from collections import Counter

from tinygpt.config import LEAKING_MASKS
from tinygpt.lab.evals import eval_gap
from tinygpt.runs.files import ACTIVE_STATES
from tinygpt.runs.knobs import events_upto, knob_changes, knobs_at, knobs_now, leak_spans, mask_spans
from tinygpt.runs.owners import run_learner
from tinygpt.ui.words import leaks
from tinygpt.ui.words.clipping import far_above_best, held_out_words
from tinygpt.ui.words.knob_words import change_label, knob_value, knob_word, shown_changes


def pick_label(run_id: str, name: str, config: dict, *, me_id: str | None, current: bool = False) -> str:
    """How a run reads in a picker: its readable name first (the Runs table's, unique), then whose. No id: the name
    already tells two runs of the same settings apart ("… #2"). Nothing that changes while the run trains: the
    browser sends back the label it showed, so a label with the live step ("running · step 2113") no longer
    matched the run a moment later, and a review's pick fell back to the current run (Open and Branch opened
    another run). Its state and step go under the picker (`pick_status`)."""
    owner = run_learner(config)
    whose = "yours" if me_id and owner.get("id") == me_id else f"{owner['name']}'s" if owner.get("name") else ""
    parts = [(name or run_id) + (" (current)" if current else ""), whose]
    return " · ".join(p for p in parts if p)


def pick_status(state: str, step: int | None, read_at: str = "") -> str:
    """ "running · step 2,113": where a picked run stood when the page read it, said under its picker; `read_at`
    ("07:31:05") says when, for a page that does not follow the run (a review read "running · step 775" on Runs
    while the run was at step 1,625)."""
    said = f"{state} · step {step:,}" if isinstance(step, int) else state
    # An ended run stands where it ended: "finished · step 300 at 19:30:45, when this page read it" read as the
    # time it finished (a review)
    return f"{said} at {read_at}, when this page read it (Train follows it live)" if read_at and state not in (
        "finished", "stopped", "failed") else said  # fmt: skip


def sample_source(run_id: str, name: str, step: int, in_view: str | None = None, at: str = "",
                  none_in_view: bool = False) -> str:  # fmt: skip
    """Which run and checkpoint a sample comes from, in words (the id too: it is what a file or a link needs);
    `in_view`: the name of the run in view where it is another (picked here, or it has no checkpoint yet), said
    so: the sidebar names the run in view. `at`: at_checkpoint's words, the live changes the name does not say (a
    review read "LR 0.002" in the name of a run at 0.02 since step 831). `none_in_view`: no run is in view, as the
    sidebar says, and this page picked one of its own (a review read "No run in view" beside "Sampling from …")."""
    other = f" Not the run in view (**{in_view}**, named in the sidebar)." if in_view else ""
    other = " No run is in view, as the sidebar says: this page picked it (the **Run** box above)." if none_in_view \
        else other  # fmt: skip
    at = f" ({at})" if at else ""
    return f"Sampling from **{name or run_id}** (run `{run_id}`), its checkpoint at step {step:,}{at}.{other}"


def no_checkpoint_yet(name: str, state: str | None) -> str:
    """Over the Sample page while the run in view has no checkpoint to sample from (queued, or starting): said in a
    box, not a grey line under the picker (a review's learner read the lecture run's samples and warnings under the
    sidebar's name of their own queued run)."""
    why = {"queued": "it is queued", "starting": "it is starting"}.get(str(state), "it has saved none yet")
    return (f"The run in view, **{name}**, has no checkpoint to sample from yet: {why}, and it saves one before its "
            "first step. Meanwhile this page samples the run in the **Run** box below, another run.")


def rate_at(metrics: list[dict] | None, step: int) -> float | None:
    """The learning rate the step record of `step` (or the newest before it, the series may be thinned) trained at."""
    rates = [m["lr"] for m in metrics or ()
             if isinstance(m.get("lr"), (int, float)) and int(m.get("step") or 0) <= step]  # fmt: skip
    return rates[-1] if rates else None


def at_checkpoint(config: dict, events: list[dict], step: int, ckpt_config: dict | None = None,
                  rate: float | None = None) -> str:  # fmt: skip
    """ "at this checkpoint: LR 0.1 (changed at step 12,498)": the live knobs whose value at checkpoint `step`
    differs from the run's config, the settings its name was made from (names never change, so "LR 0.003" stays
    on a run trained at 0.1 since). The values are the checkpoint's own config where given (`ckpt_config`, the
    knobs its weights trained under), else the knob events up to its step; "" when none differs."""
    then = knobs_now(ckpt_config, []) if ckpt_config else knobs_at(config, events, step)
    said = _unlike_the_name(config, events_upto(events, step), then)
    lr = knob_word("learning_rate")
    if rate is not None and any(item.startswith(f"{lr} ") for item in said):
        # "LR 0.0005" is the setting, the schedule's peak: the step itself trained at its schedule's rate (a review
        # read "at this checkpoint: LR 0.0005" of a step at 5e-05)
        said.append(f"the schedule's rate at this step {rate:.3g}")
    return "at this checkpoint: " + ", ".join(said) if said else ""


def now_unlike_the_name(config: dict, events: list[dict]) -> str:
    """ "now LR 0.1 (changed at step 4,208)": the run's live knobs now where they differ from its name's, for the
    sidebar's "Run:" line (a review: the lecture run's name read "LR 0.003" beside a slider at 0.1); "" for none."""
    said = _unlike_the_name(config, events, knobs_now(config, events))
    return "now " + ", ".join(said) if said else ""


def _unlike_the_name(config: dict, events: list[dict], then: dict) -> list[str]:
    base = knobs_now(config, [])
    said = []
    for knob, value in then.items():
        if knob == "min_lr" or value == base.get(knob):  # min_lr moves with the learning rate: one change
            continue
        if knob == "window" and then.get("mask") != "sliding_window":  # no effect: "window 4" under causal (a review)
            continue
        changed = [e["step"] for e in knob_changes(events) if e.get("knob") == knob]
        when = f" (changed at step {changed[-1]:,})" if changed else " (changed live)"
        said.append(f"{knob_word(knob)} {knob_value(value)}{when}")
    return said


def generated_header(name: str, step: int, at: str, settings: tuple | None = None, seed: int | None = None) -> str:
    """The line over a sample: which run (`name`, already markdown-safe) and step, and the knobs in force at that
    checkpoint where they differ from the name's (at_checkpoint), so "LR 0.003" in a name never stands alone over
    text a learning rate of 0.1 wrote; and what it was drawn with, `settings` (temperature, top-k, top-p): a review
    typed "1e3" in Top-k, the browser read 1, and 200 spaces came out under a header that did not say top-k 1."""
    at = f"; {at}" if at else ""
    drawn = f"; drawn at {sampling_words(*settings)}" if settings else ""
    drawn += f", seed {seed}" if settings and seed is not None else ""  # "1e12" typed reached the page as 1 (a review)
    return f"**Generated** ({name}, step {step}{at}{drawn}; the prompt, then the model's continuation)"


def prompt_note(prompt_chars: int, context: int) -> str:
    """Under a sample whose prompt is longer than the model's context, "" otherwise: the model reads the prompt's last
    `context` characters only (a review's 6,009-character prompt was echoed whole, and its continuation was the one a
    prompt of its last line gets)."""
    if prompt_chars <= context:
        return ""
    return (f"The model reads only the last {context} characters of this {prompt_chars:,}-character prompt (its "
            f"context, max_seq_len {context}): the characters before them are shown but do not steer what it writes.")


RISEN = 1.05  # an eval this far above the best: the held-out loss has begun to rise


def sampling_words(temperature: float, top_k: int, top_p: float) -> str:
    """ "temperature 0.8, top-k off, top-p off": the settings a sample was drawn with, as the Sample page says them;
    "(greedy: always the likeliest character)" after them where they leave one choice (temperature 0 or top-k 1)."""
    said = (f"temperature {temperature:g}, top-k {top_k or 'off'}, "
            f"top-p {'off' if top_p >= 1.0 else f'{top_p:g}'}")  # fmt: skip
    return said + (" (greedy: always the likeliest character)" if temperature == 0 or top_k == 1 else "")


def stale_sample_note(used: tuple | None, now: tuple) -> str:
    """Under the Sample page's charts when the sliders moved since the last Generate, "" otherwise: the charts are
    that Generate's (a review read a smooth temperature-0.8 distribution beside sliders at 0 and top-k 3)."""
    if used is None or tuple(used) == tuple(now):
        return ""
    return (f"These charts are the last **Generate**'s ({sampling_words(*used)}). Press **Generate** to draw them "
            f"at {sampling_words(*now)}.")


def checkpoint_notes(
    config: dict,
    events: list[dict],
    evals: list[dict],
    step: int,
    checkpoints: list[int] = (),
    metrics: list[dict] = (),
) -> list[tuple[str, str]]:
    """(kind, text) notes on what is true of the checkpoint at `step` ("warning" or "info"), each from the run's
    records. The mask in force at the checkpoint: a leaking one (leaks.SEES) taught the model to copy the next
    character, which generating one character at a time lacks, so the text falls apart; a leak that ended before
    the checkpoint is said with the causal steps since, and not blamed (review: a checkpoint 1,816 steps past
    the leak, its text wrecked by a learning rate of 0.1, was blamed on the mask). Then its held-out loss when far
    above the run's best (clipping.far_above_best), with the live changes made since that best."""
    notes = []
    # The stretches up to the checkpoint's own step, never the run's last: a checkpoint holds no step after its
    # own (review: checkpoint 3,500 "trained under mask none in steps 3,215-3,892"). The last one is the mask its
    # latest steps trained under (a change recorded at its step applied after it: no step of it trained so).
    spans = mask_spans(config, events, step)
    mask, first, _ = spans[-1] if spans else (leaks.mask_at(config, events, step), step, step)
    if spans and mask in LEAKING_MASKS:
        before = [c for c in checkpoints if c <= first]
        back = f"the checkpoint at step {before[-1]:,}" if before else f"a checkpoint from before step {first + 1:,}"
        # Whether it learned to copy is read from the held-out loss under the leak, not assumed (a review's branch
        # read "learned to copy" while its held-out loss went 2.476 -> 2.468)
        pair = leaks.held_out_under(evals, first, step)
        under = leaks.copied_under(config, events, evals, first, pair) if pair else leaks.LeakFall(False, "", False, "")
        fell, moved = under.copied, under.fell  # copying shows; fell beyond its noise, copying or not
        numbers = (f" (held-out {pair[0]['val_loss']:.3f} → {pair[1]['val_loss']:.3f}{under.noise})"
                   f"{under.against_best}" if pair else "")  # fmt: skip
        copied = (f"Its held-out loss fell under it{numbers}: the model learned to copy the next character instead "
                  "of predicting it; when it generates, that character is not there yet, so the text falls apart"
                  if fell else
                  f"Its held-out loss {'fell' if moved else 'did not fall'} under it{numbers}, so no copying shows "
                  "yet; a model trained so "
                  "can lean on the next character, which generating one character at a time lacks, and its text "
                  "can fall apart" if pair else
                  "A model trained so can learn to copy the next character instead of predicting it; when it "
                  "generates, that character is not there yet, and the text can fall apart")  # fmt: skip
        notes.append(("warning", (
            f"This checkpoint (step {step:,}) trained under mask {mask} in steps {first + 1:,}-{step:,} "
            f"({leaks.SEES[mask]}). {copied} (repeats like `:::::`, or gibberish). Pick {back}, or a run with the "
            "causal mask."
        )))  # fmt: skip
    elif spans := leak_spans(config, events, step):
        said = ", ".join(f"mask {m} in steps {a + 1:,}-{b:,}" for m, a, b in spans)  # the steps trained so
        notes.append(("info", (
            f"This run trained with {said}; the leak ended {step - spans[-1][2]:,} steps before this checkpoint, "
            f"which trained under mask {mask} since. Its text shows what those steps made of the model, not the "
            "copying the leak taught."
        )))  # fmt: skip
    found = far_above_best(evals, step, leak_spans(config, events, step))
    if found and mask not in LEAKING_MASKS:
        best, now = found
        vocab = len(config.get("vocab") or []) or (config.get("model") or {}).get("vocab_size")
        guess = f"; guessing uniformly scores {math.log(vocab):.2f}" if vocab else ""
        changes = [e for e in shown_changes(events_upto(events, step)) if e["step"] >= best["step"]]
        # Which came first, the rise or the changes: a review's run over-fitted its 12 kB text from step 650 on,
        # and the note blamed four knob changes made from step 5,474 on
        rise = next((e for e in evals if isinstance(e.get("step"), int) and best["step"] < e["step"] <= step
                     and (e.get("val_loss") or 0) >= RISEN * best["val_loss"]), None)  # fmt: skip
        risen = (
            f"; the held-out loss had risen already, to {rise['val_loss']:.3f} at step {rise['step']:,}, "
            "before the first of them"
            if rise and changes and rise["step"] < changes[0]["step"]
            else ""
        )
        why = f" Live changes since that best: {', '.join(change_label(e) for e in changes)}{risen}." if changes else ""
        good = [c for c in checkpoints if c <= best["step"]]
        pick = f" The newest checkpoint from before that best is at step {good[-1]:,}." if good else ""
        trained = train_losses(metrics, best["step"], step)
        what = (f"while its training loss fell from {trained[0]:.3f} to {trained[1]:.3f}: the model memorises its "
                "training text rather than what carries over to new text (over-fitting)" if trained and
                trained[1] < trained[0] - 0.05 else "the model has lost much of what it had learned")  # fmt: skip
        # What it rests on (a review: 150 held-out characters, said on Gradients, not here); the gap cleared the
        # held-out noise of that split (far_above_best)
        noise = ", a gap beyond its noise" if eval_gap(best, now) is not None else ""  # else an older run's, unjudged
        basis = f" ({held_out_words(now)}{noise})" if held_out_words(now) else ""
        notes.append(("warning", (
            f"Held-out loss at step {now['step']:,}{basis}: {now['val_loss']:.3f}, "
            f"{now['val_loss'] / best['val_loss']:.1f}× this run's best ({best['val_loss']:.3f} at step "
            f"{best['step']:,}{guess}), {what}.{why}{pick}"
        )))  # fmt: skip
    return notes


def train_losses(metrics: list[dict], best: int, now: int, window: int = 20) -> tuple[float, float] | None:
    """(mean training loss of the `window` steps up to step `best`, the same up to `now`), None without both."""
    means = []
    for upto in (best, now):
        losses = [m["loss"] for m in metrics if isinstance(m.get("step"), int) and m["step"] <= upto
                  and isinstance(m.get("loss"), (int, float)) and math.isfinite(m["loss"])][-window:]  # fmt: skip
        means.append(sum(losses) / len(losses) if losses else None)
    return None if None in means else (means[0], means[1])


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
