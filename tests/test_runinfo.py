"""Pure page logic: what a page says about a run (tinygpt/ui/runinfo.py) and the step slider (playback.py)."""

from __future__ import annotations

from tinygpt.ui import playback, runinfo


def test_knob_note_follows_the_workers_structured_answer():
    assert runinfo.knob_note([], "r1", "mask", "none")[0] == "info"
    ok = [{"kind": "knob", "knob": "mask", "request": "r1", "ok": True, "old": "causal", "new": "none", "step": 7}]
    assert runinfo.knob_note(ok, "r1", "mask", "none") == ("success", "mask → none: applied at step 7")
    refused = [{"kind": "knob", "knob": "window", "request": "r2", "ok": False, "error": "too long", "message": "no"}]
    assert runinfo.knob_note(refused, "r2", "window", 99) == ("error", "no")
    assert runinfo.knob_note(ok + refused, "r3", "mask", "none")[0] == "info"  # another request's answer


def test_event_notes_list_changes_not_refusals():
    events = [
        {"kind": "knob", "knob": "mask", "ok": True, "old": "causal", "new": "none", "step": 3, "message": "changed"},
        {"kind": "knob", "knob": "mask", "ok": False, "error": "bad", "step": 4, "message": "refused"},
        {"kind": "nonfinite", "step": 9, "message": "nan"},
    ]
    assert runinfo.event_notes(events) == "changed · nan"


def test_nearest_checkpoint_and_snapshot():
    assert runinfo.nearest_checkpoint([0, 100, 200], 150) == 100
    assert runinfo.nearest_checkpoint([100, 200], 50) == 100
    assert runinfo.nearest_checkpoint([], 50) is None
    assert runinfo.nearest_snapshot([0, 10, 20], 15) == 10


def test_playback_plays_from_the_start_then_one_snapshot_per_tick_then_stops():
    steps = [0, 10, 20]
    first = playback.advance(steps, 20, playing=True, started=False, follow=True)
    assert (first.step, first.started, first.follow, first.done) == (0, True, False, False)
    second = playback.advance(steps, first.step, playing=True, started=True, follow=False)
    assert second.step == 10 and not second.done
    last = playback.advance(steps, 20, playing=True, started=True, follow=False)
    assert last.done and last.step == 20


def test_playback_follows_the_newest_snapshot_until_the_learner_scrubs():
    assert playback.advance([0, 10, 20], 10, playing=False, started=False, follow=True).step == 20
    assert playback.advance([0, 10, 20], 10, playing=False, started=False, follow=False).step == 10
    assert playback.advance([0, 10], None, playing=False, started=False, follow=False).step == 10
