"""Data-parallel training with PyTorch's own engine: `torchrun --nproc_per_node N -m tinygpt train ...`.

Nothing is invented here. torchrun starts N processes and sets RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR;
`torch.distributed.init_process_group` connects them (NCCL between GPUs, gloo on CPU); `DistributedDataParallel`
all-reduces (averages) the gradients during backward. So after backward every rank holds the *global* gradient, and
the trainer's grad norms, its clipping and its non-finite check all see the global gradient, as they must.

What differs per rank:
- the batch generator is seeded with seed + rank, so each rank draws different windows (N x the batch per step);
- only rank 0 writes the run folder (config, metrics, events, snapshots, checkpoints); the other ranks run the same
  loop into a throwaway folder, because every rank must take the same steps for the all-reduces to line up.

Without torchrun (WORLD_SIZE unset or 1) this is a plain single-process run.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable

import torch

from ..config import RunConfig
from ..errors import TinyGPTError
from .status import read_status
from .store import RunStore


def world() -> tuple[int, int, int]:
    """(rank, world_size, local_rank) from torchrun's environment; (0, 1, 0) when run directly."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


def make_ddp_preparer(rank: int, local_rank: int, device_type: str) -> Callable:
    """A hook for the loop: give the trainer a DDP-wrapped forward and a per-rank batch stream."""

    def prepare(trainer) -> None:
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [local_rank] if device_type == "cuda" else None
        trainer.forward_model = DistributedDataParallel(trainer.model, device_ids=device_ids)
        trainer.batch_generator.manual_seed(trainer.config.seed + rank)

    return prepare


def run_training_maybe_distributed(
    store: RunStore,
    config: RunConfig,
    *,
    run_id: str | None = None,
    resume_from=None,
    threads: int | None = None,
    progress: Callable[[int, int], Callable[[dict], None]] | None = None,
) -> int:
    """Train into `store` (a new run, or `run_id` resumed); under torchrun, as one rank of a DDP group.

    Returns a process exit status: 0 for finished/stopped/paused, 1 for failed/diverged.
    """
    from .loop import run_training
    from .resume import LATEST

    rank, world_size, local_rank = world()
    distributed = world_size > 1
    if distributed:
        import torch.distributed as dist

        wants_cuda = config.train.device in ("auto", "cuda") and torch.cuda.is_available()
        backend = "nccl" if wants_cuda else "gloo"
        if wants_cuda:
            torch.cuda.set_device(local_rank)
            config.train.device = "cuda"
        elif config.train.device == "auto":
            config.train.device = "cpu"
        dist.init_process_group(backend=backend)
    scratch = None
    try:
        if rank == 0:
            if run_id is None:
                with store.create(config.to_dict(), owner="cli") as writer:
                    run_dir = writer.run_dir
            else:
                run_dir = store.path(run_id)
            announced = [run_dir.name]
        else:
            announced = [None]
        if distributed:
            dist.broadcast_object_list(announced, src=0)
        if rank == 0:
            label = _labelled(store, announced[0])  # "ID (NAME)": the name as `runs` and the app show it
            print(f"run {label} in {store.root}" + (f" ({world_size} ranks)" if distributed else ""), flush=True)
        else:
            # Same steps, nothing kept: a private copy of the run folder's inputs (resume needs the checkpoint).
            scratch = tempfile.mkdtemp(prefix=f"tinygpt-rank{rank}-")
            source = store.path(announced[0])
            run_dir = shutil.copytree(source, os.path.join(scratch, announced[0]))
        if distributed:
            # Rank 0 starts writing into the run folder as soon as it trains: wait until every copy is taken (a copy
            # racing those writes failed on a vanished temp file).
            dist.barrier()
        device = f"cuda:{local_rank}" if distributed and config.train.device == "cuda" else None
        prepare = make_ddp_preparer(rank, local_rank, config.train.device) if distributed else None
        on_record = progress(config.train.max_steps, rank) if progress else None
        previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
        # Ctrl-C and SIGTERM (`kill`, torchrun) stop with a checkpoint. A single process stops between two steps
        # (SignalStop), so the checkpoint holds a consistent state and a resume continues the same curve: an
        # interrupt in the middle of a step used to save the batch stream one batch ahead of the weights. Ranks of
        # a DDP group stop at once instead: waiting for a step boundary could leave the others in an all-reduce.
        # Handlers are installed explicitly because a process started in the background inherits SIGINT ignored.
        stopper = None if distributed else SignalStop()
        handler = stopper.handle if stopper is not None else _raise_interrupt
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
        try:
            state = run_training(
                run_dir,
                config,
                stopper,
                resume_from=LATEST if resume_from == "latest" else resume_from,
                device=device,
                threads=threads,
                on_record=on_record,
                prepare=prepare,
                holder="python -m tinygpt train" + (f" (rank {rank} of {world_size})" if distributed else ""),
            )
        finally:
            signal.signal(signal.SIGTERM, previous[0])
            signal.signal(signal.SIGINT, previous[1])
        failed = state in ("failed", "diverged")
        if rank == 0:  # the reason from the run's status, on one line: "run X: failed: <why>"
            reason = " ".join(str(read_status(run_dir).get("reason") or state).split())
            reason = reason if reason.startswith(state) else f"{state}: {reason}"
            print(
                f"run {_labelled(store, announced[0])}: {reason}", file=sys.stderr if failed else sys.stdout, flush=True
            )
        return 1 if failed else 0
    except TinyGPTError:
        raise
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        if distributed:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


class SignalStop:
    """Ctrl-C (SIGINT) and SIGTERM as a loop Control: a signal while training becomes a "stop" command the loop
    takes between two steps. A signal before the loop's first poll (while it loads the data and builds the model:
    nothing to save yet) or a second signal (a step that takes too long) interrupts at once, as KeyboardInterrupt."""

    interactive = False  # only stop ever comes: a diverged run ends (tinygpt.runs.loop)

    def __init__(self) -> None:
        self.polled = False  # the loop is stepping: a signal can wait for the next step boundary
        self.signal: int | None = None

    def handle(self, signum, frame) -> None:
        if not self.polled or self.signal is not None:
            raise KeyboardInterrupt
        self.signal = signum

    def poll(self, timeout: float) -> list[dict]:
        self.polled = True
        if self.signal is None and timeout > 0:
            time.sleep(timeout)  # nothing else can come: only a signal, which ends the sleep early
        if self.signal is None:
            return []
        return [{"cmd": "stop", "reason": f"stopped: interrupted ({signal.Signals(self.signal).name})"}]


def _labelled(store, run_id: str) -> str:
    """A run's id with its readable name beside it; the id stays the line's second word, for scripts and --resume."""
    from .names import store_names

    name = store_names(store.root).get(run_id)
    return f"{run_id} ({name})" if name else run_id
