"""The CLI: flags generated from the config dataclasses, clear errors, and the same run folders as the app."""

import dataclasses
import json
import subprocess
import sys

import pytest
from helpers import cli_env, tiny_train_args

from tinygpt.cli.commands import main
from tinygpt.cli.flags import build_parser, config_from_args
from tinygpt.config import Interventions, TrainConfig, TransformerConfig
from tinygpt.presets import preset


def parse(*argv):
    return build_parser().parse_args(["train", *argv])


def test_flags_round_trip_into_the_config():
    args = parse(
        "--preset",
        "nanogpt-cpu",
        "--num-heads",
        "8",
        "--max-steps",
        "500",
        "--mask",
        "off_by_one",
        "--detach-residual",
        "true",
        "--learning-rate",
        "3e-4",
        "--source",
        "synthetic:add",
    )
    config = config_from_args(args)
    expected = preset(
        "nanogpt-cpu",
        num_heads=8,
        max_steps=500,
        mask="off_by_one",
        detach_residual=True,
        learning_rate=3e-4,
        source="synthetic:add",
    )
    assert config == expected


def test_every_config_field_has_a_flag_with_help():
    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    actions = {a.dest: a for a in train._actions}
    for cls, section in ((TransformerConfig, "model"), (TrainConfig, "train"), (Interventions, "interventions")):
        for field in dataclasses.fields(cls):
            if field.name == "vocab_size":
                continue  # set from the corpus
            action = actions[f"{section}.{field.name}"]
            assert action.option_strings == ["--" + field.name.replace("_", "-")]
            assert action.help and "default" in action.help
    assert "d_model" in actions["model.hidden_dim"].help  # the field's own comment is the help text


def test_config_file_then_flags_override(tmp_path):
    saved = preset("demo", num_heads=2).to_dict()
    (tmp_path / "config.json").write_text(json.dumps({**saved, "run_id": "ignored", "vocab": ["a"]}))
    config = config_from_args(parse("--config", str(tmp_path / "config.json"), "--max-steps", "7"))
    assert config.model.num_heads == 2 and config.train.max_steps == 7


def test_invalid_combination_exits_non_zero_with_a_message(capsys):
    status = main(["train", "--hidden-dim", "100", "--num-heads", "8"])
    assert status == 2
    assert "hidden_dim 100 is not divisible by num_heads 8" in capsys.readouterr().err


def test_unknown_run_is_a_clean_error(tmp_path, capsys):
    status = main(["sample", "--run", "doesnotexist1", "--runs-dir", str(tmp_path)])
    assert status == 2
    assert "error:" in capsys.readouterr().err


def test_train_then_sample_end_to_end(tmp_path, tiny_text):
    env = cli_env()
    train = subprocess.run(
        [sys.executable, "-m", "tinygpt", *tiny_train_args(tmp_path, tiny_text, 30)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert train.returncode == 0, train.stderr
    run_id = train.stdout.split()[1]
    run_dir = tmp_path / run_id
    assert json.loads((run_dir / "status.json").read_text())["state"] == "finished"
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 30
    assert json.loads((run_dir / "config.json").read_text())["owner"] == "cli"
    sample = subprocess.run(
        [
            sys.executable,
            "-m",
            "tinygpt",
            "sample",
            "--run",
            run_id,
            "--runs-dir",
            str(tmp_path),
            "--prompt",
            tiny_text[:3],
            "--max-new-tokens",
            "20",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert sample.returncode == 0, sample.stderr
    assert sample.stdout.startswith(tiny_text[:3]) and len(sample.stdout.rstrip("\n")) >= 3 + 20 - 2
    listing = subprocess.run(
        [sys.executable, "-m", "tinygpt", "runs", "--runs-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert run_id in listing.stdout and "finished" in listing.stdout


def test_the_app_never_writes_into_a_cli_run(tmp_path, tiny_text):
    from tinygpt.errors import TinyGPTError
    from tinygpt.presets import preset as make_preset
    from tinygpt.runs.scheduler import RunManager
    from tinygpt.runs.store import RunStore

    store = RunStore(tmp_path)
    config = make_preset("demo", source="text", text=tiny_text)
    with store.create(config.to_dict(), owner="cli") as writer:
        writer.write_status(state="paused", reason="paused by its owner", step=3)
        run_id = writer.run_id
    manager = RunManager(store)
    try:
        for action in (lambda: manager.resume(run_id), lambda: manager.step(run_id, 2), lambda: manager.stop(run_id)):
            with pytest.raises(TinyGPTError, match="read-only"):
                action()
        assert json.loads((tmp_path / run_id / "status.json").read_text())["state"] == "paused"
    finally:
        manager.shutdown()


def test_runs_lists_knobs_changed_while_training(tmp_path, capsys):
    from tinygpt.runs.store import RunStore

    store = RunStore(tmp_path)
    with store.create(preset("demo").to_dict(), owner="cli") as writer:
        writer.append_event({"step": 3, "kind": "knob", "knob": "mask", "old": "causal", "new": "none"})  # pre-"ok"
        writer.append_event({"step": 4, "kind": "knob", "knob": "window", "ok": False, "error": "no", "request": "r"})
        run_id = writer.run_id
    with store.create(preset("demo").to_dict(), owner="cli") as writer:
        plain_id = writer.run_id
    assert main(["runs", "--runs-dir", str(tmp_path)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines[run_id].endswith("knobs now: mask=none") and "knobs" not in lines[plain_id]


def test_sample_says_which_checkpoints_a_run_has(tmp_path, capsys):
    from tinygpt.runs.store import RunStore

    with RunStore(tmp_path).create(preset("demo").to_dict(), owner="cli") as writer:
        run_id = writer.run_id
    assert main(["sample", "--run", run_id, "--runs-dir", str(tmp_path)]) == 2
    assert f"run {run_id} has no checkpoint yet" in capsys.readouterr().err


def test_train_says_the_runs_readable_name_beside_its_id(tmp_path, tiny_text, capsys):
    """The start and end lines carry the name `runs` and the app show ("… #2" for the same settings again); the
    id stays the second word, for scripts and --resume."""
    from tinygpt.runs.names import store_names

    lines = []
    for _ in range(2):
        assert main([*tiny_train_args(tmp_path, tiny_text, 2), "--quiet"]) == 0
        lines.append(capsys.readouterr().out.strip().splitlines())
    names = store_names(tmp_path)
    for out in lines:
        run_id = out[0].split()[1]
        assert out[0] == f"run {run_id} ({names[run_id]}) in {tmp_path}" and "·" in names[run_id]
        assert out[-1].startswith(f"run {run_id} ({names[run_id]}): finished")
    assert lines[1][0].split(") in ")[0].endswith(" #2")
    assert main(["train", "--resume", run_id, "--max-steps", "3", "--runs-dir", str(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(f"run {run_id} ({names[run_id]}): finished")


def test_resume_of_a_run_without_a_checkpoint_starts_it_over(tmp_path, tiny_text):
    """The app's rule (RunManager): the newest checkpoint if there is one, else from the start."""
    from helpers import tiny_config

    from tinygpt.runs.files import list_checkpoints
    from tinygpt.runs.status import read_status, update_status
    from tinygpt.runs.store import RunStore

    store = RunStore(tmp_path)
    with store.create(tiny_config(tiny_text, max_steps=5).to_dict(), owner="cli") as writer:
        run_id = writer.run_id
    update_status(writer.run_dir, state="failed", reason="failed: while starting")
    assert main(["train", "--resume", run_id, "--runs-dir", str(tmp_path), "--quiet"]) == 0
    assert read_status(writer.run_dir)["state"] == "finished" and list_checkpoints(writer.run_dir)[-1] == 5


def test_readme_first_command_trains_shakespeare_offline(tmp_path, capsys, monkeypatch):
    """Issue 24 finding 1: offline, with no TINYGPT_SHAKESPEARE and an empty cache, the default corpus trains from
    the embedded copy (it used to fail and leave a `failed` run behind)."""
    import urllib.error

    import tinygpt.data as data

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("offline")

    monkeypatch.delenv("TINYGPT_SHAKESPEARE", raising=False)
    monkeypatch.setenv("TINYGPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(data, "urlopen", no_network)
    args = ["--runs-dir", str(tmp_path / "runs"), "--device", "cpu", "--quiet"]
    code = main(["train", "--preset", "demo", "--max-steps", "3", "--hidden-dim", "32", "--max-seq-len", "16", *args])
    assert code == 0, capsys.readouterr().err
    code = main(["runs", "--runs-dir", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert code == 0 and "finished" in out and "failed" not in out


class _Log:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return False


def test_progress_eta_comes_from_recent_steps_not_the_first(monkeypatch):
    """Issue 24 finding 4: the CLI's first ETA read "1040s": the first step carries the start-up (model build,
    first kernels), and the ETA divided all elapsed time by one step."""

    clock = {"t": 1000.0}
    from tinygpt.cli import commands

    monkeypatch.setattr(commands.time, "time", lambda: clock["t"])
    log = _Log()
    progress = commands.Progress(1000, stream=log)
    clock["t"] += 10.0  # start-up
    progress({"step": 1, "loss": 4.2, "tokens_per_s": 100.0})
    first = log.text.splitlines()[-1]
    assert "ETA -" in first and "ETA 9990s" not in first  # too few steps to say
    for step in range(2, 400):  # a log line every 5 s off a terminal: one more, at step 251
        clock["t"] += 0.02
        progress({"step": step, "loss": 3.0, "tokens_per_s": 9000.0})
    last = log.text.splitlines()[-1]
    step = int(last.split("step ", 1)[1].split("/", 1)[0])
    eta = int(last.rsplit("ETA ", 1)[1].rstrip("s\n"))
    assert step > 200 and abs(eta - (1000 - step) * 0.02) <= 2, last  # ~15 s at the recent pace


def test_progress_eta_includes_the_evaluations_and_tokens_per_s_is_smoothed(monkeypatch):
    """Issue 36 finding 5: the ETA said 326 s at step 9 of a run that took 612 s (no evaluation had run yet), and
    tokens/s jumped between 146 and 5,827 from line to line (each line showed one step's own figure)."""
    clock = {"t": 1000.0}
    from tinygpt.cli import commands

    monkeypatch.setattr(commands.time, "time", lambda: clock["t"])
    log = _Log()
    progress = commands.Progress(400, stream=log, eval_interval=50)
    for step in range(1, 401):
        slow = step % 50 == 0  # an evaluation after every 50th step: 1 s, against 0.01 s a step
        clock["t"] += 1.01 if slow else 0.01
        progress({"step": step, "loss": 3.0, "tokens_per_s": 1000.0, "step_ms": 10.0})
        if step == 20:
            assert progress.eta(clock["t"], step) == "-"  # no evaluation in the window yet: nothing to promise
    pace = (50 * 0.01 + 1.0) / 50  # seconds a step, the evaluation included
    assert progress.eta(clock["t"] + 0.0, 350) == f"{pace * 50:.0f}s"
    lines = [line for line in log.text.splitlines() if "tok/s" in line]
    rates = [int(line.split(" tok/s")[0].rsplit(" ", 1)[1].replace(",", "")) for line in lines[1:]]
    assert all(abs(rate - 10 * 1000 / (pace * 1000)) < 60 for rate in rates if rate), rates  # wall-clock tokens/s


# ---------------------------------------------------------------- nonsense is refused before a run folder exists
# (issue 22, finding 7): each case exited 0 or created a folder and then failed with exit 1.


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--resume", ""], "--resume needs a run id"),
        (["--text", "abc abc abc", "--source", "synthetic:copy"], "--text is only read with --source text"),
        (["--source", "synthetic:copy", "--synthetic-examples", "0"], "--synthetic-examples: expected a whole number"),
        (["--source", "synthetic:copy", "--synthetic-examples", "-1"], "--synthetic-examples: expected a whole number"),
        (["--source", "synthetic:copy", "--synthetic-digits", "0"], "--synthetic-digits: expected a whole number"),
        (["--source", "synthetic:copy", "--synthetic-digits", "-1"], "--synthetic-digits: expected a whole number"),
        (["--source", "synthetic:copy", "--probe-text", "Zebra!"], "probe text"),
        # issue 34: every number that costs time has an upper end; names only the model knows are checked too
        (["--eval-batches", "99999999999999999999999"], "--eval-batches: expected a whole number from 1 to 1,000"),
        (["--synthetic-examples", "10000000"], "--synthetic-examples: expected a whole number from 1 to 1,000,000"),
        (["--zeroed-probes", "nope"], "zeroed_probes names 'nope'"),
        (["--source", "text", "--text", "caf\udce9 " * 40], "--text: is not UTF-8 text: byte 0xe9 at offset 3"),
        (["--config", "/dev/zero"], "is larger than 1,048,576 bytes"),
    ],
)
def test_nonsense_exits_2_in_one_line_before_any_run_folder(tmp_path, capsys, argv, message):
    try:
        status = main(["train", "--runs-dir", str(tmp_path), "--max-steps", "3", "--quiet", *argv])
    except SystemExit as exc:  # argparse's own refusal of a flag's value: one line, exit 2
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert message in err and err.count("\n") == 1
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]  # no run folder was made


def _trained_run(tmp_path, tiny_text, steps=12):
    from helpers import tiny_config

    from tinygpt.runs.store import RunStore

    store = RunStore(tmp_path)
    with store.create(tiny_config(tiny_text, max_steps=steps).to_dict(), owner="cli") as writer:
        run_id = writer.run_id
    assert main(["train", "--resume", run_id, "--runs-dir", str(tmp_path), "--quiet"]) == 0
    return store, run_id


def test_resume_to_fewer_steps_than_the_run_has_is_refused_and_changes_nothing(tmp_path, tiny_text, capsys):
    store, run_id = _trained_run(tmp_path, tiny_text)
    before = {p.name: p.read_bytes() for p in store.path(run_id).iterdir() if p.is_file()}
    capsys.readouterr()
    status = main(["train", "--resume", run_id, "--runs-dir", str(tmp_path), "--max-steps", "5", "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and "step 12" in err and "--max-steps 5" in err
    after = {p.name: p.read_bytes() for p in store.path(run_id).iterdir() if p.is_file()}
    assert after == before


def test_a_refused_resume_of_a_tampered_corpus_leaves_the_run_as_it_was(tmp_path, tiny_text, capsys):
    """Finding 8: the resume exited 1 and rewrote the finished run's status to failed (and its max_steps)."""
    store, run_id = _trained_run(tmp_path, tiny_text)
    run_dir = store.path(run_id)
    (run_dir / "corpus.txt").write_text("tampered " * 400)
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    capsys.readouterr()
    status = main(["train", "--resume", run_id, "--runs-dir", str(tmp_path), "--max-steps", "40", "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and "corpus.txt" in err
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before
