"""torchrun with 2 CPU processes (gloo): rank 0 writes one whole run folder, and the loss falls like 1 process
with twice the batch."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli_env, tiny_train_args

STEPS = 60


def train(tmp_path: Path, text: str, nproc: int, batch: int) -> list[float]:
    runs = tmp_path / f"runs{nproc}"
    env = cli_env()
    args = tiny_train_args(runs, text, STEPS, "--num-layers", "1", "--batch-size", str(batch), "--warmup-steps", "5",
                           "--eval-interval", "30", "--attention-every", "20", "--seed", "3")  # fmt: skip
    if nproc > 1:
        torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or "torchrun"
        cmd = [torchrun, "--standalone", f"--nproc_per_node={nproc}", "-m", "tinygpt", *args]
    else:
        cmd = [sys.executable, "-m", "tinygpt", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    folders = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(folders) == 1, folders  # written once, by rank 0
    run_dir = folders[0]
    assert json.loads((run_dir / "status.json").read_text())["state"] == "finished"
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, STEPS + 1))  # no duplicate lines from other ranks
    assert (run_dir / "attention" / "index.json").exists() and list((run_dir / "checkpoints").glob("*.safetensors"))
    return [r["loss"] for r in records]


@pytest.mark.slow
def test_two_gloo_ranks_match_one_process_with_twice_the_batch(tmp_path, tiny_text):
    two = train(tmp_path, tiny_text, nproc=2, batch=4)
    one = train(tmp_path, tiny_text, nproc=1, batch=8)
    tail = slice(STEPS - 15, STEPS)
    mean_two, mean_one = sum(two[tail]) / 15, sum(one[tail]) / 15
    assert mean_two < two[0] - 0.5 and mean_one < one[0] - 0.5  # both learn
    assert abs(mean_two - mean_one) < 0.25  # the same curve shape: DDP averages 2 x 4 windows like one batch of 8
