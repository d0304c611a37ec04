"""The Runs page's session keys: the run picked, the compare list, the delete confirmation."""

from __future__ import annotations

W_RUNS_PICK = "w_runs_pick"
PICK_FOLLOWS = "runs_pick_follows"  # the run in view when Runs last drew its picker: a new one moves the pick
W_DELETE_CONFIRM = "w_delete_confirm"
W_COMPARE = "w_compare"
