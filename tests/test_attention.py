"""Masks, the explicit attention function, and its agreement with torch's fused kernel."""

import math

import pytest
import torch
import torch.nn.functional as F

from tinygpt.attention import attention, attention_entropy, build_mask, fused_attention, mask_rows

T = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]


@pytest.mark.parametrize(
    "mode, window, expected",
    [
        ("causal", 16, T),
        ("none", 16, [[1] * 4] * 4),
        ("off_by_one", 16, [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 1, 1]]),
        ("sliding_window", 2, [[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]),
    ],
)
def test_every_mask_builder_gives_its_exact_matrix(mode, window, expected):
    mask = build_mask(mode, 4, window)
    assert mask.dtype == torch.bool
    assert mask.tolist() == [[bool(v) for v in row] for row in expected]


def test_mask_rows_are_the_tail_of_the_full_mask():
    full = build_mask("sliding_window", 7, window=3)
    assert torch.equal(mask_rows("sliding_window", 4, 3, window=3), full[4:])


def test_unknown_mask_mode_is_named():
    with pytest.raises(ValueError, match="unknown mask mode 'diagonal'"):
        build_mask("diagonal", 3)


def _qkv(seed=0, B=2, H=3, T=6, D=8, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, T, D, generator=g, dtype=dtype, requires_grad=True) for _ in range(3)]


@pytest.mark.parametrize("mode", ["causal", "none", "off_by_one", "sliding_window"])
def test_rows_sum_to_one_and_masked_weights_are_zero(mode):
    q, k, v = _qkv()
    mask = build_mask(mode, 6, window=2)
    out, weights = attention(q, k, v, mask, scale=1 / math.sqrt(8))
    assert out.shape == (2, 3, 6, 8) and weights.shape == (2, 3, 6, 6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 6), atol=1e-6)
    assert (weights[..., ~mask] == 0).all()


@pytest.mark.parametrize("mode", ["causal", "none", "off_by_one", "sliding_window"])
def test_explicit_equals_fused_values_and_gradients(mode):
    q, k, v = _qkv(seed=1)
    scale = 0.37
    out_explicit, _ = attention(q, k, v, build_mask(mode, 6, window=3), scale)
    grads_explicit = torch.autograd.grad(out_explicit.square().sum(), (q, k, v))
    out_fused = fused_attention(q, k, v, mode, scale, window=3)
    grads_fused = torch.autograd.grad(out_fused.square().sum(), (q, k, v))
    assert (out_explicit - out_fused).abs().max() < 1e-5
    for a, b in zip(grads_explicit, grads_fused, strict=True):
        assert (a - b).abs().max() < 1e-5


def test_explicit_matches_torch_reference_in_float64():
    q, k, v = _qkv(seed=2, dtype=torch.float64)
    ours, _ = attention(q, k, v, build_mask("causal", 6), 0.25)
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25)
    assert (ours - reference).abs().max() < 1e-12


def test_naive_softmax_overflows_where_stable_does_not():
    q = torch.full((1, 1, 3, 4), 10.0)
    k = torch.full((1, 1, 3, 4), 10.0)  # q.k = 400 > 88: exp overflows float32
    v = torch.randn(1, 1, 3, 4)
    mask = build_mask("causal", 3)
    stable_out, stable_w = attention(q, k, v, mask, 1.0, softmax="stable")
    naive_out, naive_w = attention(q, k, v, mask, 1.0, softmax="naive")
    assert torch.isfinite(stable_w).all() and torch.isfinite(stable_out).all()
    assert torch.isnan(naive_w).any()


def test_entropy_is_ln_s_for_uniform_and_zero_for_one_hot():
    uniform = torch.full((5,), 0.2)
    one_hot = torch.tensor([0.0, 1.0, 0.0])
    assert attention_entropy(uniform).item() == pytest.approx(math.log(5))
    assert attention_entropy(one_hot).item() == pytest.approx(0.0, abs=1e-6)
