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
