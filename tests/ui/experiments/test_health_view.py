"""tinygpt/ui/experiments/health_view.py: what the Model health tab says above a diverged run's checklist."""

from __future__ import annotations

from tinygpt.ui.experiments.health_view import diverged_note


def test_a_diverged_runs_checklist_says_what_its_own_record_says():
    """A review: a diverged naive softmax's checkpoint passed "attention rows sum to 1" on the 4 windows the check
    reads, the run having recorded its first non-finite tensor in those very weights at step 52."""
    events = [{"step": 10, "kind": "knob", "knob": "mask", "old": "causal", "new": "none"},
              {"step": 52, "kind": "nonfinite", "message": "diverged at step 52",
               "tensor": "blocks.1.attn.hook_weights", "where": "forward"}]  # fmt: skip
    said = diverged_note(events, 52)
    assert said.startswith("This run diverged at step 52 (its own record, its first non-finite tensor "
                           "blocks.1.attn.hook_weights).") and "a pass there does not undo the divergence" in said
    assert diverged_note(events, 40) == "" and diverged_note(events[:1], 52) == ""  # before it; a run that did not
