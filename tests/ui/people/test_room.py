"""A workshop room on one server: each learner's runs are their own, the instructor may change any of them, and
links never hand one learner's run to another (except as a read-only share)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import app_as  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.errors import TinyGPTError  # noqa: E402
from tinygpt.runs.owners import Actor
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.people import admission, people_keys, room  # noqa: E402
from tinygpt.ui.run import in_view  # noqa: E402
from tinygpt.ui.teach import teach_keys
from tinygpt.ui.train import train_keys

REPO = Path(__file__).resolve().parents[3]
ANNA = Actor("a" * 16, "anna")
BEN = Actor("b" * 16, "ben")
TEACHER = Actor("c" * 16, "teacher", instructor=True)


def button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def test_names_and_ids():
    token = "x" * 24
    assert room.public_id(token) != token and len(room.public_id(token)) == 16
    assert room.friendly_name(token) == room.friendly_name(token) and "-" in room.friendly_name(token)
    assert room.clean_name("  <b>Ann\\na</b>  " + "z" * 40) == "<b>Ann\\na</b> " + "z" * 18


def test_a_learner_cannot_change_anothers_run_and_the_instructor_can(runs_dir):
    anna = app_as(ANNA)
    anna.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    anna.number_input(key=train_keys.W_MAX_STEPS).set_value(400).run()
    button(anna, "Train").click().run()
    run_id = anna.session_state[state.RUN_ID]
    assert RunStore(runs_dir).reader(run_id).config()["learner"] == {"id": ANNA.id, "name": "anna"}

    ben = app_as(BEN, {"run": run_id})  # Anna's address bar, copied: Ben gets his own session
    assert state.RUN_ID not in ben.session_state
    assert any("another learner" in str(w.value).replace("\\", "") for w in ben.warning)
    ben = app_as(BEN, {"run": run_id, "view": "1"})  # a read-only share: Ben watches, cannot steer
    assert ben.session_state[state.RUN_ID] == run_id
    shared = in_view.reader_pool()
    assert shared.get(RunStore(runs_dir).path(run_id)) is shared.get(RunStore(runs_dir).path(run_id))  # one reader
    assert all(button(ben, label).disabled for label in ("Pause", "Resume", "Step", "Stop"))
    manager = resources.get_manager()
    for command in (manager.pause, manager.stop, manager.resume):
        with pytest.raises(TinyGPTError, match="belongs to anna"):
            command(run_id, actor=BEN)  # the manager refuses even if a page sent it
    with pytest.raises(TinyGPTError, match="belongs to anna"):
        manager.set_knob(run_id, "learning_rate", 5.0, actor=BEN)
    with pytest.raises(TinyGPTError, match="belongs to anna"):
        RunStore(runs_dir).delete(run_id, actor=BEN)

    manager.pause(run_id, actor=TEACHER)  # the instructor may
    deadline = time.time() + 30
    while RunStore(runs_dir).reader(run_id).status().get("state") != "paused" and time.time() < deadline:
        time.sleep(0.2)
    assert RunStore(runs_dir).reader(run_id).status()["state"] == "paused"
    manager.stop(run_id, actor=ANNA)


def test_the_room_page_is_the_instructors(runs_dir):
    learner = app_as(BEN)
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        learner.switch_page("pages/room.py")  # not registered for a learner: no room dashboard in their menu
    teacher = app_as(TEACHER)
    teacher.switch_page("pages/room.py").run()
    assert not teacher.exception, teacher.exception
    assert any("Room" in t.value for t in teacher.title)
    assert any("Every run on this server" in str(c.value) for c in teacher.caption)


def test_the_rooms_per_run_budget_refuses_an_oversized_run_with_the_numbers():
    from tinygpt.config import ConfigError, DataConfig
    from tinygpt.ui.train import form

    big = form.run_config("Demo (CPU, seconds)", {"num_layers": 12, "hidden_dim": 512, "num_heads": 8}, DataConfig())
    with pytest.raises(ConfigError, match=r"37\.\d+M parameters, above the room's budget of 2\.00M"):
        admission.check_room_budget(big, {"max_params": 2_000_000, "max_steps": 0})
    with pytest.raises(ConfigError, match="max_steps 300 is above the room's budget of 100"):
        admission.check_room_budget(big, {"max_params": 0, "max_steps": 100})
    admission.check_room_budget(big, {"max_params": 0, "max_steps": 0})  # no budget: no limit


def test_the_rooms_time_budget_goes_with_a_learners_run_and_stops_it_with_the_reason(runs_dir):
    teacher = app_as(TEACHER)
    teacher.switch_page("pages/room.py").run()
    minutes = next(n for n in teacher.number_input if n.label.startswith("Max minutes per run"))
    minutes.set_value(0.05).run()  # 3 s
    assert not teacher.exception, teacher.exception
    try:
        assert resources.room_budget()["max_minutes"] == pytest.approx(0.05)
        anna = app_as(ANNA)
        anna.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
        anna.number_input(key=train_keys.W_MAX_STEPS).set_value(1_000_000).run()
        button(anna, "Train").click().run()
        run_id = anna.session_state[state.RUN_ID]
        assert resources.get_manager().time_limit(run_id) == pytest.approx(3.0)
        assert any("time budget stops this run after 3 s" in str(c.value) for c in anna.caption)
        reader = RunStore(runs_dir).reader(run_id)
        deadline = time.time() + 60
        while reader.status().get("state") not in ("stopped", "failed") and time.time() < deadline:
            time.sleep(0.2)
            resources.touch(run_id)
            reader.poll()
        assert reader.status()["state"] == "stopped", reader.status()
        assert "the room's time budget of 3 s per run ran out" in reader.status()["reason"]
        assert any("time budget" in str(e.get("message")) for e in reader.events if e.get("kind") == "state")
        anna.run()
        assert any("time budget of 3 s per run ran out" in str(m.value) for m in anna.markdown)
        # the instructor's own runs have no budget
        assert resources.time_limit_s(TEACHER) is None and resources.time_limit_s(ANNA) == pytest.approx(3.0)
    finally:
        resources.room_budget()["max_minutes"] = 0.0


# --- the instructor key (issue 24 finding 3; issue 20: never shown on the projector unless revealed) ------------


class _Terminal:
    """A stand-in for the server's stdout under nohup: what was written, and whether it was flushed."""

    def __init__(self):
        self.text, self.flushed_upto = "", 0

    def write(self, s):
        self.text += s
        return len(s)

    def flush(self):
        self.flushed_upto = len(self.text)


def test_the_generated_key_is_printed_once_flushed_with_how_to_enter_it(runs_dir, monkeypatch):
    monkeypatch.delenv("TINYGPT_INSTRUCTOR_KEY", raising=False)
    room.instructor_key.clear()
    terminal = _Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    try:
        app_as(BEN)  # the first page load: nobody has typed any key yet
        app_as(ANNA).run()
        key = room.instructor_key()
    finally:
        room.instructor_key.clear()
    lines = [line for line in terminal.text.splitlines() if key in line]
    assert len(lines) == 1, terminal.text  # once, however many sessions and reruns
    assert terminal.flushed_upto >= terminal.text.index(key) + len(key)  # not stuck in a nohup buffer
    assert "Instructor key" in terminal.text and "sidebar" in terminal.text  # how to enter it
    assert "TINYGPT_INSTRUCTOR_KEY" in terminal.text


def test_a_key_set_in_the_environment_is_announced_without_echoing_it(runs_dir, monkeypatch):
    monkeypatch.setenv("TINYGPT_INSTRUCTOR_KEY", "my-own-secret")
    room.instructor_key.clear()
    terminal = _Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    try:
        app_as(BEN)
    finally:
        room.instructor_key.clear()
    assert "TINYGPT_INSTRUCTOR_KEY" in terminal.text and "my-own-secret" not in terminal.text


def test_the_room_page_hides_the_key_until_the_instructor_reveals_it(runs_dir, monkeypatch):
    key = "e7OpYc9u_Ros*x"  # markdown characters that used to come out escaped inside a code span
    monkeypatch.setenv("TINYGPT_INSTRUCTOR_KEY", key)
    room.instructor_key.clear()
    try:
        teacher = app_as(TEACHER)
        teacher.switch_page("pages/room.py").run()
        assert not teacher.exception, teacher.exception
        shown = [str(e.value) for kind in ("markdown", "caption", "code", "text") for e in teacher.get(kind)]
        assert not any("e7OpYc9u" in s for s in shown)  # hidden by default: the Room page is projected
        reveal = next(t for t in teacher.toggle if "instructor key" in t.label.lower())
        reveal.set_value(True).run()
        assert not teacher.exception, teacher.exception
        assert [c.value for c in teacher.code] == [key]  # exactly the key, copyable, no backslashes
    finally:
        room.instructor_key.clear()


@pytest.mark.parametrize("typed", ["clé", "été", "\u00e9t\u00e9 ", "🔑", "\udcff"])
def test_a_non_ascii_instructor_key_is_a_wrong_key_not_a_crash(monkeypatch, typed):
    """Issue 22, finding 1: hmac.compare_digest on str raised TypeError for non-ASCII text, from the cookie on
    every page: that browser was locked out of the whole app."""
    monkeypatch.setenv("TINYGPT_INSTRUCTOR_KEY", "s3cret-key")
    room.instructor_key.clear()
    try:
        assert room.is_instructor_key(typed) is False
        assert room.is_instructor_key("s3cret-key") is True
    finally:
        room.instructor_key.clear()


def test_a_learners_own_name_is_shown_as_text_in_their_sidebar(runs_dir):
    """Issue 22, finding 6: a name cookie with an image rendered it (and fetched it) in the sidebar's expander."""
    at = app_as(Actor("d" * 16, "![img](//evil.example/y.png)"))
    [you] = [e for e in at.expander if "You:" in e.label]
    assert "](//evil.example" not in you.label and "evil" in you.label  # shown, as text


def test_a_key_entered_twice_before_the_page_runs_says_instructor_mode_once(monkeypatch):
    """CI, stop 28: the key box's callback ran twice before the page drew its messages (the first run was
    interrupted by a rerun before the box was redrawn empty), and the page said 'Instructor mode' twice."""

    def page():
        from tinygpt.ui.screen import flashes

        for _ in range(2):
            flashes.flash("success", "Instructor mode: you may control every run.")
        flashes.flash("error", "That is not this server's instructor key.")
        flashes.show_flashes()
        flashes.show_flashes()  # popped: nothing left to show a second time

    at = AppTest.from_function(page).run()
    assert len(at.success) == 1 and "Instructor mode" in at.success[0].value
    assert len(at.error) == 1


def test_a_cookie_that_is_not_utf8_is_reset_with_a_message(monkeypatch):
    """Issue 22: a name cookie whose percent-encoded bytes are not UTF-8 read 'You: ��ab' on every page."""
    sent = {room.NAME_COOKIE: "%FF%FEab", room.LEARNER_COOKIE: "b" * 24}
    monkeypatch.setattr(room, "_raw_cookie", sent.get)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    assert not at.exception, at.exception
    [warning] = [w.value for w in at.warning if "not readable" in w.value]
    assert "tinygpt\\_name cookie was not readable text" in warning
    [you] = [e for e in at.expander if "You:" in e.label]
    assert "\ufffd" not in you.label
    assert room.public_id("b" * 24) == at.session_state[people_keys.LEARNER].id  # the same learner: only the name reset


# ---------------------------------------------------------------- the room chart flags the runs that are off


def _run(losses, *, start=0, state="running", mask="causal", events=(), learner=ANNA, run="r1", **model):
    from tinygpt.ui.people import room_flags  # noqa: F401 - imported where used

    config = {"model": {"mask": mask, "num_heads": 4, **model}, "train": {"learning_rate": 1e-3},
              "data": {"source": "shakespeare"}, "learner": {"id": learner.id, "name": learner.name}}  # fmt: skip
    metrics = [{"step": start + i, "loss": v} for i, v in enumerate(losses)]
    return {"run": run, "state": state, "reason": "", "config": config, "events": list(events), "metrics": metrics}


def _falling(n, top=3.0, bottom=2.0):
    return [top - (top - bottom) * i / max(1, n - 1) for i in range(n)]


def _noisy_flat(n, level=2.0):
    return [level + (0.02 if i % 2 else -0.02) for i in range(n)]


def _words(flags):
    return [f.word for f in flags]


def test_a_diverged_run_is_flagged_by_its_status_or_a_non_finite_loss():
    from tinygpt.ui.people.room_flags import DIVERGED, run_flags

    run = _run(_falling(30), state="diverged") | {"reason": "loss NaN at step 29"}
    assert run_flags(run)[0] == (DIVERGED, "loss NaN at step 29")
    nan = _run(_falling(30))
    nan["metrics"].append({"step": 30, "loss": None})  # a non-finite loss is written as null
    flags = run_flags(nan)
    assert _words(flags) == [DIVERGED] and "step 30" in flags[0].reason


def test_a_leaky_mask_far_below_its_causal_loss_is_leaking_with_the_health_checks_words():
    from tinygpt.lab.pitfalls.mask import MASK_CHEAT
    from tinygpt.ui.people.room_flags import LEAKING, run_flags

    change = {"kind": "knob", "knob": "mask", "old": "causal", "new": "none", "step": 40, "ok": True}
    run = _run(_noisy_flat(40, 2.1) + _noisy_flat(30, 0.3), mask="causal", events=[change], state="paused")
    flags = run_flags(run)
    assert _words(flags) == [LEAKING]
    assert (
        "lets positions see the future" in flags[0].reason and "1.80 nats below its own causal loss" in flags[0].reason
    )
    # The same collapse against a causal run of the room over the same steps.
    leaky = _run(_noisy_flat(40, 0.3), mask="off_by_one", state="paused", run="leaky")
    causal = _run(_noisy_flat(40, 2.1), run="causal", learner=BEN, state="paused")
    assert _words(run_flags(leaky, [leaky, causal])) == [LEAKING]
    said = run_flags(leaky, [leaky, causal | {"name": "ben-run"}])[0].reason
    assert "below the causal run ben-run's over steps 20-39, its model and batch the same" in said, said
    # A review: held to the lecture run (another model) over the same steps. A causal run of another shape is no
    # reference: no flag rather than a number from an unrelated run.
    other = causal | {"config": {**causal["config"], "model": {**causal["config"]["model"], "num_heads": 1}}}
    assert run_flags(leaky, [leaky, other]) == []
    # Not far enough below (a mask that did not leak much): no flag.
    close = _run(_noisy_flat(40, 2.1 - MASK_CHEAT / 2), mask="none", state="paused", run="close")
    assert run_flags(close, [close, causal]) == []
    # A causal run far below another is a better model, not a leak.
    good = _run(_noisy_flat(40, 0.3), state="paused", run="good")
    assert run_flags(good, [good, causal]) == []


def test_a_run_is_stalled_only_when_it_trains_and_its_step_has_not_moved_for_the_stated_time():
    """The review: a healthy run training at step 1,134 read "stalled" because its last 50 losses fell less than
    their noise (2.054 -> 2.062). Stalled now rests on the step standing still while the run holds a slot."""
    from tinygpt.ui.people.room_flags import STALL_S, STALLED, run_flags

    now = 1_000_000.0
    healthy = _run(_falling(100, 3.0, 2.0) + _noisy_flat(60, 2.0)) | {"status": {"step": 160, "updated": now - 0.3}}
    assert run_flags(healthy, now=now) == []  # a slow or noisy loss while its step moves is no stall
    stuck = healthy | {"status": {"step": 160, "updated": now - STALL_S - 30}}
    flags = run_flags(stuck, now=now)
    assert _words(flags) == [STALLED]
    assert flags[0].reason.startswith(f"running, but its step 160 has not moved for {STALL_S + 30:.0f} s")
    for other in ("queued", "starting", "paused", "finished"):  # waiting for a slot, loading, held, done: no stall
        assert run_flags(stuck | {"state": other}, now=now) == [], other
    assert run_flags(healthy | {"status": {}}, now=now) == []  # no time its status was written: no evidence


def test_the_rooms_stall_flag_reads_the_runs_own_status_time(runs_dir):
    """Through a RunReader, as the page reads it: the status's "updated" (the worker's time.time())."""
    from tinygpt.config import RunConfig
    from tinygpt.runs.reader import RunReader
    from tinygpt.ui.people.room_flags import STALL_S, STALLED, run_data, run_flags

    store = RunStore(runs_dir)
    with store.create(RunConfig().to_dict() | {"learner": {"id": ANNA.id, "name": "anna"}}, owner="app") as writer:
        for step in range(1, 80):
            writer.append_metric({"step": step, "loss": 2.0 + (0.02 if step % 2 else -0.02)})  # flat: no trend
        writer.write_status(state="running", step=79)
        run = writer.run_dir.name
        data = run_data(run, RunReader(store.path(run)))
        assert run_flags(data) == []
        later = data["status"]["updated"] + STALL_S + 1
        assert [f.word for f in run_flags(data, now=later)] == [STALLED]


def test_the_room_counts_each_owners_runs_by_state_with_the_words_it_uses():
    """The review: the counter read "0 training" while the prepared runs trained. Each line now says whose runs it
    counts, and "training" is state "running" wherever it is."""
    from tinygpt.ui.host.runlist import INSTRUCTOR, LEARNER, NOBODY, room_counts

    rows = [{"state": "finished", "whose": LEARNER}] * 2 + [{"state": "paused", "whose": LEARNER}]
    rows += [{"state": "running", "whose": INSTRUCTOR}] * 2 + [{"state": "starting", "whose": INSTRUCTOR}]
    rows += [{"state": "queued", "whose": INSTRUCTOR}] * 12 + [{"state": "finished", "whose": NOBODY}]
    assert room_counts(rows) == [
        "Learners' runs: 0 training · 0 queued · 1 paused · 2 finished (3 in all)",
        "The instructor's runs (lecture and prepared): 2 training · 12 queued · 1 starting (15 in all)",
        "Runs of no learner (CLI): 0 training · 0 queued · 1 finished (1 in all)",
    ]
    assert room_counts([]) == ["Learners' runs: 0 training · 0 queued (0 in all)"]


def test_a_learners_run_that_differs_from_the_lecture_run_uses_own_settings():
    from tinygpt.ui.people.room_flags import OWN, run_flags

    lecture = _run(_falling(30), learner=TEACHER, run="lecture")
    same = _run(_falling(30), run="same")
    assert run_flags(same, lecture=lecture) == []
    lr = {"kind": "knob", "knob": "learning_rate", "old": 1e-3, "new": 0.02, "step": 10, "ok": True}
    mine = _run(_falling(30), num_heads=2, events=[lr])
    flags = run_flags(mine, lecture=lecture)
    assert _words(flags) == [OWN]
    assert "LR 0.02 (lecture run: 0.001)" in flags[0].reason and "heads 2 (lecture run: 4)" in flags[0].reason
    assert run_flags(mine) == []  # no lecture run in the room: nothing to say a run differs from


def test_a_learner_who_did_not_follow_the_lectures_deliberate_break_keeps_the_rooms_settings():
    """Stop 42's leftover: after step 4 switched the lecture run's mask to none, every learner's causal run read
    "own settings: mask causal (lecture run: none)". The lecture's start values are the room's too."""
    from tinygpt.ui.people.room_flags import OWN, run_flags

    broken = {"kind": "knob", "knob": "mask", "old": "causal", "new": "none", "step": 40, "ok": True}
    lecture = _run(_falling(30), learner=TEACHER, run="lecture", events=[broken])
    assert run_flags(_run(_falling(30), run="causal"), lecture=lecture) == []
    assert run_flags(_run(_falling(30), run="followed", mask="none"), lecture=lecture) == []
    flags = run_flags(_run(_falling(30), run="own", mask="off_by_one"), lecture=lecture)
    # the lecture's start first, its broken value now beside it (a review read "LR 0.002 (lecture run: 0.1)")
    assert _words(flags) == [OWN] and "mask off_by_one (lecture run: causal, none now)" in flags[0].reason


def test_too_little_data_raises_no_flag():
    from tinygpt.ui.people.room_flags import room_flags

    change = {"kind": "knob", "knob": "mask", "old": "causal", "new": "none", "step": 3, "ok": True}
    runs = [
        _run([], run="empty"),
        _run([2.0] * 10, run="short"),  # ten flat losses: the trend check needs 20
        _run([2.1, 2.1, 2.1, 0.2, 0.2, 0.2], events=[change], run="leaky"),  # 3 leaky steps: 20 needed
        _run(_noisy_flat(40, 0.2), mask="none", run="alone"),  # no causal loss in the room to hold it to
    ]
    runs[3]["metrics"] = runs[3]["metrics"][:19]
    assert room_flags(runs) == {"empty": [], "short": [], "leaky": [], "alone": []}


def test_the_room_table_and_chart_show_the_flags_with_their_reasons():
    from tinygpt.ui.charts import compare
    from tinygpt.ui.people.room_flags import DIVERGED, Flag, with_flags

    rows = [{"learner": "anna", "name": "n1", "state": "diverged", "step": 3, "run": "r1"},
            {"learner": "ben", "name": "n2", "state": "running", "step": 3, "run": "r2"}]  # fmt: skip
    table = with_flags(rows, {"r1": [Flag(DIVERGED, "loss NaN at step 3")]})
    assert list(table[0])[:4] == ["learner", "name", "state", "flag"]
    assert [r["flag"] for r in table] == ["diverged: loss NaN at step 3", ""]
    series = {"anna · n1": [{"step": 1, "loss": 2.0}], "ben · n2": [{"step": 1, "loss": 2.0}]}
    spec = compare.room_chart(series, flags={"anna · n1": [Flag(DIVERGED, "loss NaN at step 3")]}).to_dict()
    values = [v for d in spec["datasets"].values() for v in d]
    assert {v["run"] for v in values} == {"anna · n1 · flag: diverged", "ben · n2"}
    assert {v["off"] for v in values} == {"diverged: loss NaN at step 3", ""}


def test_the_room_page_shows_a_flagged_run_in_its_table(runs_dir):
    from tinygpt.config import RunConfig

    store = RunStore(runs_dir)
    config = RunConfig().to_dict() | {"learner": {"id": ANNA.id, "name": "anna"}}
    with store.create(config, owner="app") as writer:
        for step in range(30):
            writer.append_metric({"step": step, "loss": 3.0 - step / 100})
        writer.append_metric({"step": 30, "loss": None})  # a non-finite loss, as the loop writes it
        writer.write_status(state="paused", step=30)
    teacher = app_as(TEACHER)
    teacher.switch_page("pages/room.py").run()
    assert not teacher.exception, teacher.exception
    table = teacher.table[0].value
    assert list(table.columns) == ["learner", "name", "lesson", "state", "steps", "flag"]
    assert table.loc[table["learner"] == "anna", "flag"].iloc[0] == "diverged"  # its words; the reasons below
    assert any("**anna" in str(c.value) and "loss not finite at step 30" in str(c.value)
               for c in teacher.caption)  # fmt: skip


def test_positions_say_each_learners_lesson_step_and_run_in_view_and_forget_a_closed_tab():
    from tinygpt.ui.host.positions import WINDOW_S, Positions, with_positions

    seen = Positions()
    seen.saw(ANNA.id, 2, "r2", now=100.0)
    rows = [{"learner": "anna", "name": "a", "run": "r1"}, {"learner": "anna", "name": "b", "run": "r2"},
            {"learner": "cli", "name": "c", "run": "r3"}]  # fmt: skip
    learners = {"r1": ANNA.id, "r2": ANNA.id, "r4": BEN.id}
    out = with_positions(rows, learners, seen, 12, now=110.0)
    assert [list(r)[:4] for r in out] == [["learner", "name", "lesson step", "in view"]] * 3
    assert [(r["lesson step"], r["in view"]) for r in out] == [("step 3/12", ""), ("step 3/12", "yes"), ("", "")]
    assert with_positions(rows, learners, seen, 12, now=100.0 + WINDOW_S + 1)[0]["lesson step"] == "not seen"
    seen.saw(ANNA.id, None, "r1", now=200.0)  # outside the lesson
    assert [r["in view"] for r in with_positions(rows, learners, seen, 12, now=200.0)] == ["yes", "", ""]
    assert with_positions(rows, learners, seen, 12, now=200.0)[0]["lesson step"] == "not in the lesson"


def test_the_room_table_shows_where_a_learner_is_in_the_lesson(runs_dir):
    from tinygpt.config import RunConfig

    store = RunStore(runs_dir)
    with store.create(RunConfig().to_dict() | {"learner": {"id": ANNA.id, "name": "anna"}}, owner="app") as writer:
        writer.write_status(state="paused", step=0)
        run = writer.run_dir.name
    anna = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    anna.session_state[people_keys.LEARNER] = ANNA
    anna.session_state[teach_keys.LESSON_STEP] = 4  # her pane shows step 5
    anna.query_params["run"] = run
    anna.run()
    assert not anna.exception, anna.exception
    teacher = app_as(TEACHER)
    teacher.switch_page("pages/room.py").run()
    table = teacher.table[0].value  # a table whose cells wrap (room_table): no run id shown, her row by her name
    row = table.loc[table["learner"] == "anna"]
    assert (row["lesson"].iloc[0], row["in view"].iloc[0]) == ("step 5/12", "yes")


def test_the_room_page_draws_a_learners_finished_run_and_counts_the_prepared_runs_that_train(runs_dir, monkeypatch):
    """The review's room: the instructor's prepared runs train and wait; a learner's run has finished. The chart
    drew only the live runs (her run was in the table, not in the chart) and the counter read as if nothing of
    the learners' trained... Now every run with a step is drawn, and each owner's runs are counted apart."""
    from tinygpt.config import RunConfig
    from tinygpt.ui.charts import compare

    drawn: list[list[str]] = []
    chart = compare.room_chart
    monkeypatch.setattr(compare, "room_chart", lambda series, **kw: drawn.append(list(series)) or chart(series, **kw))
    at = app_as(TEACHER)  # first: the server's run manager pauses the runs it finds live when it starts
    store = RunStore(runs_dir)
    teacher = {"learner": {"id": TEACHER.id, "name": "teacher", "instructor": True}}
    with store.create(RunConfig().to_dict() | {"learner": {"id": ANNA.id, "name": "anna"}}, owner="app") as writer:
        for step in range(1, 41):
            writer.append_metric({"step": step, "loss": 3.0 - step / 100})
        writer.write_status(state="finished", step=40)
    for _ in range(3):  # prepared runs waiting for a slot: step 0, no loss yet
        with store.create(RunConfig().to_dict() | teacher, owner="app") as writer:
            writer.write_status(state="queued", step=0, reason="waiting for a free training slot")
    with store.create(RunConfig().to_dict() | teacher, owner="app") as writer:  # one training: its lock held here
        for step in range(1, 21):
            writer.append_metric({"step": step, "loss": 3.0 - step / 100})
        writer.write_status(state="running", step=20)
        at.switch_page("pages/room.py").run()
        assert not at.exception, at.exception
    assert drawn and [label.split(" · ")[0] for label in drawn[-1]] == ["anna", "teacher"]  # learners first
    said = "\n".join(str(m.value) for m in at.markdown)
    assert "Learners' runs: 0 training · 0 queued · 1 finished (1 in all)" in said
    assert "The instructor's runs (lecture and prepared): 1 training · 3 queued (4 in all)" in said
    captions = "\n".join(str(c.value) for c in at.caption)
    assert "The chart draws 2 of the 5 runs in the table; not drawn: 3 run(s) at step 0" in captions
    # The instructor's pages report no lesson position: their runs' lesson cell is empty, never "not seen".
    table = at.table[0].value
    assert list(table["learner"]) == ["teacher"] * 4 + ["anna"]  # the table newest first, as the caption says
    lesson_of = dict(zip(table["learner"], table["lesson"], strict=True))
    assert lesson_of["teacher"] == "" and lesson_of["anna"]  # hers: "not seen" or another test's report of her


def test_the_room_table_shows_columns_that_fit_the_projector_and_drops_empty_ones():
    """The review: at 1280x720 with Large fonts the table's last column was cut off (11 columns in 780 px); the
    cells themselves read whole since they wrap (tests/ui/people/test_room_table.py)."""
    from tinygpt.ui.people import room_table

    rows = [{"learner": "anna", "name": "n", "lesson step": "", "in view": "", "state": "queued", "steps": "0 / 300",
             "flag": "", "queue": "waiting for a free training slot", "live changes": "", "run": "r1"}]  # fmt: skip
    assert room_table.columns(rows) == ["learner", "name", "state", "steps", "flag"]
    assert room_table.queue_note(rows) == "1 queued run(s): waiting for a free training slot."
    rows[0] |= {"lesson step": "step 2/12", "live changes": "LR 0.02 @50", "state": "running", "queue": ""}
    assert room_table.columns(rows) == ["learner", "name", "lesson step", "state", "steps", "flag", "live changes"]
    assert room_table.queue_note(rows) == ""


def test_a_resume_refused_by_the_rooms_budget_stays_said_and_says_what_can_be_done(runs_dir):
    """A review: Resume on a 30,000-step run under a 500-step budget flashed its error for half a second (the page
    reran over it) and advised lowering Max steps, which a run that exists has none of."""
    from helpers import write_run

    run_id = write_run(runs_dir, steps=20)
    with RunStore(runs_dir).writer(run_id) as w:
        w.write_config({"learner": {"id": ANNA.id, "name": "anna"}})
        w.write_status(state="stopped", reason="stopped by you at step 20", step=20)
    budget = resources.room_budget()
    budget["max_steps"] = 5
    try:
        anna = AppTest.from_file(str(Path(__file__).resolve().parents[3] / "app.py"), default_timeout=60)
        anna.session_state["learner"] = ANNA
        anna.query_params["run"] = run_id
        anna.run()
        button(anna, "Resume").click().run()
        assert not anna.exception, anna.exception
        said = " ".join(str(e.value) for e in anna.error).replace("\\", "")
        assert "cannot resume under it: start a new run of at most 5 steps" in said, said
        assert RunStore(runs_dir).reader(run_id).status()["state"] == "stopped"
    finally:
        budget["max_steps"] = 0


def test_a_branch_past_the_rooms_step_budget_is_refused_with_what_can_work():
    """A review: branching a run stopped at 609 under a 500-step budget read "lower Max steps to 500", then "max_steps
    500 leaves nothing to train after the branch step 609": no value fits both."""
    budget = resources.room_budget()
    budget["max_steps"] = 500
    try:
        with pytest.raises(TinyGPTError, match="start at step 609, past the room's budget of 500 steps per run .*"
                           "pick a checkpoint before step 500"):  # fmt: skip
            admission.check_branch_step(ANNA, 609)
        admission.check_branch_step(ANNA, 400)  # an earlier checkpoint: on to the other checks
        admission.check_branch_step(TEACHER, 609)  # the instructor's runs have no budget
    finally:
        budget["max_steps"] = 0


def test_a_room_row_says_the_runs_newest_held_out_loss(tmp_path):
    """Review 3 (stop 52): the Room's rows showed no loss at all, only the small charts did."""
    import json

    from tinygpt.ui.host.runlist import latest_held_out
    from tinygpt.ui.people import room_table

    assert latest_held_out(tmp_path) == ""  # before its first eval
    evals = [{"step": 100, "val_loss": 2.4722}, {"step": 1200, "val_loss": 1.8865}]
    (tmp_path / "evals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    assert latest_held_out(tmp_path) == "1.89 @1,200"
    assert "held-out" in room_table.columns([{"held-out": "1.89 @1,200"}])
    assert "held-out" not in room_table.columns([{"held-out": ""}])  # no run has an eval yet: no empty column
    # Round 2: a run switched to mask none read "0.23 @12,450" beside the others, a copying model's loss unsaid
    config = {"model": {"mask": "causal"}}
    switched = [{"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 1000}]
    assert latest_held_out(tmp_path, config, switched) == "mask none: 1.89 @1,200"
    back = switched + [{"kind": "knob", "knob": "mask", "ok": True, "old": "none", "new": "causal", "step": 1100}]
    assert latest_held_out(tmp_path, config, back) == "1.89 @1,200"  # causal again by then


def test_the_room_names_the_learners_here_without_a_run_of_their_own():
    """Review 3 (stop 52): a learner who only watched had no row: the instructor could not see she was there."""
    from tinygpt.ui.host.positions import Positions, without_runs

    seen = Positions()
    seen.saw("ada-id", 3, "run-a", now=100.0, name="Ada")  # owns run-a: she has a row
    seen.saw("lena-id", 3, "run-a", now=100.0, name="Lena")  # watches Ada's run
    seen.saw("bo-id", None, None, now=100.0, name="Bo")  # outside the lesson, nothing in view
    seen.saw("gone-id", 3, None, now=0.0, name="Gone")  # not heard from for 100 s: not here
    said = without_runs(seen, {"run-a": "ada-id"}, {"run-a": "Ada's run"}, 12, now=100.0)
    # counted, never named: the Room is on the projector (names only on the instructor's toggle)
    # "here" is a pane heard from lately, and the line says how lately (a review's closed tab stayed counted ~90 s)
    assert said == ("Here without a run of their own: 2 learners; 1 at step 4/12, watching Ada's run; 1 not in the "
                    "lesson (a pane seen in the last 90 s).")  # fmt: skip
    assert "Lena" not in said and "Bo" not in said
    # named on the instructor's toggle: a review's instructor could not find who was here
    named = without_runs(seen, {"run-a": "ada-id"}, {"run-a": "Ada's run"}, 12, now=100.0, named=True)
    assert named.endswith("1 not in the lesson (a pane seen in the last 90 s: Bo, Lena).") and "Gone" not in named
    seen.saw("bo-id", 3, "run-a", now=100.0, name="Bo")
    assert without_runs(seen, {"run-a": "ada-id"}, {"run-a": "Ada's run"}, 12, now=100.0) == (
        "Here without a run of their own: 2 learners at step 4/12, watching Ada's run (a pane seen in the last 90 s).")
    assert without_runs(seen, {"run-a": "ada-id", "r2": "lena-id", "r3": "bo-id"}, {}, 12, now=100.0) == ""
    # before any run: everyone heard from is here without one (a review's Room said nothing of four learners)
    before = without_runs(seen, {}, {}, 12, now=100.0)
    assert before.startswith("Here without a run of their own: 3 learners at step 4/12")


def test_the_room_says_who_in_the_lesson_has_not_answered():
    """A review: the spread read "4 answered" with five learners in the lesson; the one who had not was nowhere."""
    from tinygpt.ui.host.positions import Positions, in_lesson, not_answered

    seen = Positions()
    for lid, name in (("ann", "Ann"), ("ben", "Ben"), ("fay", "Fay")):
        seen.saw(lid, 2, None, now=100.0, name=name)
    seen.saw("bo", None, None, now=100.0, name="Bo")  # outside the lesson: not asked
    here = in_lesson(seen, now=100.0)
    assert set(here) == {"ann", "ben", "fay"}
    said = not_answered(here, {"ann", "ben"})
    assert said == "2 of 3 learners in the lesson (a pane seen in the last 90 s) have answered." and "Fay" not in said
    assert not_answered(here, {"ann", "ben"}, named=True).endswith("have answered; not yet: Fay.")
    assert not_answered({"ann": here["ann"]}, set()) == ("0 of 1 learner in the lesson (a pane seen in the last 90 s) "
                                                         "has answered.")  # fmt: skip
    assert not_answered({}, set()) == ""


def test_a_learners_first_page_tells_the_room_their_lesson_step_at_once(runs_dir):
    """Round 2 (stop 52): a learner who had just opened the app read "Lesson 1/12" in her sidebar while the Room
    said "not in the lesson" for up to 30 s: the page reported her position before the lesson pane set her step."""
    from tinygpt.ui.teach import lesson

    lesson.write_room(str(resources.get_store().root), step=3)
    app_as(ANNA)
    position = resources.positions().of(ANNA.id)
    assert position is not None and position.step == 3 and position.name == "anna"
