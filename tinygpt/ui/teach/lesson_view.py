"""The lesson pane in the sidebar (tinygpt/ui/teach/lesson.py holds the steps and their checks; this draws them and
does a step's one-click setup; lesson_evidence.py gathers the numbers each check reads from the run folders).

Who sees what: the instructor's Back / Next move the whole room (tinygpt.ui.teach.lesson.write_room); every learner's
pane reads the room's position on its refresh and follows each move, and may look around in between. The
instructor's setup starts the room's runs (recorded in the room file, so learners' panes show the same check on
the same runs); a learner's setup opens the room's runs read-only, or starts their own where the room has none
(and always their own lecture run, whose knobs they may move).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import streamlit as st

from tinygpt.config import DataConfig
from tinygpt.errors import TinyGPTError
from tinygpt.lab import induction
from tinygpt.lab import prepare as prepare_lab
from tinygpt.lab.registry import EXPERIMENTS
from tinygpt.lab.verdict import ENDED
from tinygpt.presets import preset
from tinygpt.runs.files import ACTIVE_STATES, RESUMABLE_STATES
from tinygpt.runs.knobs import knobs_now
from tinygpt.runs.owners import Actor, may_control, read_owner
from tinygpt.ui import state
from tinygpt.ui.circuits import circuits_keys
from tinygpt.ui.experiments import experiments_keys
from tinygpt.ui.host import resources
from tinygpt.ui.people import admission, people_keys
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import flashes
from tinygpt.ui.teach import lesson, lesson_reset, long_runs, prediction_view, predictions, teach_keys
from tinygpt.ui.teach.lesson import HEADS, INDUCTION, LECTURE, STEPS, Step
from tinygpt.ui.teach.lesson_evidence import evidence, reader_of
from tinygpt.ui.train import knob_widgets, settings, train_keys
from tinygpt.ui.words import run_words, runinfo, safe

TWO, ONE = list(induction.INDUCTION_VARIANTS)  # the induction experiment's 2-layer run and its control

# A step's check is shown only under that step's title. The browser draws each element as it arrives: after Next,
# the new title came before the script reached the check's slot, and a CI run's learner saw step 9's check under
# step 10's title (the gap is milliseconds on a quiet machine, longer under load). The title sits in a container
# keyed by its step, and this rule hides any check whose step's title is not in the pane, whatever the order the
# elements arrive in. (Drawn by workshop.tutorial_pane on every script run, pane or banner.)
# A step's check and prediction part (its grade) hidden under another step's title: after Next, a loaded server showed
# step 2's grade and "Watch for" under step 3's title for seconds (a review), until the new step's drew.
ONLY_THIS_STEPS_CHECK_CSS = " ".join(
    f".st-key-lesson_pane:not(:has(.st-key-lesson_title_{i})) .st-key-lesson_{part}_{i} {{ display: none; }}"
    for i in range(len(STEPS)) for part in ("check", "prediction", "graded")
)  # fmt: skip


def title(index: int, text: str) -> None:
    """The pane's title line, in a container keyed by its step (ONLY_THIS_STEPS_CHECK_CSS reads the key)."""
    with st.container(key=f"lesson_title_{index}"):
        st.markdown(text)


def _root() -> str:
    return str(resources.get_store().root)


def room() -> dict:
    return lesson.read_room(_root())


# ---------------------------------------------------------------- which runs a session's check reads


def runs_for(actor: Actor, room_data: dict) -> dict[str, dict[str, str]]:
    """{role: {label: run_id}}: the room's runs, with this session's own runs in their place where it set some up
    (the instructor's own are the room's)."""
    own = state.get(teach_keys.LESSON_RUNS) or {}
    return {**room_data["runs"], **({} if actor.instructor else own)}


def _remember(actor: Actor, role: str, runs: dict[str, str]) -> None:
    if actor.instructor:
        lesson.write_room(_root(), runs={role: runs})
    else:
        state.put(teach_keys.LESSON_RUNS, {**(state.get(teach_keys.LESSON_RUNS) or {}), role: dict(runs)})


# ---------------------------------------------------------------- the one click


def _lecture(actor: Actor, runs: dict, manager) -> str:
    """The lecture run, training: resumed if paused, started (with the Train form showing its settings) if there
    is none or it ended. A learner watches the room's (read-only: its knobs are the instructor's) or, in a room
    without one, trains their own."""
    rid = (runs.get(LECTURE) or {}).get("run")
    store = resources.get_store()
    if rid and store.exists(rid):
        if not may_control(read_owner(store.path(rid)), actor):  # the owner alone: no RunReader for this
            return rid
        run_state = store.reader(rid).status().get("state")
        if run_state in ACTIVE_STATES and run_state != "paused":
            return rid
        if run_state in RESUMABLE_STATES:
            admission.resume(actor, rid)
            return rid
    wanted = lesson.lecture_settings()
    name = wanted.pop("preset")
    config = preset(name, **wanted, source="shakespeare")
    settings.ensure_corpus(config.data)
    rid = admission.start(actor, {"run": config})["run"]
    _remember(actor, LECTURE, {"run": rid})
    label = settings.preset_label(name)
    if label:  # the Train form shows the lecture run's settings (no "changed since this run started")
        _widget(train_keys.W_PRESET, label)
    values, source = settings.values_from_config(config.to_dict())
    for field_name, value in values.items():
        _widget(settings.FIELD_BY_NAME[field_name].key, value)
    _widget(train_keys.W_SOURCE, source or settings.SOURCE_SHAKESPEARE)
    return rid


def _widget(key: str, value: Any) -> None:
    """A widget value for the page the setup opens, set at the start of that page's run (`apply_pending`): set
    now, it would be overwritten by the values the browser sent with the click, which switch_page carries over."""
    state.put(teach_keys.LESSON_PENDING, {**(state.get(teach_keys.LESSON_PENDING) or {}), key: value})


def apply_pending() -> None:
    for key, value in (state.pop(teach_keys.LESSON_PENDING) or {}).items():
        state.put_widget(key, value)


def _promote(actor: Actor, started: dict[str, str], priority: str) -> dict[str, str]:
    """The class reached a step whose runs Prepare started: they are live now (ahead of the other prepared runs)."""
    if priority == "live" and actor.instructor:
        for rid in started.values():
            resources.get_manager().prioritize(rid, "live")
    return started


def _heads(actor: Actor, runs: dict, priority: str = "live") -> str:
    """The multiple-heads step's run (the Demo preset's model, 4 heads per layer, trained prepare_lab.HEADS_STEPS
    steps: what Prepare starts), the room's if it has one."""
    if (rid := (runs.get(HEADS) or {}).get("run")) and resources.get_store().exists(rid):
        return _promote(actor, {"run": rid}, priority)["run"]
    rid = admission.start(actor, prepare_lab.role_configs(HEADS), priority=priority)["run"]
    _remember(actor, HEADS, {"run": rid})
    return rid


def _experiment(actor: Actor, runs: dict, key: str, priority: str = "live") -> dict[str, str]:
    role = f"exp:{key}"
    if runs.get(role):
        return _promote(actor, runs[role], priority)
    settings.ensure_corpus(DataConfig(source="shakespeare"))
    started = admission.start(actor, EXPERIMENTS[key].configs(seed=1337, source="shakespeare"), priority=priority)
    _remember(actor, role, started)
    return started


def _induction(actor: Actor, runs: dict, priority: str = "live") -> dict[str, str]:
    if runs.get(INDUCTION):
        return _promote(actor, runs[INDUCTION], priority)
    configs = induction.induction_configs("synthetic:copyvar", 1337)
    started = admission.start(actor, configs, priority=priority)
    _remember(actor, INDUCTION, started)
    return started


def prepare(actor: Actor) -> int:
    """At step 1 (the instructor): start every long step's runs the room has not started; returns how many.
    They queue in the lesson's order, so the earliest steps' runs finish first, behind any live run (the lecture
    run takes a slot ahead of them: tinygpt.runs.slots); a step the class reaches makes its own runs live. The runs
    are tinygpt.lab.prepare's, which `python -m tinygpt.bench.prepare` times."""
    count = 0
    runs = room()["runs"]
    settings.ensure_corpus(DataConfig(source=prepare_lab.SOURCE))
    for role in lesson.PREPARE_ORDER:
        if runs.get(role):
            continue
        started = admission.start(actor, prepare_lab.role_configs(role), priority=prepare_lab.PRIORITY)
        _remember(actor, role, started)
        count += len(started)
    return count


def set_up(step: Step, actor: Actor) -> None:
    """The step's one click: its runs, its knobs and its page (then the page opens; errors are flashed)."""
    manager = resources.get_manager()
    runs = runs_for(actor, room())
    query: dict[str, str] = {}
    setup = step.setup
    if setup.train or setup.knobs:
        rid = _lecture(actor, runs, manager)
        in_view.set_run_id(rid)
        query[in_view.URL_RUN] = rid
        mine = may_control(read_owner(resources.get_store().path(rid)), actor)  # config.json alone, no RunReader
        rd = in_view.reader(resources.get_store(), rid) if mine and setup.knobs else None
        now = knobs_now(rd.config(), rd.events) if rd is not None else {}
        for name, value in setup.knobs.items() if mine else ():  # a learner watches the room's run
            _widget(settings.FIELD_BY_NAME[name].key, value)
            if now.get(name) != value:  # Set up again read "LR → 0.1: applied at step 11056" with LR 0.1 already
                knob_widgets.add_knob_note(name, value, manager.set_knob(rid, name, value, actor=actor), rid)
    if setup.rest and (rid := (runs.get(LECTURE) or {}).get("run")) and resources.is_active(rid):
        # its training slot goes to the long runs; the status says what paused it (nobody pressed Pause)
        manager.pause(rid, actor=actor, through=f"lesson step {STEPS.index(step) + 1}'s Set up")
    if setup.heads:
        rid = _heads(actor, runs)
        in_view.set_run_id(rid)
        query[in_view.URL_RUN] = rid
    if setup.pitfalls and actor.instructor:
        prepare(actor)
        runs = runs_for(actor, room())
    for key in setup.measure:
        results = EXPERIMENTS[key].measure(1337)
        experiments_keys.set_lab_measured(key, 1337, results)
        if actor.instructor:
            lesson.write_room(_root(), measured={key: results})
    if setup.experiment:
        started = _experiment(actor, runs, setup.experiment)
        _widget(experiments_keys.W_EXPERIMENT, setup.experiment)
        experiments_keys.set_lab_runs(setup.experiment, started)
        query |= {"experiment": setup.experiment, experiments_keys.URL_LAB: ",".join(started.values())}
    if setup.induction:
        started = _induction(actor, runs)
        circuits_keys.set_circuit_runs(started)
        in_view.set_run_id(started[TWO])
        query |= {in_view.URL_RUN: started[TWO], circuits_keys.URL_CIRC: ",".join(started.values())}
    if setup.induction:  # the newest step, whose checkpoint the checks read: not one this browser looked at before
        _widget(circuits_keys.W_CIRC_STEP, None)  # (the browser run's heatmap showed step ~1400 beside a check of 3000)
    if setup.tab:  # the view the check talks about (Model health, Head ablation, Logit lens), not the first tab
        _widget(
            circuits_keys.W_CIRC_TAB if step.page.endswith("circuits.py") else experiments_keys.W_EXP_TAB, setup.tab
        )
    kept = {k: v for k, v in (state.get(people_keys.WORKSHOP_PARAMS) or {}).items() if k != "experiment"}
    st.switch_page(step.page, query_params={**kept, **query})  # a workshop link's settings stay in the address


_LOCK = threading.Lock()  # the numbers a check reads: one computation at a time


# ---------------------------------------------------------------- drawing


def _progress(runs: dict[str, dict[str, str]], step: Step, viewer: Actor | None = None) -> tuple[list, dict]:
    """For a long step: where each run stands, with when it ends, in `viewer`'s words ("paused by you" only for who
    paused it); and its runs' {label: (status, metrics)}, the lecture's left out (runinfo.progress_words)."""
    lines, listed, states = [], set(), {}
    for role in lesson.roles_checked(step):
        for label, rid in (runs.get(role) or {}).items():
            rd = None if rid in listed else reader_of(rid)
            if rd is None:  # each run once, under its own label and with its own status
                continue
            listed.add(rid)
            resources.touch(rid)  # a run the lesson waits for keeps its lease
            status = rd.status()
            if role != LECTURE:  # the step's own runs ("exp:…", "induction", "heads"): the lecture has no end
                states[label] = (status, rd.metrics)
            if status.get("state") in ENDED:
                continue
            said = {**status, "reason": run_words.reason_for(status.get("reason") or "", rd.config(), viewer)}
            line = runinfo.status_line(said, rd.metrics)
            if status.get("state") == "queued" and (forecast := resources.queue_forecast(rid)) is not None:
                line += f" · {runinfo.queue_words(forecast)}"  # what starts first, from the slot rule itself
            # A learner's own copy of a role (their own Set up) is said as theirs: "lecture · run" over a learner's
            # private run read as the instructor's lecture run (a review)
            own = viewer is not None and not viewer.instructor and run_words.is_owner(rd.config(), viewer)
            lines.append(f"{role.removeprefix('exp:')}{' (your own run)' if own else ''} · {label}: {line}")
    return lines, states


def show_check(check: lesson.Check, text: str | None = None) -> None:
    """The check in its colour (seen, not seen, not enough data yet): its whole text, or `text` (the banner's one
    sentence, tinygpt/ui/teach/presenter.py)."""
    text = safe.md(check.text if text is None else text)
    if check.passed:
        st.success(text, icon=":material/check_circle:")
    elif check.passed is False:
        st.warning(f"Not seen: {text}", icon=":material/error:")
    else:
        st.info(text, icon=":material/hourglass_top:")


def check_lines(check: lesson.Check, lines: list[str]) -> None:
    """The sidebar pane's check: its status, its whole text, where its runs stand."""
    st.markdown(f"**Check:** {check.status}", help="Computed from the runs on every refresh of this pane.")
    show_check(check)
    for line in lines:
        st.caption(safe.md(line))


def _computed_check(step: Step, actor: Actor, data: dict) -> tuple[lesson.Check, list[str]]:
    """The step's check on its runs in the room, as `actor` sees it, and where each of its runs stands."""
    runs = runs_for(actor, data)
    try:
        check = prediction_view.held_check(step, actor, runs)  # not shown yet, computed a moment ago: not again
        if check is None:
            with _LOCK:
                check = prediction_view.shown_check(
                    step, actor, step.check(evidence(step, runs, data["measured"], actor, data["runs"]))
                )
                # The check beside the viewer's grade is the one it was graded on (a grade kept, a check recomputed
                # on runs changed since, had read "right" above "not seen")
                check = prediction_view.graded_check(step, actor, check)
            prediction_view.keep_held(step, runs, check)
        # Where each run stands, read now that the check is done and outside the lock the other sessions' checks
        # wait on: a review's pane held "step 155 / 200 · running" for ~20 s after that run had finished.
        lines, states = _progress(runs, step, actor)
        if check.passed is None and not check.settled and not isinstance(check, prediction_view.HeldCheck):
            check = dataclasses.replace(check, headline=f"{check.short} {runinfo.progress_words(states)}".strip())
        return check, lines
    except Exception as exc:  # noqa: BLE001 - a run folder mid-write must not put a traceback in the sidebar
        return lesson.Check(None, f"Not enough data yet: could not read the runs ({exc})."), []


def named_run(check: lesson.Check, step: Step, runs: dict[str, dict[str, str]], in_view_id: str | None) -> lesson.Check:
    """The check, naming the run it reads where that is not the run in view (the one the sidebar names and the run
    pages draw): with a learner's run brought to the projector, the banner's "went from 4.20 (ln V = 4.17) to 1.83"
    was the lecture run's, over a chart of the learner's run (ln V = 4.44). The experiment steps' verdicts name
    their runs already ("on the room's runs"); a check not shown yet has no numbers to name."""
    if isinstance(check, (prediction_view.HeldCheck, prediction_view.GradedCheck)) or in_view_id is None:
        return check  # a graded check's words are of the runs as graded (a reset's old lecture run, maybe in view)
    checked = {rid: role for role in lesson.roles_checked(step) if not role.startswith("exp:")
               for rid in (runs.get(role) or {}).values()}  # fmt: skip
    if not checked or in_view_id in checked:
        return check
    roles = list(checked.values())
    whose = " and ".join(f"the {r} run{'s' if roles.count(r) > 1 else ''}" for r in dict.fromkeys(roles))
    said = f"{whose[0].upper()}{whose[1:]} (not the run in view):"
    return dataclasses.replace(check, text=f"{said} {check.text}", headline=f"{said} {check.short}")


def check_view(index: int, actor: Actor, seen_room: int | None, draw=check_lines) -> None:
    """The step's check (a fragment, refreshed every REFRESH_S), the viewer's prediction part above it; `draw`
    draws the check (check_lines in the sidebar, the banner's one sentence on the projector).

    The prediction part is drawn first on every run, from the prediction book (the choices while open), then the
    check is computed (step 8 reads 21 runs, the circuit steps ablate heads: 15 s and more on a loaded server):
    drawn only after it, a loaded room's panes lost their choices for a minute at step 8 and a learner could not
    answer (two reviews). A grade waits for the check that gives it: drawn from the book beside a check not shown
    yet, a pane read "wrong" above "Predict first" for a second or two (a review). The check's own slot comes after
    the computation on a refresh, so the browser keeps the check as it was meanwhile, the same element (the
    banner's Numbers popover stays open: redrawn first, it closed every 3 s); on a step's first look it says at once
    which step it checks (until overwritten, the browser kept the previous step's check under this step's title)."""
    data = room()
    if data["step"] != seen_room and data["step"] is not None:
        st.rerun(scope="app")  # the instructor moved the room: the pane follows
    if lesson_reset.follow_reset(data, actor, resources.get_store()):
        st.rerun(scope="app")  # and a reset lecture run: to its branch
    step = STEPS[index]
    last = state.get(teach_keys.LESSON_LAST_CHECK)
    shown = last[1] if last is not None and last[0] == index else None  # this step's check on screen, if any
    predicted = st.empty()
    slot = st.empty() if shown is None else None
    if slot is not None:
        slot.info(f"Checking step {index + 1} ({safe.md(step.section)}): reading its runs ...",
                  icon=":material/hourglass_top:")  # fmt: skip
    pending = shown is None or predictions.outcome_of(shown) is None  # no decided check on screen to grade by
    with predicted.container(key=f"lesson_prediction_{index}"):
        redraw = prediction_view.pane_part(step, actor, None, pending=pending)  # one radio a script run: here
        prediction_view.overwrite_stale()
    check, lines = _computed_check(step, actor, data)  # closes an open answer once it is decided (graded_check)
    check = named_run(check, step, runs_for(actor, data), in_view.run_id())
    if actor.instructor or (redraw and (predictions.outcome_of(check) is not None or check.closes)):
        # The instructor's line settles the room's answers on this check; a learner's open choice (or answer waiting
        # for its grade) gets its grade now, beside the check that gives it (left for the next refresh, the choices
        # lingered beside it, a click on them refused)
        with predicted.container(key=f"lesson_graded_{index}"):
            prediction_view.pane_part(step, actor, check, choices=False)
            prediction_view.overwrite_stale()
    state.put(teach_keys.LESSON_LAST_CHECK, (index, check, lines))
    slot = slot or st.empty()
    with slot.container(key=f"lesson_check_{index}"):  # the step it checks, in the page (the browser tests read it)
        draw(check, lines)


def position(shop, actor: Actor) -> tuple[int, int | None, dict] | None:
    """Where this session's lesson is: (its step, the room's step it last followed, the room), or None where no
    lesson is shown (the instructor's sidebar then offers to teach it)."""
    apply_pending()  # before the page draws its widgets
    data = room()
    shown = not (shop.tutorial is None and data["step"] is None and state.get(teach_keys.LESSON_STEP) is None)
    state.put(teach_keys.LESSON_SHOWN, shown)
    if not shown:
        if actor.instructor and st.sidebar.button("Teach the lesson", icon=":material/school:", width="stretch"):
            lesson.write_room(_root(), step=0)
            st.rerun()
        return None
    local = state.get(teach_keys.LESSON_STEP)
    if local is None and shop.tutorial is not None:
        local = shop.tutorial
    index, seen = lesson.follow(local, state.get(teach_keys.LESSON_SEEN), data["step"])
    if index != state.get(teach_keys.LESSON_STEP):  # the Room hears it now, not at the next keep-alive (30 s)
        resources.report_position(actor, index, in_view.run_id())
    state.put(teach_keys.LESSON_STEP, index)
    state.put(teach_keys.LESSON_SEEN, seen)
    return index, seen, data


def where_line(index: int, data: dict) -> str:
    step = STEPS[index]
    where = f"On the **{lesson.page_name(step)}** page"
    if data["step"] is not None and data["step"] != index:
        where += f" · the room is at step {data['step'] + 1}"
    return where


def setup_button(step: Step, actor: Actor, icon: bool = True) -> None:
    # A learner's page shows nothing of the room's runs until they open them (the review's learner read "No run
    # yet" under a pane that said what to watch): the button says what it opens, for them.
    opens = None if actor.instructor else f"Opens this step's runs on the {lesson.page_name(step)} page, here."
    if st.button("Set up this step", type="primary", icon=":material/play_circle:" if icon else None,
                 key="lesson_setup", width="stretch", help=opens):  # fmt: skip
        if why := prediction_view.closes_answers(step, actor):  # a decided check, learners still predicting
            prediction_view.confirm_setup(why, set_up_now, step, actor)
        else:
            set_up_now(step, actor)


def set_up_now(step: Step, actor: Actor) -> None:
    try:  # a review's instructor read "press Set up this step" for 15-30 s after pressing it, nothing else said
        # Short: in the projector banner's narrow column a longer one grew it to 600 of 720 px, and even
        # "Setting up step 7…" wrapped there (two reviews)
        with st.spinner("Setting up…"):
            prediction_view.set_up(step, actor)  # before: set_up ends by switching page
            set_up(step, actor)
    except TinyGPTError as exc:
        st.error(safe.md(exc))


PREPARE_HELP = long_runs.PREPARE_HELP


def prepare_button(actor: Actor, icon: bool = True, short: bool = False) -> None:
    """Offered while a long step's runs are not started yet (a reviewer saw it offered at step 12, all done); once
    they are, a line says so where the button was (a review's instructor, after Clear the answers, looked for the
    button TEACHING.md names at step 1). `short`: the projector banner's narrow column."""
    runs = room()["runs"]
    if all(runs.get(role) for role in lesson.PREPARE_ORDER):
        # "started", not "prepared": right after the click none had trained yet (round 2); then their states now
        long_runs.draw_started((run for role in lesson.PREPARE_ORDER for run in runs[role].values()),
                               "{}" if short else "{} (a new class keeps them): each long step's check appears at its "
                               "Set up.")  # fmt: skip
        return
    if st.button("Prepare the long runs", icon=":material/schedule:" if icon else None, key="lesson_prepare",
                 width="stretch",
                 help=PREPARE_HELP):  # fmt: skip
        started = prepare(actor)
        flashes.flash("success", f"Queued {started} runs for the long steps: they train in the slots the live "
                    "runs leave, one slot at least." if started else
                    "The long steps' runs were already started.")  # fmt: skip
        st.rerun()


def move_to(moved: int, actor: Actor) -> None:
    """Back or Next: this session's lesson moves (the instructor's moves the room)."""
    state.put(teach_keys.LESSON_STEP, moved)
    if actor.instructor:
        lesson.write_room(_root(), step=moved)
        state.put(teach_keys.LESSON_SEEN, moved)
    st.rerun()


def pane(shop, actor: Actor) -> None:
    """The lesson in the sidebar: the step, its one-click setup, what to predict and watch, and its check."""
    at = position(shop, actor)
    if at is None:
        return
    index, seen, data = at
    step = STEPS[index]
    with st.sidebar.container(border=True, key="lesson_pane"):
        title(index, f"**Lesson {index + 1}/{len(STEPS)} · {step.section}**")
        st.caption(where_line(index, data))
        st.markdown(f"**Predict:** {step.predict}")
        if actor.instructor or step.answers is None:  # a learner's comes with their grade: it says the answer
            st.markdown(f"**Watch for:** {step.watch}")
        if actor.instructor:
            setup_button(step, actor)
        st.fragment(run_every=teach_keys.REFRESH_S)(check_view)(index, actor, seen)
        if not actor.instructor:  # under the prediction: pressed first, it showed a decided check and closed the
            setup_button(step, actor)  # answer before one was chosen (a review: 6 of 12 steps went ungraded)
        lesson_reset.pane_part(step, actor)  # the instructor's "Reset the lecture run" after a step that broke it
        back, forward = st.columns(2)
        moved = None
        if back.button("Back", disabled=index == 0, key="lesson_back", width="stretch"):
            moved = index - 1
        if forward.button("Next", disabled=index == len(STEPS) - 1, key="lesson_next", width="stretch"):
            moved = index + 1
        if actor.instructor:
            st.caption("Back and Next move the whole room: every learner's lesson follows.")
            prepare_button(actor)
            long_runs.draw()
        elif data["step"] is not None and data["step"] != index:
            if st.button("Back to the room's step", key="lesson_follow", width="stretch"):
                moved = data["step"]
        prediction_view.record_button(actor)  # a learner's "Download my lesson (HTML)"; none for the instructor
        if moved is not None:
            move_to(moved, actor)
