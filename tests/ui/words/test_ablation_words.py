"""The Circuits page's ablation noise: each head's change paired window by window with the clean pass, judged as the
lab judges a held-out gap (review 4 of stop 56: "near-white heads could be removed" over +.002 and -.000 cells with
no noise said)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tinygpt.config import TransformerConfig
from tinygpt.inside import lens
from tinygpt.lab.verdict import held_out_variance
from tinygpt.model import TinyGPT
from tinygpt.ui.words.ablation_words import ablation_noise, head_noise


def result(windows: np.ndarray, batches: int, held_out: int = 100_000, T: int = 16) -> dict:
    L, H, N = windows.shape
    return {"zero": {"val": windows.mean(axis=2), "val_windows": windows}, "batches": batches,
            "windows": (N, T), "held_out": held_out, "tokens": N * T, "seconds": 0.1}  # fmt: skip


def test_the_per_window_changes_are_the_cells_numbers_and_their_mean_is_the_cell():
    torch.manual_seed(0)
    model = TinyGPT(TransformerConfig(vocab_size=11, hidden_dim=32, num_layers=2, num_heads=4, max_seq_len=16))
    for p in model.parameters():
        p.data.normal_(0, 0.3)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 11, (12, 17), generator=g)
    out = lens.head_ablation(model.eval(), x[:, :-1], x[:, 1:], modes=("zero",))
    windows = out["zero"]["val_windows"]
    assert windows.shape == (2, 4, 12)
    assert np.allclose(windows.mean(axis=2), out["zero"]["val"], atol=1e-6)  # each cell is its windows' mean
    with torch.no_grad():  # one window alone, the head off by the model's own live switch
        clean = torch.nn.functional.cross_entropy(model(x[3:4, :-1]).flatten(0, 1), x[3, 1:], reduction="mean")
        model.config.ablated_heads = "L1H2"
        off = torch.nn.functional.cross_entropy(model(x[3:4, :-1]).flatten(0, 1), x[3, 1:], reduction="mean")
        model.config.ablated_heads = ""
    assert windows[1, 2, 3] == pytest.approx(float(off - clean), abs=1e-5)


def test_a_head_is_said_to_matter_only_beyond_three_standard_errors_of_its_paired_noise():
    rng = np.random.default_rng(0)
    windows = rng.normal(0.0, 0.05, size=(2, 2, 40))  # (L, H, N): 4 batches of 10 windows
    windows[1, 1] += 0.3  # L1H1 matters, far beyond its noise
    windows[0, 1] -= 0.2  # L0H1's removal helps
    noise = head_noise(result(windows, 4), "zero")
    per_batch = windows[0, 0].reshape(4, 10).mean(axis=1)
    assert noise["L0H0"] == pytest.approx((windows[0, 0].mean(), math.sqrt(held_out_variance(
        per_batch.tolist(), (10, 16), 100_000))))  # fmt: skip
    said = ablation_noise(result(windows, 4), "zero")
    assert said.startswith(f"Switching off L1H1 {windows[1, 1].mean():+.3f} ± ")
    assert "raised the loss beyond its noise (± 3 s.e. of the 4 batches' paired changes" in said
    assert "counted): this head matters on its own." in said
    assert f"Switching off L0H1 {windows[0, 1].mean():+.3f} ± " in said and "lowered the loss beyond its noise" in said
    assert "Within their noise, not told from zero: L" in said and "L0H0" in said and "L1H0" in said


def test_no_head_beyond_its_noise_is_said_so_and_an_old_result_says_nothing():
    rng = np.random.default_rng(1)
    windows = rng.normal(0.0, 0.05, size=(1, 3, 20))
    said = ablation_noise(result(windows, 5), "zero")
    assert said.startswith("No head's change is beyond its noise") and "no single head is shown to matter" in said
    old = result(windows, 5)
    del old["zero"]["val_windows"]
    assert ablation_noise(old, "zero") == ""
    assert ablation_noise(result(windows, 1), "zero") == ""  # one batch: no spread to judge with


def test_the_second_copy_panel_says_whether_the_run_copies_and_which_heads_stand_out_of_the_rows_noise():
    """A review read "the numbers the lesson's ablation check reads" under a learner's own run, whose second copy
    (5.10 nats) was no cheaper than its first (5.08), the cells -0.064 .. +0.028 with no noise said."""
    from tinygpt.ui.words.ablation_words import second_copy_words

    flat = {"rows": 64, "first": 5.08, "second": 5.10, "gap_se": 0.02, "deltas": [[-0.054, -0.064]],
            "se": [[0.01, 0.01]]}  # fmt: skip
    said = second_copy_words(flat, "second copy", experiment=False)
    assert said.startswith("Panel 'second copy': the change of the loss on the second copy of 64 repeated random")
    assert "lesson" not in said and "This run does not copy here: its second copy costs 5.10 nats against the " \
        "first copy's 5.08 (± 0.06, 3 s.e. over the rows), so no head has copying to lose" in said  # fmt: skip
    copies = {"rows": 64, "first": 4.17, "second": 2.06, "gap_se": 0.05, "deltas": [[0.096, 0.01], [0.671, 0.594]],
              "se": [[0.01, 0.02], [0.008, 0.01]]}  # fmt: skip
    said = second_copy_words(copies, "second copy", experiment=True)
    assert "The induction experiment's ablation check (and the lesson's) reads it at the run's last checkpoint" in said
    assert "It copies: second copy 2.06 nats against the first's 4.17." in said
    assert said.endswith("Beyond 3 s.e. of the rows' paired noise: L1H0 +0.671 ± 0.024, L1H1 +0.594 ± 0.030, "
                         "L0H0 +0.096 ± 0.030.")  # fmt: skip
    quiet = {**copies, "deltas": [[0.01, 0.0], [0.02, -0.01]]}
    assert second_copy_words(quiet, "second copy", False).endswith("No head's change is beyond 3 s.e. of the rows' "
                                                                   "paired noise.")  # fmt: skip
