"""The one training loop: a config goes in, a run folder comes out, and commands steer it between steps.

`run_training` is UI-free. The app runs it in a worker process per run (tinygpt.runs.scheduler), the CLI runs it in the
foreground, and a later torchrun launcher runs it once per rank: one loop, so what the app shows is what the CLI
does. Between two optimisation steps it

    1. polls its `Control` for commands (pause, resume, step n, stop, knob), never blocking while running;
    2. takes one `Trainer.step()` and appends its record to metrics.jsonl;
    3. publishes on schedule: eval points, attention snapshots of the probe text (also at step 0, before
       training), a sample text, checkpoints (also at pause, stop and finish), clip and non-finite events;
    4. rewrites status.json at most `STATUS_INTERVAL` apart (a whole-file rewrite, so not every step).

Publishing is cheap by construction (a JSON line per step, status.json at most 4 times a second, a (1, T) probe forward
every 10 steps, a 3 ms checkpoint): a worker publishing everything ran within 2-3% of a bare `Trainer.step()` loop doing
the same steps, evals and samples (tinygpt.bench.worker). The costly one is the sample text (200 characters cost ~15
demo steps), so samples run on a time budget: a due sample waits until the time spent sampling, this one included, stays
under `SAMPLE_BUDGET` (3%) of the time spent training. A new run samples at step 0 (the untrained model's babble, and
the first cost measurement), and the last step always gets one.

Commands: {"cmd": "pause"}, {"cmd": "resume"}, {"cmd": "step", "n": 5} (while paused: exactly n steps, then paused
again), {"cmd": "stop"}, KnobChange("mask", "none", request="a1b2c3") (tinygpt.runs.control), and the manager's {"cmd":
"release", "reason": ...} (checkpoint and end, resumable: the lease, or the server going away). Every knob command is
answered with "knob" events carrying its request id: one per knob changed (ok, old, new; old == new if the value was
already set), or one refusal (ok False, error), so a page waiting for the answer always gets one
(tinygpt.runs.knobs.knob_answer). The Trainer decides what changes (learning_rate moves min_lr).

States (status.json): starting -> running <-> paused -> finished | stopped | diverged | failed, each with a human
reason, and each change a "state" event (who paused or resumed it, at which step). A non-finite loss or gradient is
never applied (the Trainer skips the update); the loop records which tensor went bad, checkpoints, marks the run
diverged and waits paused for a command (turn the knob back, resume). Resuming from a checkpoint continues the same loss
curve exactly on CPU: model, optimizer, batch and eval generators and torch's global generator (dropout) are all
restored, and the schedule depends only on the step. Left out: gradient accumulation, a live "extend max_steps".
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..checkpoint import Checkpoint, load_model_state, rng_from_text, rng_to_text, save_checkpoint
from ..config import RunConfig
from ..data import load_corpus
from ..device import resolve_device
from ..errors import CheckpointError, NonFiniteError, ResourceError, ShapeError, TinyGPTError
from ..flops import train_flops_per_token
from ..inside.heads import induction_probe, snapshot_scores
from ..inside.maps import attention_maps
from ..interventions import model_for_run
from ..trainer import SPLITS, Trainer
from .clip_events import ClipTracker
from .clock import TrainClock, load_average, sample_estimate, trained_until
from .control import COMMANDS, Control, KnobChange, NoControl, as_knob_change
from .corpus import corpus_config
from .divergence import DIVERGE_PATIENCE, blowup_reason, loss_limit, nonfinite_reason, released_as
from .files import (
    checkpoint_stem,
    delete_checkpoint,
    list_checkpoints,
    os_error_message,
    read_config,
    read_events,
    read_scores,
)
from .keeps import kept_checkpoints
from .lock import acquire_writer_lock
from .models import pick_checkpoint
from .moments import Moments
from .peak import machine_peak
from .preflight import check_memory, check_threads
from .retention import checkpoints_to_drop
from .status import best_val_until, last_metric_step, rewind
from .writer import RunWriter, write_failure

STATUS_INTERVAL = 0.25  # s between status.json rewrites: the page polls at ~2 Hz, so 4 Hz is always fresh
PAUSED_POLL = 0.5  # s a paused loop blocks waiting for a command before looking again
SAMPLE_BUDGET = 0.03  # at most this fraction of training time goes to published samples (see the docstring)
SAMPLE_CHARS = 200  # characters per published sample: two or three lines of Shakespeare
SAMPLE_TEMPERATURE = 0.8  # a little sharper than the model's distribution: fewer typos, still varied
SAMPLE_SEED = 1234  # the same seed at every step, so samples differ only because the model changed
SAMPLE_PROMPT_CHARS = 16  # the sample continues the first characters of the probe text


class _Loop:
    """One run's state between steps. Everything the loop publishes goes through `self.writer`."""

    def __init__(self, run_dir: Path, config: RunConfig, control: Control, on_record, device):
        self.run_dir, self.config, self.control = run_dir, config, control
        self.on_record = on_record
        self.device_name = device
        self.writer = RunWriter(run_dir)
        self.moments = Moments()  # what retention keeps snapshots and checkpoints around; a resume reads it back
        self.paused, self.budget = False, 0  # budget: steps still to take after a "step n" while paused
        self.early: list = []  # commands other than knobs that came with a fresh run's queued knob changes
        self.exit: tuple[str, str] | None = None  # (state, reason) once the loop should end
        self.last_status = 0.0
        self.clock, self.tokens_per_s = TrainClock(), None  # seconds trained (pauses left out); the last tokens/s
        self.best_val: float | None = None
        self.clipping = ClipTracker(self.event)  # clip events: one when a stretch starts, one when it ends
        self.checkpointed_step: int | None = None
        self.diverged = ""  # why it diverged, "" if not (kept, state and reason, if the process is released)
        self.blowup: list[float] = []  # losses of the current stretch of steps above the divergence limit
        self.loss_limit = math.inf  # DIVERGE_LOSS_FACTOR x ln(V), set once the vocabulary is known
        self.trainer: Trainer | None = None
        self.ready = False  # setup finished: model, vocab and trainer exist, so a checkpoint can be written
        self.prepare = None  # optional hook run on the new Trainer (DDP wrapping)
        self.sample_due = False  # a sample is scheduled but waits for the time budget
        self.train_seconds = self.sample_seconds = 0.0  # for SAMPLE_BUDGET
        self.sample_cost = 0.0  # s the last sample took: the next one is only taken if the budget has space for it
        self.step_pace = self.sample_pace = None  # s a step (running mean), now and at the last sample: sample_estimate

    # ---------------------------------------------------------------- setup

    def setup(self, ckpt: Checkpoint | None, damaged: list[tuple[int, str]]) -> None:
        """Build everything for the first step: fresh, or from `ckpt` (pick_checkpoint's choice; `damaged` lists
        the newer checkpoints that could not be loaded, for the record)."""
        self.status("starting", "loading the data and building the model", force=True, pid=os.getpid())
        device = resolve_device(self.device_name or self.config.train.device)
        if ckpt is not None:  # its config carries the knobs as they were; max_steps may have been raised since
            ckpt.config.train.max_steps = self.config.train.max_steps
            self.config = ckpt.config
        config = self.config
        corpus = load_corpus(corpus_config(self.run_dir, config), config.model.max_seq_len)
        vocab = corpus.tokenizer.vocab
        if ckpt is not None and ckpt.vocab != vocab:
            raise CheckpointError("the corpus no longer has the vocabulary this checkpoint was trained with.")
        config.model.vocab_size = len(vocab)
        check_memory(config, str(device))  # before the model exists: a 160 GB attention is refused, not tried
        if len(vocab) > 1:
            self.loss_limit = loss_limit(len(vocab))
        torch.manual_seed(config.train.seed)  # weight init and dropout draw from torch's global generator
        model = model_for_run(config)  # the plain model, the run's interventions attached
        self.trainer = trainer = Trainer(model, config.train, corpus, device)
        if self.prepare is not None:
            self.prepare(trainer)
        self.model, self.corpus, self.vocab, self.device = model, corpus, vocab, device
        self.tokens_per_step = config.train.batch_size * config.model.max_seq_len
        if ckpt is not None:
            load_model_state(model, ckpt.model_state)
            trainer.load_state(ckpt.trainer_state)
            if "torch_rng" in ckpt.extra:
                torch.set_rng_state(rng_from_text(ckpt.extra["torch_rng"]))
            self.checkpointed_step = ckpt.step
            self.best_val = best_val_until(self.run_dir, ckpt.step)
            self.moments = Moments(read_events(self.run_dir), read_scores(self.run_dir))  # rewound already
        else:
            self.take_queued_knobs()  # before config.json is written: they are the settings it starts with
            self.writer.write_config({**config.to_dict(), "vocab": vocab, "num_params": model.num_params()})

        probe = (config.probe_text or corpus.probe_text(config.model.max_seq_len))[: config.model.max_seq_len]
        ids = corpus.tokenizer.encode(probe, what="probe text")
        self.probe_text, self.probe_tokens = probe, [vocab[i] for i in ids]
        self.probe_idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
        self.prompt_idx = self.probe_idx[:, :SAMPLE_PROMPT_CHARS]  # (1, P)
        self.circuit_probe = induction_probe(vocab, config.model.max_seq_len, device=device)  # (B, 2n) for scores
        if ckpt is None:
            self.snapshot_attention()  # step 0: the untrained model's attention, the start of the step slider
            self.save_checkpoint()  # step 0 too: the Sample page can show what an untrained model writes
            self.sample()  # and what it writes now: babble, the first point of "babble to words"
        peak = machine_peak(self.run_dir.parent, config, device)  # the speed readout's ceiling; below, a token's FLOPs
        speed = {"train_flops_per_token": train_flops_per_token(config.model),
                 "matmul_peak_gflops": peak["peak_gflops"] if peak else None}  # fmt: skip
        self.clock = TrainClock(trained_until(self.run_dir, trainer.step_count) if ckpt else 0.0, trainer.step_count)
        self.ready = True
        reason = "training" if ckpt is None else f"training, {self.record_resume(ckpt.step, damaged)}"
        self.status("running", reason, force=True, device=str(device), threads=torch.get_num_threads(),
                    queue_position=None, **speed)  # fmt: skip

    def record_resume(self, step: int, damaged: list[tuple[int, str]]) -> str:
        """Say where a resumed run continues from, as an event; returns the words for the status reason."""
        said = f"resumed from checkpoint {step}"
        last = last_metric_step(self.run_dir) or 0
        if last > step:  # a killed worker got further than its last checkpoint: those steps are trained again
            said += f" (steps {step + 1}-{last} came after it and are trained again)"
        for bad, why in damaged:
            self.event("checkpoint", f"checkpoint {bad} could not be loaded and was removed: {why}", checkpoint=bad)
        if damaged:
            said += f"; newer checkpoint {', '.join(str(b) for b, _ in damaged)} could not be loaded"
        self.event("state", said, resumed_from=step, rewound_from=last if last > step else None)
        return said

    # ---------------------------------------------------------------- the loop

    def take_queued_knobs(self) -> None:
        """A fresh run's knob changes sent while it waited in the queue (the manager sends them as its worker
        starts) are its start settings: config.json says them, so its name and Compare do (a review: a run named
        "LR 0.002" that trained at 0.01 from step 1, Compare's "0.002→0.01 @0"). Each is answered as applied,
        old == new (no change to mark), the value asked before it in `queued_from`. Other commands wait for run()."""
        for command in self.control.poll(0):
            if (knob := as_knob_change(command)) is not None:
                self.set_knob(knob, queued=True)
            else:
                self.early.append(command)

    def run(self) -> str:
        trainer, train = self.trainer, self.config.train
        self.handle(self.early)  # a command that came with the queued knob changes
        while True:
            self.handle(self.control.poll(0))
            if self.exit is None and self.paused and self.budget == 0:
                self.clock.stop()
                self.handle(self.control.poll(PAUSED_POLL))  # blocks: nothing to do until a command comes
                continue
            if self.exit is None and trainer.step_count >= train.max_steps:
                self.exit = ("finished", f"finished: reached max_steps {train.max_steps}")
            if self.exit is not None:
                return self.finish(*self.exit)
            record = trainer.step()
            self.publish(record)
            if not record["applied"]:
                self.diverge(record)
            elif self.watch_loss(record):
                pass  # diverged: paused (or ending) like a non-finite step
            elif self.budget:
                self.budget -= 1
                if self.budget == 0:
                    self.status("paused", f"paused after stepping to step {trainer.step_count}", force=True)

    def handle(self, commands: list[dict]) -> None:
        for command in commands:
            if self.exit is not None:
                return
            if (knob := as_knob_change(command)) is not None:
                self.set_knob(knob)
                continue
            cmd = command.get("cmd") if isinstance(command, dict) else None
            step = self.trainer.step_count
            if cmd == "pause":  # "reason" says who paused it: "paused by the instructor" (a hold) or by you
                reason = f"{command.get('reason') or 'paused by you'} at step {step}"
                fresh, held = not self.paused or self.budget, command.get("reason") and not self.diverged
                if fresh:
                    self.paused, self.budget = True, 0
                    self.save_checkpoint()
                if fresh or held:  # held: already paused, now held by the instructor
                    self.status("paused", reason, force=True)
                    self.event("state", reason)
            elif cmd == "resume":
                if self.paused:
                    self.paused, self.budget, self.diverged, self.blowup = False, 0, "", []
                    self.clock.restart(step)  # the pause is neither training time nor slow training
                    self.status("running", "training", force=True)
                    self.event("state", f"{command.get('reason') or 'resumed'} at step {step}")
            elif cmd == "step":
                n = command.get("n", 1)
                if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                    self.event("error", f"step needs a whole number of steps >= 1, got {n!r}")
                elif self.paused:
                    self.budget += n
                    self.clock.restart(step)
                    self.status("running", f"stepping {self.budget} step(s), then pausing", force=True)
            elif cmd == "stop":  # "reason" says who stopped it (the CLI's Ctrl-C: "stopped: interrupted (SIGINT)")
                self.exit = ("stopped", f"{command.get('reason') or 'stopped by you'} at step {step}")
            elif cmd == "release":  # from the manager: free the process, stay resumable
                reason = str(command.get("reason") or f"paused at step {step}")
                self.exit = released_as(self.diverged, reason)  # a diverged run stays diverged, its reason first
            else:
                self.event("error", f"unknown command {command!r}; expected one of {', '.join(COMMANDS)}")

    def set_knob(self, change: KnobChange, queued: bool = False) -> None:
        """Apply a knob change and answer it: one "knob" event per knob changed, or one refusal (`queued`: as a
        start setting, take_queued_knobs)."""
        step, name, value = self.trainer.step_count, change.name, change.value
        answer = {"knob": name, "request": change.request or None}
        try:
            changes = self.trainer.set_knob(name, value)
        except (ValueError, TypeError) as exc:  # a bad value (a ConfigError) is the learner's slip, not the run's end
            message = f"knob {name} = {value!r} not applied: {exc}"
            self.event("knob", message, **answer, ok=False, error=str(exc))
            return
        for knob, old, new in changes:
            coupled = {} if knob == name else {"coupled_to": name}
            message = f"{knob}: {old} -> {new} " + ("before step 1 (set while queued)" if queued else f"at step {step}")
            kept = {"old": new, "queued_from": old} if queued else {"old": old}
            self.event("knob", message, **{**answer, "knob": knob}, ok=True, new=new, **kept, **coupled)

    def publish(self, record: dict) -> None:
        nonfinite = record.pop("nonfinite", None)
        applied = record.pop("applied", True)
        record["clock"] = round(self.clock.tick(), 3)  # seconds trained: a seconds axis's x (tinygpt.runs.clock)
        self.writer.append_metric(record)
        if self.on_record is not None:
            self.on_record(record)
        record["applied"], record["nonfinite"] = applied, nonfinite
        step, cfg, train = record["step"], self.config, self.config.train
        self.clipping.track(record, train.max_grad_norm)
        if not applied:
            return
        last = step >= train.max_steps
        if step % cfg.attention_every == 0 or last:
            self.snapshot_attention()
        if step % train.eval_interval == 0 or last:
            self.evaluate(last)
        if step % cfg.sample_every == 0:
            self.sample_due = True
        step_s = record.get("step_ms", 0.0) / 1000.0
        self.train_seconds += step_s
        self.step_pace = step_s if self.step_pace is None else 0.9 * self.step_pace + 0.1 * step_s
        self.sample_pace = self.sample_pace or self.step_pace  # step 0's sample: paced by the first step
        estimate = sample_estimate(self.sample_cost, self.sample_pace, self.step_pace)
        if last or (self.sample_due and self.sample_seconds + estimate <= SAMPLE_BUDGET * self.train_seconds):
            self.sample()
            self.sample_seconds += self.sample_cost
            self.sample_due = False
        if step % cfg.checkpoint_every == 0 or last:
            self.save_checkpoint()
        self.status("running" if not self.paused or self.budget else "paused")

    def diverge(self, record: dict) -> None:
        reason, info = nonfinite_reason(record)
        self.write_event({"step": record["step"], "kind": "nonfinite", "message": reason, **info})
        self.stop_diverged(reason)

    def stop_diverged(self, reason: str) -> None:
        self.paused, self.budget, self.diverged, self.blowup = True, 0, reason, []
        self.save_checkpoint()  # now, not at exit: Model health read a waiting diverged run's step-0 model (a review)
        if not getattr(self.control, "interactive", True):  # nobody can resume it: end here, resumable
            self.exit = ("diverged", reason)
        self.status("diverged", reason, force=True)

    def watch_loss(self, record: dict) -> bool:
        """Divergence with finite numbers (tinygpt.runs.divergence): once the loss has stayed far above ln(V) for
        DIVERGE_PATIENCE steps in a row, record the evidence as a "diverged" event, mark it diverged, return True."""
        if not record["loss"] > self.loss_limit:
            self.blowup = []
            return False
        self.blowup.append(record["loss"])
        if len(self.blowup) < DIVERGE_PATIENCE:
            return False
        ratios = (record.get("update_ratios") or {}).values()
        checkpoints = list_checkpoints(self.run_dir)
        reason, fields = blowup_reason(self.blowup, record["step"], len(self.vocab), checkpoints, ratios)
        self.event("diverged", reason, **fields)
        self.stop_diverged(reason)
        return True

    def finish(self, state: str, reason: str) -> str:
        self.save_checkpoint()
        self.status(state, reason, force=True)
        self.event("state", reason)
        return state

    # ---------------------------------------------------------------- what gets published

    def snapshot_attention(self) -> None:
        step, horizon = self.trainer.step_count, self.config.train.max_steps
        try:  # the same function the Attention page draws checkpoints with: no dropout on the picture, (L, H, T, T)
            weights = attention_maps(self.model, self.probe_idx)
        except ShapeError as exc:  # its shapes are the probe's (B, T), not a training batch's: said (a review)
            raise ShapeError(f"in the attention snapshot of step {step} (the probe, {tuple(self.probe_idx.shape)}): "
                             f"{exc}") from exc  # fmt: skip
        # Head-role scores, in-context loss, residual norms (tinygpt.inside.heads): one no-grad forward, a few hundred
        # bytes a line; taken before the snapshot is written, so a phase change they reveal keeps its neighbours.
        record = {"step": step, **snapshot_scores(self.model, weights, self.probe_idx, self.circuit_probe)}
        self.moments.add_scores(record)
        self.writer.write_attention(
            step, weights, self.probe_text, self.probe_tokens, horizon=horizon, pin=self.moments.pins
        )
        self.writer.append_scores(record)

    def evaluate(self, last: bool = False) -> None:
        # Train split at the last step only (the lab's memorisation check): no page draws it; half an eval's cost.
        losses = self.trainer.evaluate(splits=SPLITS if last else ("val",))
        step = self.trainer.step_count
        self.writer.append_eval({"step": step, **losses, "load_avg": load_average()})  # beside its seconds
        if math.isfinite(losses["val_loss"]) and (self.best_val is None or losses["val_loss"] < self.best_val):
            self.best_val = losses["val_loss"]
            self.status(None, None, force=True, best_val_loss=self.best_val)

    def sample(self) -> None:
        """Publish a sample continuing the probe's first characters; `sample_cost` becomes the seconds it took."""
        started = time.perf_counter()
        generator = torch.Generator(device=self.device).manual_seed(SAMPLE_SEED)
        prompt = self.corpus.tokenizer.decode(self.prompt_idx[0].tolist())
        record: dict[str, Any] = {"step": self.trainer.step_count, "prompt": prompt}
        try:
            out = self.model.generate(self.prompt_idx, SAMPLE_CHARS, SAMPLE_TEMPERATURE, generator=generator)
            prompt_len = self.prompt_idx.shape[1]
            record["text"] = self.corpus.tokenizer.decode(out[0, prompt_len:].tolist())  # (1, P + N) -> N new chars
        except NonFiniteError as exc:  # a broken model has nothing to say; the run's own guard handles training
            record.update(text="", error=str(exc))
        self.writer.append_sample(record)
        self.sample_cost = time.perf_counter() - started
        self.sample_pace = self.step_pace  # None at step 0: the first step's time stands for it

    def save_checkpoint(self) -> None:
        step = self.trainer.step_count
        if step == self.checkpointed_step:
            return
        extra = {"torch_rng": rng_to_text(torch.get_rng_state())}  # dropout's generator
        stem = checkpoint_stem(self.run_dir, step)
        save_checkpoint(stem, self.model, self.config, self.vocab, step, self.trainer.state(), extra)
        self.checkpointed_step = step
        steps = list_checkpoints(self.run_dir)
        pinned = self.moments.pins(steps) + kept_checkpoints(self.run_dir)  # and a branch panel's step (runs.keeps)
        for old in checkpoints_to_drop(steps, horizon=self.config.train.max_steps, pinned=pinned):
            delete_checkpoint(self.run_dir, old)

    def event(self, kind: str, message: str, **fields: Any) -> None:
        step = self.trainer.step_count if self.trainer is not None else 0
        self.write_event({"step": step, "kind": kind, "message": message, **fields})

    def write_event(self, event: dict) -> None:
        self.writer.append_event(event)
        self.moments.add_event(event)  # a knob change or a divergence: its checkpoints and snapshots stay

    def status(self, state: str | None, reason: str | None = None, force: bool = False, **fields: Any) -> None:
        """Rewrite status.json: always on a state change (force), else at most every STATUS_INTERVAL."""
        now = time.perf_counter()
        if not force and now - self.last_status < STATUS_INTERVAL:
            return
        self.last_status = now
        if self.trainer is not None:
            if rate := self.clock.speed(self.trainer.step_count):  # steps/s on the training clock
                self.tokens_per_s = rate * self.tokens_per_step
            fields.update(step=self.trainer.step_count, tokens_per_s=self.tokens_per_s)
        if state is not None:
            fields["state"] = state
        if reason is not None:
            fields["reason"] = reason
        self.writer.write_status(max_steps=self.config.train.max_steps, **fields)


def run_training(
    run_dir: str | Path,
    config: RunConfig | None = None,
    control: Control | None = None,
    *,
    max_steps: int | None = None,
    resume_from: int | None = None,
    device: str | None = None,
    threads: int | None = None,
    on_record: Callable[[dict], None] | None = None,
    prepare: Callable[[Trainer], None] | None = None,
    holder: str = "a training process",
) -> str:
    """Train `config` into the existing run folder `run_dir` (see RunStore.create); return the final state.

    config: None trains the folder's own config.json (the app's worker: the folder is the one copy of the run's
    config, so a damaged file is that run's failure). control: where commands come from (None: none, e.g. the CLI;
    a diverged run then ends instead of waiting). max_steps: overrides the config's (a resume that extends a run).
    resume_from: None starts fresh; a step (or LATEST: the newest checkpoint that loads) continues from that
    checkpoint, whose config (with any live knob changes) wins over `config`, except for max_steps.
    device: overrides config.train.device. threads: torch.set_num_threads for this process. on_record: called
    with every step record, after it is written. prepare: called with the new Trainer before any step
    (tinygpt/runs/distributed.py wraps it for DDP there). holder: who we are, for the writer lock's refusal message.

    Never raises for a failing run: the failure is written to status.json (state "failed") and returned. Raises
    only when it may not write at all, before writing anything: RunLockedError when another process writes the
    run (its writer lock, runs.lock.acquire_writer_lock), RunStoreError when the folder is not writable.
    """
    run_dir = Path(run_dir)
    lock = acquire_writer_lock(run_dir, holder)  # one writer per run, held until we return
    loop = None
    try:
        check_threads(threads)
        if threads:
            torch.set_num_threads(threads)
        # Our own copy (knobs, vocab_size and a text corpus's hash are set on it): the tests, the lab and the benches
        # train one config into several folders. A deepcopy: no re-serialising and re-validating a valid config.
        config = read_config(run_dir) if config is None else copy.deepcopy(config)
        if max_steps is not None:  # through the config's checks, like plan_resume's
            config.train = dataclasses.replace(config.train, max_steps=int(max_steps))
        ckpt, damaged = pick_checkpoint(run_dir, resume_from)
        if ckpt is not None:
            rewind(run_dir, ckpt.step)  # before the RunWriter reads the attention index
        loop = _Loop(run_dir, config, control or NoControl(), on_record, device)
        loop.prepare = prepare
        loop.setup(ckpt, damaged)
        return loop.run()
    except KeyboardInterrupt:  # Ctrl-C in the CLI: keep what was learned, end resumable
        if loop is not None and loop.ready:
            return loop.finish("stopped", f"stopped: interrupted at step {loop.trainer.step_count}")
        if loop is not None:  # nothing trained yet, and no model to save: say so instead of "starting" forever
            loop.status("stopped", "stopped: interrupted while starting", force=True)
        raise
    except Exception as exc:
        if isinstance(exc, torch.OutOfMemoryError) and not isinstance(exc, ResourceError):
            exc = ResourceError(
                f"the device ran out of memory ({exc}): lower batch_size or max_seq_len, or hidden_dim."
            )
        if isinstance(exc, OSError):  # the disk filled up, the folder became read-only, ...
            message = os_error_message(exc, run_dir.parent)
        else:
            message = str(exc) if isinstance(exc, TinyGPTError) else f"{type(exc).__name__}: {exc}"
        trained = loop is not None and loop.trainer is not None  # else status.json keeps its step
        step = loop.trainer.step_count if trained else None
        write_failure(run_dir, loop.writer if loop else None, step, f"failed: {message}", traceback.format_exc())
        return "failed"
    finally:
        if loop is not None:
            loop.writer.close()
        lock.release()
