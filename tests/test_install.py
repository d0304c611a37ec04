"""tinygpt.install: the set-up ends in the app's start command or in one clear next step (issue 36, finding 1).
pip is replaced by a recorder here; the real install is what tests/run.sh and .ci/run do on every CI run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tinygpt import install


class FakePip:
    """Answers like pip: `import torch` fails until torch is installed; the CPU index fails when `reachable` is
    False, with the error pip prints offline."""

    def __init__(self, reachable: bool):
        self.reachable, self.calls = reachable, []

    def __call__(self, command):
        self.calls.append(command)
        if "--index-url" in command and not self.reachable:
            return subprocess.CompletedProcess(command, 1, "", "ERROR: Could not find a version that satisfies the "
                                               "requirement torch (from versions: none)\nERROR: No matching distribution")  # fmt: skip
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
    assert "out of reach" in message and "3-6 GB" in message and "pip install --timeout 15 --retries 1 torch" not in message
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
