"""Predict, then run, on screen: a learner's choice in the lesson pane (a radio until the step's check appears, then
their answer beside what happened, graded), the spread on the instructor's pane, and the Room page's section: the
count per answer for the step in play, live, the share right after the check, the learners named only when the
instructor asks, and the CSV of every step. The logic is tinygpt/ui/teach/predictions.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st

from tinygpt.errors import TinyGPTError
from tinygpt.runs.owners import Actor
from tinygpt.ui import state
from tinygpt.ui.host import positions, resources
from tinygpt.ui.people import people_keys, room
from tinygpt.ui.screen import downloads, flashes, fonts
from tinygpt.ui.teach import lesson, lesson_reset, predictions, record, teach_keys
from tinygpt.ui.teach.predictions import RIGHT, WRONG, PredictionBook
from tinygpt.ui.teach.record import GRADE_WORDS, outcome_words  # one wording for the pane and the downloaded record
from tinygpt.ui.words import safe


def book() -> PredictionBook:
    return PredictionBook(resources.get_store().root)


def _key(step: lesson.Step) -> str:
    return f"{teach_keys.W_PREDICT}:{step.key}"


def _late_key(step: lesson.Step) -> str:
    """The answer this session chose after the step's check had appeared (refused), said in the pane."""
    return f"{_key(step)}:late"


def _chosen(step: lesson.Step, actor: Actor) -> None:
    """The radio's on_change. The book refuses a change once the check has appeared (AnswerClosed): the pane's
    next draw shows the answer it kept, graded, instead of the radio."""
    choice = state.get(_key(step))
    if choice is None:
        return
    try:
        book().answer(step.key, actor.id, actor.name, choice, step.answers)
        state.pop(_late_key(step))  # counted: no earlier late click to speak of (a cleared room, the step again)
    except TinyGPTError:
        state.pop(_key(step))  # the kept answer, not the refused one, is what this learner sees
        state.put(_late_key(step), choice)  # ... and the pane says it came too late (a review: dropped unsaid)


def learner_part(
    step: lesson.Step, actor: Actor, check: lesson.Check, choices: bool = True, pending: bool = False
) -> bool:
    """Called by the lesson pane with the check it just computed: the choice while open, the grade after.
    Returns whether the pane must draw it again once the check is computed: it drew the open choice (`choices`
    False: never; a script run that drew the radio once redraws its slot with the grade only), or, `pending` (no
    decided check on screen yet), the answer without its grade, which comes with the check that gives it."""
    if step.answers is None:
        return False
    pages = book()
    pages.settle(step.key, predictions.outcome_of(check), actor.id, check)  # the check appeared to this learner
    records, room_outcome = pages.step(step.key)
    # Not `record`: that name is the module whose words the caption below uses (a learner without a prediction
    # got an AttributeError and a blank page where the check appeared).
    entry = records.get(actor.id) or {}
    mine = entry.get("answer")
    outcome = predictions.learner_outcome(entry, room_outcome)
    if outcome is None and pages.closed(step.key, actor.id):  # the effect showed; its confirmation is seconds away
        st.info(f"Your prediction: **{safe.md(mine)}** · answers closed when the check appeared; the grade comes "
                "once it decides" if mine else "You chose no answer before the check appeared; answers are closed.",
                icon=":material/hourglass_top:")  # fmt: skip
        return True
    if outcome is None:
        if not choices:  # the radio was drawn in this script run: its slot says the grade is on its way, not nothing
            if mine:  # (a review's learner, right at step 1, read "Check: seen" with no grade and no "Watch for")
                st.info(f"Your prediction: **{safe.md(mine)}** · its grade comes with the check, being read now",
                        icon=":material/hourglass_top:")  # fmt: skip
            return bool(mine)
        if state.get(_key(step)) != mine:  # the book is the truth: a refresh, another tab, a cleared room
            if mine is None:
                state.pop(_key(step))
            else:
                state.put(_key(step), mine)
        # No choice made until the learner makes one; a value in session state needs the default index (else
        # Streamlit warns that the widget has a default and a session-state value).
        st.radio("**Your prediction**", step.answers.options, index=0 if state.has(_key(step)) else None,
                 key=_key(step), on_change=_chosen, args=(step, actor))  # fmt: skip
        st.caption(("You may change it until the check appears." if mine else
                    "Choose before the check appears: after it, answers are final.")
                   + " What to watch for comes with the check.")  # fmt: skip
        return True
    # "Watch for" says what happens, the answer: a review's learners read it above the choices at every step
    watch = f"**Watch for:** {step.watch}"
    if mine is None and pending:
        st.caption("You chose no answer; the check is being read now.")
        return True
    if mine is None:
        if late := state.get(_late_key(step)):
            st.caption(f"Your answer **{safe.md(late)}** reached the server after the answers had closed, so it "
                       "was not counted.")  # fmt: skip
        st.caption(record.no_prediction(outcome))
        st.markdown(watch)
        return False
    # The grade beside a check that says otherwise: the room's outcome came in while this pane computed its own,
    # undecided, check (a review's learner read "· wrong" above "Check: not enough data yet" and the choices for
    # ~10 s at step 8); the next refresh shows the check it was graded on (graded_check)
    pending = pending or (check is not None and not isinstance(check, GradedCheck)
                          and predictions.outcome_of(check) != outcome)  # fmt: skip
    if pending:  # the grade beside a check still saying "Predict first" read as a contradiction (a review)
        st.info(f"Your prediction: **{safe.md(mine)}** · its grade comes with the check, being read now",
                icon=":material/hourglass_top:")  # fmt: skip
        return True
    got = predictions.grade(step.answers, mine, outcome)
    found = safe.md(outcome_words(outcome, step.answers))  # 'the check found "between 3 and 5"'
    text = f"Your prediction: **{safe.md(mine)}** · {found} · **{GRADE_WORDS[got]}**"
    if got == RIGHT:
        st.success(text, icon=":material/thumb_up:")
    elif got == WRONG:
        st.error(text, icon=":material/thumb_down:")
    else:
        st.info(text, icon=":material/help:")
    late = state.get(_late_key(step))
    if late and late != mine:  # a change refused as too late: said beside the answer that counts (a review)
        st.caption(f"Your change to **{safe.md(late)}** reached the server after the answers had closed, so your "
                   f"earlier answer **{safe.md(mine)}** is the one counted.")  # fmt: skip
    st.markdown(watch)
    return False


def record_button(actor: Actor) -> None:
    """A learner's "Download my lesson": one HTML file of every step, their prediction, what happened, their runs
    (tinygpt/ui/teach/record.py), made when they ask (tinygpt/ui/screen/downloads.py)."""
    if actor.instructor:
        return
    store = resources.get_store()
    downloads.made_download("lesson_record", "my lesson (HTML)", lambda: record.learner_record(
        store, lesson.STEPS, actor.id, actor.name), file_name="tinygpt-my-lesson.html", mime="text/html",
        help="One HTML file that opens offline: every step, your prediction, what happened, your runs.")  # fmt: skip


def instructor_part(step: lesson.Step, check: lesson.Check) -> None:
    """The instructor's pane: their check is the room's (it closes the step for everyone), and the spread, with
    no names (the pane is on the projector)."""
    if step.answers is None:
        return
    pages = book()
    pages.settle(step.key, predictions.outcome_of(check), None, check)
    st.caption(f"**The room's predictions:** {safe.md(room_line(pages, step))}")


def room_line(pages: predictions.PredictionBook, step: lesson.Step) -> str:
    """The spread as the projector says it. Grades only once the room's check is shown: a learner who set the step
    up in their own pane is graded there, and the projector read "1 right (100% of those graded)" under "This
    step's check has its result: it appears once you press Set up this step". And only once the room's check has
    settled (its outcome), which grades every answer: right after Set up the projector read "1 right of 1 (100%)",
    the learner graded in their own pane, and "1 right of 2 (50%)" a refresh later."""
    records, outcome = pages.step(step.key)
    spread = predictions.tally(step.answers, records, outcome)
    return predictions.spread_line(spread, graded=pages.revealed(step.key, None) and outcome is not None, zeros=False)


def overwrite_stale(slots: int = 6) -> None:
    """Empty elements after a prediction part: Streamlit drops a container's old elements past the new ones only
    when the script run ends, after the check's computation (20 s at step 8 under load), so a grade stood above
    the old "You may change it until the check appears" and choices (a review; measured in a browser: padded, they
    are gone at once). `slots`: more than the elements one part draws."""
    for _ in range(slots):
        st.empty()


def revealed(step: lesson.Step, actor: Actor) -> bool:
    """Whether `actor`'s pane shows the step's check: set up by the instructor for the room, or by this learner."""
    return book().revealed(step.key, None if actor.instructor else actor.id)


def held_check(step: lesson.Step, actor: Actor, runs: dict) -> lesson.Check | None:
    """The step's check as not shown yet, computed for these runs under HELD_RECHECK_S ago (`keep_held`), while it
    is still not shown to `actor`; else None (compute it). Its words need only its outcome ("has its result")."""
    held = state.get(teach_keys.LESSON_HELD_CHECK)
    if not held or held[:2] != (step.key, runs) or time.monotonic() - held[2] >= teach_keys.HELD_RECHECK_S:
        return None
    return None if revealed(step, actor) else held[3]


def keep_held(step: lesson.Step, runs: dict, check: lesson.Check) -> None:
    """Keep a check not shown yet for `held_check`."""
    if isinstance(check, HeldCheck):
        state.put(teach_keys.LESSON_HELD_CHECK, (step.key, runs, time.monotonic(), check))


@dataclass(frozen=True)
class HeldCheck(lesson.Check):
    """A check not shown yet: its status says why (a plain Check(None) would say "not enough data"). `ready`: it
    has its result, so showing it closes every answer at once."""

    ready: bool = False

    @property
    def status(self) -> str:
        return "shown once this step is set up"


def shown_check(step: lesson.Step, actor: Actor, check: lesson.Check) -> lesson.Check:
    """The check as this viewer's pane shows it: nothing of it, decided or not, numbers included, until the step
    has been set up (by the instructor for the room, or by this learner for themselves). The long steps' runs are
    prepared before class: their checks are decided when the class arrives, and would close every answer before
    anyone predicted; an undecided one showed its partial count ("7 of 8 pitfalls reproduced so far") before
    anyone had predicted "how many crash?"."""
    if step.answers is None or revealed(step, actor):
        return check
    who = "you press" if actor.instructor else "the instructor (or you) presses"
    decided = predictions.outcome_of(check) is not None
    ready = ("has its result" if decided else "has its runs' results (Set up measures the rest)"
             if check.set_up_decides else "is computed from its runs")  # fmt: skip
    # Plain text: the banner draws a check's line as it is (safe.md), so "**" showed on the projector.
    return HeldCheck(None, f"This step's check {ready}: it appears once {who} Set up this step. "
                           "Predict first.", ready=decided or check.set_up_decides)  # fmt: skip


def _answered(records: dict, step: lesson.Step) -> set[str]:
    """The learner ids whose record holds one of the step's answers (a closed pane's empty record is none)."""
    return {lid for lid, record in records.items() if record.get("answer") in step.answers.options}


def closes_answers(step: lesson.Step, actor: Actor) -> str | None:
    """Why the instructor's Set up should be confirmed, or None: the step's check is decided (its runs were
    prepared) and not shown to the room yet, so Set up shows it to everyone and closes every answer at once, while
    learners in the lesson (their panes heard from lately) have not answered. A review's instructor pressed it
    before anyone had predicted: both learners read "No prediction ... this step is not graded"."""
    if not actor.instructor or step.answers is None or book().revealed(step.key, None):
        return None
    held = state.get(teach_keys.LESSON_HELD_CHECK)  # the check as the pane last computed it (keep_held)
    if not held or held[0] != step.key or not getattr(held[3], "ready", False):
        return None
    # the instructor's own id left out: their pane reported as a learner's until they gave the key
    here = set(positions.in_lesson(resources.positions())) - {actor.id}
    records, _ = book().step(step.key)
    answered = _answered(records, step)
    if not here - answered:
        return None
    done, total = len(here & answered), len(here)
    learners = f"{total} learner{'' if total == 1 else 's'}"  # "0 of the 1 learners" read in a browser check
    return (f"{done} of {learners} in the lesson {'has' if 1 in (done, total) else 'have'} predicted. This step's "
            "check is ready: Set up shows it to everyone now and closes every answer.")


def confirm_setup(why: str, then, *args) -> None:
    """A dialog: `why`, then Set up now (`then(*args)`) or Wait."""

    def ask() -> None:
        st.markdown(why)
        now, wait = st.columns(2)
        if now.button("Set up now", type="primary", key="lesson_setup_now", width="stretch"):
            then(*args)
            st.rerun()
        if wait.button("Wait for them", key="lesson_setup_wait", width="stretch"):
            st.rerun()

    st.dialog("Set up this step?")(ask)()


class GradedCheck(lesson.Check):
    """The check the viewer's answer was graded on, kept when it closed: shown where the runs now read otherwise."""

    @property
    def status(self) -> str:
        return f"{super().status}, as graded"


def graded_check(step: lesson.Step, actor: Actor, check: lesson.Check) -> lesson.Check:
    """The check this viewer's pane shows beside their grade: the one the grade was given on. The answers close on
    the check as it first appears, with its outcome and words kept (PredictionBook.settle); where the check computed
    now has another outcome (its runs changed since), the kept one is shown, saying so, with what the runs read now.
    The pane had shown "the check saw it · right" above "Check: not seen": the grade kept, the check recomputed."""
    if step.answers is None or isinstance(check, HeldCheck):
        return check
    pages = book()
    learner = None if actor.instructor else actor.id
    pages.settle(step.key, predictions.outcome_of(check), learner, check)  # closes here, on this very check
    outcome, kept = pages.graded(step.key, learner)
    if outcome is None or outcome == predictions.outcome_of(check):
        return check
    # "reads not enough data yet: Not enough data yet: …" (a review): a check's words may begin with its status
    said = check.short if check.short.lower().startswith(check.status.lower()) else f"{check.status}: {check.short}"
    now = f" Computed now, the check reads {said[0].lower()}{said[1:]}"
    passed = {predictions.SEEN: True, predictions.NOT_SEEN: False}.get(outcome)
    if not kept:  # closed before checks were kept with their outcome: the outcome alone is known
        return GradedCheck(passed, f"The answers were graded on a check whose outcome was {outcome}; its words "
                           f"were not kept.{now}", settled=outcome == predictions.UNDECIDED)  # fmt: skip
    line = str(kept.get("headline") or kept.get("text") or "")
    return GradedCheck(passed, f"{kept.get('text', '')} (The answers were graded on this.{now})",
                       settled=bool(kept.get("settled")), headline=f"{line} (as graded)")  # fmt: skip


def set_up(step: lesson.Step, actor: Actor) -> None:
    """The step's setup was clicked: its check may appear (to the room, when the instructor clicked)."""
    book().reveal(step.key, None if actor.instructor else actor.id)


def pane_part(
    step: lesson.Step, actor: Actor, check: lesson.Check, choices: bool = True, pending: bool = False
) -> bool:
    """The viewer's part of the step's prediction; returns whether the pane draws it again with the check it
    computes (learner_part)."""
    if actor.instructor:
        instructor_part(step, check)
        return False
    return learner_part(step, actor, check, choices, pending)


# ---------------------------------------------------------------- the Room page


def _spread() -> None:
    room_data = lesson.read_room(resources.get_store().root)
    if room_data["step"] is None:
        st.caption("No lesson yet: once you teach it, each step's predictions appear here as learners answer.")
        return
    step = lesson.STEPS[room_data["step"]]
    if step.answers is None:
        return
    records, outcome = book().step(step.key)
    spread = predictions.tally(step.answers, records, outcome)
    st.markdown(f"**Step {room_data['step'] + 1}: {safe.md(step.section)}** · {safe.md(step.predict)}")
    # In one line, as text (what a browser test reads too); the share once the room's check grades every answer
    st.markdown(safe.md(predictions.spread_line(spread, graded=outcome is not None)))
    answered = _answered(records, step)
    # the instructor's own id left out: their pane reported as a learner's until they gave the key (closes_answers)
    here = {lid: p for lid, p in positions.in_lesson(resources.positions()).items() if lid != room.current().id}
    if who := positions.not_answered(here, answered, named=bool(state.get(people_keys.W_SPREAD_NAMES))):
        st.caption(safe.md(who))
    counts = [{"answer": a, "learners": n} | ({"grade": predictions.grade(step.answers, a, outcome) or ""}
              if outcome else {}) for a, n in spread["counts"].items()]  # fmt: skip
    top = max([1, *spread["counts"].values()])
    left, right = st.columns([3, 1])
    fonts.grid_place(left).dataframe(counts, hide_index=True, width="stretch", column_config={
        "learners": st.column_config.ProgressColumn("learners", min_value=0, max_value=top, format="%d")})  # fmt: skip
    right.metric("Answered", spread["answered"])
    if spread["share_right"] is not None and outcome:  # not before the room's check: room_line
        right.metric("Right", f"{spread['share_right']:.0%}", help=f"{spread['right']} right of the {spread['of']} "
                     f"answers graded; {spread['not_sure']} not sure, counted, never graded.")  # fmt: skip
    else:
        right.caption(predictions.no_share_words(spread, outcome))
    if state.get(people_keys.W_SPREAD_NAMES) and spread["rows"]:
        st.table(spread["rows"])  # a page-wide table, readable from the back (a class is tens of learners)


def room_spread() -> None:
    """The Room page's predictions: the live spread (a fragment), the names on request, the CSV."""
    st.subheader("Predictions", anchor=False)
    st.toggle("Name the learners beside their answers", value=False, key=people_keys.W_SPREAD_NAMES,
              help="Off on every visit: the Room page is the one on the projector.")  # fmt: skip
    st.fragment(run_every=teach_keys.REFRESH_S)(_spread)()
    root = resources.get_store().root
    downloads.made_download("room_spread_csv", "the room's spread, every step (CSV)", lambda: predictions.spread_csv(
        lesson.STEPS, PredictionBook(root)), file_name="tinygpt-predictions.csv", mime="text/csv")  # fmt: skip
    with st.popover("Clear the answers", icon=":material/delete:"):
        st.caption("For a new class on this server: every step's answers, outcomes and setups are forgotten "
                   "(download the CSV first).")  # fmt: skip
        again = st.checkbox("Start the lesson again at step 1, with a fresh lecture run", value=True,
                            key=teach_keys.W_NEW_CLASS, help="The old lecture run is paused and stays on the Runs "
                            "page; the prepared runs stay, their checks waiting for each step's Set up.")  # fmt: skip
        if st.button("Clear every step's answers", type="primary"):
            book().clear()
            old = lesson_reset.afresh(room.current()) if again else None
            flashes.flash("success", "The room's answers are cleared: every step's question is open again." + (
                " The lesson is back at step 1: its Set up starts a fresh lecture run" + (
                    " (the old one stays on the Runs page)." if old else ".") if again else ""))  # fmt: skip
            st.rerun()
