"""TinyGPT's contract: shapes, causality, probes, initial loss, overfitting, and generation."""

import math

import pytest
import torch
import torch.nn.functional as F

from tinygpt.config import INTERVENTION_FIELDS, ConfigError, Interventions, TransformerConfig
from tinygpt.errors import ShapeError
from tinygpt.interventions import attach
from tinygpt.model import TinyGPT
from tinygpt.probes import attention_forward, capture, probe_names


def tiny(**overrides) -> TinyGPT:
    """A tiny model; a lab switch among `overrides` (shape_bug, ...) is attached from outside, as a run's is."""
    torch.manual_seed(0)
    base = dict(vocab_size=11, hidden_dim=32, num_layers=2, num_heads=4, max_seq_len=16)
    lab = {name: overrides.pop(name) for name in INTERVENTION_FIELDS if name in overrides}
    model = TinyGPT(TransformerConfig(**{**base, **overrides}))
    attach(model, Interventions(**lab))
    return model.eval()


def ids(B=2, T=16, vocab=11, seed=0):
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


def test_logits_and_attention_shapes():
    model = tiny()
    x = ids()
    logits = model(x)
    assert logits.shape == (2, 16, 11)
    logits2, maps = attention_forward(model, x)
    assert len(maps) == 2 and all(m.shape == (2, 4, 16, 16) for m in maps)
    assert torch.allclose(logits, logits2, atol=1e-5)  # fused and explicit paths agree inside the model


@pytest.mark.parametrize(
    "mask, leaks",
    [("causal", False), ("sliding_window", False), ("none", True), ("off_by_one", True)],
)
def test_changing_the_future_moves_earlier_logits_only_for_leaky_masks(mask, leaks):
    model = tiny(mask=mask, window=4)
    x = ids(B=1)
    t = 7
    changed = x.clone()
    changed[0, t + 1 :] = (changed[0, t + 1 :] + 1) % 11  # perturb every token after position t
    with torch.no_grad():
        before, after = model(x)[0, : t + 1], model(changed)[0, : t + 1]
    moved = (before - after).abs().max().item()
    if leaks:
        assert moved > 1e-4
    else:
        assert moved == 0.0


def test_shape_contracts_name_the_tensor_and_both_shapes():
    model = tiny()
    with pytest.raises(ShapeError, match=r"idx: expected 2-D shape \(B, T\), got 1-D shape \(16,\)"):
        model(torch.zeros(16, dtype=torch.long))
    with pytest.raises(ShapeError, match=r"max_seq_len=16.*got \(1, 20\)"):
        model(torch.zeros(1, 20, dtype=torch.long))
    with pytest.raises(ShapeError, match="expected dtype"):
        model(torch.zeros(1, 4))
    with pytest.raises(ShapeError, match=r"token ids must be in \[0, vocab_size=11\)"):
        model(torch.full((1, 4), 11))


def test_probes_expose_internals_without_changing_the_output():
    model = tiny()
    x = ids()
    names = probe_names(model)
    assert "blocks.0.attn.hook_weights" in names and "blocks.1.hook_resid_post" in names
    plain = model(x)
    with capture(model, ["blocks.*.attn.hook_*", "blocks.0.mlp.hook_act", "blocks.*.hook_resid_post"]) as cache:
        probed = model(x)
    assert torch.allclose(plain, probed, atol=1e-5)
    assert cache["blocks.0.attn.hook_scores"].shape == (2, 4, 16, 16)
    assert cache["blocks.0.attn.hook_mask"].dtype == torch.bool
    assert torch.allclose(cache["blocks.1.attn.hook_weights"].sum(-1), torch.ones(2, 4, 16), atol=1e-5)
    assert cache["blocks.0.mlp.hook_act"].shape == (2, 16, 128)
    assert cache["blocks.1.hook_resid_post"].norm(dim=-1).shape == (2, 16)
    # Hooks are removed afterwards: the fused path is used again.
    assert not model.blocks[0].attn.explicit()


def test_a_capture_records_its_own_threads_forward_only():
    """The app's sessions share cached models: another session's batched forward, run while one session's hooks
    were on, overwrote the captured stream (a review's logit lens: "zip() argument 2 is longer than argument 1")."""
    import threading

    model, x = tiny(), ids()
    with capture(model, "blocks.0.hook_resid_post") as cache:
        other = threading.Thread(target=lambda: model(torch.cat([x, x, x])))  # another session's batch of 6
        other.start()
        other.join()
        assert "blocks.0.hook_resid_post" not in cache  # the other thread's forward left nothing here
        model(x)
    assert cache["blocks.0.hook_resid_post"].shape[0] == x.shape[0]
    seen = []
    other = threading.Thread(target=lambda: seen.append(attention_forward(model, torch.cat([x, x]))[1][0].shape[0]))
    other.start()
    other.join()
    assert seen == [4]  # attention_forward in a thread of its own sees its own forward


def test_gpt2_initialisation():
    model = TinyGPT(TransformerConfig(vocab_size=65, hidden_dim=128, num_layers=4, num_heads=4))
    assert model.lm_head.weight is model.tok_emb.weight  # tied
    assert model.blocks[0].attn.qkv.weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert model.blocks[0].mlp.proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(8), rel=0.05)


def test_initial_loss_is_close_to_uniform():
    model = tiny(vocab_size=65, max_seq_len=32)
    x = ids(B=8, T=32, vocab=65)
    y = ids(B=8, T=32, vocab=65, seed=1)
    with torch.no_grad():
        loss = F.cross_entropy(model(x).view(-1, 65), y.view(-1)).item()
    assert abs(loss - math.log(65)) < 0.1


def test_a_tiny_batch_overfits():
    torch.manual_seed(0)
    model = TinyGPT(TransformerConfig(vocab_size=11, hidden_dim=32, num_layers=2, num_heads=4, max_seq_len=16))
    x, y = ids(B=4), ids(B=4, seed=3)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(300):
        loss = F.cross_entropy(model(x).view(-1, 11), y.view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05


# ---------------------------------------------------------------- generation


def test_temperature_zero_is_deterministic_and_top_k_one_is_greedy():
    model = tiny()
    prompt = ids(B=1, T=3)
    greedy = model.generate(prompt, 20, temperature=0)
    assert greedy.shape == (1, 23)
    assert torch.equal(greedy, model.generate(prompt, 20, temperature=0))
    top1 = model.generate(prompt, 20, temperature=1.0, top_k=1, generator=torch.Generator().manual_seed(5))
    assert torch.equal(greedy, top1)


def test_same_seed_same_text_different_seed_different_text():
    model = tiny()
    prompt = ids(B=1, T=3)
    a = model.generate(prompt, 40, generator=torch.Generator().manual_seed(1))
    b = model.generate(prompt, 40, generator=torch.Generator().manual_seed(1))
    c = model.generate(prompt, 40, generator=torch.Generator().manual_seed(2))
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize("mask", ["causal", "sliding_window"])
def test_kv_cache_equals_full_recomputation_over_200_tokens(mask):
    model = tiny(mask=mask, window=5, max_seq_len=32)
    prompt = ids(B=2, T=5)
    cached = model.generate(prompt, 200, temperature=0, use_cache=True)
    recomputed = model.generate(prompt, 200, temperature=0, use_cache=False)
    assert torch.equal(cached, recomputed)  # 200 > max_seq_len: the window slides and the cache refills


def test_prompt_longer_than_context_is_cropped_from_the_left():
    model = tiny()
    long_prompt = ids(B=1, T=40)
    out = model.generate(long_prompt, 5, temperature=0)
    assert out.shape == (1, 45)
    assert torch.equal(out[:, 40:], model.generate(long_prompt[:, -16:], 5, temperature=0)[:, 16:])


def test_stream_yields_distributions_and_attention_rows():
    model = tiny()
    steps = list(model.stream(ids(B=1, T=4), 3, temperature=0.5, top_k=3, with_attention=True))
    assert len(steps) == 3
    _, step = steps[-1]
    assert step.probs_raw.shape == (11,) and step.probs.shape == (11,)
    assert (step.probs > 0).sum() <= 3
    assert step.attention.shape == (2, 4, 6)  # (L, H, S): newest position over the 6 positions so far


def test_top_p_keeps_the_nucleus_only():
    from tinygpt.sampling import next_token_probs

    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    probs = next_token_probs(logits, temperature=1.0, top_p=0.7)
    assert probs[0, 2:].sum() == 0 and probs[0, :2].sum() == pytest.approx(1.0)


def test_sampling_from_non_finite_scores_says_why():
    from tinygpt.errors import NonFiniteError
    from tinygpt.sampling import sample_next_token

    with pytest.raises(NonFiniteError, match="not finite"):
        sample_next_token(torch.tensor([[0.0, float("nan"), 1.0]]), temperature=1.0)


def shifted(positions: int = 2, **overrides) -> TinyGPT:
    """A tiny model with token shift whose mixes are not zero (at init they are: the plain block)."""
    model = tiny(token_shift=positions, **overrides)
    with torch.no_grad():
        for block in model.blocks:
            for mix in block.shift_mlp:
                mix.uniform_(0.1, 0.4)
    return model


def test_token_shift_starts_as_the_plain_block_and_only_looks_back():
    plain, shift = tiny(), tiny(token_shift=2)
    x = ids()
    assert torch.allclose(plain(x), shift(x), atol=1e-6)  # mu = 0 at init: the same function, same weights
    model = shifted()
    changed = x.clone()
    changed[:, 9] = (changed[:, 9] + 1) % 11
    before, after = model(x), model(changed)
    assert torch.equal(before[:, :9], after[:, :9])  # earlier positions only: nothing before position 9 moves
    assert not torch.allclose(before[:, 10], after[:, 10])  # and later positions do see position 9


@pytest.mark.parametrize("positions", [1, 3])
def test_token_shift_with_a_kv_cache_equals_full_recomputation(positions):
    model = shifted(positions, max_seq_len=32)
    prompt = ids(B=2, T=2)  # shorter than the shift: the cache starts with fewer positions than it reaches back
    cached = model.generate(prompt, 100, temperature=0, use_cache=True)
    recomputed = model.generate(prompt, 100, temperature=0, use_cache=False)
    assert torch.equal(cached, recomputed)  # the cache carries each layer's last inputs; refills start from zeros


def test_token_shift_vectors_train_with_adamw_without_decay_and_chart_with_their_sublayer():
    from tinygpt.config import TrainConfig
    from tinygpt.trainer import make_optimizer, param_group_name

    model = tiny(token_shift=2)
    optimizer = make_optimizer(model, TrainConfig(optimizer="muon"))
    muon, adamw = optimizer.optimizers
    no_decay = {id(p) for p in adamw.param_groups[1]["params"]}
    assert all(id(mix) in no_decay for block in model.blocks for mix in block.shift_mlp)
    assert all(p.dim() == 2 for p in muon.param_groups[0]["params"])
    assert param_group_name("blocks.1.shift_mlp.0") == "L1.mlp"
    for bad in ("yes", True, -1, 9):
        with pytest.raises(ConfigError, match="token_shift"):
            TransformerConfig(token_shift=bad)
    with pytest.raises(ConfigError, match="past the context"):
        TransformerConfig(token_shift=4, max_seq_len=4)


def greedy_by_full_forwards(model: TinyGPT, prompt: torch.Tensor, new: int) -> torch.Tensor:
    """The plainest generate: the whole model on the cropped context each token, every position's logits."""
    idx = prompt
    for _ in range(new):
        logits = model(idx[:, -model.config.max_seq_len :])  # (B, T, V)
        idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return idx


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"mask": "sliding_window", "window": 5},
        {"mask": "none"},
        {"token_shift": 2},
        {"num_layers": 1},
        {"shape_bug": "softmax_dim"},  # a hook that normalises over the queries: the last block stays whole
    ],
)
def test_sampling_computes_the_newest_position_alone_and_matches_full_forwards(overrides):
    # stream runs the last block on the newest position alone (last_only) and drops the cache once the window
    # slides: the same text as the whole model on the cropped context, window sliding included.
    model = tiny(max_seq_len=12, **overrides)
    prompt = ids(B=2, T=3)
    x = ids(B=2, T=12)
    assert torch.allclose(model(x, last_only=True), model(x)[:, -1:], atol=1e-6)
    cache = "shape_bug" not in overrides  # the bug's rows depend on the queries: one at a time is another model
    assert torch.equal(model.generate(prompt, 40, 0, use_cache=cache), greedy_by_full_forwards(model, prompt, 40))
    steps = list(model.stream(prompt, 30, temperature=0, with_attention=True, last_attention=True))
    assert all(step.attention is None for _, step in steps[:-1])
    assert steps[-1][1].attention.shape == (len(model.blocks), 4, 12)
