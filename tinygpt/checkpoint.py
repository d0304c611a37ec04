"""Checkpoints: tensors in safetensors, everything else in JSON. Loading never unpickles.

A checkpoint is two files with the same stem:

    step_00000500.safetensors   model weights ("model.*"), optimizer state ("optim.<i>.exp_avg", ...,
                                Muon's "optim.<i>.momentum_buffer"), the batch generator's state ("rng.batch"), the
                                weights' running average where the run keeps one ("average.<i>")
                                as uint8 tensors (older checkpoints also hold "rng.eval", no longer needed)
    step_00000500.json          format, version, step, run config, vocabulary, the optimizer's scalar state
                                (per-parameter step counts, hyper-parameters), and the safetensors file's size

The JSON is written last, so a checkpoint without its JSON is incomplete and ignored. A truncated, corrupt or
mismatched file raises `CheckpointError` saying which file and what to do. `torch.load` is never used: a pickle
can run arbitrary code, and checkpoints travel between workshop machines.

The tied LM head is stored once (as tok_emb.weight): safetensors refuses aliased tensors, and the model re-ties it.

Where a run keeps its checkpoints, and which of them are complete, is the run folder's business
(tinygpt/runs/files.py); getting a run's model back from its folder is tinygpt/runs/models.py (`load_model`)."""

from __future__ import annotations

import base64
import errno
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .config import RunConfig
from .errors import CheckpointError
from .interventions import model_for_run
from .model import TinyGPT

FORMAT = "tinygpt-checkpoint"
VERSION = 1


@dataclass
class Checkpoint:
    step: int
    config: RunConfig
    vocab: list[str]
    model_state: dict[str, torch.Tensor]
    trainer_state: dict[str, Any] | None  # None for weights-only checkpoints
    extra: dict[str, Any]

    def build_model(self, device: torch.device | str = "cpu") -> TinyGPT:
        """The checkpoint's model, its run's permanent interventions attached (a detached residual stays so)."""
        model = model_for_run(self.config)
        load_model_state(model, self.model_state)
        return model.to(device)


def save_checkpoint(
    stem: Path,
    model: TinyGPT,
    config: RunConfig,
    vocab: list[str],
    step: int,
    trainer_state: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write stem.safetensors then stem.json (atomically each). Returns the JSON path."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    tensors = {
        f"model.{k}": v.detach().to("cpu").contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"
    }  # tied to tok_emb.weight
    meta: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "step": int(step),
        "config": config.to_dict(),
        "vocab": list(vocab),
        "extra": extra or {},
    }
    if trainer_state is not None:
        optim = trainer_state["optimizer"]
        scalars: dict[str, dict[str, Any]] = {}
        for index, slot in optim["state"].items():
            for key, value in slot.items():
                if torch.is_tensor(value) and value.dim() > 0:
                    tensors[f"optim.{index}.{key}"] = value.detach().to("cpu").contiguous()
                else:
                    scalars.setdefault(str(index), {})[key] = float(value)
        meta["optimizer"] = {"param_groups": optim["param_groups"], "scalars": scalars}
        tensors["rng.batch"] = trainer_state["batch_generator"]
        for index, tensor in enumerate(trainer_state.get("average") or []):  # config.weight_average's running average
            tensors[f"average.{index}"] = tensor.detach().to("cpu").contiguous()
        meta["trainer_step"] = int(trainer_state["step"])
    weights_path = stem.with_suffix(".safetensors")
    json_path = stem.with_suffix(".json")
    tmp = weights_path.with_suffix(".safetensors.tmp")
    try:
        save_file(tensors, str(tmp))
        os.replace(tmp, weights_path)
        meta["weights_bytes"] = weights_path.stat().st_size
        tmp = json_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta))
        os.replace(tmp, json_path)
    except (OSError, SafetensorError) as exc:
        tmp.unlink(missing_ok=True)  # a full disk gets its space back; the checkpoint is simply not there
        if isinstance(exc, OSError):
            raise
        # safetensors reports the OS error inside its own message: keep it an OSError, so callers say "disk full"
        if "No space left" in str(exc) or "StorageFull" in str(exc):
            raise OSError(errno.ENOSPC, "No space left on device", str(weights_path)) from exc
        raise OSError(errno.EIO, f"cannot write {weights_path}: {exc}") from exc
    return json_path


def load_checkpoint(stem: Path | str, device: torch.device | str = "cpu") -> Checkpoint:
    """Read a checkpoint written by `save_checkpoint` (give the stem or either file)."""
    stem = Path(stem)
    if stem.suffix in (".json", ".safetensors"):
        stem = stem.with_suffix("")
    json_path, weights_path = stem.with_suffix(".json"), stem.with_suffix(".safetensors")
    try:
        meta = json.loads(json_path.read_text())
    except FileNotFoundError as exc:
        raise CheckpointError(
            f"checkpoint {json_path} not found (it is written last, so the save may have been "
            "interrupted): pick an earlier checkpoint."
        ) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint metadata {json_path} is corrupt ({exc}): pick another checkpoint.") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{json_path} is not a tinygpt checkpoint.")
    if meta.get("version") != VERSION:
        raise CheckpointError(
            f"{json_path} has checkpoint version {meta.get('version')}; this tinygpt reads {VERSION}."
        )
    if not weights_path.exists():
        raise CheckpointError(f"weights file {weights_path} is missing: the checkpoint is incomplete.")
    if weights_path.stat().st_size != meta.get("weights_bytes"):
        raise CheckpointError(
            f"weights file {weights_path} has {weights_path.stat().st_size} bytes, expected "
            f"{meta.get('weights_bytes')}: it was truncated or replaced. Pick an earlier checkpoint."
        )
    try:
        tensors = load_file(str(weights_path), device=str(device))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"weights file {weights_path} is corrupt ({exc}): pick an earlier checkpoint.") from exc
    config = RunConfig.from_dict(meta["config"])
    model_state = {k[len("model.") :]: v for k, v in tensors.items() if k.startswith("model.")}
    trainer_state = None
    if "optimizer" in meta:
        state: dict[int, dict[str, Any]] = {}
        for key, value in tensors.items():
            if key.startswith("optim."):
                _, index, name = key.split(".", 2)
                state.setdefault(int(index), {})[name] = value
        for index, scalars in meta["optimizer"]["scalars"].items():
            for name, value in scalars.items():
                state.setdefault(int(index), {})[name] = torch.tensor(value, dtype=torch.float32)
        trainer_state = {
            "step": meta["trainer_step"],
            "optimizer": {"state": state, "param_groups": meta["optimizer"]["param_groups"]},
            "batch_generator": tensors["rng.batch"].cpu(),
        }
        averaged = sorted((int(k.split(".")[1]), v) for k, v in tensors.items() if k.startswith("average."))
        if averaged:
            trainer_state["average"] = [v for _, v in averaged]
    return Checkpoint(
        step=int(meta["step"]),
        config=config,
        vocab=list(meta["vocab"]),
        model_state=model_state,
        trainer_state=trainer_state,
        extra=meta.get("extra", {}),
    )


def load_model_state(model: TinyGPT, state: dict[str, torch.Tensor]) -> None:
    """Copy weights into a model, naming any missing, unexpected or mis-shaped tensor."""
    expected = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"checkpoint does not match this model: missing {missing[:5]}, unexpected {unexpected[:5]}. "
            "It was saved from a different architecture."
        )
    for name, tensor in state.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise CheckpointError(
                f"checkpoint tensor {name} has shape {tuple(tensor.shape)}, the model expects "
                f"{tuple(expected[name].shape)}: it was saved with a different configuration."
            )
    model.load_state_dict({**state, "lm_head.weight": state["tok_emb.weight"]})


def rng_to_text(state: torch.Tensor) -> str:
    """A generator's state (a uint8 tensor, e.g. torch.get_rng_state()) as text for a checkpoint's JSON."""
    return base64.b64encode(state.numpy().tobytes()).decode("ascii")


def rng_from_text(text: str) -> torch.Tensor:
    return torch.frombuffer(bytearray(base64.b64decode(text)), dtype=torch.uint8)
