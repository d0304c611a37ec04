"""The training step's precision: float32 everywhere but a CUDA GPU, where "auto" takes bfloat16 autocast.

The CUDA half runs in tests/gpu/ on a GPU machine; here the choice itself and the bf16 code path (torch has CPU
autocast) are checked on the CPU."""

import pytest
import torch

from tinygpt.config import ConfigError, TrainConfig
from tinygpt.data import Corpus
from tinygpt.device import autocast_dtype
from tinygpt.model import TinyGPT
from tinygpt.presets import preset
from tinygpt.trainer import Trainer


def test_auto_is_float32_on_cpu_and_bf16_is_what_was_asked():
    assert autocast_dtype("cpu", "auto") is None
    assert autocast_dtype("cpu", "fp32") is None
    assert autocast_dtype("cpu", "bf16") is torch.bfloat16
    assert autocast_dtype("mps", "auto") is None  # an Apple GPU stays float32 unless asked
    with pytest.raises(ConfigError, match="precision must be one of auto, fp32, bf16"):
        TrainConfig(precision="fp16")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (tests/gpu/check.sh runs it there)")
def test_auto_is_bf16_on_a_cuda_gpu_that_has_it():
    assert autocast_dtype("cuda", "auto") is (torch.bfloat16 if torch.cuda.is_bf16_supported() else None)


def test_a_bf16_step_trains_like_float32_and_keeps_float32_weights():
    corpus = Corpus.from_text("the quick brown fox jumps over the lazy dog. " * 60, block_size=16)

    def losses(precision: str) -> tuple[list[float], Trainer]:
        config = preset("demo", precision=precision, max_seq_len=16, max_steps=30)
        config.model.vocab_size = corpus.tokenizer.vocab_size
        torch.manual_seed(0)
        trainer = Trainer(TinyGPT(config.model), config.train, corpus)
        return [trainer.step()["loss"] for _ in range(30)], trainer

    full, _ = losses("fp32")
    half, trainer = losses("bf16")
    assert trainer.autocast is torch.bfloat16
    assert half != full  # the matmuls really ran in bfloat16 ...
    assert half[-1] < half[0] - 1.0  # ... and it learned ...
    assert abs(half[-1] - full[-1]) < 0.05  # ... about as well
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())  # weights and optimizer stay float32
