"""Head ablation against the model's own live head switch, the logit lens against the model's output, the
residual stream's norms against the probes, and the live ablation knob."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tinygpt.config import ConfigError, TransformerConfig, format_heads, parse_heads
from tinygpt.inside import lens
from tinygpt.model import TinyGPT
from tinygpt.probes import capture


@pytest.fixture
def model():
    torch.manual_seed(0)
    m = TinyGPT(TransformerConfig(vocab_size=11, hidden_dim=32, num_layers=3, num_heads=4, max_seq_len=16))
    for p in m.parameters():  # a trained-looking model: GPT-2's init makes every head's effect tiny
        p.data.normal_(0, 0.3)
    return m.eval()


def batch(n: int = 6, T: int = 16):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 11, (n, T + 1), generator=g)
    return x[:, :-1], x[:, 1:]


def loss(model, x, y) -> float:
    with torch.no_grad():
        return float(F.cross_entropy(model(x).flatten(0, 1), y.flatten()))


def test_zero_ablation_equals_switching_the_head_off_in_the_model(model):
    x, y = batch()
    probe = torch.randint(0, 11, (1, 12), generator=torch.Generator().manual_seed(2))
    out = lens.head_ablation(model, x, y, probe)
    clean = loss(model, x, y)
    assert out["clean"]["val"] == pytest.approx(clean, abs=1e-5)
    for layer, head in [(0, 0), (1, 3), (2, 1)]:
        model.config.ablated_heads = f"L{layer}H{head}"  # the live knob: the model zeroes that head itself
        try:
            expected = loss(model, x, y) - clean
            expected_probe = loss(model, probe[:, :-1], probe[:, 1:]) - out["clean"]["probe"]
        finally:
            model.config.ablated_heads = ""
        assert out["zero"]["val"][layer, head] == pytest.approx(expected, abs=1e-5)
        assert out["zero"]["probe"][layer, head] == pytest.approx(expected_probe, abs=1e-5)
    assert out["zero"]["val"].shape == out["mean"]["val"].shape == (3, 4)
    assert abs(out["zero"]["val"]).max() > 1e-3  # heads matter in this model


def test_mean_ablation_replaces_a_head_by_its_average_output(model):
    x, y = batch()
    out = lens.head_ablation(model, x, y)
    with capture(model, ["blocks.1.attn.hook_out"]) as cache:
        model(x)
    mean = cache["blocks.1.attn.hook_out"].mean(dim=(0, 1)).view(4, 8)  # (C,) -> (H, D)
    assert torch.allclose(torch.as_tensor(out["means"][1]), mean, atol=1e-6)
    with lens.replaced_head(model, 1, 2, mean[2]):
        expected = loss(model, x, y) - out["clean"]["val"]
    assert out["mean"]["val"][1, 2] == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize("piece_tokens", [lens.PIECE_TOKENS, 128])
def test_the_fast_ablation_gives_the_straightforward_numbers(model, monkeypatch, piece_tokens):
    """head_ablation (clean stream cached below each layer, the layer's attention reused, the H ablations of a
    layer batched, pieces of rows) against head_ablation_reference (the whole model once per head and mode, a hook
    replacing the head). 128 tokens a piece cuts 11 sequences of 16 into uneven pieces: 8 + 3 for the clean pass,
    2 + 2 + 2 + 2 + 2 + 1 for the ablations (4 copies each)."""
    monkeypatch.setattr(lens, "PIECE_TOKENS", piece_tokens)
    x, y = batch(n=11)
    probe = torch.randint(0, 11, (1, 14), generator=torch.Generator().manual_seed(6))
    model.config.ablated_heads = "L1H0"  # a head already off live: both paths see the model as it runs
    try:
        fast = lens.head_ablation(model, x, y, probe)
        slow = lens.head_ablation_reference(model, x, y, probe)
    finally:
        model.config.ablated_heads = ""
    assert fast["clean"] == pytest.approx(slow["clean"], abs=1e-5)
    assert abs(fast["means"] - slow["means"]).max() < 1e-5
    for mode in lens.ABLATIONS:
        for name in ("val", "probe"):
            assert fast[mode][name].shape == (3, 4)
            assert abs(fast[mode][name] - slow[mode][name]).max() < 1e-5, (mode, name)
        assert abs(slow[mode]["val"]).max() > 1e-2  # the heads matter: equal numbers are not two rows of zeros
        assert abs(fast[mode]["val"][1, 0]) < 1e-6  # ablating a head that is already off changes nothing
    assert abs(fast["zero"]["val"] - fast["mean"]["val"]).max() > 1e-3  # the modes differ


def test_ablated_probs_are_the_model_with_the_head_off(model):
    idx = torch.randint(0, 11, (1, 10), generator=torch.Generator().manual_seed(3))
    clean, ablated = lens.ablated_probs(model, idx, 2, 0)
    model.config.ablated_heads = "L2H0"
    try:
        with torch.no_grad():
            expected = torch.softmax(model(idx)[0], -1)
    finally:
        model.config.ablated_heads = ""
    assert torch.allclose(torch.as_tensor(ablated), expected.double(), atol=1e-6)
    assert clean.shape == (10, 11) and not torch.allclose(torch.as_tensor(clean), expected.double(), atol=1e-4)


def test_the_logit_lens_last_row_is_the_model_output(model):
    idx = torch.randint(0, 11, (1, 9), generator=torch.Generator().manual_seed(4))
    out = lens.logit_lens(model, idx, k=3)
    assert out["names"] == ["embeddings", "after layer 0", "after layer 1", "after layer 2"]
    assert out["probs"].shape == (4, 9, 11) and out["top_ids"].shape == (4, 9, 3)
    with torch.no_grad():
        final = torch.softmax(model(idx)[0], -1)
    assert torch.allclose(torch.as_tensor(out["probs"][-1]), final.double(), atol=1e-6)
    assert (out["top_probs"][..., 0] >= out["top_probs"][..., 1]).all()
    embed = torch.softmax(model.lm_head(model.ln_f(model.tok_emb(idx) + model.pos_emb(torch.arange(9)))), -1)[0]
    assert torch.allclose(torch.as_tensor(out["probs"][0]), embed.double().detach(), atol=1e-6)


def test_the_lens_on_windows_counts_each_windows_right_top_guesses_as_the_lens_reads_them(model):
    """lens_right (the lesson's lens step on held-out windows): row by row what logit_lens's top guess gives."""
    x = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(6))  # (W, T)
    y = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(7))
    y[1] = torch.as_tensor(lens.logit_lens(model, x[1:2])["top_ids"][-1, :, 0])  # window 1: the output always right
    right = lens.lens_right(model, x, y)  # (L+1, W)
    assert right.shape == (4, 3) and right[-1, 1] == 1.0
    for w in range(3):
        top = lens.logit_lens(model, x[w : w + 1])["top_ids"][..., 0]  # (L+1, T)
        assert np.allclose(right[:, w], (top == y[w].numpy()[None, :]).mean(-1))


def test_residual_norms_add_up(model):
    idx = torch.randint(0, 11, (1, 12), generator=torch.Generator().manual_seed(5))
    norms = lens.residual_norms(model, idx)
    assert len(norms["resid"]) == 4 and len(norms["attn"]) == len(norms["mlp"]) == 3 and len(norms["ln"]) == 4
    with capture(model, ["blocks.0.hook_resid_pre", "blocks.0.hook_resid_mid"]) as cache:
        model(idx)
    pre, mid = cache["blocks.0.hook_resid_pre"][0], cache["blocks.0.hook_resid_mid"][0]
    assert norms["resid"][0] == pytest.approx(float(pre.norm(dim=-1).mean()), rel=1e-5)
    assert norms["attn"][0] == pytest.approx(float((mid - pre).norm(dim=-1).mean()), rel=1e-5)
    # LayerNorm gives every sublayer an input of about sqrt(C) times its gain, whatever the stream's size
    with torch.no_grad():
        ln_out = model.blocks[0].ln_1(pre)
    assert norms["ln"][0] == pytest.approx(float(ln_out.norm(dim=-1).mean()), rel=1e-5)


def test_the_ablated_heads_knob_is_validated_and_parsed():
    assert parse_heads(" l1h2, L0H0 ,") == {(1, 2), (0, 0)}
    assert format_heads({(1, 2), (0, 0)}) == "L0H0,L1H2"
    TransformerConfig(num_layers=2, num_heads=4, ablated_heads="L1H3")
    with pytest.raises(ConfigError, match="layers 0-1 and heads 0-3"):
        TransformerConfig(num_layers=2, num_heads=4, ablated_heads="L2H0")
    with pytest.raises(ConfigError, match="like L1H2"):
        TransformerConfig(ablated_heads="layer1")


def test_a_switched_off_head_gets_no_gradient_and_writes_nothing(model):
    model.train()
    model.config.ablated_heads = "L0H1"
    try:
        x, y = batch()
        with capture(model, ["blocks.0.attn.hook_out"]) as cache:
            F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
    finally:
        model.config.ablated_heads = ""
    out = cache["blocks.0.attn.hook_out"]  # (B, T, C): head 1 is columns 8..15
    assert out[..., 8:16].abs().max() == 0 and out[..., :8].abs().max() > 0
    q_grad = model.blocks[0].attn.qkv.weight.grad[8:16]  # head 1's query rows
    assert q_grad.abs().max() == 0
