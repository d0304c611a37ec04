"""The reliability probe's round-four families (issue 34), called by tests/reliability_probe.py:

limits     every row of tinygpt.config.LIMITS, past either end and at the end itself, at every door: the
           config (what the lab, resume and the Train form build through `preset`), the CLI's flag, a --config
           file, a workshop link. Past an end: refused (exit 2 in one line, a ConfigError naming the field, a
           link message), and no run folder made; at the end: taken.
files      files a user hands over: --config of /dev/zero, of 2 MB, of bytes that are not UTF-8, of JSON nested
           past the parser, an empty one; --text and --prompt that are not UTF-8; a corpus.txt beside a
           config that is damaged. Each refused in one line, exit 2, nothing made; /dev/zero in a subprocess,
           timed, with its peak memory.
ownership  a run no learner owns (trained from the command line) against a learner's pause, resume, step,
           stop, knob and delete, and the instructor's delete: learners refused whatever the run's state, the
           instructor allowed; a learner's own run stays theirs.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from helpers import cli_env, tiny_config

from tinygpt.cli.commands import main as cli_main
from tinygpt.config import LIMITS, ConfigError, Limit
from tinygpt.errors import TinyGPTError
from tinygpt.presets import preset, setting_section
from tinygpt.runs.owners import Actor, NotYourRunError
from tinygpt.runs.scheduler import RunManager
from tinygpt.runs.store import RunStore

LEARNER = Actor("a" * 16, "anna")
INSTRUCTOR = Actor("b" * 16, "teacher", instructor=True)


def _outside(limit: Limit) -> list:
    """Values just past each end of a row (below the low end only where the low end is not 0 of a share)."""
    step = 1 if isinstance(limit.high, int) else max(abs(limit.high) * 0.5, 1e-9)
    below = limit.low if limit.above_low else limit.low - (1 if isinstance(limit.low, int) else 1e-6)
    return [limit.high + step, below]


def _cli(argv: list[str]) -> tuple[int, str]:
    """Exit status and stderr of the CLI run in this process (argparse's own refusals included)."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = cli_main(argv)
        except SystemExit as exc:
            status = exc.code
    return status, err.getvalue()


def _no_folder(root: Path) -> None:
    made = [p for p in root.iterdir() if not p.name.startswith(".")] if root.exists() else []
    assert not made, f"a run folder was made: {made}"


def probe_limits(family, root: Path) -> None:
    from tinygpt.ui.teach.workshop import SETTING_TYPES, parse_workshop

    runs = root / "limits"
    for name, limit in sorted(LIMITS.items()):
        if name == "vocab_size":
            continue  # from the corpus: no door sets it
        flag = "--" + name.replace("_", "-")
        section = setting_section(name)
        for value in _outside(limit):
            with family.case(f"config {name}={value}"):
                try:
                    preset("demo", **{name: value})
                    raise AssertionError("accepted")
                except ConfigError as exc:
                    assert name in str(exc) or "learning_rate" in str(exc), exc
            with family.case(f"flag {flag} {value}"):
                status, err = _cli(["train", "--runs-dir", str(runs), "--quiet", flag, str(value)])
                assert status == 2 and err.count("\n") == 1, (status, err)
                _no_folder(runs)
            with family.case(f"--config {name}={value}"):
                path = root / f"config-{name}.json"
                body = {name: value} if section == "run" else {section: {name: value}}
                path.write_text(json.dumps(body))
                status, err = _cli(["train", "--runs-dir", str(runs), "--quiet", "--config", str(path)])
                assert status == 2 and err.count("\n") == 1 and name in err, (status, err)
                _no_folder(runs)
            if name in SETTING_TYPES:
                with family.case(f"link {name}={value}"):
                    shop = parse_workshop({name: str(value)})
                    used = shop.overrides.get(name)
                    assert used is None or limit.contains(used), used
                    assert any(name in e for e in shop.errors), shop.errors
        with family.case(f"config {name} at its upper end"):
            if name not in ("min_lr", "window", "num_heads"):  # bounded by another field too: lr, context, width
                preset("demo", **{name: limit.high})


def probe_files(family, root: Path) -> None:
    runs = root / "files"
    cases = {
        "2 MB config": (b" " * (2 << 20), "larger than"),
        "non-UTF-8 config": (b'{"train": {"seed": 1}, "probe_text": "caf\xe9"}', "not UTF-8"),
        "deep JSON": (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        "empty config": (b"", "not JSON"),
        "config of a list": (b"[1, 2]", "JSON object"),
    }
    for label, (data, said) in cases.items():
        with family.case(label):
            path = root / "config.json"
            path.write_bytes(data)
            status, err = _cli(["train", "--runs-dir", str(runs), "--quiet", "--config", str(path)])
            assert status == 2 and said in err and err.count("\n") == 1, (status, err)
            _no_folder(runs)
    for label, argv in {
        "--text not UTF-8": ["train", "--source", "text", "--text", "ab\udcff" * 100],
        "--prompt not UTF-8": ["sample", "--run", "x", "--prompt", "ab\udcff"],
    }.items():
        with family.case(label):
            status, err = _cli([*argv, "--runs-dir", str(runs)])
            assert status == 2 and "not UTF-8" in err and err.count("\n") == 1, (status, err)
            _no_folder(runs)
    with family.case("corpus.txt beside a config, not UTF-8"):
        folder = root / "bundle"
        folder.mkdir(exist_ok=True)
        config = preset("demo", source="text", text="hello world " * 40).to_dict()
        config["data"]["text"], config["data"]["text_sha256"] = "", "0" * 64
        (folder / "config.json").write_text(json.dumps(config))
        (folder / "corpus.txt").write_bytes(b"\xff\xfe" * 100)
        status, err = _cli(["train", "--runs-dir", str(runs), "--quiet", "--config", str(folder / "config.json")])
        assert status == 2 and "cannot be read" in err, (status, err)
        _no_folder(runs)
    with family.case("--config /dev/zero in a subprocess"):

        def timed(*flags: str) -> tuple[float, subprocess.CompletedProcess]:
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "tinygpt", "train", *flags, "--runs-dir", str(runs)],
                capture_output=True, text=True, env=cli_env(), timeout=60,
            )  # fmt: skip
            return time.perf_counter() - started, done

        # The same interpreter start and imports, refused by argparse at once: what /dev/zero adds is the difference.
        baseline, _ = timed("--eval-batches", "0")
        seconds, done = timed("--config", "/dev/zero")
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child so far
        print(
            f"files: --config /dev/zero refused in {seconds:.2f} s, a flag refused at once in {baseline:.2f} s "
            f"(both: interpreter start and imports); peak child memory {peak_mb:.0f} MB"
        )
        assert done.returncode == 2 and "larger than" in done.stderr, done.stderr
        assert seconds - baseline < 1.0, (seconds, baseline)
        assert peak_mb < 1024, peak_mb  # torch's import is ~300 MB; reading /dev/zero whole took 19-24 GB


def _refused(family, case: str, action, run_dir: Path) -> None:
    """One case: `action` is refused as not the learner's run (the instructor's), and the run is still there."""
    with family.case(case):
        try:
            action()
            raise AssertionError("accepted")
        except NotYourRunError as exc:
            assert "the instructor" in str(exc), exc
        assert run_dir.exists()


def probe_ownership(family, root: Path, text: str) -> None:
    store = RunStore(root / "ownership")
    with store.create(tiny_config(text, max_steps=4).to_dict(), owner="cli") as writer:
        cli_run = writer.run_id  # trained from the command line: no learner owns it
    manager = RunManager(store, max_active=1, threads_per_run=1, lease_seconds=600)
    try:
        actions = {
            "pause": lambda actor: manager.pause(cli_run, actor=actor),
            "resume": lambda actor: manager.resume(cli_run, actor=actor),
            "step": lambda actor: manager.step(cli_run, 1, actor=actor),
            "stop": lambda actor: manager.stop(cli_run, actor=actor),
            "knob": lambda actor: manager.set_knob(cli_run, "learning_rate", 1e-2, actor=actor),
            "delete": lambda actor: store.delete(cli_run, actor=actor),
        }
        for label, action in actions.items():
            _refused(family, f"a learner's {label} of a CLI run", partial(action, LEARNER), store.path(cli_run))
        # "Whatever their state": a CLI run trained to its end, and a run the instructor started in the app (a
        # lesson's prepared run) are as read-only to a learner as the CLI run that never trained.
        from tinygpt.runs.loop import run_training

        config = tiny_config(text, max_steps=3)
        with store.create(config.to_dict(), owner="cli") as writer:
            finished = writer.run_id
        assert run_training(writer.run_dir, config) == "finished"
        prepared = manager.start(tiny_config(text, max_steps=3), actor=INSTRUCTOR)
        for label, run in (("a finished CLI run", finished), ("the instructor's app run", prepared)):
            for verb, action in (
                ("resume", lambda r: manager.resume(r, max_steps=6, actor=LEARNER)),
                ("knob", lambda r: manager.set_knob(r, "learning_rate", 1e-2, actor=LEARNER)),
                ("delete", lambda r: store.delete(r, actor=LEARNER)),
            ):
                _refused(family, f"a learner's {verb} of {label}", partial(action, run), store.path(run))
        manager.stop(prepared, actor=INSTRUCTOR)
        with family.case("a learner's own run stays theirs"):
            own = manager.start(tiny_config(text, max_steps=4), actor=LEARNER)
            manager.stop(own, actor=LEARNER)
        with family.case("the instructor may delete a CLI run"):
            try:
                store.delete(cli_run, actor=INSTRUCTOR)
            except TinyGPTError as exc:
                raise AssertionError(f"refused: {exc}") from exc
            assert not store.path(cli_run).exists()
    finally:
        manager.shutdown()
