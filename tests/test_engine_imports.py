"""The engine must stay importable without the UI stack.

`tinygpt/` (everything but `tinygpt/ui/`) may use torch, numpy and safetensors only, so the CLI and the training
worker start fast and work without Streamlit. This imports every engine module in a fresh interpreter and checks
that none of the UI libraries got loaded. New modules are picked up automatically.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UI_LIBS = ("streamlit", "plotly", "altair", "pandas")

# pkgutil.walk_packages imports every package it descends into, which would import tinygpt.ui itself (and with it
# streamlit), so walk by hand with iter_modules and never enter tinygpt.ui. `__main__` modules are skipped:
# importing one runs the CLI.
PROBE = r"""
import importlib, json, pkgutil, sys

UI_LIBS = tuple(sys.argv[1:])

def loaded_ui():
    return sorted(name for name in UI_LIBS if name in sys.modules)

import tinygpt
imported, culprits = ["tinygpt"], {}
def walk(path, prefix):
    for info in sorted(pkgutil.iter_modules(path, prefix), key=lambda i: i.name):
        if info.name == "tinygpt.ui" or info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        before = set(loaded_ui())
        module = importlib.import_module(info.name)
        imported.append(info.name)
        new = sorted(set(loaded_ui()) - before)
        if new:
            culprits[info.name] = new
        if info.ispkg:
            walk(module.__path__, info.name + ".")
walk(tinygpt.__path__, "tinygpt.")
print(json.dumps({"imported": imported, "ui_loaded": loaded_ui(), "culprits": culprits}))
"""


def test_engine_imports_without_ui_libraries():
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *UI_LIBS], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"importing the engine failed:\n{proc.stderr}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "tinygpt.config" in result["imported"], result["imported"]
    assert result["ui_loaded"] == [], (
        f"engine modules imported UI libraries {result['ui_loaded']}; first loaded by: {result['culprits']}"
    )
