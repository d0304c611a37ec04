"""The Attention page's session keys: its widgets, the grid it last drew, the play button's state, the probe."""

from __future__ import annotations

W_PROBE = "w_probe"
W_ATTN_STEP = "w_attn_step"
W_ATTN_LAYER = "w_attn_layer"
W_ATTN_HEAD = "w_attn_head"
W_ATTN_ROW = "w_attn_row"
W_ATTN_TOY = "w_attn_toy"  # toy mode: a short probe whose every cell shows its number
W_ATTN_PER_ROW = "w_attn_per_row"  # panels per row of the step-by-step view
PROBE_RUN = "probe_run"  # the run whose probe text the probe box was filled with
ATTN_GRID = "attn_grid"  # {"key": (...), "drawn": unix time}: what the attention grid shows, and since when
ATTN_PLAYING = "attn_playing"  # the Attention page's play button: advance the step slider by itself
ATTN_PLAY_STARTED = "attn_play_started"  # play began (from the first snapshot if it was at the newest)
ATTN_PLAY_DONE = "attn_play_done"  # play reached the newest snapshot: switch the button off on the next run
ATTN_FOLLOW = "attn_follow"  # the step slider follows the newest snapshot (until the user scrubs back)
