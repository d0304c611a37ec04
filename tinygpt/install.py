"""`python3 -m tinygpt.install`: set up `.venv` so that the app runs, and end in a running app's command or in one
clear next step, never in 60 lines of "Retrying ... Name or service not known".

    1. `.venv` (python3 -m venv), unless it exists;
    2. torch, unless `.venv` has it: the CPU build from PyTorch's CPU wheel index on a machine without an NVIDIA
       GPU (~200 MB), the default build (CUDA libraries included, ~3-6 GB) with one (or with --gpu). pip is asked
       to give up after one retry of 15 s, and when the CPU index cannot be reached this says so and names the
       command that uses the default index instead (or does it, with --default-index);
    3. requirements.txt (streamlit, plotly, altair, safetensors);
    4. the command that starts the app, now and later (Linux and macOS, and Windows).

Standard library only: it runs before anything is installed. Importing `tinygpt` imports nothing else.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PIP_PATIENCE = ["--timeout", "15", "--retries", "1"]  # pip's own defaults retry 5 times at 15 s each, per file
WINDOWS = os.name == "nt"


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if WINDOWS else "bin/python")


def start_command(venv: Path) -> str:
    """The command that starts the app from the checkout, on this system."""
    relative = venv.relative_to(REPO) if venv.is_relative_to(REPO) else venv
    return f"{relative}\\Scripts\\streamlit run app.py" if WINDOWS else f"{relative}/bin/streamlit run app.py"


def has_nvidia_gpu(which: Callable[[str], str | None] = shutil.which) -> bool:
    """An NVIDIA driver is installed (its nvidia-smi is on PATH): the default torch build can use the GPU."""
    return which("nvidia-smi") is not None


def torch_command(python: Path, cpu: bool) -> list[str]:
    command = [str(python), "-m", "pip", "install", *PIP_PATIENCE, "torch"]
    return [*command, "--index-url", CPU_INDEX] if cpu else command


def unreachable_message(python: Path, pip_output: str) -> str:
    """What to say when the CPU build could not be installed: what happened, and the one command to use instead."""
    tail = [line.strip() for line in pip_output.strip().splitlines() if line.strip()][-2:]
    said = f" pip said: {' / '.join(tail)}" if tail else ""
    default = " ".join(torch_command(python, cpu=False)[:4] + ["torch"])
    return (
        f"tinygpt.install: the CPU build of torch could not be installed from {CPU_INDEX}: the index is out of reach "
        f"from this machine (offline, or a proxy or firewall in the way).{said}\n"
        f"Next step, either:\n"
        f"  - install torch from the default package index instead (it brings its CUDA libraries: about 3-6 GB on "
        f"disk, and it runs on a CPU too):\n      {default}\n"
        f"    then run this again (python3 -m tinygpt.install), or run it with --default-index to do both;\n"
        f"  - or, with a torch wheel file at hand: {python} -m pip install /path/to/torch-*.whl"
    )


def run_pip(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True)


def install(venv: Path, gpu: bool | None, default_index: bool, pip: Callable = run_pip, say=print) -> int:
    """Steps 1-4 above; 0 when the app can start, 3 when torch could not be installed (the message says why)."""
    python = venv_python(venv)
    if not python.exists():
        say(f"tinygpt.install: creating {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    has_torch = pip([str(python), "-c", "import torch"]).returncode == 0
    if not has_torch:
        cpu = not (gpu if gpu is not None else has_nvidia_gpu())
        build = "the CPU build (~200 MB)" if cpu else "the default build, with CUDA (~3-6 GB)"
        say(f"tinygpt.install: installing torch, {build}")
        done = pip(torch_command(python, cpu))
        if done.returncode != 0 and cpu:
            if not default_index:
                say(unreachable_message(python, done.stderr or done.stdout))
                return 3
            say("tinygpt.install: the CPU index is out of reach; installing torch from the default index instead")
            done = pip(torch_command(python, cpu=False))
        if done.returncode != 0:
            say(f"tinygpt.install: torch could not be installed: {(done.stderr or done.stdout).strip()[-600:]}")
            return 3
    say("tinygpt.install: installing requirements.txt")
    done = pip([str(python), "-m", "pip", "install", *PIP_PATIENCE, "-r", str(REPO / "requirements.txt")])
    if done.returncode != 0:
        say(f"tinygpt.install: requirements.txt could not be installed: {(done.stderr or done.stdout).strip()[-600:]}")
        return 3
    say(f"tinygpt.install: ready. Start the app (now, and any time later) with:\n  {start_command(venv)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tinygpt.install", description=__doc__.splitlines()[0])
    build = parser.add_mutually_exclusive_group()
    build.add_argument("--gpu", action="store_true", default=None, help="the default torch build, with CUDA")
    build.add_argument("--cpu", dest="gpu", action="store_false", help="the CPU build, even with an NVIDIA GPU")
    parser.add_argument(
        "--default-index", action="store_true", help="when the CPU index is out of reach, use the default index"
    )
    parser.add_argument("--venv", type=Path, default=REPO / ".venv", help="where to make the environment")
    args = parser.parse_args(argv)
    return install(args.venv.resolve(), args.gpu, args.default_index)


if __name__ == "__main__":
    sys.exit(main())
