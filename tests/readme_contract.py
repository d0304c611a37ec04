"""The README as a contract with the app: which page each README screenshot shows, and the manifest that says from
which version of that page it was taken.

The browser tests save their screenshots in test-output/screenshots/. Run with TINYGPT_README_SHOTS=1, the
session's end (tests/browser/conftest.py) copies every README screenshot it retook into docs/screenshots/ and
records, in docs/screenshots/manifest.json, the sha256 of the page script it shows. tests/test_readme.py fails
when a page's script no longer has that hash: the picture is older than the page it shows. The page script is the
rule's unit (not every module a page draws with) because that is where a page's layout and wording live; a
change elsewhere that alters a picture is the reviewer's call.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
SHOTS_DIR = REPO / "docs" / "screenshots"
MANIFEST = SHOTS_DIR / "manifest.json"
ENV = "TINYGPT_README_SHOTS"  # set to 1 to let the browser tests replace the README's screenshots
RETAKE = f"{ENV}=1 bash tests/run.sh tests/browser"

# README screenshot -> the page script it shows.
SHOWS = {
    "train.png": "pages/train.py",
    "projector-train.png": "pages/train.py",
    "attention.png": "pages/attention.py",
    "projector-attention.png": "pages/attention.py",
    "toy-mode.png": "pages/attention.py",
    "masks-side-by-side.png": "pages/attention.py",
    "circuits_head_roles.png": "pages/circuits.py",
    "circuits_ablation.png": "pages/circuits.py",
    "circuits_logit_lens.png": "pages/circuits.py",
    "circuits_phase_change.png": "pages/circuits.py",
    "gradients.png": "pages/gradients.py",
    "sample.png": "pages/sample.py",
    "runs.png": "pages/runs.py",
    "compare-wall-clock.png": "pages/runs.py",
    "experiments.png": "pages/experiments.py",
    "projector-experiments.png": "pages/experiments.py",
    "room.png": "pages/room.py",
}


# Screenshots only a benchmark's data can make (the browser test's own stand-in runs would be the wrong picture):
# published only with that variable set.
NEEDS = {"compare-wall-clock.png": "TINYGPT_SPEEDRUN_RUNS"}


def readme_screenshots(text: str | None = None) -> list[str]:
    """The file names of docs/screenshots/*.png the README shows, in order."""
    text = README.read_text(encoding="utf-8") if text is None else text
    return re.findall(r"\]\(docs/screenshots/([^)]+\.png)\)", text)


def page_sha(page: str) -> str:
    return hashlib.sha256((REPO / page).read_bytes()).hexdigest()


def read_manifest() -> dict:
    try:
        return json.loads(MANIFEST.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def publish(taken: Path, since: float) -> list[str]:
    """Copy the README screenshots in `taken` written after `since` (this session) into docs/screenshots and
    record the page each shows with its hash now. Returns the names published."""
    manifest, done = read_manifest(), []
    for name in readme_screenshots():
        shot = taken / name
        needs = NEEDS.get(name)
        if needs and not os.environ.get(needs):
            continue
        if name in SHOWS and shot.is_file() and shot.stat().st_mtime >= since:
            shutil.copyfile(shot, SHOTS_DIR / name)
            page = SHOWS[name]
            manifest[name] = {"page": page, "page_sha256": page_sha(page),
                              "taken": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}  # fmt: skip
            done.append(name)
    if done:
        MANIFEST.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n", encoding="utf-8")
    return done
