"""Training worker processes for the app: one per run, quick to start, steered over a pipe, never orphaned.

`RunManager` owns every training run of one server. Each run trains in its own process running
`tinygpt.runs.loop.run_training`, the same loop the CLI runs. Why a process and not a thread of the server (issue 3):
`torch.set_num_threads` is process-wide, so only a process gives each run its own thread budget; the server's
chart-building does not share a GIL with training; a crash or a runaway run is killed without taking the server
down.

The machinery (the queue, the processes, the monitor) is tinygpt/runs/slots.py; the worker process's side is
tinygpt/runs/worker.py.

Left out: more than one server sharing a runs folder (the second would see the first's runs as interrupted),
GPU memory accounting in the cap, and remote workers."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import RunConfig, check_live_knob
from ..errors import TinyGPTError
from .branch import create_branch, plan_branch
from .control import KnobChange
from .divergence import freed_reason
from .files import (
    ACTIVE_STATES,
    ENDED_STATES,
    PAUSED_STATES,
    list_checkpoints,
    read_config_json,
)
from .forecast import queue_forecast, seconds_a_step, step_cost
from .jobs import LIVE, PREPARED, PRIORITIES, Job, NoWorkerError
from .owners import Actor, clear_hold, holds, require_app_owned, require_control, require_not_held, write_hold
from .preflight import preflight
from .slots import Slots
from .status import clock_pace, read_status
from .store import RunStore


def check_priority(priority: str) -> None:
    if priority not in PRIORITIES:
        raise TinyGPTError(f"unknown run priority {priority!r}; one of {', '.join(PRIORITIES)}.")


def queued_words(run_dir: Path) -> str:
    """When a queued run was paused or stopped: "before it started", or, for one that had trained and went back to
    the queue (a preempted prepared run, a learner's run that gave its slot), "at step 1,207 while it waited for a
    training slot": a run that trained 1,207 steps read "stopped before it started" (a review)."""
    step = read_status(run_dir).get("step")
    if isinstance(step, int) and step > 0:
        return f"at step {step:,} while it waited for a training slot"
    return "before it started"


class RunManager:
    """Starts, steers and watches the training runs of one server: the commands a page (or the CLI in tests) sends,
    each checked against who may give it (tinygpt.runs.owners), given to its `slots` (the queue, the workers and
    their monitor: tinygpt.runs.slots.Slots) through their public methods. Thread-safe."""

    def __init__(
        self,
        store: RunStore,
        max_active: int | None = None,
        threads_per_run: int | None = None,
        lease_seconds: float | None = None,
    ):
        self.slots = Slots(store, max_active, threads_per_run, lease_seconds)
        self.store = store
        self._run_marks: dict[str, tuple[float, int]] = {}  # run in a slot -> (monotonic s, step) first seen training
        self._paces: dict[str, float] = {}  # run -> steps a second, measured over its marks (queue_forecast)
        self._paces_lock = threading.Lock()  # sessions' script threads ask for the forecast at once

    # What the slots say, as the manager's own (pages and tests ask the manager).
    @property
    def max_active(self) -> int:
        return self.slots.max_active

    @property
    def threads_per_run(self) -> int:
        return self.slots.threads_per_run

    @property
    def lease_seconds(self) -> float:
        return self.slots.lease_seconds

    @property
    def stop_grace(self) -> float:
        return self.slots.stop_grace

    @stop_grace.setter
    def stop_grace(self, seconds: float) -> None:  # tests shorten it
        self.slots.stop_grace = seconds

    def touch(self, run_id: str) -> None:
        self.slots.touch(run_id)

    def time_limit(self, run_id: str) -> float | None:
        return self.slots.time_limit(run_id)

    def is_live(self, run_id: str) -> bool:
        return self.slots.is_live(run_id)

    def live_runs(self) -> list[str]:
        return self.slots.live_runs()

    def queued_runs(self) -> list[str]:
        return self.slots.queued_runs()

    def worker_pid(self, run_id: str) -> int | None:
        return self.slots.worker_pid(run_id)

    def shutdown(self, timeout: float | None = None) -> None:
        self.slots.shutdown(timeout)

    # ---------------------------------------------------------------- commands

    def start(
        self,
        config: RunConfig,
        parent: str | None = None,
        actor: Actor | None = None,
        time_limit_s: float | None = None,
        priority: str = LIVE,
    ) -> str:
        """Create a run folder and queue the run; it starts as soon as a slot is free. Returns its id.
        `priority`: LIVE (a person waits for it: Train, the lecture run) goes ahead of PREPARED (the lesson's
        Prepare, a lab batch), and takes a prepared run's slot if it has to (tinygpt.runs.slots); the run keeps it
        for its resumes. `actor`
        (a learner of the app) becomes the run's owner: only they and the instructor may change it.
        `time_limit_s` (the room's time budget): once its worker has held a training slot that long, the run is
        stopped with a checkpoint, the reason in its status and events; a resume starts a new budget."""
        # Fail here, in the page, for what cannot work: no such device, an unknown source, a run too big for
        # the memory, a runs folder without disk space (RunStore.create then says if it cannot be written at all).
        check_priority(priority)
        preflight(config, runs_root=self.store.root)
        # The instructor's own runs say so, so that others read "paused by the instructor"
        # (tinygpt/ui/words/run_words.py).
        boss = {"instructor": True} if actor is not None and actor.instructor else {}
        learner = {"learner": {"id": actor.id, "name": actor.name, **boss}} if actor is not None else {}
        writer = self.store.create({**config.to_dict(), **learner}, owner="app", parent=parent)
        writer.close()
        self.slots.set_priority(writer.run_id, priority)  # not queued yet: only remembered, for its jobs
        if time_limit_s:
            self.slots.set_time_limit(writer.run_id, time_limit_s)
        # The worker's loop reads the folder's config; the job keeps only its owner, for _require_control.
        self.slots.enqueue(Job(writer.run_id, None, time.monotonic(), learner=learner.get("learner", {})))
        return writer.run_id

    def prioritize(self, run_id: str, priority: str) -> None:
        """Move a run to another priority class, e.g. a prepared run the class has reached and now waits for
        (LIVE). A queued run moves in the queue at once (to the back of its new class); a training one keeps its
        slot and the class applies to its later resumes and to preemption."""
        check_priority(priority)
        self.slots.set_priority(run_id, priority)

    def priority(self, run_id: str) -> str:
        """LIVE or PREPARED: the class the run's jobs queue in (LIVE for a run this server did not start)."""
        return self.slots.priority(run_id)

    def branch(
        self,
        run_id: str,
        step: int | None,
        changes: dict[str, Any],
        actor: Actor | None = None,
        time_limit_s: float | None = None,
    ) -> str:
        """A new run that continues `run_id` from its checkpoint at `step` (None: the newest) with `changes`
        ({setting: value}), queued as `start` queues a run; returns its id (tinygpt.runs.branch). A learner may
        branch anyone's run: the branch is a new run of their own, and the parent is only read. What cannot be
        branched (a setting that cannot change, no such checkpoint) raises before any folder is made."""
        plan = plan_branch(self.store, run_id, step, changes)
        preflight(plan.config, runs_root=self.store.root)
        boss = {"instructor": True} if actor is not None and actor.instructor else {}
        learner = {"id": actor.id, "name": actor.name, **boss} if actor is not None else {}
        new_id = create_branch(self.store, plan, owner="app", learner=learner)
        if time_limit_s:
            self.slots.set_time_limit(new_id, time_limit_s)
        self.slots.enqueue(Job(new_id, plan.step, time.monotonic(), learner=learner))  # from its copy of the checkpoint
        return new_id

    def prepared_eta(self) -> dict:
        """The prepared runs not finished yet and when they will be, at the runs' measured pace: {"runs": n,
        "seconds": s} (None until one has trained for a few seconds). The paces are the queue forecast's
        (_measured_paces: every run timed while it held a slot, kept once it ends), so the instructor's "ready in
        about N min" and a queued learner's "starts in about N min" come from one set of numbers: with the
        prepared runs' own alone, the pane had no number each time one ended and the next was not timed yet (21 of
        81 reads of `python -m tinygpt.bench.prepare --with-learner`), while the learner's page had one. A run not
        timed counts on a line through the timed ones' steps (a fixed part and seconds per GFLOP: forecast.step_line)
        at its own step's GFLOP; all of it shared by the slots live runs leave ("slots" of "of": the lesson pane's
        "ready in about N min on 1 of the 2 slots", for a live run paused frees one, and the cores it shared)."""
        live, jobs = self.slots.jobs_of_class(PREPARED)
        # The lesson's: the instructor's and those no learner owns (owners.may_control). A learner's experiment pair
        # queues as prepared too: a review's "Long runs: 1 … ready in about 1 min" counted one, the lesson's all ended.
        wanted = [job.run_id for job, _ in jobs if not job.learner or job.learner.get("instructor")]
        left = {}
        for run_id in wanted:
            status = read_status(self.store.path(run_id))
            if status.get("state") in (*ENDED_STATES, "diverged"):  # ended, its job not reaped yet: nothing left
                continue  # (a review read "14 training or waiting" beside 9 not ended)
            max_steps = status.get("max_steps") or (read_config_json(self.store.path(run_id)).get("train") or {}).get(
                "max_steps"
            )
            left[run_id] = max(0, int(max_steps or 0) - int(status.get("step") or 0))
        # The slots the prepared runs have: the paces were measured beside the live runs, which share the cores.
        slots = {"slots": max(1, self.max_active - live), "of": self.max_active}
        if not left:
            return {"runs": 0, "seconds": 0.0, **slots}
        paces = self._measured_paces(self.slots.holding_and_queued()[0])  # steps a second
        if not paces:
            return {"runs": len(left), "seconds": None, **slots}
        # a run not timed yet: on the line through the timed ones' steps, at its own GFLOP (forecast.seconds_a_step)
        a_step = seconds_a_step(paces, {run_id: step_cost(self.store, run_id) for run_id in {*left, *paces}})
        work = sum(steps * (a_step(run_id) or 0.0) for run_id, steps in left.items())  # slot-seconds
        return {"runs": len(left), "seconds": work / slots["slots"], **slots}

    def queue_forecast(self) -> dict[str, dict]:
        """Each queued run's place in the order of starting, what starts before it and when it starts, at the
        runs' measured pace (tinygpt.runs.forecast.queue_forecast): what the Train page tells a queued learner."""
        holding, queue = self.slots.holding_and_queued()
        return queue_forecast(self.store, holding, queue, self.max_active, self._measured_paces(holding))

    def _measured_paces(self, holding: list) -> dict[str, float]:
        """Steps a second of each run timed while it held a slot: its steps since this server first saw it train
        over the time since (10 steps and 2 s at least), else, until then, its own records' (steps over the
        seconds it trained, `clock_pace`): kept once it ends (the newest 50), so a queue between two runs still has
        a pace to go by. Timed only by the server's own looks, a prepared run of 20 s was seldom looked at twice:
        a review's instructor read "ready once their pace is measured" for 4 minutes, and "about 5 min" for a run
        9 s from its end."""
        statuses = {job.run_id: read_status(self.store.path(job.run_id)) for job in holding if not job.endless}
        with self._paces_lock:
            return self._timed(statuses, time.monotonic(), lambda run_id: clock_pace(self.store.path(run_id)))

    def _timed(
        self, statuses: dict[str, dict], now: float, records_pace: Callable[[str], float | None] | None = None
    ) -> dict[str, float]:
        """`records_pace(run_id)`: a run's pace from its own records, read only for a run not timed here yet."""
        for run_id, status in statuses.items():
            step = int(status.get("step") or 0)
            if status.get("state") != "running":
                self._run_marks.pop(run_id, None)
                continue
            since, first = self._run_marks.setdefault(run_id, (now, step))
            if step < first:  # rewound: time it afresh
                self._run_marks[run_id] = (now, step)
            elif step - first >= 10 and now - since >= 2:  # once true, true at every later look (step, now grow)
                self._paces.pop(run_id, None)  # newest last: the oldest go first
                self._paces[run_id] = (step - first) / (now - since)
            elif records_pace is not None and (pace := records_pace(run_id)):  # not timed here yet: its records'
                self._paces.pop(run_id, None)
                self._paces[run_id] = pace
        while len(self._paces) > 50:
            self._paces.pop(next(iter(self._paces)))
        return dict(self._paces)

    def pause(self, run_id: str, actor: Actor | None = None, through: str = "") -> None:
        """Pause a live run (it checkpoints and waits); a queued run leaves the queue, paused. Idempotent.
        The instructor's pause of a learner's run is a hold (tinygpt.runs.files.HOLD_FILE): the learner cannot
        resume or step it until the instructor resumes it. `through`: the action that paused it where no Pause was
        pressed ("lesson step 8's Set up"): the instructor read "paused by you" of a pause they never clicked."""
        self._require_control(run_id, actor)
        config = read_config_json(self.store.path(run_id))
        who = "the instructor" if holds(config, actor) else "you"
        by = who + (f" through {through}" if through else "")
        slots = self.slots
        with slots.lock:
            if who == "the instructor":
                write_hold(self.store.path(run_id), who, read_status(self.store.path(run_id)).get("step"))
            if (job := slots.live_job(run_id)) is not None:
                slots.send(job, {"cmd": "pause", "reason": f"paused by {by}"})
            elif (job := slots.queued_job(run_id)) is not None:
                slots.dequeue(job, state="paused", reason=f"paused by {by} {queued_words(self.store.path(run_id))}")
            elif who == "the instructor" and read_status(self.store.path(run_id)).get("state") == "paused":
                slots.set_status(run_id, state="paused", reason="paused by the instructor")  # no worker: say why

    def resume(
        self,
        run_id: str,
        max_steps: int | None = None,
        actor: Actor | None = None,
        from_step: int | None = None,
        time_limit_s: float | None = None,
    ) -> None:
        """Resume: a live worker continues; a run whose process ended restarts from its newest checkpoint that
        loads, in a new worker (queued if all slots are busy). `max_steps` extends a run, e.g. a finished one.
        `from_step` continues from that checkpoint instead (later ones are dropped: the run is rewound); a live
        worker is released first. `time_limit_s` (the room's time budget, as for `start`) applies from now on, to
        a run started before the instructor set it too. Idempotent. Raises TinyGPTError when another process
        writes the run, when the folder cannot be written, or for a `from_step` the run has no checkpoint at."""
        self._require_control(run_id, actor)
        require_not_held(self.store.path(run_id), actor, run_id)
        if actor is not None and actor.instructor:
            clear_hold(self.store.path(run_id))  # the instructor's resume lifts the hold
        slots = self.slots
        if time_limit_s:
            slots.set_time_limit(run_id, time_limit_s)
        with slots.lock:
            if from_step is not None:
                self._check_from_step(run_id, from_step)
            if (job := slots.live_job(run_id)) is not None:
                job.touched = time.monotonic()
                if from_step is not None:  # a new worker, from that checkpoint, once this one has ended
                    job.follow_with([], from_step)
                    slots.release(job, f"paused: resuming from checkpoint {from_step}")
                elif job.on_its_way_out:  # again once it is reaped
                    job.follow_with([])
                else:
                    slots.send(job, {"cmd": "resume"})
            elif (job := slots.queued_job(run_id)) is not None:
                job.touched = time.monotonic()
                if from_step is not None:
                    job.resume_from = from_step
            else:
                slots.restart(run_id, [], max_steps, from_step)

    def let_go(self, run_id: str, actor: Actor | None = None) -> None:
        """The instructor lets go of a hold (Room: "Let go"): a run that sits paused resumes; one its learner
        stopped meanwhile stays stopped. Either way its learner has it back."""
        self._require_control(run_id, actor)
        if read_status(self.store.path(run_id)).get("state") in PAUSED_STATES:
            self.resume(run_id, actor=actor)  # the instructor's resume lifts the hold
        clear_hold(self.store.path(run_id))

    def _check_from_step(self, run_id: str, step: Any) -> None:
        steps = list_checkpoints(self.store.path(run_id))
        if not isinstance(step, int) or isinstance(step, bool) or step not in steps:
            raise TinyGPTError(f"run {run_id} has no checkpoint at step {step!r}; it has {steps}.")

    def step(self, run_id: str, n: int = 1, actor: Actor | None = None) -> None:
        """Take exactly n steps, then pause. A live running run is paused first; an ended one is restarted paused."""
        self._require_control(run_id, actor)
        require_not_held(self.store.path(run_id), actor, run_id)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise TinyGPTError(f"step needs a whole number of steps >= 1, got {n!r}.")
        commands = [{"cmd": "pause"}, {"cmd": "step", "n": n}]
        slots = self.slots
        with slots.lock:
            if (job := slots.live_job(run_id)) is not None:
                if job.on_its_way_out:  # start it again, paused, once it has ended
                    job.follow_with(commands)
                else:
                    for command in commands:
                        slots.send(job, command)
            elif (job := slots.queued_job(run_id)) is not None:
                job.commands += commands
            else:
                slots.restart(run_id, commands, None)

    def stop(self, run_id: str, wait: bool = True, actor: Actor | None = None) -> None:
        """Stop a run for good (checkpoint, state "stopped"). With `wait`, returns once the worker has ended:
        after the step in progress, or after stop_grace s (tinygpt.runs.slots.STOP_GRACE) when it is killed (its
        data stays readable). Idempotent."""
        self._require_control(run_id, actor)
        slots = self.slots
        with slots.lock:
            if (job := slots.queued_job(run_id)) is not None:
                slots.dequeue(job, state="stopped", reason=f"stopped {queued_words(self.store.path(run_id))}")
                return
            job = slots.live_job(run_id)
            if job is None:
                require_app_owned(run_id, read_config_json(self.store.path(run_id)))
                if read_status(self.store.path(run_id)).get("state") in PAUSED_STATES + ACTIVE_STATES:
                    slots.set_status(run_id, state="stopped", reason="stopped by you")
                return
            if not job.stop_requested:
                job.stop_requested, job.followup = True, None
                slots.send(job, {"cmd": "stop"})
                job.killed_as = ("stopped", f"stopped: the worker did not stop within {self.stop_grace:g} s; killed")
                if job.process is not None:
                    job.deadline = time.monotonic() + self.stop_grace
            if wait:
                slots.wait_until_gone(run_id, self.stop_grace + 10)  # the monitor kills at the deadline; a backstop

    def set_knob(self, run_id: str, name: str, value: Any, actor: Actor | None = None) -> str:
        """Ask for a live knob change; it applies before the run's next step. Returns the request id that the
        worker's answer carries: find it with tinygpt.runs.knobs.knob_answer(events, request), which says the step
        it applied at (and any knob that moved with it), or why the value was refused (the run goes on).
        A queued run keeps the command for its worker, which applies it before its first step. A name that is not
        a live knob raises ConfigError here, before anything is sent; a run with no worker and not queued raises
        NoWorkerError (a TinyGPTError): pages ask here once, rather than asking is_live first."""
        self._require_control(run_id, actor)
        check_live_knob(name)
        request = secrets.token_hex(6)
        command = KnobChange(name, value, request)
        slots = self.slots
        with slots.lock:
            if (job := slots.live_job(run_id)) is not None and not job.dead:
                slots.send(job, command)
            elif (job := slots.queued_job(run_id)) is not None:
                job.commands.append(command)
            else:
                raise NoWorkerError(f"run {run_id} has no worker: resume it, then change {name}.")
        return request

    def release_if_paused(self, run_id: str) -> bool:
        """Free the slot of a worker that sits paused or diverged (its run stays resumable, state and reason kept):
        its owner starts another run, which a waiting worker must not block. True if it was released (or is on its
        way out already), False for a run that trains or waits in the queue. A review's
        learner could start no experiment for minutes after the naive softmax diverged: "You already have a run
        training or queued", the diverged run's worker waiting for a knob to be turned back."""
        with self.slots.lock:
            job = self.slots.live_job(run_id)
            if job is not None and job.released:
                return True
            if job is None or job.process is None:
                return False
            status = read_status(self.store.path(run_id))
            if status.get("state") not in PAUSED_STATES:
                return False
            self.slots.release(job, freed_reason(status))
            return True

    def queued_knobs(self, run_id: str) -> list[tuple[str, Any]]:
        """The live knob changes a queued run's worker will apply before its first step, (name, value) in order
        ([] for a run not in the queue): the page's plan draws them (tinygpt.runs.knobs.with_queued)."""
        with self.slots.lock:
            job = self.slots.queued_job(run_id)
            return [(c.name, c.value) for c in job.commands if isinstance(c, KnobChange)] if job else []

    def _require_control(self, run_id: str, actor: Actor | None) -> None:
        """A learner may change only their own runs (the instructor any): refused here even if a page sent it."""
        if actor is None:
            return
        with self.slots.lock:
            job = self.slots.live_job(run_id) or self.slots.queued_job(run_id)
        # A live or queued run's job carries its owner (Job.learner): a dragged knob slider sends several commands
        # a second, and each used to read config.json from disk for this. A run without a job is read from disk.
        config = {"learner": job.learner} if job is not None else read_config_json(self.store.path(run_id))
        require_control(config, actor, run_id)
