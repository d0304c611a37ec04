"""tinygpt.install: the set-up ends in the app's start command or in one clear next step (issue 36, finding 1).
pip is replaced by a recorder here; the real install is what tests/run.sh and .ci/run do on every CI run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tinygpt import install


class FakePip:
    """Answers like pip: `import torch` fails until torch is installed; the CPU index fails when `reachable` is
    False, with the error pip prints offline."""

    OFFLINE = (
        "WARNING: Retrying (Retry(total=0, ...)) after connection broken by 'NewConnectionError(...: Failed to "
        "establish a new connection: [Errno -2] Name or service not known')\nERROR: Could not find a version that "
        "satisfies the requirement torch (from versions: none)\nERROR: No matching distribution found for torch"
    )

    def __init__(self, reachable: bool, cpu_error: str | None = None, log: list | None = None):
        self.reachable, self.calls, self.log = reachable, [], log
        self.cpu_error = cpu_error if cpu_error is not None else self.OFFLINE

    def __call__(self, command):
        self.calls.append(command)
        if self.log is not None:
            self.log.append(command)
        if "--index-url" in command and not self.reachable:
            return subprocess.CompletedProcess(command, 1, "", self.cpu_error)
        return subprocess.CompletedProcess(command, 1 if command[1:3] == ["-c", "import torch"] else 0, "", "")


def venv(tmp_path: Path) -> Path:
    python = install.venv_python(tmp_path / ".venv")
    python.parent.mkdir(parents=True)
    python.touch()
    return tmp_path / ".venv"


def test_the_cpu_build_then_requirements_then_the_start_command(tmp_path):
    pip, said = FakePip(reachable=True), []
    assert install.install(venv(tmp_path), gpu=False, default_index=False, pip=pip, say=said.append) == 0
    assert any(install.CPU_INDEX in c for c in pip.calls) and any("requirements.txt" in c[-1] for c in pip.calls)
    assert "streamlit run app.py" in said[-1] and "any time later" in said[-1]
    assert all("--retries" in c for c in pip.calls if "install" in c)  # no 60 lines of retries


def test_an_unreachable_cpu_index_names_the_next_step_and_installs_nothing_else(tmp_path):
    pip, said = FakePip(reachable=False), []
    assert install.install(venv(tmp_path), gpu=False, default_index=False, pip=pip, say=said.append) == 3
    message = said[-1]
    assert (
        "out of reach" in message
        and "3-6 GB" in message
        and "pip install --timeout 15 --retries 1 torch" not in message
    )
    assert "-m pip install torch" in message and "--default-index" in message and "from versions: none" in message
    assert not any("requirements.txt" in c[-1] for c in pip.calls)


def test_with_default_index_it_falls_back_and_finishes(tmp_path):
    pip, said = FakePip(reachable=False), []
    assert install.install(venv(tmp_path), gpu=False, default_index=True, pip=pip, say=said.append) == 0
    torch_calls = [c for c in pip.calls if "torch" in c and "install" in c]
    assert len(torch_calls) == 2 and "--index-url" not in torch_calls[1]


def test_a_gpu_machine_gets_the_default_build(tmp_path):
    assert install.has_nvidia_gpu(lambda name: "/usr/bin/nvidia-smi") and not install.has_nvidia_gpu(lambda n: None)
    pip = FakePip(reachable=False)
    assert install.install(venv(tmp_path), gpu=True, default_index=False, pip=pip, say=lambda s: None) == 0
    assert not any("--index-url" in c for c in pip.calls)


def test_the_start_command_fits_the_system():
    command = install.start_command(install.REPO / ".venv")
    assert command in (".venv/bin/streamlit run app.py", ".venv\\Scripts\\streamlit run app.py")


def test_importing_it_needs_nothing_installed():
    done = subprocess.run(["python3", "-S", "-c", "import tinygpt.install"], cwd=install.REPO, capture_output=True)
    assert done.returncode == 0, done.stderr


DEBIAN_VENV = (
    "The virtual environment was not created successfully because ensurepip is not\navailable.  On Debian/Ubuntu "
    "systems, you need to install the python3-venv\npackage using the following command.\n\n    apt install "
    "python3.11-venv\n"
)


def test_a_failed_venv_says_what_to_install_and_exits_non_zero(tmp_path):
    said, made = [], []

    def no_venv(path):  # Debian without python3-venv: a python, no pip, exit 1
        made.append(path)
        return subprocess.CompletedProcess([], 1, "", DEBIAN_VENV)

    code = install.install(tmp_path / ".venv", gpu=False, default_index=False, pip=FakePip(True), say=said.append,
                           venv_maker=no_venv)  # fmt: skip
    assert code == install.VENV_FAILED != 0 and made == [tmp_path / ".venv"]
    assert "python3 -m venv failed" in said[-1] and "`sudo apt install python3-venv`, then run this again" in said[-1]
    assert "Traceback" not in "\n".join(said)


def test_a_venv_failure_of_another_kind_is_quoted_without_the_debian_hint(tmp_path):
    message = install.venv_failed_message(tmp_path, "Error: [Errno 13] Permission denied: '/srv/.venv'")
    assert "Permission denied" in message and "apt" not in message and "run this again" in message
    assert "sudo apt install python3-venv" in install.venv_failed_message(tmp_path, "No module named venv")


def test_venv_that_cannot_even_start_is_a_message_too(tmp_path, monkeypatch):
    monkeypatch.setattr(install.sys, "executable", str(tmp_path / "no-such-python"))
    done = install.make_venv(tmp_path / ".venv")  # an OSError inside, never raised
    assert done.returncode != 0 and "no-such-python" in done.stderr


def test_a_venv_without_pip_is_made_again(tmp_path):
    class NoPip(FakePip):
        def __call__(self, command):
            if command[1:4] == ["-m", "pip", "--version"]:
                self.calls.append(command)
                return subprocess.CompletedProcess(command, 1, "", "No module named pip")
            return super().__call__(command)

    made = []
    code = install.install(venv(tmp_path), gpu=False, default_index=False, pip=NoPip(True), say=lambda s: None,
                           venv_maker=lambda path: made.append(path) or subprocess.CompletedProcess([], 0))  # fmt: skip
    assert code == 0 and made == [tmp_path / ".venv"]


def test_a_failure_that_is_not_the_network_quotes_pip_and_the_command_to_retry(tmp_path):
    error = "Collecting torch\nERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"
    pip, said = FakePip(reachable=False, cpu_error=error), []
    assert install.install(venv(tmp_path), gpu=False, default_index=True, pip=pip, say=said.append) == 3
    message = said[-1]
    assert "out of reach" not in message and "[Errno 28] No space left on device" in message
    retry = " ".join(install.torch_command(install.venv_python(tmp_path / ".venv"), cpu=True))
    assert retry in message and "run this again" in message
    assert len([c for c in pip.calls if "torch" in c and "install" in c]) == 1  # no fall back to 3-6 GB of CUDA


@pytest.mark.parametrize(
    "output, network",
    [
        ("socket.gaierror: [Errno -3] Temporary failure in name resolution", True),
        ("Failed to establish a new connection: [Errno 111] Connection refused", True),
        ("ReadTimeoutError: HTTPSConnectionPool(...): Read timed out.", True),
        ("requests.exceptions.ConnectionError: ...", True),
        ("ERROR: Could not find a version that satisfies the requirement torch (from versions: none)", True),
        ("ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device", False),
        ("ERROR: torch-2.5.0-cp311-none-linux_x86_64.whl is not a supported wheel on this platform.", False),
        ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.", False),
    ],
)
def test_out_of_reach_only_where_pip_shows_a_network_failure(output, network):
    assert install.is_network_failure(output) is network


def test_each_download_is_announced_before_pip_starts(tmp_path):
    log = []
    pip = FakePip(reachable=True, log=log)
    assert install.install(venv(tmp_path), gpu=False, default_index=False, pip=pip, say=log.append) == 0
    torch_at = next(i for i, e in enumerate(log) if isinstance(e, list) and "torch" in e and "install" in e)
    assert "200 MB" in log[torch_at - 1] and "minutes" in log[torch_at - 1]
    needs_at = next(i for i, e in enumerate(log) if isinstance(e, list) and "requirements.txt" in e[-1])
    assert "requirements.txt" in log[needs_at - 1] and "minutes" in log[needs_at - 1]
    gpu_log = []
    install.install(venv(tmp_path / "gpu"), gpu=True, default_index=False, pip=FakePip(True, log=gpu_log),
                    say=gpu_log.append)  # fmt: skip
    assert any(isinstance(e, str) and "3-6 GB" in e and "minutes" in e for e in gpu_log)


def test_ctrl_c_is_a_line_and_130(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(install, "install", interrupted)
    assert install.main([]) == 130 and "run it again" in capsys.readouterr().err.lower()
