"""The CUDA test subset: what only a GPU can check. Skipped without one; tests/gpu/check.sh runs it on a GPU machine.

Tolerances: float32 on CUDA differs from the CPU by kernel order (and TF32 matmuls, which the trainer enables),
so explicit vs fused attention agree to 1e-4 in float32 (TF32 off for that check) and to 2e-2 under bfloat16
autocast (bfloat16 keeps 8 bits of mantissa: ~4e-3 relative per rounding)."""

import math

import pytest
import torch
from helpers import losses_across_a_checkpoint

from tinygpt.attention import attention, build_mask, fused_attention
from tinygpt.data import Corpus
from tinygpt.errors import ResourceError
from tinygpt.model import TinyGPT
from tinygpt.presets import preset
from tinygpt.trainer import Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
CUDA = "cuda"


def qkv(dtype=torch.float32, seed=0, shape=(4, 6, 128, 64)):
    g = torch.Generator(device=CUDA).manual_seed(seed)
    return [torch.randn(*shape, generator=g, device=CUDA, dtype=dtype, requires_grad=True) for _ in range(3)]


@pytest.mark.parametrize("mode", ["causal", "sliding_window"])
def test_explicit_equals_fused_attention_in_float32(mode):
    torch.backends.cuda.matmul.allow_tf32 = False
    q, k, v = qkv()
    mask = build_mask(mode, 128, window=16).to(CUDA)
    explicit, _ = attention(q, k, v, mask, 1 / math.sqrt(64))
    fused = fused_attention(q, k, v, mode, 1 / math.sqrt(64), window=16)
    assert (explicit - fused).abs().max() < 1e-4
    grads_e = torch.autograd.grad(explicit.square().sum(), (q, k, v))
    grads_f = torch.autograd.grad(fused.square().sum(), (q, k, v))
    for a, b in zip(grads_e, grads_f, strict=True):
        assert (a - b).abs().max() / b.abs().max() < 1e-4


def test_explicit_equals_fused_attention_under_bf16_autocast():
    q, k, v = qkv()
    mask = build_mask("causal", 128).to(CUDA)
    with torch.autocast(CUDA, torch.bfloat16):
        explicit, _ = attention(q, k, v, mask, 1 / math.sqrt(64))
        fused = fused_attention(q, k, v, "causal", 1 / math.sqrt(64))
    assert (explicit.float() - fused.float()).abs().max() < 2e-2


def tiny_model(**model) -> TinyGPT:
    config = preset("demo", **model).model
    config.vocab_size = 40
    torch.manual_seed(0)
    return TinyGPT(config).to(CUDA)


def test_kv_cache_equals_recomputation_on_cuda():
    torch.backends.cuda.matmul.allow_tf32 = False
    model = tiny_model(max_seq_len=32)
    prompt = torch.randint(0, 40, (2, 5), device=CUDA, generator=torch.Generator(device=CUDA).manual_seed(1))
    assert torch.equal(
        model.generate(prompt, 100, temperature=0, use_cache=True),
        model.generate(prompt, 100, temperature=0, use_cache=False),
    )


def corpus() -> Corpus:
    return Corpus.from_text("the quick brown fox jumps over the lazy dog. " * 80, block_size=32)


def test_a_cuda_checkpoint_round_trips_and_resumes_exactly(tmp_path):
    data = corpus()
    config = preset("demo", max_steps=8)
    config.model.vocab_size = data.tokenizer.vocab_size

    straight, resumed, _ = losses_across_a_checkpoint(config, data, tmp_path, device=CUDA)
    assert resumed == straight


def test_the_non_finite_guard_leaves_cuda_weights_untouched():
    data = corpus()
    config = preset("demo", max_steps=4)
    config.model.vocab_size = data.tokenizer.vocab_size
    trainer = Trainer(TinyGPT(config.model), config.train, data, CUDA)
    with torch.no_grad():
        trainer.model.blocks[0].mlp.fc.weight[0, 0] = float("inf")
    before = [p.detach().clone() for p in trainer.model.parameters()]
    record = trainer.step()
    assert record["applied"] is False and record["nonfinite"]["where"] == "forward"
    for a, b in zip(before, trainer.model.parameters(), strict=True):
        assert torch.equal(a, b.detach())


def test_out_of_memory_says_what_to_lower():
    data = corpus()
    # The activations alone are far past an H200's 141 GB: embeddings (B, T, C) 2**24*32*64*4 B = 137 GB, and the
    # explicit attention's (B, H, T, T) scores 2**24*4*32*32*4 B = 275 GB per layer.
    config = preset("demo", max_seq_len=32, batch_size=2**24)
    config.model.vocab_size = data.tokenizer.vocab_size
    config.model.fused_attention = False
    trainer = Trainer(TinyGPT(config.model), config.train, data, CUDA)
    try:
        with pytest.raises(ResourceError, match="ran out of memory.*lower batch_size"):
            trainer.step()
    finally:
        torch.cuda.empty_cache()


def test_bf16_autocast_is_the_default_on_cuda_and_trains():
    data = corpus()
    config = preset("demo", max_steps=60)
    config.model.vocab_size = data.tokenizer.vocab_size
    trainer = Trainer(TinyGPT(config.model), config.train, data, CUDA)
    assert trainer.autocast is torch.bfloat16
    losses = [trainer.step()["loss"] for _ in range(60)]
    assert losses[-1] < losses[0] - 1.0
