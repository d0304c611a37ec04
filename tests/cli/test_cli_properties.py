"""A property of the CLI over all of its flags: whatever the value (boundary, random, NaN, inf, negative, huge,
garbage), `python -m tinygpt` answers with exit status 2 and one line saying what is wrong, or it runs (0 or 1,
its last line "run X: <how it ended>"), or it is interrupted (130); never a traceback.

Cases are drawn from a seeded generator, each flag's likely-bad values first, on a tiny model and a synthetic
corpus with 3 steps, a fixed number of them (CASES: a count, not a time budget, so a busy machine makes the test
slower, never red: "only 131 cases ran in 30 s" failed it under load 6); a run that would go on for
long (a huge max_steps or eval_batches is legal) is interrupted after RUN_SECONDS like a Ctrl-C, and must
then stop cleanly too. Runs in this process: a traceback would surface as an exception.
"""

from __future__ import annotations

import argparse
import random
import signal

import pytest
from helpers import tiny_config

from tinygpt.cli.commands import main
from tinygpt.cli.flags import build_parser
from tinygpt.runs import loop
from tinygpt.runs.loop import run_training
from tinygpt.runs.store import RunStore

CASES = 150  # every flag's likely-bad value first, then random mixes: about 25 s on a quiet 2-core machine
RUN_SECONDS = 2.0  # s one case may take before it is interrupted (SIGALRM -> KeyboardInterrupt, as Ctrl-C)
SEED = 20240611
BASE = ["--source", "synthetic:copy", "--synthetic-examples", "300", "--synthetic-digits", "3", "--hidden-dim", "16",
        "--num-heads", "2", "--num-layers", "1", "--max-seq-len", "16", "--batch-size", "2", "--max-steps", "3",
        "--eval-batches", "1", "--device", "cpu", "--quiet", "--threads", "1"]  # fmt: skip

NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1", "-0", "1e308", "1e-320", "2", "7", "1e999", "9" * 30, "0x10", "",
           "1.5", "-2.5", " 3 ", "1_000", "²"]  # fmt: skip
TEXTS = ["", " ", "a", "\n", "☃ snow", "x" * 5000, "\x00", "../../etc/passwd", "-", "--max-steps"]
BOOLS = ["true", "false", "yes", "0", "maybe", "", "TRUE"]


def values_for(action: argparse.Action, rng: random.Random) -> list[str]:
    """Candidate values for one flag: its likely-bad ones, its choices, and a few random numbers."""
    if action.choices:
        return [*map(str, action.choices), "bogus", "", action.choices[0].upper()]
    if action.metavar == "{true,false}":
        return BOOLS
    name = getattr(action.type, "__name__", "")
    if name in ("int", "float") or action.metavar in ("INT", "FLOAT", "STEPS", "N", "STEP", "T", "K", "P"):
        randoms = [str(rng.randint(-10, 10**6)), f"{rng.uniform(-5, 5):.3g}", str(2 ** rng.randint(1, 80))]
        return NUMBERS + randoms
    return TEXTS


def cases(rng: random.Random, runs_dir: str, run_id: str) -> list[list[str]]:
    """(argv) lists: every flag of train and sample once with a bad value first, then random (flag, value) mixes."""
    sub = build_parser()._subparsers._group_actions[0].choices
    first, rest = [], []
    for command in ("train", "sample"):
        actions = [a for a in sub[command]._actions if a.option_strings and a.dest != "help"]
        base = [*BASE] if command == "train" else ["--run", run_id, "--max-new-tokens", "5"]
        for action in actions:
            flag = action.option_strings[0]
            if action.nargs == 0:  # --quiet
                continue
            values = values_for(action, rng)
            first.append([command, *base, "--runs-dir", runs_dir, flag, values[0]])
            for value in values[1:]:
                rest.append([command, *base, "--runs-dir", runs_dir, flag, value])
        for _ in range(20):  # two flags at once
            picks = rng.sample(actions, 2)
            argv = [command, *base, "--runs-dir", runs_dir]
            for action in picks:
                if action.nargs != 0:
                    argv += [action.option_strings[0], rng.choice(values_for(action, rng))]
            rest.append(argv)
    rng.shuffle(rest)
    return first + rest


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def run_case(argv: list[str], capsys) -> tuple[int, str, str]:
    previous = signal.signal(signal.SIGALRM, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, RUN_SECONDS)
    try:
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_flag_value_exits_2_with_one_line_or_runs_never_a_traceback(tmp_path, capsys, tiny_text, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative --runs-dir (".", "runs", ...) lands here, not in the checkout
    monkeypatch.setattr(loop, "SAMPLE_CHARS", 5)  # published samples are what a 3-step run spends its time on
    runs_dir = str(tmp_path / "runs")
    with RunStore(runs_dir).create(tiny_config(tiny_text, max_steps=2).to_dict(), owner="cli") as writer:
        run_id = writer.run_id
    run_training(writer.run_dir, tiny_config(tiny_text, max_steps=2))  # something for `sample` to load
    rng = random.Random(SEED)
    seen: dict[int, int] = {}
    done = 0
    for argv in cases(rng, runs_dir, run_id)[:CASES]:
        code, out, err = run_case(argv, capsys)
        context = f"argv={argv[-2:]!r} code={code} stderr={err[-500:]!r}"
        assert "Traceback" not in out + err, context
        assert code in (0, 1, 2, 130), context
        if code == 2:
            lines = [line for line in err.splitlines() if line.strip()]
            assert len(lines) == 1 and "error:" in lines[0], context
        elif code in (0, 1) and argv[0] == "train":
            last = (err if code == 1 else out).strip().splitlines()[-1]
            assert last.startswith("run ") and ": " in last, context
        seen[code] = seen.get(code, 0) + 1
        done += 1
    assert done == CASES, f"only {done} cases drawn: {seen}"
    assert seen.get(2, 0) > 50 and seen.get(0, 0) > 5, seen  # both refusals and real runs were exercised


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"], ["sample", "--help"], ["runs", "--help"]])
def test_help_exits_0(argv, capsys):
    code, out, _ = run_case(argv, capsys)
    assert code == 0 and "usage:" in out
