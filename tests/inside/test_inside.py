"""tinygpt/inside/maps.py: the numbers the Attention page draws come from the model's own forward pass."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tinygpt.attention import build_mask
from tinygpt.config import TransformerConfig
from tinygpt.inside import maps as inside
from tinygpt.model import TinyGPT
from tinygpt.probes import attention_forward
from tinygpt.tokenizer import CharTokenizer


@pytest.fixture
def model_and_tokenizer():
    torch.manual_seed(0)
    tokenizer = CharTokenizer(list("abcdefgh "))
    config = TransformerConfig(vocab_size=9, hidden_dim=16, num_layers=2, num_heads=2, max_seq_len=12)
    return TinyGPT(config).eval(), tokenizer


def test_attention_maps_are_the_models_own_weights(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    idx, tokens = inside.encode_probe(model, tokenizer, "abc defgh abcdef")
    assert idx.shape == (1, 12) and "".join(tokens) == "abc defgh abcdef"[-12:]
    with torch.no_grad():
        _, maps = attention_forward(model, idx)
    expected = torch.stack([m[0] for m in maps]).numpy()
    np.testing.assert_array_equal(inside.attention_maps(model, idx), expected)


def test_an_empty_probe_is_refused_in_plain_words_before_the_model(model_and_tokenizer):
    """An empty probe was (1, 0) ids, and the model's "idx: expected shape (B, T)" reached the Circuits page."""
    from tinygpt.errors import TinyGPTError

    model, tokenizer = model_and_tokenizer
    with pytest.raises(TinyGPTError, match="Type a probe text: it is empty"):
        inside.encode_probe(model, tokenizer, "")


@pytest.mark.parametrize("mask", ["causal", "sliding_window", "off_by_one"])
def test_attention_steps_chain_from_qk_to_the_weights(model_and_tokenizer, mask):
    model, tokenizer = model_and_tokenizer
    model.config.mask, model.config.window, model.config.attn_scale_mult = mask, 4, 1.5
    idx, _ = inside.encode_probe(model, tokenizer, "abcabcabc de")
    d = inside.attention_steps(model, idx, layer=1, head=1)
    np.testing.assert_allclose(d["scaled"], d["qk"] * model.config.scale)
    np.testing.assert_array_equal(d["mask"], build_mask(mask, 12, 4).numpy())
    softmax = torch.softmax(torch.from_numpy(d["masked"]), dim=-1).numpy()
    np.testing.assert_allclose(d["weights"], softmax, atol=1e-5)  # the model's float32 weights
    assert d["mask_mode"] == mask and d["scale"] == pytest.approx(1.5 / math.sqrt(8))
    with torch.no_grad():
        _, maps = attention_forward(model, idx)
    np.testing.assert_allclose(d["weights"], maps[1][0, 1].double().numpy())


def test_head_stats_entropy_and_max_weight():
    uniform = np.full((1, 1, 4, 4), 0.25)
    one_hot = np.tile(np.eye(4), (1, 1, 1, 1))
    [u] = inside.head_stats(uniform)
    [o] = inside.head_stats(one_hot)
    assert u["entropy"] == pytest.approx(math.log(4)) and u["max_weight"] == pytest.approx(0.25)
    assert o["entropy"] == pytest.approx(0.0, abs=1e-6) and o["max_weight"] == 1.0
    assert {(r["layer"], r["head"]) for r in inside.head_stats(np.zeros((2, 3, 4, 4)))} == {
        (layer, head) for layer in range(2) for head in range(3)
    }


def test_uniform_entropy_follows_the_mask():
    causal = inside.uniform_entropy(build_mask("causal", 32).numpy())
    assert causal == pytest.approx(np.mean(np.log(np.arange(1, 33))))
    assert causal == pytest.approx(2.55, abs=0.01)  # not ln(32) = 3.47
    assert inside.uniform_entropy(build_mask("none", 32).numpy()) == pytest.approx(math.log(32))


def test_stream_text_yields_characters_and_the_last_steps_details(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    last: dict = {}
    text = "".join(inside.stream_text(model, tokenizer, "abc", 5, 1.0, None, None, 0, last))
    assert len(text) == 5 and set(text) <= set(tokenizer.vocab)
    assert last["probs"].shape == (9,) and last["attention"].shape[:2] == (2, 2) and last["char"] == text[-1]


def test_stream_text_refuses_a_bad_prompt_at_the_call_before_any_character(model_and_tokenizer):
    """Review 2 (stop 52): the Sample page wrote "Generated (...)" above "the prompt is empty": the generator raised
    only at its first character, after the page had drawn the header. The call itself raises now."""
    from tinygpt.errors import TinyGPTError

    model, tokenizer = model_and_tokenizer
    with pytest.raises(TinyGPTError, match="the prompt is empty"):
        inside.stream_text(model, tokenizer, "", 5, 1.0, None, None, 0, {})  # not iterated: the call raises
