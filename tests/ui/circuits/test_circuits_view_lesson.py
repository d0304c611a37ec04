"""Issue 33 finding 8: the Circuits page judges only runs that ran to the end, and its ablation heatmap draws the
very numbers the lesson's ablation check reads (the second copy of the repeated probe), so the head the check
names largest is the cell the chart shows largest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
from helpers import tiny_config  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from tinygpt.runs.control import QueueControl  # noqa: E402
from tinygpt.runs.loop import run_training  # noqa: E402
from tinygpt.runs.store import RunStore  # noqa: E402
from tinygpt.ui.circuits import circuits_keys, circuits_view  # noqa: E402
from tinygpt.ui.run import in_view
from tinygpt.ui.teach import lesson  # noqa: E402
from tinygpt.ui.teach.lesson import Evidence  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    return "\n".join(str(p) for p in parts)


def test_the_circuits_page_does_not_judge_a_run_that_was_stopped_early(runs_dir, tiny_text):
    store = RunStore(runs_dir)
    ids = []
    for layers in (2, 1):  # stand-ins for the experiment's two runs; the 2-layer one stopped at step 5 of 20
        config = tiny_config(tiny_text, num_layers=layers)
        with store.create(config.to_dict(), owner="cli") as writer:
            ids.append(writer.run_dir.name)
        control = QueueControl()

        def stop_at(record, control=control, layers=layers):
            if layers == 2 and record["step"] == 5:
                control.send({"cmd": "stop"})

        run_training(writer.run_dir, config, control, threads=1, on_record=stop_at)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params[circuits_keys.URL_CIRC] = ",".join(ids)
    at.query_params[in_view.URL_RUN] = ids[1]  # the finished control: its heads and ablation below
    at.run()
    at.switch_page("pages/circuits.py").run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert "the 2 layers run was stopped at step 5 of 20" in shown, shown
    assert "Did not reproduce" not in shown
    assert f"Panel '{circuits_view.SECOND_COPY}'" in shown  # zero mode: the lesson check's own numbers, named


def test_the_check_names_the_head_the_heatmap_shows_largest():
    copy = [[0.02, 0.442, -0.01, 0.03], [0.04, 0.01, -0.038, 0.0]]  # (L, H): L0H1 largest, L1H2 the verdict's
    result = {"zero": {"val": np.zeros((2, 4))}}
    fig = circuits_view.ablation_figure(result, "zero", None, False, copy).to_dict()
    [panel] = [t for t in fig["data"] if t["type"] == "heatmap" and t["hovertemplate"].startswith("second copy")]
    z = np.array([[float(cell) for cell in row] for row in panel["text"]])  # what each cell prints, (L, H)
    largest = np.unravel_index(int(np.argmax(z)), z.shape)
    check = lesson.ablation_hurts(Evidence(ablation={"head": "L1H2", "deltas": copy, "step": 40, "where": "x"}))
    assert check.passed is False
    assert f"the largest effect is L{largest[0]}H{largest[1]}'s" in check.text
    assert panel["text"][largest[0]][largest[1]] in check.text  # "+0.442": the same number, as the cell prints it
    assert panel["text"][1][2] in check.text  # the named head's cell, "-0.038"
    mean_mode = circuits_view.ablation_figure({"mean": {"val": np.zeros((2, 4))}}, "mean", None, False, copy)
    assert len([t for t in mean_mode.to_dict()["data"] if t["type"] == "heatmap"]) == 1  # measured in zero mode only
