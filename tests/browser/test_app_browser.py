"""The app in a real headless Chromium: train on the Demo preset, turn a live knob, watch attention, sample,
refresh and reattach, stop. Screenshots of every page go to test-output/screenshots/.

Offline: trains the default corpus, Tiny Shakespeare, from the copy embedded in the package.
One test walks the whole story (each step needs the run the previous one started); waits are on text, not sleeps.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

expect.set_options(timeout=20_000)  # first script runs import torch; a busy 2-core machine can take seconds
STATUS = re.compile(r"^step ([\d,]+) / ([\d,]+)")
# The loss chart is the first Vega-Lite chart on the Train page; Vega's SVG gives every hover point an aria role.
LOSS_POINTS_JS = """() => {
  const chart = document.querySelector('[data-testid="stVegaLiteChart"]');
  return chart ? chart.querySelectorAll('[aria-roledescription="point"]').length : 0;
}"""


def choose(page: Page, label: str, option: str) -> None:
    """Pick an option of a selectbox. A rerun can close an open dropdown, so opening is retried. Under load a stale
    copy of the box can come back beside the new one while a rerun redraws the page (stop 56's full run: the count
    was 1, then two "Corpus" boxes both read the option and strict mode refused the value check): the check waits
    for one box holding the option, up to a minute."""
    pick(page, label, page.get_by_role("option", name=option, exact=True))
    box = page.get_by_role("combobox", name=label, exact=True)
    deadline = time.monotonic() + 60
    while True:
        expect(box).to_have_count(1, timeout=60_000)
        try:
            expect(box).to_have_value(option, timeout=5_000)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise


def click_until_checked(page: Page, role: str, label: str, timeout_ms: int) -> None:
    """Click the label of a switch or radio until it says it is checked: a click that lands while a rerun redraws
    the page can be lost (CI stop 30: the Attention page's Toy mode stayed off under load; CI stop 52: the
    instructor's Mask stayed causal for 30 s after a click on none)."""
    widget = page.get_by_role(role, name=label, exact=True)
    for attempt in range(4):
        if widget.is_checked():
            return
        page.get_by_text(label, exact=True).click()
        try:
            expect(widget).to_be_checked(timeout=timeout_ms)
            return
        except AssertionError:
            if attempt == 3:
                raise


def switch_on(page: Page, label: str) -> None:
    """Turn a toggle on (click_until_checked)."""
    click_until_checked(page, "switch", label, 5_000)


def check_radio(page: Page, label: str) -> None:
    """Choose a radio option (click_until_checked)."""
    click_until_checked(page, "radio", label, 8_000)


def choose_containing(page: Page, label: str, text: str) -> None:
    """Pick the first option of a selectbox whose label contains `text` (e.g. a run id's start)."""
    pick(page, label, page.get_by_role("option").filter(has_text=text).first)


def pick(page: Page, label: str, option) -> None:
    """Open a selectbox and click `option`. A rerun can close the open dropdown, or redraw the box while its list
    stays where the old box was (Playwright then finds the option "outside of the viewport"): close and retry."""
    box = page.get_by_role("combobox", name=label, exact=True)
    expect(box).to_have_count(1, timeout=60_000)  # a stale copy stays until the page's script run ends
    for attempt in range(4):
        box.click()
        try:
            option.click(timeout=5_000)
            return
        except PlaywrightTimeoutError:
            if attempt == 3:
                raise
            page.keyboard.press("Escape")
            page.wait_for_timeout(500)


def set_number(page: Page, label: str, value: int) -> None:
    """Type a number and commit it. A rerun still in flight (from the previous widget) can redraw the old value
    over what was typed, so the entry is retried until it sticks. Under load a stale copy of the box can come back
    beside the new one between the count check and the typing (stop 58's CI run: two "Max steps" boxes, strict
    mode refused the fill): that attempt waits for one box again."""
    box = page.get_by_label(label, exact=True)
    for attempt in range(5):
        expect(box).to_have_count(1, timeout=60_000)  # a stale copy stays until the page's script run ends
        try:
            box.fill(str(value))
            box.press("Enter")
            page.wait_for_timeout(500)
            expect(box).to_have_value(str(value), timeout=3_000)
            return
        except (AssertionError, PlaywrightError) as failed:
            if attempt == 4 or (isinstance(failed, PlaywrightError) and "strict mode" not in str(failed)):
                raise
            page.wait_for_timeout(500)


def status_step(page: Page) -> int:
    line = page.get_by_text(STATUS).first
    expect(line).to_be_visible(timeout=30_000)
    return int(STATUS.match(line.inner_text()).group(1).replace(",", ""))


def wait_step_above(page: Page, step: int, timeout_s: float = 60) -> int:
    try:
        page.wait_for_function(
            """(min) => [...document.querySelectorAll('p, strong')].some(e => {
                 const m = e.innerText.match(/^step ([\\d,]+) \\//); return m && +m[1].replace(/,/g, '') > min; })""",
            arg=step,
            timeout=timeout_s * 1000,
        )
    except PlaywrightTimeoutError:
        said = page.locator('[data-testid="stMain"]').inner_text()[-1500:]
        page.screenshot(path=Path(__file__).resolve().parents[2] / "test-output" / "step-timeout.png")
        raise AssertionError(f"the status never passed step {step} in {timeout_s}s; the page said:\n{said}") from None
    return status_step(page)


def go(page: Page, name: str, heading: str) -> None:
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=name).first.click()
    expect(page.get_by_role("heading", name=heading)).to_be_visible()


CONTENT_HEIGHT_JS = """() => Math.max(600, ...[...document.querySelectorAll(
  '[data-testid="stMain"], [data-testid="stMainBlockContainer"], [data-testid="stSidebar"]')]
  .map(e => e.scrollHeight))"""


def snap(page: Page, path) -> None:
    """A screenshot of the whole page. Streamlit scrolls inside its main container, so full_page alone would cut
    it off: grow the viewport to the content's height first (measured a few times: live charts briefly collapse
    while they redraw), then restore it."""
    size = page.viewport_size
    height = 0
    for _ in range(3):
        for _ in range(5):
            height = max(height, page.evaluate(CONTENT_HEIGHT_JS))
            page.wait_for_timeout(150)
        page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 8000)})
        page.wait_for_timeout(500)  # let charts re-lay out at the new size
    page.screenshot(path=path, full_page=True)
    page.set_viewport_size(size)


def button(page: Page, name: str):
    """A button of the page itself (Streamlit's header shows its own "Stop" while a script runs)."""
    return page.get_by_test_id("stMainBlockContainer").get_by_role("button", name=name, exact=True)


def idle(page: Page) -> None:
    """Wait until no script run is in progress (Streamlit's running indicator in the header is gone)."""
    expect(page.get_by_test_id("stStatusWidgetRunningIcon")).to_have_count(0)


def no_exception(page: Page) -> None:
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def events_of(runs: Path, run_id: str) -> list[dict]:
    import json

    path = Path(runs) / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_train_watch_attention_sample_reattach_stop(app_server, app_runs, page, shots):
    outside = []  # the app must work offline: no fonts, scripts or metrics fetched from anywhere else
    page.on("request", lambda r: None if r.url.startswith((app_server, "data:", "blob:")) else outside.append(r.url))
    page.goto(app_server)
    expect(page.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    no_exception(page)
    set_number(page, "Max steps", 20000)  # still training when the test refreshes near its end; Stop ends it

    # Train: the status line appears and counts up, and the loss chart gains points.
    idle(page)
    button(page, "Train").click()
    first = wait_step_above(page, 0, timeout_s=30)
    points = page.evaluate(LOSS_POINTS_JS)
    second = wait_step_above(page, first + 5)
    assert second > first
    page.wait_for_function(f"({LOSS_POINTS_JS})() > {points}", timeout=30_000)
    run_id = re.search(r"[?&]run=([A-Za-z0-9_-]+)", page.url).group(1)
    wait_step_above(page, 300)  # long enough for attention heads to start forming

    # Attention: the layers x heads grid, then scrub the step slider back to the start.
    go(page, "Attention", "tinygpt · Attention")
    expect(page.get_by_text(re.compile(r"All heads · snapshot at step \d+"))).to_be_visible()
    assert run_id in page.url  # the page switch kept the run in the URL
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    snap(page, shots / "attention.png")  # the newest snapshot: heads have started to specialise
    slider = page.get_by_role("slider").first
    summary = page.get_by_text(re.compile(r"\d+ snapshots from step \d+ to \d+")).inner_text()
    first_snapshot = re.search(r"from step (\d+)", summary).group(1)  # thinning always keeps the first snapshot
    slider.focus()
    slider.press("Home")
    expect(page.get_by_text(f"All heads · snapshot at step {first_snapshot}", exact=True)).to_be_visible(timeout=15_000)
    no_exception(page)

    go(page, "Gradients", "tinygpt · Gradients")
    expect(page.locator('[data-testid="stVegaLiteChart"] svg').first).to_be_visible(timeout=30_000)
    no_exception(page)
    snap(page, shots / "gradients.png")

    # Sample: type a prompt, Generate, and new text streams in.
    go(page, "Sample", "tinygpt · Sample")
    for _ in range(30):  # the first checkpoint may still be on its way
        if button(page, "Generate").count():
            break
        page.wait_for_timeout(1000)
        page.reload()
    prompt = "ROMEO:"
    page.get_by_label("Prompt").fill(prompt)
    page.get_by_label("Characters").fill("120")
    page.get_by_label("Characters").press("Enter")
    button(page, "Generate").click()
    expect(page.get_by_text(re.compile(r"Generated \("))).to_be_visible()  # "Generated (<run name>, step N; ..."
    expect(page.get_by_text("Where the last generated character looked")).to_be_visible(timeout=30_000)
    no_exception(page)
    snap(page, shots / "sample.png")

    go(page, "Train", "tinygpt · Train")
    # A slider knob: one key press on the learning-rate slider (0.002 -> the next stop, 0.005) is one command,
    # answered with the step it applied at; the run's events hold one learning-rate change (and its coupled
    # min_lr), not one per pixel of a drag.
    lr = page.get_by_role("slider", name="Learning rate")
    expect(lr).to_have_attribute("aria-valuetext", "0.002")
    idle(page)  # the page's own run is over (a key press during it was once lost, and once reported four times)
    lr.focus()
    lr.press("ArrowRight")
    expect(lr).to_have_attribute("aria-valuetext", "0.005")
    expect(page.get_by_text(re.compile(r"LR → 0\.005: applied after step \d+"))).to_be_visible(timeout=30_000)
    changes = [e for e in events_of(app_runs, run_id) if e.get("kind") == "knob" and e.get("knob") == "learning_rate"]
    assert len(changes) == 1 and changes[0]["new"] == 0.005 and changes[0]["ok"]
    # A live knob: mask -> none while training; the page says at which step it applied, the chart marks it.
    mask_none = page.get_by_text("none (sees the future)", exact=True)
    applied = page.get_by_text(re.compile(r"mask → none: applied after step \d+"))
    mask_none.click()
    try:
        expect(applied).to_be_visible(timeout=15_000)
    except AssertionError:
        # A click landing while the live view redraws was lost once in ~6 full runs (stop 58): the radio then still
        # shows causal, as a user would see, and a second click takes. Never a silent change: checked first.
        expect(page.get_by_role("radio", name="causal (language model)")).to_be_checked()
        mask_none.click()
        expect(applied).to_be_visible(timeout=30_000)
    expect(page.locator('[data-testid="stVegaLiteChart"]').first).to_contain_text("mask", timeout=30_000)
    no_exception(page)
    snap(page, shots / "train.png")

    # Refresh: the URL still names the run, and it is still training.
    before = status_step(page)
    page.reload()
    expect(page.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    assert run_id in page.url
    after = wait_step_above(page, before)
    assert after > before
    expect(page.get_by_text(re.compile(r"· running"))).to_be_visible()

    # Stop: the status says so within a step or two.
    button(page, "Stop").click()
    expect(page.get_by_text(re.compile(r"· stopped"))).to_be_visible(timeout=30_000)
    no_exception(page)

    # A second run with 8 heads (a setting that needs a new run), then compare the two on the Runs page.
    page.get_by_text("Data and model", exact=False).first.click()  # folded away while a run is shown
    heads = page.get_by_role("slider", name="Heads")
    heads.focus()
    heads.press("ArrowRight")  # 4 -> 8 heads
    expect(heads).to_have_attribute("aria-valuetext", "8 (d_head 8)")
    stopped_at = status_step(page)
    idle(page)
    button(page, "Train").click()
    page.wait_for_url(lambda url: run_id not in url)
    page.wait_for_function(  # the status line now counts the new run, from 0
        """(prev) => [...document.querySelectorAll('p, strong')].some(e => {
             const m = e.innerText.match(/^step ([\\d,]+) \\//); return m && +m[1].replace(/,/g, '') < prev; })""",
        arg=stopped_at,
    )
    wait_step_above(page, 100)
    button(page, "Stop").click()
    expect(page.get_by_text(re.compile(r"· stopped"))).to_be_visible(timeout=30_000)
    second_id = re.search(r"[?&]run=([A-Za-z0-9_-]+)", page.url).group(1)

    go(page, "Runs", "tinygpt · Runs")
    from tinygpt.runs.store import RunStore
    from tinygpt.ui.host import runlist

    names = runlist.run_names(RunStore(app_runs))  # the picker lists runs by their readable names
    # the picker opens on the run in view, by name; its caption says so (no live "(current)" in a label)
    expect(page.get_by_role("combobox", name="Run", exact=True)).to_have_value(names[second_id])
    expect(page.get_by_text(re.compile(r"the run in view \(named in the sidebar\)"))).to_be_visible()
    compare = page.get_by_role("combobox", name="Runs to compare (two or more)")
    for rid in (run_id, second_id):
        compare.click()
        page.get_by_role("option").filter(has_text=names[rid]).first.click()
        page.keyboard.press("Escape")
    expect(page.get_by_text(re.compile("^Settings that differ"))).to_be_visible()
    expect(page.locator('[data-testid="stVegaLiteChart"] svg').first).to_be_visible()
    no_exception(page)
    snap(page, shots / "runs.png")
    assert not outside, f"the page fetched from outside the app: {sorted(set(outside))[:5]}"
