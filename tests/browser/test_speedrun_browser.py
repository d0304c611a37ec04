"""The speedrun on the Runs page: the Fast preset and the nanoGPT recipe compared on the wall-clock axis.

Two run folders are put into the server's runs folder (trained here, a few seconds each, on the copy task; or,
with TINYGPT_SPEEDRUN_RUNS pointing at `python -m tinygpt.bench.speedrun --runs-dir DIR`'s folder, the
benchmark's real Tiny Shakespeare runs, which is how the README's screenshot is made); the test picks both in
Compare, switches the x axis to seconds and reads the axis title and the legend off the chart."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import torch
from playwright.sync_api import expect
from test_app_browser import no_exception, snap

from tinygpt.presets import preset
from tinygpt.runs.loop import run_training
from tinygpt.runs.store import RunStore
from tinygpt.ui.charts.style import SECONDS
from tinygpt.ui.host import runlist

README_SHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "compare-wall-clock.png"


def speedrun_runs(runs: Path) -> list[str]:
    """The ids of a Fast and a nanoGPT-recipe run in `runs` (copied from the benchmark, or trained now)."""
    source = os.environ.get("TINYGPT_SPEEDRUN_RUNS")
    if source:
        picked = {}
        for folder in sorted(Path(source).iterdir()):
            config = (folder / "config.json").read_text() if (folder / "config.json").exists() else ""
            kind = "fast" if '"optimizer": "muon"' in config else "nanogpt" if config else None
            if kind and kind not in picked:
                shutil.copytree(folder, runs / folder.name)
                picked[kind] = folder.name
        return [picked["fast"], picked["nanogpt"]]
    torch.set_num_threads(1)
    store, ids = RunStore(runs), []
    for name, steps in (("fast", 40), ("nanogpt-cpu", 120)):
        config = preset(name, max_steps=steps, source="synthetic:copy")
        writer = store.create(config.to_dict(), owner="cli")
        writer.close()
        assert run_training(writer.run_dir, config) == "finished"
        ids.append(writer.run_id)
    return ids


def test_compare_races_the_fast_preset_against_nanogpt_on_the_clock(app_server, app_runs, page, shots):
    fast, nanogpt = speedrun_runs(app_runs)
    page.goto(f"{app_server}/runs")
    expect(page.get_by_role("heading", name="tinygpt · Runs")).to_be_visible()
    compare = page.get_by_role("combobox", name="Runs to compare (two or more)")
    legend = runlist.run_names(RunStore(app_runs))  # the legends name runs as the Runs table and pickers do
    for run_id in (fast, nanogpt):  # typed to filter: with many runs the drop-down does not render them all
        compare.click()
        page.keyboard.type(legend[run_id])
        page.get_by_role("option").filter(has_text=legend[run_id]).first.click()
        page.keyboard.press("Escape")
    loss_chart = page.locator('[data-testid="stVegaLiteChart"]').first
    expect(loss_chart.locator("svg").first).to_be_visible()
    expect(loss_chart.get_by_text("training step").first).to_be_visible()
    axis = page.get_by_test_id("stButtonGroup").filter(has_text="seconds")  # the "x axis" segmented control
    axis.locator("button").filter(has_text=re.compile("^seconds$")).click()
    expect(loss_chart.get_by_text(SECONDS).first).to_be_visible()  # the x axis is the training clock now
    # Under the charts, what the seconds count and the load each run trained under (ui/words/timing.py).
    expect(page.get_by_text(re.compile(r"(Seconds are each run's training time|recorded wall-clock time only)"))
           ).to_be_visible()  # fmt: skip
    for run_id in (fast, nanogpt):  # both runs in the legend, by the readable names the Runs table shows
        expect(loss_chart.get_by_text(legend[run_id]).first).to_be_attached()
    chosen = page.get_by_test_id("stMultiSelect").filter(has_text="Runs to compare")
    named = f"LR {preset('fast').train.learning_rate:g} · muon"  # the Fast run, named by its levers
    expect(chosen.get_by_text(re.compile(re.escape(named))).first).to_be_visible()
    no_exception(page)
    snap(page, shots / "compare-wall-clock.png")
    if os.environ.get("TINYGPT_SPEEDRUN_RUNS"):
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shots / "compare-wall-clock.png", README_SHOT)
