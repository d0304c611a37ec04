"""Screenshots for the README, taken the way a room sees the app: a 1280x720 projector with large fonts (Train
after pressing Train, Attention, Experiments), and the Attention page's toy mode and masks side by side.
Each also checks what the screenshot must show: labels in full, the loss chart in the first screen."""

from __future__ import annotations

import re

from playwright.sync_api import expect
from test_app_browser import button, choose, go, idle, no_exception, set_number, snap, switch_on, wait_step_above


def shoot(locator, path, tries: int = 5) -> None:
    """A screenshot of one element; a rerun can replace the element meanwhile, so it is looked up again."""
    for attempt in range(tries):
        try:
            locator.scroll_into_view_if_needed(timeout=5_000)
            locator.screenshot(path=path, timeout=10_000)
            return
        except Exception:  # noqa: BLE001 - detached by a redraw: try the fresh element
            if attempt == tries - 1:
                raise


def test_projector_screens_and_readable_attention(app_server, app_runs, browser, shots):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto(f"{app_server}/?large=1")
    expect(page.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    choose(page, "Corpus", "Synthetic: copy")
    set_number(page, "Max steps", 3000)  # long enough to show what retention keeps
    idle(page)
    button(page, "Train").click()
    wait_step_above(page, 200, timeout_s=90)
    run_id = re.search(r"[?&]run=([A-Za-z0-9_-]+)", page.url).group(1)
    # The first screen of the projector: full button labels, the status line and the loss chart.
    for label in ("Train", "Pause", "Resume", "Step", "Stop"):
        box = button(page, label).bounding_box()
        assert box and box["y"] + box["height"] < 720, label
    chart = page.locator('[data-testid="stVegaLiteChart"]').first
    expect(chart).to_be_visible()
    assert chart.bounding_box()["y"] < 720 * 0.75  # the loss chart starts in the first screen
    page.screenshot(path=shots / "projector-train.png")
    no_exception(page)

    go(page, "Attention", "tinygpt · Attention")
    expect(page.get_by_text(re.compile(r"All heads · snapshot at step \d+"))).to_be_visible()
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    page.wait_for_timeout(1500)
    page.screenshot(path=shots / "projector-attention.png")

    # The whole story of a 3000-step run is kept: snapshots in the first 100 steps and across the run, head
    # statistics in the first 10%, checkpoints from early, middle and late training.
    go(page, "Train", "tinygpt · Train")
    expect(page.get_by_text(re.compile(r"· finished"))).to_be_visible(timeout=240_000)
    go(page, "Attention", "tinygpt · Attention")
    summary = page.get_by_text(re.compile(r"\d+ snapshots from step 0 to 3000")).inner_text()
    assert int(summary.split()[0]) >= 40, summary
    import json

    index = json.loads((app_runs / run_id / "attention" / "index.json").read_text())
    kept = [snap["step"] for snap in index["snapshots"]]
    assert [k for k in kept if 0 < k <= 100] and [k for k in kept if 1000 <= k <= 2000], kept  # early and middle
    assert len([k for k in kept if k <= 300]) >= 20, kept  # the first 10% dense: where the head statistics start
    stats = page.locator('[data-testid="stVegaLiteChart"]').last
    expect(stats).to_contain_text("uniform under the causal mask")
    go(page, "Sample", "tinygpt · Sample")
    checkpoints = page.get_by_role("combobox", name="Checkpoint (step)")
    checkpoints.click()
    steps = [int(o) for o in page.get_by_role("option").all_inner_texts() if o.strip().isdigit()]
    page.keyboard.press("Escape")
    assert min(steps) == 0 and any(0 < s <= 300 for s in steps) and any(1000 <= s <= 2000 for s in steps)
    assert max(steps) == 3000, steps
    go(page, "Experiments", "tinygpt · Experiments")
    page.wait_for_timeout(1500)
    page.screenshot(path=shots / "projector-experiments.png")
    no_exception(page)
    context.close()

    # Toy mode on a laptop screen: a 10-character probe, the number in every cell; then every mask side by side.
    context = browser.new_context(viewport={"width": 1400, "height": 2400})  # tall: each figure fits whole
    page = context.new_page()
    page.goto(f"{app_server}/attention?run={run_id}&view=1")  # another browser: a read-only share of the run
    expect(page.get_by_role("heading", name="tinygpt · Attention")).to_be_visible()
    switch_on(page, "Toy mode")
    expect(page.get_by_text(re.compile(r"All heads · checkpoint at step \d+"))).to_be_visible(timeout=30_000)
    detail = page.locator(".js-plotly-plot").nth(1)
    expect(detail).to_contain_text(re.compile(r"-?\d\.\d\d"))  # numbers drawn in the cells
    masks = page.locator(".js-plotly-plot").nth(2)
    expect(masks).to_contain_text("weights: query")
    idle(page)
    page.wait_for_timeout(2000)  # the figures settle (a live run redraws them while it trains)
    shoot(detail, shots / "toy-mode.png")
    shoot(masks, shots / "masks-side-by-side.png")
    no_exception(page)
    snap(page, shots / "attention-toy-page.png")
    context.close()
