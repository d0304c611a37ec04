"""The training loop in-process: what it publishes, how it obeys commands, and how it ends.

Runs use a tiny model on a tiny text so each takes well under a second; commands are sent from `on_record`
(exactly at a given step) or from the test thread through a QueueControl while the loop runs in a thread.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch
from helpers import tiny_config, wait_for

from tinygpt.bench.worker import bare_tokens_per_s
from tinygpt.checkpoint import load_checkpoint
from tinygpt.config import ConfigError, TransformerConfig
from tinygpt.device import available_devices, resolve_device
from tinygpt.flops import train_flops_per_token
from tinygpt.runs import loop
from tinygpt.runs.control import KnobChange, QueueControl, as_knob_change
from tinygpt.runs.files import checkpoint_stem, list_checkpoints, read_events
from tinygpt.runs.knobs import knob_answer, knob_changes, knobs_now
from tinygpt.runs.loop import run_training
from tinygpt.runs.peak import PEAK_FILE
from tinygpt.runs.resume import LATEST
from tinygpt.runs.retention import checkpoints_to_drop
from tinygpt.runs.status import read_status
from tinygpt.runs.store import RunStore

tiny = tiny_config


def new_run(tmp_path, config):
    store = RunStore(tmp_path / "runs")
    writer = store.create(config.to_dict(), owner="cli")
    writer.close()
    return store, writer.run_id, writer.run_dir


def losses(reader):
    return [(m["step"], m["loss"]) for m in reader.metrics]


def eval_losses(reader):
    """The evals without their wall-clock time and the machine's load beside it (which two runs never share: a
    full run's load_avg read 1.69 in one and 1.57 in the other)."""
    return [{k: v for k, v in e.items() if k not in ("time", "load_avg")} for e in reader.evals]


def state_of(reader):
    reader.poll()
    return reader.status().get("state")


@pytest.mark.parametrize(("budget", "steps"), [(0.0, [0, 20]), (1e9, [0, 10, 20])])
def test_samples_run_on_a_time_budget(tmp_path, tiny_text, monkeypatch, budget, steps):
    """Step 0 and the last step always sample; a due sample in between only when the budget has space for it."""
    monkeypatch.setattr(loop, "SAMPLE_BUDGET", budget)
    store, run_id, run_dir = new_run(tmp_path, tiny(tiny_text))
    run_training(run_dir, tiny(tiny_text))
    assert [s["step"] for s in store.reader(run_id).samples] == steps


def test_a_run_publishes_everything(tmp_path, tiny_text):
    store, run_id, run_dir = new_run(tmp_path, tiny(tiny_text))
    assert run_training(run_dir, tiny(tiny_text)) == "finished"
    reader = store.reader(run_id)
    status = reader.status()
    assert status["state"] == "finished" and status["step"] == 20 and status["max_steps"] == 20
    assert status["best_val_loss"] > 0 and status["device"] == "cpu" and status["tokens_per_s"] > 0
    assert "20" in status["reason"]
    # The speed readout's constants: this model's FLOPs per token, and the peak measured beside the runs.
    model = TransformerConfig.from_dict(reader.config()["model"])
    assert status["train_flops_per_token"] == train_flops_per_token(model)
    assert status["matmul_peak_gflops"] > 0 and (tmp_path / "runs" / PEAK_FILE).is_file()
    config = reader.config()
    assert config["vocab"] == sorted(set(tiny_text)) and config["num_params"] > 0
    assert config["model"]["vocab_size"] == len(config["vocab"])
    steps = [m["step"] for m in reader.metrics]
    assert steps == list(range(1, 21))
    record = reader.metrics[0]
    for key in ("time", "loss", "lr", "grad_norm", "clipped", "layer_grad_norms", "update_ratios", "tokens_per_s"):
        assert key in record
    assert "applied" not in record and "nonfinite" not in record
    assert list(record["layer_grad_norms"]) == ["emb", "L0.attn", "L0.mlp", "L1.attn", "L1.mlp", "ln_f"]
    assert [e["step"] for e in reader.evals] == [10, 20]
    # The held-out split at every eval, the training split only at the last step (the lab's memorisation check):
    # no page draws an eval's train loss, and it is half of every eval's cost.
    assert [sorted(k for k in e if k.endswith("_loss")) for e in reader.evals] == [
        ["val_loss"],
        ["train_loss", "val_loss"],
    ]
    snapshots = [s["step"] for s in reader.attention_index()["snapshots"]]
    assert snapshots == [0, 5, 10, 15, 20]  # step 0 is the untrained model
    weights = reader.load_attention(0)
    assert weights.shape == (2, 2, 16, 16)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-2)  # every query row is a distribution
    samples = reader.samples
    assert [s["step"] for s in samples] == [0, 20]  # step 10's is due, but 200 characters cost more than 3% allows
    assert len(samples[0]["text"]) == 200 and samples[0]["prompt"] == reader.attention_index()["probe_text"][:16]
    assert reader.checkpoints() == [0, 10, 20]
    assert load_checkpoint(checkpoint_stem(run_dir, 20)).step == 20
    assert reader.events[-1]["kind"] == "state"


def test_pause_step_resume_give_exact_step_counts(tmp_path, tiny_text):
    config = tiny(tiny_text, max_steps=40)
    store, run_id, run_dir = new_run(tmp_path, config)
    control = QueueControl()

    def at_step(record):
        if record["step"] == 3:
            control.send({"cmd": "pause"})
            control.send({"cmd": "pause"})  # idempotent

    result = []
    thread = threading.Thread(target=lambda: result.append(run_training(run_dir, config, control, on_record=at_step)))
    thread.start()
    reader = store.reader(run_id)

    def state_and_step():
        reader.poll()
        return reader.status().get("state"), reader.status().get("step")

    wait_for(lambda: state_and_step() == ("paused", 3))
    control.send({"cmd": "step", "n": 4})
    wait_for(lambda: state_and_step() == ("paused", 7))
    time.sleep(0.2)
    assert state_and_step() == ("paused", 7)  # and no step more
    control.send({"cmd": "resume"})
    control.send({"cmd": "resume"})
    thread.join(30)
    assert result == ["finished"]
    reader.poll()
    assert [m["step"] for m in reader.metrics] == list(range(1, 41))
    assert 3 in reader.checkpoints()  # pausing checkpoints


def test_stop_is_idempotent_and_checkpoints(tmp_path, tiny_text):
    config = tiny(tiny_text, max_steps=1000)
    store, run_id, run_dir = new_run(tmp_path, config)
    control = QueueControl()

    def at_step(record):
        if record["step"] == 6:
            control.send({"cmd": "stop"})
            control.send({"cmd": "stop"})

    assert run_training(run_dir, config, control, on_record=at_step) == "stopped"
    reader = store.reader(run_id)
    assert reader.status()["state"] == "stopped" and reader.status()["step"] == 6
    assert reader.checkpoints()[-1] == 6


def test_knob_applies_at_the_next_step_and_is_recorded(tmp_path, tiny_text):
    config = tiny(tiny_text, max_steps=10)
    _, plain_id, plain_dir = new_run(tmp_path / "a", config)
    store_a = RunStore(tmp_path / "a" / "runs")
    run_training(plain_dir, config)
    store, run_id, run_dir = new_run(tmp_path / "b", config)
    control = QueueControl()

    def at_step(record):
        if record["step"] == 5:
            control.send(KnobChange("mask", "none", "r1"))
            control.send(KnobChange("attn_scale_mult", -1.0, "r2"))  # invalid
            control.send({"cmd": "knob", "name": "num_layers", "value": 3, "request": "r3"})  # not live; spelled out

    assert run_training(run_dir, config, control, on_record=at_step) == "finished"
    plain, knobbed = losses(store_a.reader(plain_id)), losses(store.reader(run_id))
    assert plain[:5] == knobbed[:5]  # identical until the knob...
    assert plain[5][1] != knobbed[5][1]  # ...which step 6 already feels
    events = store.reader(run_id).events
    (knob,) = knob_changes(events)
    assert knob == knob_answer(events, "r1")
    assert (knob["step"], knob["knob"], knob["old"], knob["new"], knob["ok"]) == (5, "mask", "causal", "none", True)
    assert knob["message"] == "mask: causal -> none at step 5"
    refused = knob_answer(events, "r2")  # the run went on: a refusal is an answer, not an error of the run
    assert refused["ok"] is False and refused["knob"] == "attn_scale_mult" and refused["step"] == 5
    assert "attn_scale_mult must be a positive number" in refused["error"]
    assert refused["message"] == f"knob attn_scale_mult = -1.0 not applied: {refused['error']}"
    not_live = knob_answer(events, "r3")
    assert not_live["ok"] is False and "cannot change while training" in not_live["error"]
    assert [e for e in events if e["kind"] == "error"] == []
    assert load_checkpoint(checkpoint_stem(run_dir, 10)).config.model.mask == "none"


def test_a_knob_command_names_one_knob_and_its_value():
    change = KnobChange("warmup_steps", 120, "r9")
    assert (change.name, change.value, change.request) == ("warmup_steps", 120, "r9")
    with pytest.raises(AttributeError):
        change.value = 3  # frozen: what was sent is what the worker applies
    assert as_knob_change(change) is change
    assert as_knob_change({"cmd": "knob", "name": "mask", "value": "none"}) == KnobChange("mask", "none", "")
    assert as_knob_change({"cmd": "pause"}) is None


def test_every_knob_command_is_answered_and_learning_rate_carries_min_lr(tmp_path, tiny_text):
    config = tiny(tiny_text, max_steps=6, learning_rate=2e-3, min_lr=5e-4)  # min_lr at 1/4 of the peak
    store, run_id, run_dir = new_run(tmp_path, config)
    control = QueueControl()
    commands = [
        ("lr", "learning_rate", 4e-3),  # min_lr moves along: 2e-3 (ratio 1/4 kept)
        ("same", "mask", "causal"),  # already so: an answer with old == new, nothing changes
        ("floor", "min_lr", 1e-2),  # above learning_rate: refused
        ("wd", "weight_decay", 0),  # an int for a float knob is taken as a float
    ]

    def at_step(record):
        if record["step"] == 2:
            for request, name, value in commands:
                control.send(KnobChange(name, value, request))

    assert run_training(run_dir, config, control, on_record=at_step) == "finished"
    events = store.reader(run_id).events
    assert all(knob_answer(events, request) is not None for request, _, _ in commands)
    lr, coupled = [e for e in events if e["kind"] == "knob" and e["request"] == "lr"]
    assert (lr["knob"], lr["old"], lr["new"], lr["ok"]) == ("learning_rate", 2e-3, 4e-3, True)
    assert (coupled["knob"], coupled["old"], coupled["new"]) == ("min_lr", 5e-4, 1e-3)
    assert coupled["coupled_to"] == "learning_rate" and coupled["message"] == "min_lr: 0.0005 -> 0.001 at step 2"
    assert "coupled_to" not in lr
    same = knob_answer(events, "same")
    assert same["ok"] and same["old"] == same["new"] == "causal" and same["step"] == 2
    floor = knob_answer(events, "floor")
    assert floor["ok"] is False and "min_lr" in floor["error"] and "learning_rate" in floor["error"]
    assert knob_answer(events, "wd")["new"] == 0.0 and isinstance(knob_answer(events, "wd")["new"], float)
    assert [e["knob"] for e in knob_changes(events)] == ["learning_rate", "min_lr", "weight_decay"]
    now = knobs_now(store.reader(run_id).config(), events)
    assert (now["learning_rate"], now["min_lr"], now["mask"], now["weight_decay"]) == (4e-3, 1e-3, "causal", 0.0)
    saved = load_checkpoint(checkpoint_stem(run_dir, 6)).config.train
    assert (saved.learning_rate, saved.min_lr) == (4e-3, 1e-3)
    assert [m["lr"] for m in store.reader(run_id).metrics][-1] >= 1e-3  # the floor moved up with the peak


def test_knob_changes_sent_while_queued_are_the_runs_start_settings(tmp_path, tiny_text):
    """A learner turned knobs while their run waited in the queue: its worker gets them before its first step. Its
    config.json says them (its name and Compare read config.json: a review's run was named "LR 0.002" and trained at
    0.01 from step 1), each answered as applied with no change to mark; a refused one and a command stay as ever."""
    from tinygpt.runs.knobs import knobs_first
    from tinygpt.runs.names import settings_name

    config = tiny(tiny_text, max_steps=4, learning_rate=2e-3, min_lr=5e-4)
    store, run_id, run_dir = new_run(tmp_path, config)
    control = QueueControl()
    control.send(KnobChange("learning_rate", 1e-2, "lr"))  # in the pipe before the worker's setup, as the slots send
    control.send(KnobChange("mask", "off_by_one", "mask"))
    control.send(KnobChange("min_lr", 1.0, "bad"))  # above the learning rate: refused
    control.send({"cmd": "step", "n": 2})  # not a knob: handled as the loop starts (it is not paused: ignored)
    assert run_training(run_dir, config, control) == "finished"
    reader = store.reader(run_id)
    saved = reader.config()
    assert (saved["train"]["learning_rate"], saved["train"]["min_lr"], saved["model"]["mask"]) == (
        1e-2, 2.5e-3, "off_by_one")  # fmt: skip
    assert "LR 0.01" in settings_name(saved)
    lr = knob_answer(reader.events, "lr")
    assert lr["ok"] and lr["step"] == 0 and lr["old"] == lr["new"] == 1e-2 and lr["queued_from"] == 2e-3
    assert lr["message"] == "learning_rate: 0.002 -> 0.01 before step 1 (set while queued)"
    assert knob_answer(reader.events, "bad")["ok"] is False
    assert knob_changes(reader.events) == []  # nothing to mark on a chart: it trained so from step 1
    assert knobs_first(saved, reader.events)["learning_rate"] == 1e-2
    assert load_checkpoint(checkpoint_stem(run_dir, 0)).config.model.mask == "off_by_one"


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_resume_follows_the_uninterrupted_curve_exactly(tmp_path, tiny_text, dropout):
    config = tiny(tiny_text, max_steps=24, dropout=dropout)
    store_a, whole_id, whole_dir = new_run(tmp_path / "a", config)
    run_training(whole_dir, config)
    store, run_id, run_dir = new_run(tmp_path / "b", config)
    control = QueueControl()

    def at_step(record):
        if record["step"] == 7:
            control.send({"cmd": "stop"})

    assert run_training(run_dir, config, control, on_record=at_step) == "stopped"
    assert run_training(run_dir, config, resume_from=LATEST) == "finished"
    whole = store_a.reader(whole_id)
    assert losses(store.reader(run_id)) == losses(whole)  # bit for bit
    assert eval_losses(store.reader(run_id)) == eval_losses(whole)

    # Resuming from an earlier checkpoint rewinds: the reader drops the abandoned future, the curve is the same.
    assert run_training(run_dir, config, resume_from=10) == "finished"
    reader = store.reader(run_id)
    assert losses(reader) == losses(whole)
    assert [s["step"] for s in reader.attention_index()["snapshots"]] == [0, 5, 10, 15, 20, 24]


def test_resume_keeps_live_knob_changes_and_can_extend(tmp_path, tiny_text):
    config = tiny(tiny_text, max_steps=10)
    store, run_id, run_dir = new_run(tmp_path, config)
    control = QueueControl()
    control.send({"cmd": "knob", "name": "learning_rate", "value": 5e-3})
    run_training(run_dir, config, control)
    longer = tiny(tiny_text, max_steps=15)
    assert run_training(run_dir, longer, resume_from=LATEST) == "finished"
    reader = store.reader(run_id)
    assert reader.status()["step"] == 15
    assert load_checkpoint(checkpoint_stem(run_dir, 15)).config.train.learning_rate == 5e-3


def test_without_a_config_it_trains_the_folders_config_json(tmp_path, tiny_text):
    """The app's worker passes only the run folder: the loop reads config.json itself, the one copy of the run."""
    store, run_id, run_dir = new_run(tmp_path, tiny(tiny_text, max_steps=7, learning_rate=3e-3))
    assert run_training(run_dir) == "finished"
    assert read_status(run_dir)["step"] == 7 and read_status(run_dir)["max_steps"] == 7
    assert load_checkpoint(checkpoint_stem(run_dir, 7)).config.train.learning_rate == 3e-3


@pytest.mark.parametrize("garbage", [b"\x00\xff garbage", b"[1, 2, 3]", b'{"model": {"hidden_dim": "wide"}}'])
def test_a_damaged_config_json_is_the_runs_recorded_failure(tmp_path, tiny_text, garbage):
    """config.json damaged after the run was made (queued, then edited): with no config passed, the run fails and
    says why in its status and an error event, as the worker did when it read the file; nothing raises."""
    store, run_id, run_dir = new_run(tmp_path, tiny(tiny_text, max_steps=4))
    (run_dir / "config.json").write_bytes(garbage)
    assert run_training(run_dir) == "failed"
    status = read_status(run_dir)
    assert status["state"] == "failed"
    assert status["reason"].startswith(f"failed: run {run_id}'s config.json is unusable (")
    assert read_events(run_dir)[-1]["kind"] == "error" and list_checkpoints(run_dir) == []


def test_max_steps_extends_a_resume_of_the_folders_config(tmp_path, tiny_text):
    """The worker's resume that extends a run: max_steps wins over the checkpoint's config, whose knobs (turned
    live) win over config.json's."""
    store, run_id, run_dir = new_run(tmp_path, tiny(tiny_text, max_steps=6))
    control = QueueControl()
    control.send({"cmd": "knob", "name": "learning_rate", "value": 5e-3})
    assert run_training(run_dir, control=control) == "finished"
    assert run_training(run_dir, max_steps=10, resume_from=LATEST) == "finished"
    status = read_status(run_dir)
    assert status["step"] == 10 and status["max_steps"] == 10
    assert [m["step"] for m in store.reader(run_id).metrics] == list(range(1, 11))
    train = load_checkpoint(checkpoint_stem(run_dir, 10)).config.train
    assert train.max_steps == 10 and train.learning_rate == 5e-3


def test_the_callers_config_stays_as_it_was_built(tmp_path, tiny_text):
    """run_training trains its own copy (a deepcopy, no longer a to_dict/from_dict round trip): a knob turned, the
    vocabulary's size and a text corpus's hash land on the copy, so the same config trains a second folder alike."""
    config = tiny(tiny_text, max_steps=4)
    before = config.to_dict()
    store, run_id, run_dir = new_run(tmp_path / "a", config)
    control = QueueControl()
    control.send({"cmd": "knob", "name": "learning_rate", "value": 5e-3})
    assert run_training(run_dir, config, control) == "finished"
    assert config.to_dict() == before and config.data.text == tiny_text
    assert store.reader(run_id).config()["vocab"]  # the loop's copy wrote what it learned into config.json
    other, other_id, other_dir = new_run(tmp_path / "b", config)
    assert run_training(other_dir, config) == "finished"


def test_naive_softmax_with_a_huge_scale_diverges(tmp_path, tiny_text):
    config = tiny(tiny_text, softmax="naive", attn_scale_mult=1e4, max_steps=50)
    store, run_id, run_dir = new_run(tmp_path, config)
    assert run_training(run_dir, config) == "diverged"  # no control: nobody could resume it, so it ends
    reader = store.reader(run_id)
    status = reader.status()
    assert status["state"] == "diverged" and status["step"] == 1
    assert "step 1" in status["reason"] and "hook_weights" in status["reason"]
    event = [e for e in reader.events if e["kind"] == "nonfinite"][0]
    assert event["step"] == 1 and event["tensor"] == "blocks.0.attn.hook_weights"
    assert reader.metrics[-1]["loss"] is None  # NaN is written as null
    assert reader.checkpoints()[0] == 0  # the last good checkpoint (the weights never took the bad update)
    sample = reader.samples[0]  # the step-0 sample of a model whose softmax overflows: a message, not a crash
    assert sample["step"] == 0 and sample["text"] == "" and "not finite" in sample["error"]


def diverged_in_thread(tmp_path, tiny_text):
    """A naive-softmax run at a huge scale, trained in a thread until it diverges at step 1 and waits for a
    command: (its store, its id, its reader, the control for commands, the thread, the list its result lands in)."""
    config = tiny(tiny_text, softmax="naive", attn_scale_mult=1e4, max_steps=50)
    store, run_id, run_dir = new_run(tmp_path, config)
    control = QueueControl()
    result = []
    thread = threading.Thread(target=lambda: result.append(run_training(run_dir, config, control)))
    thread.start()
    reader = store.reader(run_id)
    wait_for(lambda: state_of(reader) == "diverged")
    return store, run_id, reader, control, thread, result


def test_diverged_run_waits_paused_for_a_command(tmp_path, tiny_text):
    _, _, reader, control, thread, result = diverged_in_thread(tmp_path, tiny_text)
    # Its model as it diverged is checkpointed while it waits: Model health read a waiting diverged run's step-0
    # model, and the diverged one only once its worker had ended (a review)
    assert reader.checkpoints()[-1] == reader.status()["step"] == 1
    control.send({"cmd": "knob", "name": "attn_scale_mult", "value": 1.0})
    control.send({"cmd": "step", "n": 3})
    wait_for(lambda: state_of(reader) == "paused")
    assert reader.status()["step"] == 4 and reader.metrics[-1]["loss"] is not None  # recovered
    control.send({"cmd": "stop"})
    thread.join(10)
    assert result == ["stopped"]


def test_a_diverged_run_released_for_a_queued_run_stays_diverged_and_keeps_why(tmp_path, tiny_text):
    """The slot of a diverged run went to a queued run (tinygpt.runs.slots._evict_paused): its status said
    "diverged: paused: its training slot went to a queued run; resume it to continue", the overflow lost, and a
    resume restarts it with the settings that diverged."""
    store, run_id, reader, control, thread, result = diverged_in_thread(tmp_path, tiny_text)
    why = reader.status()["reason"]
    assert why.startswith("diverged at step 1:") and "hook_weights" in why
    control.send({"cmd": "release", "reason": "paused: its training slot went to a queued run; resume it to continue"})
    thread.join(10)
    assert result == ["diverged"]
    status = store.reader(run_id).status()
    assert status["state"] == "diverged" and status["reason"].startswith(why)
    assert "its training slot went to a queued run" in status["reason"]
    assert "resume it to continue" not in status["reason"] and "settings that diverged" in status["reason"]


def test_a_diverged_worker_killed_on_release_stays_diverged():
    """The manager's record when a released worker does not answer and is killed (tinygpt.runs.slots.release)."""
    from tinygpt.runs.divergence import killed_on_release

    release = "paused: its training slot went to a queued run; resume it to continue"
    state, reason = killed_on_release({"state": "diverged", "reason": "diverged at step 50: loss nan."}, release)
    assert state == "diverged" and reason.startswith("diverged at step 50: loss nan.")
    assert "its training slot went to a queued run" in reason and "resume it to continue" not in reason
    assert killed_on_release({"state": "paused"}, release) == ("paused", f"{release} (the worker did not respond "
                                                                          "and was killed)")  # fmt: skip


def test_an_exception_marks_the_run_failed_with_its_message(tmp_path):
    config = tiny("too short")
    store, run_id, run_dir = new_run(tmp_path, config)
    assert run_training(run_dir, config) == "failed"
    status = store.reader(run_id).status()
    assert status["state"] == "failed" and "characters" in status["reason"]
    assert store.reader(run_id).events[-1]["kind"] == "error"


def test_a_corrupt_checkpoint_named_explicitly_fails_the_resume_with_advice(tmp_path, tiny_text):
    """Asked for by step, a damaged checkpoint is the answer (LATEST falls back instead: test_reliability.py)."""
    config = tiny(tiny_text, max_steps=10)
    store, run_id, run_dir = new_run(tmp_path, config)
    run_training(run_dir, config)
    weights = checkpoint_stem(run_dir, 10).with_suffix(".safetensors")
    weights.write_bytes(weights.read_bytes()[:100])
    assert run_training(run_dir, config, resume_from=10) == "failed"
    status = store.reader(run_id).status()
    assert "truncated" in status["reason"] and status["step"] == 10  # the run's step is not reset to 0


def test_resuming_from_a_missing_step_fails_and_deletes_nothing(tmp_path, tiny_text):
    config = tiny(tiny_text, max_steps=20)
    store, run_id, run_dir = new_run(tmp_path, config)
    run_training(run_dir, config)
    assert run_training(run_dir, config, resume_from=15) == "failed"
    assert "no checkpoint at step 15" in store.reader(run_id).status()["reason"]
    assert list_checkpoints(run_dir) == [0, 10, 20]


def test_checkpoint_retention_is_bounded_and_keeps_early_middle_and_late():
    """Sample offered 0, 1900, 2100... for a 3000-step run; now early checkpoints stay (every one of the first
    10%), the newest three, and an even spread in between."""
    kept: list[int] = []
    for step in range(0, 3001, 100):
        kept.append(step)
        for gone in checkpoints_to_drop(kept, horizon=3000):
            kept.remove(gone)
        assert len(kept) <= 12
    assert kept[:4] == [0, 100, 200, 300] and kept[-3:] == [2800, 2900, 3000]
    assert any(1000 <= s <= 2000 for s in kept)
    kept = []
    for step in range(0, 100_001, 500):
        kept.append(step)
        for gone in checkpoints_to_drop(kept, horizon=100_000):
            kept.remove(gone)
        assert len(kept) <= 12
    assert kept[0] == 0 and kept[-3:] == [99_000, 99_500, 100_000] and any(s <= 10_000 for s in kept[1:])


def test_devices():
    assert available_devices()[-1] == "cpu"
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == available_devices()[0]
    missing = [d for d in ("cuda", "mps") if d not in available_devices()]
    for name in missing:
        with pytest.raises(ConfigError, match="not available"):
            resolve_device(name)
    with pytest.raises(ConfigError):
        resolve_device("tpu")


def test_bare_loop_measures(tiny_text):
    assert bare_tokens_per_s(tiny(tiny_text), steps=5) > 0


def test_checkpoint_listing_after_a_long_run_stays_small(tmp_path, tiny_text):
    config = tiny(tiny_text, max_steps=60, checkpoint_every=2, eval_interval=1000, sample_every=1000)
    _, _, run_dir = new_run(tmp_path, config)
    run_training(run_dir, config)
    steps = list_checkpoints(run_dir)
    assert len(steps) <= 12 and steps[0] == 0 and steps[-1] == 60


def test_ctrl_c_during_setup_ends_stopped_without_a_checkpoint(tmp_path, tiny_text):
    """Interrupted before the model is ready (e.g. while DDP wraps it under torchrun): the interrupt goes on, and
    the run says it stopped while starting instead of failing on a checkpoint of a model it does not have yet."""

    def interrupted(trainer):
        raise KeyboardInterrupt

    config = tiny(tiny_text)
    store, run_id, run_dir = new_run(tmp_path, config)
    with pytest.raises(KeyboardInterrupt):
        run_training(run_dir, config, prepare=interrupted)
    status = store.reader(run_id).status()
    assert status["state"] == "stopped" and "while starting" in status["reason"]
    assert list_checkpoints(run_dir) == []


def test_bench_clock_starts_at_the_first_recorded_step_and_waits_keep_leases_then_stop_over_the_cap():
    from tinygpt.bench.worker import training_started_at, wait_for_runs

    assert training_started_at([{"time": 100.0, "step_ms": 250.0}, {"time": 101.0, "step_ms": 9.0}]) == 99.75

    class FakeManager:
        def __init__(self):
            self.live, self.touched, self.stopped = {"a", "b"}, [], []

        def is_live(self, run_id):
            return run_id in self.live

        def queued_runs(self):
            return []

        def touch(self, run_id):
            self.touched.append(run_id)

        def stop(self, run_id):
            self.stopped.append(run_id)
            self.live.discard(run_id)

    manager = FakeManager()
    wait_for_runs(manager, ["a", "b"], cap_s=0.05, poll_s=0.01)
    assert set(manager.touched) == {"a", "b"} and sorted(manager.stopped) == ["a", "b"]


def test_the_next_samples_cost_follows_the_steps_pace_not_a_loaded_first_second():
    """A review's run sampled at step 0 while its worker's first step took 162 ms (34 ms later): at that cost the 3%
    budget held the next sample back for 1,495 steps. The cost is scaled by how the step's time moved since."""
    from tinygpt.runs.clock import sample_estimate

    assert sample_estimate(2.9, 0.162, 0.034) == pytest.approx(0.609, abs=1e-3)
    assert sample_estimate(0.3, None, 0.034) == 0.3 and sample_estimate(0.3, 0.05, None) == 0.3


def test_every_pause_and_resume_is_a_state_event_saying_who_and_at_which_step(tmp_path, tiny_text):
    """A review found metrics.jsonl gaps of 187 s and 47 s (real pauses) with no event: "paused by ..." on the page
    could not be checked against the run's files."""
    config = tiny(tiny_text)
    store, run_id, run_dir = new_run(tmp_path, config)
    control = QueueControl()

    def at_step(record):
        if record["step"] == 5:
            control.send({"cmd": "pause", "reason": "paused by quick-badger-61"})
            control.send({"cmd": "resume"})
        if record["step"] == 8:
            control.send({"cmd": "pause"})
            control.send({"cmd": "resume", "reason": "resumed by the instructor"})

    assert run_training(run_dir, config, control, on_record=at_step) == "finished"
    said = [(e["step"], e["message"]) for e in read_events(run_dir) if e.get("kind") == "state"]
    assert said[:4] == [(5, "paused by quick-badger-61 at step 5"), (5, "resumed at step 5"),
                        (8, "paused by you at step 8"), (8, "resumed by the instructor at step 8")]  # fmt: skip
