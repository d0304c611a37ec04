"""tinygpt.optim.AdamW: the same update as torch.optim.AdamW, the same state layout, and no torch._dynamo import."""

import subprocess
import sys

import pytest
import torch

from tinygpt.optim import NEWTON_SCHULZ_COEFFS, NEWTON_SCHULZ_STEPS, AdamW, Muon, orthogonalize


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


# ---------------------------------------------------------------- Muon


def newton_schulz_by_svd(matrix: torch.Tensor) -> torch.Tensor:
    """The reference: what the quintic Newton-Schulz iteration does, computed on the SVD instead of with matmuls.

    X -> a X + b (X X^T) X + c (X X^T)^2 X keeps U and V and maps each singular value s to a s + b s^3 + c s^5,
    so after scaling to Frobenius norm 1 the result is U p(p(...p(s / ||M||)...)) V^T."""
    a, b, c = NEWTON_SCHULZ_COEFFS
    u, s, vh = torch.linalg.svd(matrix.double(), full_matrices=False)
    s = s / matrix.double().norm()
    for _ in range(NEWTON_SCHULZ_STEPS):
        s = a * s + b * s**3 + c * s**5
    return (u * s) @ vh


@pytest.mark.parametrize("shape", [(16, 16), (48, 16), (16, 64)])
def test_orthogonalize_is_newton_schulz_on_the_singular_values(shape):
    matrix = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    ours = orthogonalize(matrix)
    assert ours.shape == matrix.shape
    torch.testing.assert_close(ours.double(), newton_schulz_by_svd(matrix), rtol=0, atol=2e-5)
    # ... which is close to the nearest semi-orthogonal matrix U V^T: every singular value near 1, not equal to it.
    singular = torch.linalg.svdvals(ours)
    assert 0.6 < singular.min() and singular.max() < 1.25
    u, _, vh = torch.linalg.svd(matrix, full_matrices=False)
    assert torch.nn.functional.cosine_similarity(ours.flatten(), (u @ vh).flatten(), dim=0) > 0.95


def test_muon_step_follows_its_equations():
    """Two steps of Muon against the update rule written out with the SVD reference."""
    gen = torch.Generator().manual_seed(3)
    weight = torch.randn(24, 8, generator=gen, requires_grad=True)
    grads = [torch.randn(24, 8, generator=gen) for _ in range(2)]
    lr, mu, wd = 0.01, 0.95, 0.1
    optimizer = Muon([weight], lr=lr, momentum=mu, weight_decay=wd)
    expected = weight.detach().double().clone()
    buffer = torch.zeros_like(expected)
    for grad in grads:
        weight.grad = grad.clone()
        optimizer.step()
        buffer = mu * buffer + grad.double()
        update = newton_schulz_by_svd(grad.double() + mu * buffer)
        expected = expected * (1 - lr * wd) - lr * 0.2 * max(24, 8) ** 0.5 * update
    torch.testing.assert_close(weight.detach().double(), expected, rtol=0, atol=1e-5)
    # the step's RMS is ~0.2 * lr, like an AdamW step: one learning rate serves both optimizers of a run
    single = Muon([torch.zeros(24, 8, requires_grad=True)], lr=lr)
    single.param_groups[0]["params"][0].grad = grads[0]
    single.step()
    rms = single.param_groups[0]["params"][0].detach().pow(2).mean().sqrt()
    assert 0.15 * lr < rms < 0.25 * lr


def test_muon_refuses_what_it_is_not_for():
    with pytest.raises(ValueError, match="2-D weight matrices only"):
        Muon([torch.zeros(8, requires_grad=True)], lr=0.01)


def test_muon_run_resumes_from_a_checkpoint_exactly(tmp_path):
    """A Muon run (Muon on the blocks' matrices + AdamW on the rest, as one optimizer) saved to a checkpoint and
    resumed continues the same losses bit for bit."""
    from helpers import losses_across_a_checkpoint

    from tinygpt.data import Corpus
    from tinygpt.presets import preset

    corpus = Corpus.from_text("the quick brown fox jumps over the lazy dog. " * 40, block_size=16)
    config = preset("demo", optimizer="muon", max_steps=8, max_seq_len=16, hidden_dim=32, batch_size=4)
    config.model.vocab_size = corpus.tokenizer.vocab_size
    straight, resumed, first = losses_across_a_checkpoint(config, corpus, tmp_path)
    kinds = {type(o).__name__ for o in first.optimizer.optimizers}
    assert kinds == {"Muon", "AdamW"}
    muon_params = first.optimizer.optimizers[0].param_groups[0]["params"]
    assert len(muon_params) == 4 * config.model.num_layers  # qkv, proj, fc, mlp.proj per block
    assert resumed == straight


def test_a_stack_of_matrices_is_orthogonalized_like_each_alone():
    """Muon orthogonalizes a model's same-shaped matrices as one stack (one batched GEMM per line): the same
    numbers as one at a time, tall ones (a (48, 16) fc) included."""
    gen = torch.Generator().manual_seed(5)
    for shape in ((16, 48), (48, 16), (16, 16)):
        stack = torch.randn(3, *shape, generator=gen)
        together = orthogonalize(stack)
        for i in range(3):
            torch.testing.assert_close(together[i], orthogonalize(stack[i]), rtol=0, atol=1e-5)


@pytest.mark.parametrize("shape", [(16, 64), (3, 16, 64), (64, 16), (24, 72)])
def test_the_gram_iteration_is_the_same_newton_schulz_in_fewer_flops(shape):
    """A wide matrix takes the iteration on its Gram matrix alone: the same numbers to float rounding, and fewer
    FLOPs for exactly the matrices it is used on (4x as wide as tall: ~45% fewer)."""
    from tinygpt.optim import _gram_newton_schulz, _newton_schulz, newton_schulz_flops

    matrix = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    wide = matrix if shape[-2] <= shape[-1] else matrix.mT
    wide = wide / wide.norm(dim=(-2, -1), keepdim=True)
    torch.testing.assert_close(_gram_newton_schulz(wide, 5), _newton_schulz(wide, 5), rtol=0, atol=1e-5)
    assert newton_schulz_flops(128, 512, gram=True) < 0.6 * newton_schulz_flops(128, 512)
    assert newton_schulz_flops(128, 128, gram=True) > newton_schulz_flops(128, 128)  # square: as written
    if len(shape) == 2:
        torch.testing.assert_close(orthogonalize(matrix).double(), newton_schulz_by_svd(matrix), rtol=0, atol=2e-5)
