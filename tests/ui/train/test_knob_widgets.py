"""The Train page's live knob widgets (tinygpt/ui/train/knob_widgets.py) through AppTest: a move sends its own knob and
nothing else, whatever stale copies the browser sends along; the widgets show the run in view for every viewer,
read-only for a watcher; the "changed since" note is only for what this viewer changed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from helpers import app_as, rerun_until  # noqa: E402
from helpers import page_texts as texts  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402
from streamlit.testing.v1.element_tree import ElementTree  # noqa: E402

from tinygpt.runs.owners import Actor  # noqa: E402
from tinygpt.ui import state  # noqa: E402
from tinygpt.ui.host import resources  # noqa: E402
from tinygpt.ui.people import people_keys
from tinygpt.ui.train import knob_widgets, train_keys  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
ANNA = Actor("a" * 16, "anna")
TEACHER = Actor("c" * 16, "teacher", instructor=True)


def knob_key(at: AppTest, value_key: str, role: str = "") -> str:
    """The key the knob's widget is drawn under now."""
    generations = at.session_state[train_keys.KNOB_WIDGETS] if train_keys.KNOB_WIDGETS in at.session_state else {}
    return knob_widgets.widget_key(value_key, generations, role)


def start_run(at: AppTest) -> str:
    at.selectbox(key=train_keys.W_SOURCE).set_value("Synthetic: copy").run()
    at.number_input(key=train_keys.W_MAX_STEPS).set_value(100_000).run()
    next(b for b in at.button if b.label == "Train").click().run()
    assert not at.exception, at.exception
    return at.session_state[state.RUN_ID]


def knob_events(runs_dir: Path, run_id: str) -> list[dict]:
    path = runs_dir / run_id / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [e for e in (json.loads(line) for line in lines if line.strip()) if e.get("kind") == "knob"]


def training(runs_dir: Path, run_id: str) -> bool:
    status = runs_dir / run_id / "status.json"
    return status.exists() and json.loads(status.read_text()).get("state") == "running"


def send_also(monkeypatch, stale: list[WidgetState]) -> None:
    """Every rerun request from now on also carries `stale`: what a browser that never drew the server's newer
    values keeps sending (the widget states it still holds)."""
    original = ElementTree.get_widget_states

    def with_stale(self):
        states = original(self)
        ids = {s.id for s in stale}
        kept = [w for w in states.widgets if w.id not in ids]
        del states.widgets[:]
        states.widgets.extend(kept + stale)
        return states

    monkeypatch.setattr(ElementTree, "get_widget_states", with_stale)


def test_a_burst_on_warmup_changes_warmup_only_though_a_stale_exact_box_rides_along(runs_dir, monkeypatch):
    """Reproduces the rehearsal's lost update: in a burst of arrow-key presses on Warmup, the learning rate's exact
    box came back with its old 0.002 (the browser had not drawn 0.05 yet) and the run's rate went back."""
    at = app_as()
    run_id = start_run(at)
    rerun_until(at, lambda: training(runs_dir, run_id))
    exact = at.number_input(key=knob_key(at, train_keys.W_LR, "_exact"))
    assert exact.value == 0.002
    stale = WidgetState()
    stale.CopyFrom(exact._widget_state)  # the box as the browser holds it before the learner's move
    assert stale.double_value == 0.002
    # A real browser got the callback of that box, dropped by the server, with its old value (the server had
    # forgotten the value); here its old value is still known, so the copy reports a value it never had.
    stale.double_value = 0.003
    at.select_slider(key=knob_key(at, train_keys.W_LR)).set_value(0.05).run()
    assert at.number_input(key=knob_key(at, train_keys.W_LR, "_exact")).value == 0.05  # the box follows the slider
    monkeypatch.setattr(state, "ECHO_S", 0.0)  # however long the browser keeps its old copy
    send_also(monkeypatch, [stale])
    # Ten key presses, each its own rerun request. A browser's key repeat is ~30 ms a press; a rerun here takes
    # longer, and on a loaded machine longer than SETTLE_S, so the burst's presses are held inside the settle
    # window as a browser's are (CI sent 101 once, when one rerun outlasted 0.4 s).
    rest_s = knob_widgets.SETTLE_S
    monkeypatch.setattr(knob_widgets, "SETTLE_S", 3600.0)
    for warmup in range(101, 111):
        at.slider(key=knob_key(at, train_keys.W_WARMUP)).set_value(warmup).run()
        assert not at.exception, at.exception
    monkeypatch.setattr(knob_widgets, "SETTLE_S", rest_s)  # the burst is over: the knob rests
    rerun_until(at, lambda: any(e.get("new") == 110 for e in knob_events(runs_dir, run_id)))
    time.sleep(1.0)  # a stray command, had one been sent, is answered by now
    events = knob_events(runs_dir, run_id)
    lr = [(e["old"], e["new"]) for e in events if e["knob"] == "learning_rate"]
    assert lr == [(0.002, 0.05)]
    assert {e["knob"] for e in events} <= {"learning_rate", "min_lr", "warmup_steps"}
    # The burst is one change: a slider's value is sent once it rests (each press restarts its wait).
    assert [e["new"] for e in events if e["knob"] == "warmup_steps"] == [110]
    assert at.select_slider(key=knob_key(at, train_keys.W_LR)).value == 0.05
    resources.get_manager().stop(run_id)


def test_a_slider_change_is_sent_once_it_rests_and_a_typed_one_at_once():
    assert knob_widgets.settles("slider", "w_warmup@0", "w_warmup")
    assert knob_widgets.settles("log_slider", "w_lr@2", "w_lr")
    assert not knob_widgets.settles("log_slider", "w_lr_exact@2", "w_lr")  # the exact box: typed, sent at once
    assert not knob_widgets.settles("radio", "w_mask@0", "w_mask")
    notes = {
        "warmup_steps": {"value": 130, "request": None, "run": "r", "moved_at": 10.0},  # pending
        "learning_rate": {"value": 0.05, "request": "q1", "run": "r", "moved_at": None},  # sent, awaiting its answer
    }
    assert knob_widgets.settled(notes, now=10.0 + knob_widgets.SETTLE_S / 2) == []  # still being turned
    assert knob_widgets.settled(notes, now=10.0 + knob_widgets.SETTLE_S) == ["warmup_steps"]


def test_a_watcher_sees_the_runs_knobs_read_only_and_follows_the_instructors_change(runs_dir):
    """Reproduces the rehearsal: after the instructor switched the mask to none, the watching learner's Mask radio
    still said causal, and their own form's settings were listed as "Changed since this run started"."""
    teacher = app_as(TEACHER)
    run_id = start_run(teacher)
    rerun_until(teacher, lambda: training(runs_dir, run_id))
    anna = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    anna.session_state[people_keys.LEARNER] = ANNA
    anna.session_state[train_keys.W_WIDTH] = 64  # her own form differs from the run she watches
    anna.session_state[train_keys.W_WARMUP] = 7
    anna.query_params["run"], anna.query_params["view"] = run_id, "1"
    anna.run()
    assert not anna.exception, anna.exception
    assert anna.session_state[state.RUN_ID] == run_id
    mask = anna.radio(key=knob_key(anna, train_keys.W_MASK))
    assert mask.value == "causal" and mask.disabled  # the run's value, and not hers to change
    assert anna.slider(key=knob_key(anna, train_keys.W_WARMUP)).value != 7
    assert "Changed since" not in texts(anna) and "You changed" not in texts(anna)

    teacher.radio(key=knob_key(teacher, train_keys.W_MASK)).set_value("none").run()
    rerun_until(anna, lambda: anna.radio(key=knob_key(anna, train_keys.W_MASK)).value == "none", timeout=30)
    assert [(e["old"], e["new"]) for e in knob_events(runs_dir, run_id) if e["knob"] == "mask"] == [("causal", "none")]
    assert teacher.radio(key=knob_key(teacher, train_keys.W_MASK)).value == "none"  # the owner's too: the run's value
    # Ended (or paused with its slot given up), the run takes no change and the knobs set her next run: the
    # preset's mask, not the run's live none, which she never chose (a review's learner read "… mask none (sees
    # the future)" for her next run, her form holding the value the run had shown)
    resources.get_manager().stop(run_id)
    rerun_until(anna, lambda: "this run has ended" in texts(anna), timeout=30)
    starts = next(i.value for i in anna.info if "starts your own run" in i.value)
    assert "where you did not change them" in starts and "mask none" not in starts, starts
    assert anna.radio(key=knob_key(anna, train_keys.W_MASK)).value == "causal"  # the knob says so too


def test_the_window_slider_shows_the_runs_window_when_the_run_has_another_context(runs_dir):
    """A review's learner pressed Set up at step 1 from a Demo form (context 32) and watched the Lecture run (context
    16, window 8): the Window slider read 1. Streamlit makes a slider with new bounds a new widget, at its minimum;
    the knob is now drawn under a new key holding the run's value."""
    teacher = app_as(TEACHER)
    teacher.session_state[train_keys.W_CONTEXT] = 16  # the run's context: not the 32 of a new learner's form
    teacher.run()
    run_id = start_run(teacher)
    model = json.loads((runs_dir / run_id / "config.json").read_text())["model"]
    context, window = model["max_seq_len"], model["window"]
    anna = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    anna.session_state[people_keys.LEARNER] = ANNA
    anna.run()  # her own form first: its Window slider bounded by her context
    assert not anna.exception, anna.exception
    mine = anna.slider(key=knob_key(anna, train_keys.W_WINDOW))
    assert mine.max != max(context, 2), "the test needs her form's context to differ from the run's"
    anna.query_params["run"] = run_id
    anna.run()
    assert not anna.exception, anna.exception
    shown = anna.slider(key=knob_key(anna, train_keys.W_WINDOW))
    assert (shown.value, shown.max) == (window, max(context, 2))
    resources.get_manager().stop(run_id)


def test_the_widgets_show_the_run_and_a_refused_change_snaps_back():
    config = {"model": {"mask": "causal"}, "train": {"learning_rate": 0.002, "warmup_steps": 100}}
    applied = {"kind": "knob", "knob": "mask", "request": "r1", "ok": True, "old": "causal", "new": "none"}
    refused = {"kind": "knob", "knob": "learning_rate", "request": "r2", "ok": False, "error": "too high"}
    names = ["mask", "learning_rate", "warmup_steps"]
    notes = {"mask": {"value": "none", "request": "r1"}, "learning_rate": {"value": 9.0, "request": "r2"},
             "warmup_steps": {"value": 120, "request": "r3"}}  # fmt: skip
    # the answers not in yet: this viewer's own changes show while they wait
    assert knob_widgets.run_values(config, [], names, notes) == {"mask": "none", "learning_rate": 9.0,
                                                                 "warmup_steps": 120}  # fmt: skip
    # answered: the run's values, the refused rate back at the run's
    shown = knob_widgets.run_values(config, [applied, refused], names, notes)
    assert shown == {"mask": "none", "learning_rate": 0.002, "warmup_steps": 120}
    # a viewer with no change of their own sees the run's values, applied changes included
    assert knob_widgets.run_values(config, [applied], names, {}) == {"mask": "none", "learning_rate": 0.002,
                                                                     "warmup_steps": 100}  # fmt: skip


def test_a_change_to_the_value_the_run_has_sends_nothing():
    config = {"model": {"mask": "causal"}, "train": {"learning_rate": 0.002, "warmup_steps": 100}}
    # the run has it: nothing to send (a review's events read "mask causal -> causal" after one click)
    assert knob_widgets.asks_nothing(config, [], "mask", "causal", {})
    assert knob_widgets.asks_nothing(config, [], "learning_rate", 0.002, {})
    assert not knob_widgets.asks_nothing(config, [], "mask", "none", {})
    # a change this session sent to "none" is on its way: turning back to "causal" must be sent, or the run ends
    # at "none" under a widget that says "causal"
    on_its_way = {"mask": {"value": "none", "request": "r1"}}
    assert not knob_widgets.asks_nothing(config, [], "mask", "causal", on_its_way)
    applied = {"kind": "knob", "knob": "mask", "request": "r1", "ok": True, "old": "causal", "new": "none"}
    assert knob_widgets.asks_nothing(config, [applied], "mask", "none", on_its_way)
    assert not knob_widgets.asks_nothing(config, [applied], "mask", "causal", on_its_way)
    # a slider still settling (no request yet) is not on its way: the run's own value decides
    settling = {"warmup_steps": {"value": 300, "request": None}}
    assert knob_widgets.asks_nothing(config, [], "warmup_steps", 100, settling)
    assert not knob_widgets.asks_nothing(config, [], "warmup_steps", 300, settling)


def test_a_widget_is_drawn_anew_only_when_its_value_changed_from_the_servers_side():
    assert knob_widgets.widget_key("w_lr", {}) == "w_lr@0"
    assert knob_widgets.widget_key("w_lr", {"w_lr_exact": 2}, "_exact") == "w_lr_exact@2"
    # a callback of a widget the server replaced is the browser's stale copy: never sent
    generations = {"w_lr": 1, "w_lr_exact": 2}
    assert knob_widgets.is_current("w_lr@1", "w_lr", generations)
    assert knob_widgets.is_current("w_lr_exact@2", "w_lr", generations)
    assert not knob_widgets.is_current("w_lr_exact@1", "w_lr", generations)
    assert not knob_widgets.is_current("w_lr@0", "w_lr", generations)
    assert not knob_widgets.is_current("w_warmup@0", "w_lr", generations)


def test_only_what_this_viewer_changed_is_named_for_a_new_run(runs_dir):
    at = app_as()
    run_id = start_run(at)
    rerun_until(at, lambda: training(runs_dir, run_id))
    assert "You changed" not in texts(at)
    layers = at.number_input(key=train_keys.W_LAYERS).value
    at.number_input(key=train_keys.W_LAYERS).set_value(layers + 1).run()
    assert f"You changed layers {layers} → {layers + 1} in the form" in texts(at)
    resources.get_manager().stop(run_id)


def test_bring_to_the_projector_shows_none_of_the_last_runs_knob_notes(runs_dir):
    """Reproduces the rehearsal: the learner's run came up on the projector under the instructor's notes of their
    own run ("LR → 0.1: applies at the next step"), so the room believed the instructor had just changed it."""
    anna = app_as(ANNA)
    annas = start_run(anna)
    teacher = app_as(TEACHER)
    own = start_run(teacher)
    rerun_until(teacher, lambda: training(runs_dir, own) and training(runs_dir, annas))
    teacher.select_slider(key=knob_key(teacher, train_keys.W_LR)).set_value(0.01).run()
    assert "LR → 0.01" in texts(teacher)  # the note of their own change
    teacher.switch_page("pages/room.py").run()
    teacher.selectbox(key=people_keys.W_ROOM_PICK).set_value(annas).run()
    next(b for b in teacher.button if b.label == "Bring to the projector").click().run()
    assert not teacher.exception, teacher.exception
    assert teacher.session_state[state.RUN_ID] == annas
    assert any(t.value == "tinygpt · Train" for t in teacher.title)
    assert "LR → 0.01" not in texts(teacher), texts(teacher)
    teacher.switch_page("pages/train.py")
    for _ in range(3):  # nor at any refresh after
        teacher.run()
        assert "LR → 0.01" not in texts(teacher), texts(teacher)
    manager = resources.get_manager()
    manager.stop(annas)
    manager.stop(own)


def test_a_fresh_knob_widgets_default_echo_is_not_the_learners_change(runs_dir, monkeypatch):
    """A review: Large fonts clicked while the page's first run drew the form, and the browser's next rerun request
    carried every new knob widget at its own default (LR slider 1e-05, exact box 1e-06, warmup 0, clip 0); the form
    took them, and Train started a run at LR 1e-06 that learned nothing. A widget mounted moments ago reporting its
    default is refused; the page is drawn again with the form's values."""
    at = app_as()
    slider = at.select_slider(key=knob_key(at, train_keys.W_LR))
    box = at.number_input(key=knob_key(at, train_keys.W_LR, "_exact"))
    assert (slider.value, box.value) == (0.002, 0.002)
    echo, warmup = WidgetState(), WidgetState()
    echo.CopyFrom(box._widget_state)
    echo.double_value = 1e-6  # the box's own minimum: what a widget drawn without its value shows
    warmup.CopyFrom(at.slider(key=knob_key(at, train_keys.W_WARMUP))._widget_state)
    warmup.double_array_value.data[:] = [0]  # and the warmup slider's, in the same request: every new widget
    send_also(monkeypatch, [echo, warmup])
    at.run()
    assert not at.exception, at.exception
    assert at.session_state[train_keys.W_LR] == 0.002  # the form kept its values
    assert at.session_state[train_keys.W_WARMUP] == 30
    at.run()  # the page drawn again (pages/train.py's watch_state asks for it): the box shows the form's value
    assert at.number_input(key=knob_key(at, train_keys.W_LR, "_exact")).value == 0.002
    monkeypatch.setattr(knob_widgets, "FRESH_S", 0.0)  # long after its mount, the minimum is the learner's choice
    echo.CopyFrom(at.number_input(key=knob_key(at, train_keys.W_LR, "_exact"))._widget_state)
    echo.double_value = 1e-6
    warmup.CopyFrom(at.slider(key=knob_key(at, train_keys.W_WARMUP))._widget_state)
    at.run()
    assert at.session_state[train_keys.W_LR] == 1e-6


def test_one_fresh_widget_moved_to_its_minimum_is_the_learners_move(runs_dir):
    """A review dragged Warmup to 0 and typed Clip 0 within 15 s of opening Train: each snapped back unsaid, taken
    for an echo. An echo comes from every widget drawn anew at once; one widget alone at its minimum is a move."""
    at = app_as()
    assert at.session_state[train_keys.W_WARMUP] == 30
    at.slider(key=knob_key(at, train_keys.W_WARMUP)).set_value(0).run()
    assert not at.exception, at.exception
    assert at.session_state[train_keys.W_WARMUP] == 0
    at.number_input(key=knob_key(at, train_keys.W_CLIP)).set_value(0.0).run()
    assert at.session_state[train_keys.W_CLIP] == 0.0


def test_only_a_numeric_knobs_minimum_is_taken_for_an_echo():
    """Mask causal, a choice's first option, is a click a lecture makes on purpose (mask back on): never refused."""
    from tinygpt.ui.train import form, settings

    assert form._widget_defaults(settings.FIELD_BY_NAME["mask"]) == ()
    assert 1e-6 in form._widget_defaults(settings.FIELD_BY_NAME["learning_rate"])
    assert form._widget_defaults(settings.FIELD_BY_NAME["warmup_steps"]) == (0, 0)
