"""The lab's switches are attached to a built model from outside (tinygpt/interventions.py), at its probe points:
the model file knows none of them; permanent ones (a run's) are told apart from temporary ones (one measurement's)."""

import inspect

import pytest
import torch
import torch.nn.functional as F

from tinygpt import model as model_module
from tinygpt.config import INTERVENTION_FIELDS, ConfigError, Interventions, RunConfig, TransformerConfig
from tinygpt.errors import ShapeError
from tinygpt.interventions import NONE, attach, attached, detach, model_for_run, temporary
from tinygpt.model import TinyGPT
from tinygpt.probes import Probe, attention_forward, capture

SIZES = dict(vocab_size=11, hidden_dim=32, num_layers=2, num_heads=4, max_seq_len=16)


def ids(B=2, T=16, seed=0):
    return torch.randint(0, 11, (B, T), generator=torch.Generator().manual_seed(seed))


def built(seed=0, sizes=SIZES, **switches) -> TinyGPT:
    """A model of `sizes` from `seed`, with `switches` attached as a run's permanent interventions."""
    torch.manual_seed(seed)
    model = TinyGPT(TransformerConfig(**sizes))
    attach(model, Interventions(**switches))
    return model


def hooks_of(model: TinyGPT) -> dict[str, list]:
    """Every probe point's forward hooks, by name: what the model has attached, to compare before and after."""
    return {name: list(m._forward_hooks.values()) for name, m in model.named_modules() if isinstance(m, Probe)}


def test_the_model_file_names_no_lab_switch_and_attaches_nothing():
    source = inspect.getsource(model_module)
    assert [name for name in INTERVENTION_FIELDS if name in source] == []
    assert "interventions" not in source.replace("interventions.py", "")  # it neither imports nor calls them
    assert set(INTERVENTION_FIELDS).isdisjoint(f for f in TransformerConfig.__dataclass_fields__)
    plain = TinyGPT(TransformerConfig(**SIZES))
    assert all(hooks == [] for hooks in hooks_of(plain).values()) and attached(plain) == NONE


def test_an_ablated_head_writes_nothing_and_the_knob_is_live():
    torch.manual_seed(0)
    model = TinyGPT(TransformerConfig(**SIZES)).eval()
    D = model.config.head_dim
    with capture(model, "blocks.1.attn.hook_out") as before:
        plain = model(ids())
    assert before["blocks.1.attn.hook_out"][..., 2 * D : 3 * D].abs().max() > 0
    model.config.ablated_heads = "L1H2"  # changed on the built model, as the trainer does between steps
    with capture(model, "blocks.1.attn.hook_out") as after:
        ablated = model(ids())
    out = after["blocks.1.attn.hook_out"]  # (B, T, C): head 2 owns columns 2D .. 3D-1
    assert out[..., 2 * D : 3 * D].abs().max() == 0
    assert torch.equal(out[..., : 2 * D], before["blocks.1.attn.hook_out"][..., : 2 * D])
    assert not torch.allclose(plain, ablated)
    model.config.ablated_heads = ""
    assert torch.equal(model(ids()), plain)


def test_the_shape_bug_breaks_the_rows_and_reads_the_future():
    buggy = built(shape_bug="softmax_dim").eval()
    x = ids()
    _, maps = attention_forward(buggy, x)  # L x (B, H, T, T)
    assert (maps[0].sum(-1) - 1).abs().max() > 0.01
    changed = x.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 11  # only the last token differs
    first = buggy(x)[:, :-1]
    assert not torch.allclose(first, buggy(changed)[:, :-1])  # earlier positions moved: a future leak


def test_the_shape_bug_generates_without_a_cache_as_the_model_itself_computes():
    """A review: the silent-bug run's samples came from the KV cache, which the bug's sum over the queries makes
    inexact ("dst)))))))))" where the model writes "dst)"): with the bug attached, a cache is never used."""
    buggy = built(shape_bug="softmax_dim").eval()
    prompt = ids(B=1, T=4)

    def greedy(use_cache: bool) -> list[int]:
        return [int(t) for t, _ in buggy.stream(prompt, 8, temperature=0.0, use_cache=use_cache, details=False)]

    assert greedy(True) == greedy(False)
    assert not buggy._use_cache(True)
    detach(buggy)
    assert buggy._use_cache(True)  # the plain transformer again: its cache is exact


def test_shape_contracts_stop_the_buggy_model_at_its_first_forward():
    buggy = built(shape_bug="softmax_dim", shape_contracts=True)
    with pytest.raises(ShapeError, match=r"softmax row sums: .*expected \(B, H, T, 1\)"):
        buggy(ids())
    built(shape_contracts=True)(ids())  # a correct model passes its contracts


def test_a_detached_skip_path_carries_values_but_no_gradient():
    plain, detached = built(), built(detach_residual=True)
    assert torch.equal(plain(ids()), detached(ids()))  # the same numbers forward
    grads = {}
    for name, model in (("plain", plain), ("detached", detached)):
        model(ids()).sum().backward()
        grads[name] = model.tok_emb.weight.grad.norm().item()
    assert grads["detached"] < grads["plain"]


def test_detached_residual_starves_the_first_layer():
    x, y = ids(B=4), ids(B=4, seed=3)
    norms = {}
    for detach_it in (False, True):
        model = built(sizes={**SIZES, "num_layers": 4}, detach_residual=detach_it)
        torch.manual_seed(0)
        F.cross_entropy(model(x).view(-1, 11), y.view(-1)).backward()
        norms[detach_it] = model.blocks[0].attn.qkv.weight.grad.norm().item()
    assert norms[True] < norms[False] * 1e-2


def test_a_zeroed_positional_embedding_makes_one_layer_blind_to_order():
    """Without positions one causal attention layer sees its past as a bag: swapping two earlier tokens leaves the
    last position's logits unchanged, which learned positions do not; and the zeroed embedding gets no gradient."""
    sizes = dict(vocab_size=11, hidden_dim=16, num_layers=1, num_heads=2, max_seq_len=8)
    idx = torch.tensor([[1, 2, 3, 4, 5, 6]])
    swapped = torch.tensor([[2, 1, 3, 4, 5, 6]])  # the first two tokens change places
    with_positions = built(sizes=sizes)
    assert not torch.allclose(with_positions(idx)[0, -1], with_positions(swapped)[0, -1], atol=1e-5)
    blind = built(sizes=sizes, zeroed_probes="hook_pos")
    blind.load_state_dict(with_positions.state_dict())  # the same weights: only the probe point differs
    torch.testing.assert_close(blind(idx)[0, -1], blind(swapped)[0, -1], atol=1e-5, rtol=0)
    blind(idx).sum().backward()
    assert blind.pos_emb.weight.grad is None or blind.pos_emb.weight.grad.abs().max() == 0
    with pytest.raises(ConfigError, match="no probe point"):
        built(sizes=sizes, zeroed_probes="hook_elsewhere")


def test_the_switches_are_validated_like_every_config():
    with pytest.raises(ConfigError, match="shape_bug must be one of none, softmax_dim"):
        Interventions(shape_bug="softmax")
    with pytest.raises(ConfigError, match="zeroed_probes is 10,001 characters long"):
        Interventions(zeroed_probes="x" * 10_001)  # the shared MAX_TEXT_FIELDS row
    with pytest.raises(ConfigError, match="unknown Interventions field"):
        Interventions.from_dict({"detach": True})
    with pytest.raises(AttributeError):
        Interventions().detach_residual = True  # frozen: a run's definition, never a live knob


def test_a_run_model_carries_its_permanent_interventions_and_detach_makes_it_plain():
    config = RunConfig(model=TransformerConfig(**SIZES), interventions=Interventions(zeroed_probes="hook_pos"))
    torch.manual_seed(0)
    blind = model_for_run(config)
    assert attached(blind) == config.interventions
    torch.manual_seed(0)
    plain = TinyGPT(config.model)  # the same weights: attaching draws no random numbers
    assert not torch.equal(blind(ids()), plain(ids()))
    with pytest.raises(ValueError, match="already"):
        attach(blind, config.interventions)  # twice would zero twice: refused
    detach(blind)
    assert attached(blind) == NONE and all(hooks == [] for hooks in hooks_of(blind).values())
    assert torch.equal(blind(ids()), plain(ids()))


def test_a_temporary_hook_leaves_the_model_exactly_as_before():
    model = built(detach_residual=True, shape_bug="softmax_dim").eval()
    before, logits = hooks_of(model), model(ids())
    zero = {"blocks.0.attn.hook_out": lambda _m, _i, out: torch.zeros_like(out)}  # an ablation for one measurement
    with temporary(model, zero):
        assert not torch.equal(model(ids()), logits)
        assert len(hooks_of(model)["blocks.0.attn.hook_out"]) == 1
    assert hooks_of(model) == before  # the permanent hooks, the same objects in the same order; nothing else
    assert attached(model) == Interventions(detach_residual=True, shape_bug="softmax_dim")
    assert torch.equal(model(ids()), logits)
    with pytest.raises(RuntimeError), temporary(model, zero):
        raise RuntimeError("a measurement that fails")
    assert hooks_of(model) == before  # removed whatever happens
    with pytest.raises(KeyError):
        with temporary(model, {"blocks.9.hook_nowhere": zero["blocks.0.attn.hook_out"]}):
            pass
    assert hooks_of(model) == before
