"""The Circuits page in a real browser: the induction experiment runs to its verdict, the page names the phase
change it marked, the verdict box is green exactly when the run folders say it reproduced, and the head-roles
chart, the ablation heatmap and the logit lens of the 2-layer run are drawn (screenshots in test-output/screenshots).

`reproduced` is recomputed here from the score files the app's workers wrote (runs.files.read_scores and
circuits.induction_verdict), so the page's colour is checked against the numbers, not against its own words.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from helpers import tiny_config
from playwright.sync_api import expect

from tinygpt.inside import heads
from tinygpt.lab import induction
from tinygpt.runs.files import read_scores
from tinygpt.runs.loop import run_training
from tinygpt.runs.store import RunStore
from tinygpt.ui.circuits import best_head, circuits_keys

expect.set_options(timeout=30_000)
VERDICT = re.compile(r"Reproduced\.|Did not reproduce\.")
RUN_TIMEOUT_MS = 900_000  # two 3000-step runs side by side on a busy 2-core machine (480 s ran out at load 23)


def run_folder(tmp_path_factory: pytest.TempPathFactory, run_id: str) -> Path:
    [found] = {p.resolve() for p in tmp_path_factory.getbasetemp().glob(f"app_runs*/{run_id}") if p.is_dir()}
    return found


def element(page, key: str):
    """A chart drawn with explain.show_chart(..., key=key): Streamlit marks its container with st-key-<key>."""
    return page.locator(f".st-key-{key}").first


def test_the_induction_experiment_marks_its_phase_change_and_the_page_shows_the_heads(
    app_server, page, shots, tmp_path_factory
):
    page.goto(f"{app_server}/circuits")
    expect(page.get_by_role("heading", name="tinygpt · Circuits")).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Start the experiment").click()
    verdict = page.locator('[data-testid^="stAlertContent"]').filter(has_text=VERDICT)
    expect(verdict).to_be_visible(timeout=RUN_TIMEOUT_MS)

    ids = unquote(re.search(r"[?&]induction=([^&]+)", page.url).group(1)).split(",")
    labels = list(induction.INDUCTION_VARIANTS)
    folders = {label: run_folder(tmp_path_factory, i) for label, i in zip(labels, ids, strict=True)}
    records = {label: read_scores(folder) for label, folder in folders.items()}
    final = {label: induction.final_induction(folder) for label, folder in folders.items()}  # what the page judges on
    expected = induction.induction_verdict(records, final=final)
    change = heads.phase_change(records[labels[0]])
    if change.score is not None:  # the step the page marks is the step the engine finds in the same files
        expect(page.get_by_text(f"{labels[0]}: phase change at step {change.score.step}")).to_be_visible()
    kind = verdict.get_attribute("data-testid")
    rgba = verdict.evaluate("el => getComputedStyle(el.closest('[data-testid=\"stAlertContainer\"]')).backgroundColor")
    red, green, blue = (float(c) for c in re.findall(r"[\d.]+", rgba)[:3])
    if expected.reproduced:
        assert kind == "stAlertContentSuccess" and "Reproduced." in verdict.inner_text()
        assert green > red and green > blue, rgba
    else:
        assert kind == "stAlertContentError" and "Did not reproduce." in verdict.inner_text()
        assert red > green and red > blue, rgba
    assert expected.sentence.split(" (")[0] in verdict.inner_text().replace("\n", " ")
    assert expected.reproduced, f"the induction experiment did not reproduce: {expected.sentence}"
    verdict.scroll_into_view_if_needed()
    element(page, "circ_phase").screenshot(path=str(shots / "circuits_phase_change.png"))

    page.goto(f"{app_server}/circuits?run={ids[0]}&induction={ids[0]},{ids[1]}")  # the 2-layer run's heads
    roles = element(page, "circ_roles")
    expect(roles).to_be_visible(timeout=60_000)
    since = re.compile(r"is an induction head since (step|the phase change at step|its own score jumped at step)")
    expect(page.get_by_text(since).first).to_be_visible()
    roles.scroll_into_view_if_needed()
    roles.screenshot(path=str(shots / "circuits_head_roles.png"))
    ablation = element(page, "circ_ablation")
    expect(ablation).to_be_visible(timeout=60_000)
    expect(page.get_by_text("held-out characters; every head ablated in turn")).to_be_visible()
    ablation.scroll_into_view_if_needed()
    ablation.screenshot(path=str(shots / "circuits_ablation.png"))
    page.get_by_role("tab", name="Logit lens").click()
    lens = element(page, "circ_lens")
    expect(lens).to_be_visible(timeout=60_000)
    lens.scroll_into_view_if_needed()
    lens.screenshot(path=str(shots / "circuits_logit_lens.png"))
    page.screenshot(path=str(shots / "circuits.png"), full_page=True)


def head_box(page):
    """The Head select box's input, whose value is the head chosen ("L0H0")."""
    return page.locator(f".st-key-{circuits_keys.W_CIRC_HEAD} input").first


def test_clicking_an_ablation_cell_or_a_table_row_chooses_the_head(app_server, app_runs, page, shots, tiny_text):
    """A 2-layer, 2-head run; a click on the cell L1 H1 of the ablation heatmap puts L1H1 in the Head box, outlines
    that cell and redraws the probe chart for L1H1; choosing in the box and clicking the table's row of L0H1 work
    too, and a click on L1 H1 again after that still counts (the heatmap starts fresh after every choice)."""
    config = tiny_config(tiny_text, max_steps=40, checkpoint_every=20)
    with RunStore(app_runs).create(config.to_dict(), owner="cli") as writer:
        run_dir = writer.run_dir
    assert run_training(run_dir, config) == "finished"
    page.goto(f"{app_server}/circuits?run={run_dir.name}")
    ablation = element(page, "circ_ablation")
    expect(ablation.locator(".js-plotly-plot")).to_be_visible(timeout=60_000)
    # The picker opens on the head the checks are about (best_head.checked_head: the phase change's, here)
    opened = best_head.checked_head(read_scores(run_dir), None) or "L0H0"
    expect(head_box(page)).to_have_value(opened)
    probs = element(page, "circ_ablated")
    expect(probs).to_contain_text(f"with {opened} ablated")

    def click_cell(layer: int, head: int) -> None:
        # The first panel's invisible click markers, one per cell in row-major order (charts.ablation_heatmap);
        # the mouse goes where a learner's would: the middle of the cell.
        marker = ablation.locator(".scatterlayer .trace").first.locator("path.point").nth(layer * 2 + head)
        box = marker.bounding_box()
        assert box is not None
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)

    ablation.scroll_into_view_if_needed()
    click_cell(1, 1)
    expect(head_box(page)).to_have_value("L1H1")
    expect(probs).to_contain_text("with L1H1 ablated")
    ablation.scroll_into_view_if_needed()
    ablation.screenshot(path=str(shots / "circuits_ablation_clicked.png"))
    # the outline (a layout shape) sits on the clicked cell: x from 0.5 to 1.5, y likewise
    shape = ablation.locator(".js-plotly-plot").evaluate("el => el.layout.shapes[0]")
    assert (shape["x0"], shape["y0"]) == (0.5, 0.5), shape

    click_cell(0, 0)
    expect(head_box(page)).to_have_value("L0H0")
    expect(probs).to_contain_text("with L0H0 ablated")
    click_cell(1, 1)  # back to a head clicked before: still a change
    expect(head_box(page)).to_have_value("L1H1")

    # the head table: one row per head, a click on a row's selection box (left edge) chooses that head
    table = page.locator(f".st-key-{circuits_keys.W_CIRC_TABLE}_L1H1").first
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    assert box is not None
    row_px = 35  # glide-data-grid's default row height, header included
    table.click(position={"x": 12, "y": row_px * (1 + 1) + row_px / 2})  # row 1: L0H1
    expect(head_box(page)).to_have_value("L0H1")
    expect(probs).to_contain_text("with L0H1 ablated")
    page.screenshot(path=str(shots / "circuits_click.png"), full_page=True)


def test_the_experiments_entry_opens_the_induction_runs_on_circuits_and_circuits_links_back(
    app_server, app_runs, page, shots, tiny_text
):
    """Two short stand-in runs as the experiment's pair (?induction=): the Experiments page's induction entry
    states them and their verdict, its link opens Circuits with the 2-layer run selected, and Circuits links back."""
    ids = []
    for layers in (2, 1):
        config = tiny_config(tiny_text, max_steps=20, num_layers=layers)
        with RunStore(app_runs).create(config.to_dict(), owner="cli") as writer:
            ids.append(writer.run_dir.name)
        assert run_training(writer.run_dir, config) == "finished"
    page.goto(f"{app_server}/experiments?induction={ids[0]},{ids[1]}")
    entry = element(page, "lab_induction")
    expect(entry).to_contain_text("Induction heads: watch a circuit form", timeout=60_000)
    expect(entry).to_contain_text("Did not reproduce.")  # 20 steps: no circuit, and the entry says so
    entry.screenshot(path=str(shots / "experiments_induction_entry.png"))
    entry.get_by_role("link", name=re.compile("See its phase change")).click()
    expect(page.get_by_role("heading", name="tinygpt · Circuits")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Heads at step 20")).to_be_visible(timeout=60_000)
    assert f"run={ids[0]}" in page.url and "induction=" in page.url, page.url
    expect(
        page.get_by_text("2 layers: phase change at step").or_(page.get_by_text("2 layers: no phase change"))
    ).to_be_visible()
    page.get_by_role("link", name="More experiments: the pitfall lab").click()
    expect(page.get_by_role("heading", name="tinygpt · Experiments")).to_be_visible(timeout=60_000)
