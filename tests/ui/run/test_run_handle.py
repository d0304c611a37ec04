"""What a viewer sends to a run (tinygpt/ui/run/run_handle.py): the run in view's handle and a widget callback both
send their commands through it, as the viewer."""

from __future__ import annotations

from tinygpt.runs.owners import Actor
from tinygpt.ui.run import in_view, run_handle


def test_commands_go_through_the_handle_as_its_viewer(monkeypatch):
    """set_knob (the handle's, and a widget callback's: one function), pause, step, stop and resume (through
    admission) name the run and act as the viewer the handle was opened for."""
    sent = []

    class Manager:
        def set_knob(self, run_id, name, value, actor):
            sent.append(("set_knob", run_id, name, value, actor))
            return "req-1"

        def pause(self, run_id, actor):
            sent.append(("pause", run_id, actor))

        def step(self, run_id, n, actor):
            sent.append(("step", run_id, n, actor))

        def stop(self, run_id, actor):
            sent.append(("stop", run_id, actor))

    monkeypatch.setattr(run_handle, "_manager", Manager)
    monkeypatch.setattr(run_handle.admission, "resume", lambda who, rid, check: sent.append((rid, who, check)))
    anna = Actor(id="anna", name="Anna")
    run = in_view.RunHandle("r1", None, {}, anna, in_view.Rules(mine=True, state="paused"), {})
    assert run.set_knob("lr", 0.01) == "req-1"
    assert run_handle.set_knob("r1", "warmup_steps", 5, anna) == "req-1"
    run.pause(), run.step(3), run.stop()
    run.resume(check_slot=False)
    assert sent == [
        ("set_knob", "r1", "lr", 0.01, anna),
        ("set_knob", "r1", "warmup_steps", 5, anna),
        ("pause", "r1", anna),
        ("step", "r1", 3, anna),
        ("stop", "r1", anna),
        ("r1", anna, False),
    ]
