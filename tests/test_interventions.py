"""The lab's switches live at probe points (tinygpt/interventions.py), not as branches in the model's forward."""

import inspect

import pytest
import torch

from tinygpt import model as model_module
from tinygpt.config import TransformerConfig
from tinygpt.errors import ShapeError
from tinygpt.model import TinyGPT
from tinygpt.probes import attention_forward, capture

SIZES = dict(vocab_size=11, hidden_dim=32, num_layers=2, num_heads=4, max_seq_len=16)
LAB_SWITCHES = ("shape_bug", "shape_contracts", "ablated_heads", "detach_residual", "zeroed_probes")


def ids(B=2, T=16, seed=0):
    return torch.randint(0, 11, (B, T), generator=torch.Generator().manual_seed(seed))


def test_the_model_file_names_no_lab_switch():
    source = inspect.getsource(model_module)
    assert [name for name in LAB_SWITCHES if name in source] == []


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
    torch.manual_seed(0)
    buggy = TinyGPT(TransformerConfig(**SIZES, shape_bug="softmax_dim")).eval()
    x = ids()
    _, maps = attention_forward(buggy, x)  # L x (B, H, T, T)
    assert (maps[0].sum(-1) - 1).abs().max() > 0.01
    changed = x.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 11  # only the last token differs
    first = buggy(x)[:, :-1]
    assert not torch.allclose(first, buggy(changed)[:, :-1])  # earlier positions moved: a future leak


def test_shape_contracts_stop_the_buggy_model_at_its_first_forward():
    buggy = TinyGPT(TransformerConfig(**SIZES, shape_bug="softmax_dim", shape_contracts=True))
    with pytest.raises(ShapeError, match=r"softmax row sums: .*expected \(B, H, T, 1\)"):
        buggy(ids())
    TinyGPT(TransformerConfig(**SIZES, shape_contracts=True))(ids())  # a correct model passes its contracts


def test_a_detached_skip_path_carries_values_but_no_gradient():
    torch.manual_seed(0)
    plain = TinyGPT(TransformerConfig(**SIZES))
    torch.manual_seed(0)
    detached = TinyGPT(TransformerConfig(**SIZES, detach_residual=True))
    assert torch.equal(plain(ids()), detached(ids()))  # the same numbers forward
    grads = {}
    for name, model in (("plain", plain), ("detached", detached)):
        model(ids()).sum().backward()
        grads[name] = model.tok_emb.weight.grad.norm().item()
    assert grads["detached"] < grads["plain"]
