"""The checks of the lesson's steps on the lecture run (tinygpt/ui/teach/lesson.py): the loss starts at uniform
guessing and falls (step 1), a live knob change moves it (the mask and learning-rate steps). Pure: no Streamlit.

One run carries all three steps, each changing it for the next, so each check judges the evidence that belongs to
its own step and no other: step 1 the run before its first knob change, a knob step the run from its change to the
next change of any knob. A review pressed Back from step 12 to step 1 and read "the check saw it · right" above
"Not seen: ... by step 13015 it is 3.22": step 1 was judged on the damage steps 4 and 7 had done since. The words
name the steps used ("by step N, before the mask changed at step M").

Every window is a stretch of steps, read exactly (RunData.between): the reader thins a long run's older records, and
"the mean of 20 steps each side" had averaged 20 kept records spanning hundreds of steps. A knob check is decided
by the first window after the change that shows the effect (or by the window its patience ends on), so the numbers
for one change never drift as the run goes on. The room watches the training loss, so it decides when an effect
shows; the held-out loss, on the run's fixed held-out windows (text the model never trained on), must then show it
too before the check says "seen": a training loss alone had called a pitfall reproduced on a short text whose
held-out loss showed nothing. Until the next eval (every eval_interval steps) the check waits and says so; a
held-out loss that does not follow is "not seen"; a stretch that ends with no eval in it is "not enough data".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from tinygpt.config import LEAKING_MASKS
from tinygpt.runs.knobs import knob_changes
from tinygpt.ui.teach.lesson_checks import LECTURE, Check, Evidence, RunData, as_shown, mean_of, no_run
from tinygpt.ui.words.knob_words import knob_value
from tinygpt.ui.words.setting_words import setting_word

WINDOW = 20  # steps averaged on each side of a knob change (the Train chart's default smoothing is similar)
GROUP_STEPS = 3  # knob changes this close together came from one click
PATIENCE = 300  # steps a live knob's effect may take to show before the check says it did not
MIN_KNOB_CHANGE = 0.3  # nats: a live knob's effect smaller than this is not something the room can see
UNIFORM_PATIENCE = 1000  # steps the first fall may take before step 1's check says it did not come
ENDED = ("finished", "stopped", "diverged", "failed")


def _step(e: dict) -> int:
    return int(e.get("step") or 0)


def _steps(a: int, b: int) -> str:
    return f"step {a}" if a == b else f"steps {a}–{b}"


def _loss(records: Sequence[dict]) -> list[tuple[int, float]]:
    return [(int(m["step"]), float(m["loss"])) for m in records if m.get("loss") is not None and "step" in m]


def _window(run: RunData, end: int, size: int = WINDOW) -> tuple[float | None, list[tuple[int, float]]]:
    """The mean training loss over the `size` steps ending at `end` (as shown: 2 decimals), and its records."""
    got = _loss(run.between(end - size + 1, end))
    return as_shown(mean_of([v for _, v in got])), got


def _span(got: Sequence[tuple[int, float]]) -> str:
    """ "the mean of steps 10628–10647" (20 records), saying how many records when some steps have none."""
    if not got:
        return "no steps"
    first, last = got[0][0], got[-1][0]
    missing = (last - first + 1) - len(got)
    return f"mean of {_steps(first, last)}" + (f", {len(got)} records" if missing else "")


def _val(run: RunData, lo: int, hi: int) -> dict | None:
    """The latest held-out eval with lo <= step <= hi, or None."""
    found = [e for e in run.evals if isinstance(e.get("val_loss"), (int, float)) and lo <= int(e.get("step", -1)) <= hi
             and math.isfinite(e["val_loss"])]  # fmt: skip
    return found[-1] if found else None


def _val_words(e: dict | None) -> str:
    return "" if e is None else f"held-out loss {e['val_loss']:.2f} at step {int(e['step'])}"


def _changed(changes: Sequence[dict]) -> str:
    """ "the mask changed" / "the mask and LR changed": the change that closed a step's evidence."""
    names = list(dict.fromkeys(setting_word(e.get("knob")) for e in changes if not e.get("coupled_to")))
    return f"{' and '.join(names) or 'a setting'} changed"


def _click(every: Sequence[dict], at: int) -> list[dict]:
    return [e for e in every if abs(_step(e) - at) <= GROUP_STEPS]


def _latest(run: RunData) -> int | None:
    steps = [int(m["step"]) for m in run.metrics if isinstance(m.get("step"), (int, float))]
    return steps[-1] if steps else None


def loss_from_uniform(ev: Evidence, min_steps: int = 60, min_fall: float = 1.0,
                      patience: int = UNIFORM_PATIENCE) -> Check:  # fmt: skip
    """The first training loss sits at ln(V), uniform guessing over the vocabulary, and training takes it well
    below: judged on the run before its first knob change (the steps after it belong to the steps that made it)."""
    run = ev.runs.get(LECTURE)
    if run is None:
        return no_run(LECTURE)
    losses = _loss(run.metrics[:1])
    latest = _latest(run)
    if not losses or latest is None:
        return Check(None, f"Not enough data yet: 0 of {min_steps} steps trained.")
    start_step, first = losses[0][0], as_shown(losses[0][1])
    every = knob_changes(run.events)
    closed = [e for e in every if _step(e) >= start_step]
    end = min(latest, _step(closed[0])) if closed else latest
    before = f", before {_changed(_click(every, _step(closed[0])))} at step {_step(closed[0])}" if closed else ""
    trained = end - start_step + 1
    if trained < min_steps:
        if closed:  # the evidence of this step is closed: nothing more will come
            return Check(None, f"Not enough data: {trained} steps trained{before}; the check needs {min_steps}.",
                         settled=True)  # fmt: skip
        return Check(None, f"Not enough data yet: {trained} of {min_steps} steps trained.")
    # Judged and said on the numbers as shown (2 decimals): "4.20 ... 2.25: it fell by 1.96" read as arithmetic
    # that does not add up (4.196 - 2.245 = 1.951 shows as 1.95 between them).
    now, got = _window(run, end)
    if now is None:
        return Check(None, f"Not enough data yet: no training loss recorded in steps {end - WINDOW + 1}–{end}.")
    uniform = as_shown(math.log(run.vocab_size)) if run.vocab_size else None
    start = f"the first training loss was {first:.2f}" + (f" (ln {run.vocab_size} = {uniform:.2f}: uniform "
                                                           "guessing)" if uniform else "")  # fmt: skip
    held_out = _val(run, start_step, end)
    val = _val_words(held_out)
    # The held-out words come after the fall: placed after them, "it fell by 2.37" (the training loss's fall) read
    # as the held-out loss's (a review)
    text = f"{start.capitalize()}; by step {end}{before}, it is {now:.2f} (the {_span(got)})"
    held = f"; {val}" if val else ""
    fall = round(first - now, 2)  # 4.20 - 3.20 in floats is not quite 1.00
    near = uniform is None or round(abs(first - uniform), 2) < 0.5
    fell = fall >= min_fall
    went = (f"The training loss went from {first:.2f}" + (f" (ln V = {uniform:.2f})" if uniform else "")
            + f" to {now:.2f} by step {end} (the {_span(got)})"
            + (", before the first knob change" if closed else ""))  # fmt: skip
    if near and fell:
        return _uniform_held_out(run, held_out, uniform, min_fall, closed=bool(closed) or run.state in ENDED,
                                 text=f"{text}: it fell by {fall:.2f}", headline=f"{went}: down {fall:.2f}")
    why = [] if near else [f"the start is {abs(first - uniform):.2f} away from ln V"]
    why += [] if fell else [f"it fell by {fall:.2f}, less than {min_fall}"]
    if near and not closed and run.state not in ENDED and trained < patience:  # the fall may still come
        return Check(None, f"Not enough data yet: {text}; it fell by {fall:.2f} so far, and may take up to "
                           f"{patience} steps to fall by {min_fall}{held}.",
                     headline=f"Waiting: {went[0].lower()}{went[1:]}, down {fall:.2f} so far")  # fmt: skip
    return Check(False, f"{text}; but {' and '.join(why)}{held}.", headline=f"{went}; {' and '.join(why)}")


def _next_eval(run: RunData, after: int) -> str:
    """ " (the next eval: step 1200)": the first multiple of the run's eval_interval after `after`, where known."""
    every = run.eval_interval
    return f" (the next eval: step {(after // every + 1) * every})" if every else ""


def _uniform_held_out(run: RunData, held_out: dict | None, uniform: float | None, min_fall: float, closed: bool,
                      text: str, headline: str) -> Check:  # fmt: skip
    """Step 1 once the training loss has fallen from ln V: the latest held-out loss of the stretch must be `min_fall`
    below ln V too (as shown, 2 decimals), or the check waits for the next eval, or says why it cannot."""
    if held_out is not None:
        val = as_shown(held_out["val_loss"])
        words = f"held-out loss {val:.2f} at step {int(held_out['step'])}"
        below = None if uniform is None else round(uniform - val, 2)
        if below is not None and below >= min_fall:
            return Check(True, f"{text}; the {words}, {below:.2f} below ln V: on text the model never trained on "
                               "too.", headline=f"{headline}; held-out {val:.2f} at step {int(held_out['step'])}")
        if closed:
            return Check(False, f"{text}; but the {words} is {below:.2f} below ln V, less than {min_fall}: not on "
                                "text the model never trained on.",
                         headline=f"{headline}; but held-out {val:.2f}, not {min_fall} below ln V")  # fmt: skip
    elif closed:
        return Check(None, f"Not enough data: {text}, but no held-out eval came in these steps; the check needs one "
                           "to say the fall is not memorised.", settled=True,
                     headline=f"Not enough data: {headline[0].lower()}{headline[1:]}; no held-out eval in its steps")
    latest = _latest(run) or 0
    so_far = "" if held_out is None else f"; held-out {as_shown(held_out['val_loss']):.2f} so far"
    return Check(None, f"Not enough data yet: {text}{so_far}; the held-out loss must be {min_fall} below ln V too"
                       f"{_next_eval(run, latest)}.",
                 headline=f"Waiting for the held-out loss: {headline[0].lower()}{headline[1:]}{so_far}", closes=True)


def _moved(change: float, rise: bool, min_change: float) -> bool:
    return change >= min_change if rise else -change >= min_change


def _knob_held_out(run: RunData, first: int, start: int, last: int, open_: bool, rise: bool, min_change: float,
                   text: str, point: str, leak: bool = False) -> Check:  # fmt: skip
    """A knob's effect the training loss showed, on the held-out loss: the last eval before the change (`first`)
    against each eval from `start` (the window that decided) to `last` (the patience's end, or the step before the
    next change). The first that moved `min_change` the same way says "seen"; none by `last`, "not seen". `leak`: the
    change was to a mask that shows each position its answer (config.LEAKING_MASKS), which the evals read under too:
    their fall is copying, said so (a review read step 4's "the held-out loss, on text the model never trained on,
    fell by 1.83 too" in the words step 1 uses for learning)."""
    wanted = "rise" if rise else "fall"
    before = _val(run, 0, first)
    if before is None:
        return Check(None, f"Not enough data: {text}; but the run had no held-out eval before the change to "
                           "compare with.", settled=True,
                     headline=f"Not enough data: {point[0].lower()}{point[1:]}; no held-out eval before it")
    b = as_shown(before["val_loss"])
    evals = [e for e in run.evals if isinstance(e.get("val_loss"), (int, float)) and math.isfinite(e["val_loss"])
             and start <= int(e.get("step", -1)) <= last]  # fmt: skip
    went = [e for e in evals if _moved(round(as_shown(e["val_loss"]) - b, 2), rise, min_change)]
    if went:
        a = as_shown(went[0]["val_loss"])
        said = f"{text}; {_val_words(before)}, {_val_words(went[0])}: the held-out loss, on text the model never " \
               f"trained on, {'rose' if rise else 'fell'} by {abs(a - b):.2f} too"
        if leak:  # the evals read under the leaking mask too: that fall is the leak's, not learning
            said += (f". No model predicts unseen text at {a:.2f} nats a character: the evals run under the same "
                     "mask, so the held-out text shows each position its answer too, and this fall is copying, not "
                     "learning")
        return Check(True, f"{said}.", headline=f"{point}; held-out {b:.2f} → {a:.2f}"
                     + (" (copying: the evals leak too)" if leak else ""))  # fmt: skip
    after = evals[-1] if evals else None
    if open_:
        so_far = f"; held-out {b:.2f} → {as_shown(after['val_loss']):.2f} so far" if after else ""
        return Check(None, f"Not enough data yet: {text}; {_val_words(before)}" + (f", {_val_words(after)}" if after
                           else "") + f"; the held-out loss must {wanted} by {min_change} too"
                           f"{_next_eval(run, max(_latest(run) or 0, start - 1))}.",
                     headline=f"Waiting for the held-out loss: {point[0].lower()}{point[1:]}{so_far}", closes=True)
    if after is None:
        return Check(None, f"Not enough data: {text}; but no held-out eval came between step {start} and step "
                           f"{last}, and the check needs one.", settled=True,
                     headline=f"Not enough data: {point[0].lower()}{point[1:]}; no held-out eval came after it")
    a = as_shown(after["val_loss"])
    return Check(False, f"{text}; but {_val_words(before)}, {_val_words(after)}: the held-out loss did not {wanted} "
                        f"by {min_change}, on text the model never trained on.",
                 headline=f"{point}; but held-out {b:.2f} → {a:.2f}, not the {min_change}-nat {wanted}")  # fmt: skip


def knob_effect(
    knob: str, value: Any, rise: bool, min_change: float = MIN_KNOB_CHANGE, patience: int = PATIENCE
) -> Callable[[Evidence], Check]:
    """The training loss on each side of the lecture run's latest change of `knob` to `value`: the mean over the
    WINDOW steps up to the change, against the mean over each WINDOW steps after it, in turn, until the next change
    of any knob or `patience` steps. The first that has fallen (rise=False) or risen (rise=True) by `min_change`
    nats decides "seen"; none by the patience's end, "not seen" (a mask switched off first disturbs the model: its
    loss rises for a few steps before it plunges)."""

    def check(ev: Evidence) -> Check:
        run = ev.runs.get(LECTURE)
        if run is None:
            return no_run(LECTURE)
        changes = [e for e in knob_changes(run.events) if e.get("knob") == knob and _same(e.get("new"), value)]
        if not changes:
            return Check(None, f"Not enough data yet: {setting_word(knob)} has not been set to {knob_value(value)} "
                               "on the lecture run.")  # fmt: skip
        at = _step(changes[-1])
        # Knobs the same click moved land within a few steps of each other: one change, named together; the loss
        # before it is read before the first of them, after it until the next change of any knob.
        every = knob_changes(run.events)
        together = _click(every, at)
        first = min(_step(e) for e in together)
        later = sorted(_step(e) for e in every if _step(e) > at + GROUP_STEPS)
        until = later[0] if later else None
        named = ", ".join(f"{setting_word(e.get('knob'))} {knob_value(e.get('old'))} → {knob_value(e.get('new'))}"
                          for e in together if not e.get("coupled_to"))  # fmt: skip
        old, got_before = _window(run, first)
        if old is None or len(got_before) < 5:
            return Check(None, f"Not enough data: the training loss before {named} at step {at} has "
                               f"{len(got_before)} records, fewer than 5.", settled=True)  # fmt: skip
        latest = _latest(run) or at
        horizon = at + patience if until is None else min(at + patience, until)  # the last step that may decide
        reached = min(latest, horizon)
        after = _loss(run.between(at + 1, reached))
        decided = None
        for end in range(at + WINDOW, reached + 1):  # each window of WINDOW steps after the change, in turn
            got = [(s, v) for s, v in after if end - WINDOW < s <= end]
            mean = as_shown(mean_of([v for _, v in got]))
            if mean is None or len(got) < WINDOW // 2:
                continue
            change = round(mean - old, 2)  # 2.40 - 2.10 is 0.2999...: below a 0.3 bar it shows as meeting
            decided = (end, mean, got, change)
            if _moved(change, rise, min_change):
                break
        since = reached - at
        if decided is None:
            if until is not None and latest >= until:
                return Check(None, f"Not enough data: the next setting change came at step {until}, {until - at} "
                                   f"steps after {named} at step {at}; the check needs {WINDOW}.",
                             settled=True)  # fmt: skip
            return Check(None, f"Not enough data yet: {since} of {WINDOW} steps since {named} at step {at}.")
        end, new, got, change = decided
        verb = "rose" if change > 0 else "fell"
        # the steps and means: Numbers; "by step N": the window that decided, not the loss now (a review read 0.88
        # beside a curve at 0.17)
        moved = f"The training loss {verb} from {old:.2f} to {new:.2f}"
        point = f"{moved} by step {end:,} after {named}"
        text = f"{moved} after {named} at step {at} (the {_span(got_before)}, then the {_span(got)})"
        if _moved(change, rise, min_change):  # the room saw it on the training loss: the held-out loss must too
            last = horizon if until is None else min(horizon, until - 1)
            open_ = latest < last and run.state not in ENDED
            return _knob_held_out(run, first, end - WINDOW + 1, last, open_, rise, min_change, text, point,
                                  knob == "mask" and value in LEAKING_MASKS)  # fmt: skip
        pair = _val_pair(run, first, end - WINDOW + 1, until)
        text += f"; {_val_words(pair[0])}, {_val_words(pair[1])}" if pair else ""
        # the projector's line names the held-out loss on each side too, where both exist (a review: it did not)
        point += f"; held-out {pair[0]['val_loss']:.2f} → {pair[1]['val_loss']:.2f}" if pair else ""
        wanted = "rise" if rise else "fall"
        if reached < horizon:  # the model needs some steps to exploit (or be hurt by) the change
            return Check(None, f"Not enough data yet: {text}; {since} steps since; waiting up to {patience} steps "
                               f"for it to {wanted} by {min_change}.",
                         headline=f"Waiting: {point[0].lower()}{point[1:]} so far; needs a {min_change}-nat "
                                  f"{wanted}")  # fmt: skip
        if until is not None and until < at + patience:
            return Check(None, f"Not enough data: {text}; the next setting change came at step {until}, "
                               f"{until - at} of the {patience} steps the {wanted} may take.",
                         settled=True)  # fmt: skip
        return Check(False, f"{text}: it did not {wanted} by {min_change} nats, the least the room could see, "
                            f"in {patience} steps.",
                     headline=f"{point}: not the {min_change}-nat {wanted} the room could see")  # fmt: skip

    return check


def _val_pair(run: RunData, first: int, start: int, until: int | None) -> tuple[dict, dict] | None:
    """The held-out loss beside a knob change's training loss: the last eval before the change and the first from
    the start of the window that decided it on, before the next change (evals come every eval_interval steps). Not
    the first eval after the change: 3 steps after mask → none it read 2.37 against 2.02 before, "held-out rose",
    while the next eval read 0.52. Said only once that eval exists; then it stays."""
    before = _val(run, 0, first)
    found = [e for e in run.evals if isinstance(e.get("val_loss"), (int, float)) and math.isfinite(e["val_loss"])
             and int(e.get("step", -1)) >= start and (until is None or int(e.get("step", -1)) < until)]  # fmt: skip
    after = found[0] if found else None
    return None if before is None or after is None else (before, after)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-6)
    return a == b
