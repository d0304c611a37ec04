"""The Sample page's session keys: the prompt and the sampling settings, the run and checkpoint picked, the last
generation (to draw its charts)."""

from __future__ import annotations

W_PROMPT = "w_prompt"
W_TEMPERATURE = "w_temperature"
W_TOP_K = "w_top_k"
W_TOP_P = "w_top_p"
W_NUM_CHARS = "w_num_chars"
W_SAMPLE_SEED = "w_sample_seed"
W_SAMPLE_RUN = "w_sample_run"
W_SAMPLE_CKPT = "w_sample_ckpt"
LAST_SAMPLE = "last_sample"  # {"prompt", "text", "probs_raw", "probs", "attention", "keys", "char", "vocab", ...}
SAMPLE_FOLLOW = "sample_follow"  # the current run the Sample page's run select last followed
SAMPLE_CKPT_LATEST = "sample_ckpt_latest"  # the checkpoint select follows the newest checkpoint
