"""check_model_builds (tinygpt/runs/preflight.py): a zeroed probe point the model does not have is refused before a
run folder exists, quickly, and the caller's random generator is left as it was."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from helpers import tiny_config

from tinygpt.config import ConfigError
from tinygpt.runs.preflight import check_model_builds


def test_a_missing_probe_point_is_refused_and_the_callers_generator_is_untouched(tiny_text):
    config = tiny_config(tiny_text)
    good = dataclasses.replace(config, interventions=dataclasses.replace(config.interventions,
                                                                         zeroed_probes="blocks.0.attn.hook_q"))
    bad = dataclasses.replace(config, interventions=dataclasses.replace(config.interventions,
                                                                        zeroed_probes="blocks.9.attn.hook_q"))
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    check_model_builds(good)  # a small model: built on the CPU (Prepare had waited seconds for the meta device)
    assert torch.equal(torch.rand(3), expected)
    with pytest.raises(ConfigError):
        check_model_builds(bad)
