"""tinygpt.optim.AdamW: the same update as torch.optim.AdamW, the same state layout, and no torch._dynamo import."""

import subprocess
import sys

import pytest
import torch

from tinygpt.optim import AdamW


def two_groups(seed: int = 0) -> tuple[list[torch.Tensor], list[dict]]:
    torch.manual_seed(seed)
    params = [torch.randn(8, 4, requires_grad=True), torch.randn(4, requires_grad=True), torch.randn(3, 8)]
    params[2].requires_grad_(True)
    return params, [
        {"params": [params[0], params[2]], "weight_decay": 0.1},
        {"params": [params[1]], "weight_decay": 0.0},
    ]


def train(make_optimizer, steps: int = 6, seed: int = 0) -> list[torch.Tensor]:
    params, groups = two_groups(seed)
    optimizer = make_optimizer(groups)
    data = torch.Generator().manual_seed(1)
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = 1e-2 * (step + 1)  # the trainer sets the schedule this way
        optimizer.zero_grad(set_to_none=True)
        x = torch.randn(5, 4, generator=data)
        loss = (((x @ params[0].T + params[2].sum()) * params[1].sum()) ** 2).mean()
        loss.backward()
        optimizer.step()
    return [p.detach().clone() for p in params]


def torch_adamw(fused: bool):
    return lambda groups: torch.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.95), fused=fused)


def test_fused_path_equals_torch_fused_bit_for_bit():
    ours = train(lambda groups: AdamW(groups, lr=1e-2, betas=(0.9, 0.95), fused=True))
    reference = train(torch_adamw(fused=True))
    for a, b in zip(ours, reference, strict=True):
        assert torch.equal(a, b)


def test_explicit_path_equals_torch_within_rounding():
    ours = train(lambda groups: AdamW(groups, lr=1e-2, betas=(0.9, 0.95), fused=False))
    reference = train(torch_adamw(fused=False))
    moved = train(lambda groups: AdamW(groups, lr=1e-2, betas=(0.9, 0.95)), steps=0)  # the starting point
    for a, b, start in zip(ours, reference, moved, strict=True):
        assert not torch.equal(a, start)  # the update really happened
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_continues_identically():
    def run(split: bool) -> list[torch.Tensor]:
        params, groups = two_groups()
        optimizer = AdamW(groups, lr=1e-2)
        data = torch.Generator().manual_seed(1)
        for step in range(6):
            if split and step == 3:  # "checkpoint and resume": a fresh optimizer loads the saved state
                saved = optimizer.state_dict()
                optimizer = AdamW(groups, lr=0.5)
                optimizer.load_state_dict(saved)
            optimizer.zero_grad()
            (params[0].sum() * torch.randn((), generator=data) + params[1].pow(2).sum() + params[2].sum()).backward()
            optimizer.step()
        return params

    for a, b in zip(run(False), run(True), strict=True):
        assert torch.equal(a, b)


def test_state_dict_layout_matches_torch():
    params, groups = two_groups()
    ours, reference = AdamW(groups, lr=1e-2), torch.optim.AdamW(groups, lr=1e-2, fused=True)
    for optimizer in (ours, reference):
        sum(p.sum() for p in params).backward()
        optimizer.step()
    a, b = ours.state_dict(), reference.state_dict()
    assert [g["params"] for g in a["param_groups"]] == [g["params"] for g in b["param_groups"]]
    assert a["state"].keys() == b["state"].keys()
    for index in a["state"]:
        assert a["state"][index].keys() == b["state"][index].keys()
    loaded = AdamW(two_groups()[1], lr=1e-2)
    loaded.load_state_dict(b)  # a checkpoint written with torch.optim.AdamW loads
    round_trip = loaded.state_dict()["state"]
    for index, slots in b["state"].items():
        for key, value in slots.items():
            assert torch.equal(round_trip[index][key], value)


def test_mismatched_state_is_refused():
    params, groups = two_groups()
    saved = AdamW(groups, lr=1e-2).state_dict()
    with pytest.raises(ValueError, match="different parameter groups"):
        AdamW([{"params": params}], lr=1e-2).load_state_dict(saved)


def test_training_step_does_not_import_dynamo():
    """What the optimizer is for: a fresh process trains without paying for torch._dynamo (~1.2 s)."""
    code = (
        "import sys, torch\n"
        "from tinygpt.config import TransformerConfig, TrainConfig\n"
        "from tinygpt.data import Corpus\n"
        "from tinygpt.model import TinyGPT\n"
        "from tinygpt.trainer import Trainer\n"
        "corpus = Corpus.from_text('hello world, ' * 50, block_size=8)\n"
        "model = TinyGPT(TransformerConfig(vocab_size=corpus.tokenizer.vocab_size, hidden_dim=16, num_layers=1,"
        " num_heads=2, max_seq_len=8))\n"
        "Trainer(model, TrainConfig(batch_size=2, max_steps=3, warmup_steps=1), corpus).step()\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
