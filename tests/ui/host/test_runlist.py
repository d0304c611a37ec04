"""The Runs table's rows (tinygpt/ui/host/runlist.py)."""

from __future__ import annotations

from tinygpt.ui.host.runlist import best_val_text, held_of


def test_a_best_val_loss_reached_under_a_leaking_mask_leads_with_the_mask():
    """A reviewer read a cheating model's 0.1558 as the best run: its "(mask none)" was cut off at Large fonts."""
    assert best_val_text(3300, 0.15581, ["scaling none", "mask none"]) == "mask none: 0.1558 @3300 (scaling none)"
    assert best_val_text(2000, 2.01344, []) == "2.0134 @2000"
    assert best_val_text(2000, 1.9, ["LR 0.004"]) == "1.9000 @2000 (LR 0.004)"


def test_a_best_val_under_a_sliding_window_is_not_labelled_a_leak():
    """The leak label is config.LEAKING_MASKS's (shared with the Train and Attention notes): a sliding window is
    causal and sees no future, so its best loss is an honest one; off by one sees the next character."""
    assert best_val_text(900, 1.61234, ["mask sliding_window"]) == "1.6123 @900 (mask sliding_window)"
    assert best_val_text(900, 0.31234, ["mask off_by_one"]) == "mask off_by_one: 0.3123 @900"


def test_held_of_is_every_run_of_a_learners_the_instructor_holds_whatever_its_state(tmp_path):
    """A run the instructor paused in the queue is neither training nor queued: the slot rule never saw it, and
    its learner trained a copy of it (issue 32: a hold holds)."""
    from tinygpt.config import RunConfig
    from tinygpt.runs.owners import Actor, write_hold
    from tinygpt.runs.store import RunStore

    anna, ben = Actor("a" * 16, "anna"), Actor("b" * 16, "ben")
    store = RunStore(tmp_path)
    ids = []
    for who, state in ((anna, "paused"), (anna, "stopped"), (ben, "paused")):
        with store.create(RunConfig().to_dict() | {"learner": {"id": who.id, "name": who.name}}, owner="app") as w:
            w.write_status(state=state, step=0)
            ids.append(w.run_id)
    assert held_of(store, anna) == []
    write_hold(store.path(ids[0]), "the instructor", 0)
    write_hold(store.path(ids[2]), "the instructor", 0)
    assert [s.run_id for s in held_of(store, anna)] == [ids[0]]
    assert [s.run_id for s in held_of(store, ben)] == [ids[2]]
    assert held_of(store, Actor("c" * 16, "teacher", instructor=True)) == []
