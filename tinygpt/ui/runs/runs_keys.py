"""The Runs page's session keys: the run picked, the compare list, the delete confirmation."""

from __future__ import annotations

W_RUNS_PICK = "w_runs_pick"
W_DELETE_CONFIRM = "w_delete_confirm"
W_COMPARE = "w_compare"
