"""The Circuits page: its keys and its logic (head roles, ablation, the lens, the induction experiment)."""
