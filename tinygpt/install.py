"""`python3 -m tinygpt.install`: set up `.venv` so that the app runs, and end in a running app's command or in one
clear next step, never in a traceback or 60 lines of "Retrying ... Name or service not known".

    1. `.venv` (python3 -m venv), unless it exists with pip in it; where venv fails (Debian and Ubuntu without
       python3-venv) it says what to install;
    2. torch, unless `.venv` has it: the CPU build from PyTorch's CPU wheel index on a machine without an NVIDIA
       GPU (~200 MB download), the default build (CUDA libraries included, ~3-6 GB) with one (or with --gpu). pip
       is asked to give up after one retry of 15 s. When pip's output shows the CPU index out of reach (no name
       resolution, no connection, a time-out), it says so and names the command that uses the default index
       instead (or does it, with --default-index); any other failure is quoted from pip, with the command to retry;
    3. requirements.txt (streamlit, plotly, altair, safetensors, ...);
    4. the command that starts the app, now and later (Linux and macOS, and Windows).

Each step says what it downloads and how long it may take before pip starts: pip's own output is kept for errors.
Exit status: 0 ready (the last line is the start command), 3 a pip step failed, 4 no virtual environment could be
made, 130 Ctrl-C (run it again: it skips what is installed). Standard library only: it runs before anything is
installed. Importing `tinygpt` imports nothing else.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PIP_PATIENCE = ["--timeout", "15", "--retries", "1"]  # pip's own defaults retry 5 times at 15 s each, per file
WINDOWS = os.name == "nt"
PIP_FAILED, VENV_FAILED = 3, 4
# What pip prints when it cannot reach an index; any other failure is pip's own error, quoted.
NETWORK_SIGNS = (
    "Name or service not known",
    "Temporary failure in name resolution",
    "nodename nor servname provided",
    "getaddrinfo failed",
    "Failed to establish a new connection",
    "Network is unreachable",
    "Connection refused",
    "ConnectionError",
    "ProxyError",
    "timed out",
    "(from versions: none)",
)
VENV_HINT = "on Debian/Ubuntu install it with `sudo apt install python3-venv`, then run this again"


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


def requirements_command(python: Path) -> list[str]:
    return [str(python), "-m", "pip", "install", *PIP_PATIENCE, "-r", str(REPO / "requirements.txt")]


def is_network_failure(pip_output: str) -> bool:
    """pip's output shows an index out of reach, not some other failure (a full disk, an unsupported Python)."""
    return any(sign.lower() in pip_output.lower() for sign in NETWORK_SIGNS)


def last_lines(output: str, count: int) -> list[str]:
    return [line.strip() for line in output.strip().splitlines() if line.strip()][-count:]


def unreachable_message(python: Path, pip_output: str) -> str:
    """What to say when the CPU index is out of reach: what happened, and the one command to use instead."""
    tail = last_lines(pip_output, 2)
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


def failed_message(what: str, command: list[str], pip_output: str) -> str:
    """A failed pip step: pip's own last lines (out of reach only where they show a network failure) and the
    command to retry it by hand."""
    why = (
        " the package index is out of reach (offline, or a proxy or firewall in the way)."
        if is_network_failure(pip_output)
        else ""
    )
    said = "\n".join(f"    {line}" for line in last_lines(pip_output, 6)) or "    (nothing)"
    return (
        f"tinygpt.install: {what} could not be installed:{why} pip said:\n{said}\n"
        f"Fix what pip names, then retry that step with:\n  {shlex.join(command)}\n"
        f"and run this again (python3 -m tinygpt.install): it skips what is installed."
    )


def venv_failed_message(venv: Path, output: str) -> str:
    """The Debian/Ubuntu hint where venv's output points at a missing python3-venv (ensurepip, or no venv module)
    or says nothing; venv's own words otherwise (a folder that cannot be written, say)."""
    tail = last_lines(output, 2)
    said = f"\n  venv said, making {venv}:" + "".join(f"\n    {line}" for line in tail) if tail else ""
    debian = not tail or any(sign in output for sign in ("ensurepip", "python3-venv", "-venv", "No module named"))
    hint = VENV_HINT if debian else "fix what venv says below, then run this again"
    return f"tinygpt.install: python3 -m venv failed: {hint}.{said}"


def run_pip(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True)


def make_venv(venv: Path) -> subprocess.CompletedProcess:
    """`python3 -m venv VENV`, its output kept for the message where it fails (never a traceback)."""
    command = [sys.executable, "-m", "venv", str(venv)]
    try:
        return subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        return subprocess.CompletedProcess(command, 1, "", str(exc))


def output_of(done: subprocess.CompletedProcess) -> str:
    return "\n".join(part for part in (done.stdout, done.stderr) if part)


def install(
    venv: Path, gpu: bool | None, default_index: bool, pip: Callable = run_pip, say=print, venv_maker=make_venv
) -> int:
    """Steps 1-4 above; the exit status of the module docstring (the messages say why and what next)."""
    python = venv_python(venv)
    # A venv made without ensurepip (Debian's python3 without python3-venv) has a python but no pip: made again.
    if not python.exists() or pip([str(python), "-m", "pip", "--version"]).returncode != 0:
        say(f"tinygpt.install: creating {venv} (python3 -m venv)")
        done = venv_maker(venv)
        if done.returncode != 0 or not python.exists():
            say(venv_failed_message(venv, output_of(done)))
            return VENV_FAILED
    if pip([str(python), "-c", "import torch"]).returncode != 0:
        cpu = not (gpu if gpu is not None else has_nvidia_gpu())
        build = (
            "the CPU build, a ~200 MB download from download.pytorch.org: this may take a few minutes"
            if cpu
            else "the default build with its CUDA libraries, ~3-6 GB of downloads: this may take 5-15 minutes"
        )
        say(f"tinygpt.install: installing torch, {build}...")
        command = torch_command(python, cpu)
        done = step(pip, command, say)
        if done.returncode != 0 and cpu and is_network_failure(output_of(done)):
            if not default_index:
                say(unreachable_message(python, output_of(done)))
                return PIP_FAILED
            say(
                "tinygpt.install: the CPU index is out of reach; installing torch from the default index instead "
                "(with its CUDA libraries, ~3-6 GB of downloads: this may take 5-15 minutes)..."
            )
            command = torch_command(python, cpu=False)
            done = step(pip, command, say)
        if done.returncode != 0:
            say(failed_message("torch", command, output_of(done)))
            return PIP_FAILED
    say(
        "tinygpt.install: installing requirements.txt (streamlit, plotly, altair, safetensors, pandas; ~100 MB of "
        "downloads: this may take a few minutes)..."
    )
    command = requirements_command(python)
    done = step(pip, command, say)
    if done.returncode != 0:
        say(failed_message("requirements.txt", command, output_of(done)))
        return PIP_FAILED
    say(f"tinygpt.install: ready. Start the app (now, and any time later) with:\n  {start_command(venv)}")
    return 0


def step(pip: Callable, command: list[str], say) -> subprocess.CompletedProcess:
    """One pip install, and how long it took where it worked."""
    started = time.monotonic()
    done = pip(command)
    if done.returncode == 0:
        say(f"tinygpt.install: done in {time.monotonic() - started:.0f} s")
    return done


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
    try:
        return install(args.venv.resolve(), args.gpu, args.default_index)
    except KeyboardInterrupt:
        print("\ntinygpt.install: interrupted. Run it again to go on: it skips what is installed.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
