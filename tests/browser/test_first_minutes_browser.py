"""The first minutes in a real browser (issue 36 item 6): no Vega warning in the console from a Train press to the
first steps, and the Runs page's buttons and table whole at 1280x720 with Large fonts (the layout probe)."""

from __future__ import annotations

import re

from layout_probe import probe_layout
from playwright.sync_api import expect
from test_app_browser import button, idle, no_exception, set_number, wait_step_above

W, H = 1280, 720


def test_a_train_press_leaves_the_console_free_of_vega_warnings(app_server, page):
    """About 20 "Infinite extent for field "step"" warnings came at every Train press: Vega's extent of each
    empty dataset on a shared step axis (the charts waiting for their first step, the knob and ghost layers)."""
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type in ("warning", "error") else None)
    page.goto(app_server)
    expect(page.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    set_number(page, "Max steps", 60)
    idle(page)
    button(page, "Train").click()
    wait_step_above(page, 5, timeout_s=90)
    expect(page.locator('[data-testid="stVegaLiteChart"] svg').first).to_be_visible()
    page.wait_for_timeout(3000)  # a few refreshes with data
    no_exception(page)
    vega = [w for w in warnings if re.search(r"Infinite extent|WARN", w)]
    assert not vega, f"{len(vega)} console warnings, e.g. {vega[:3]}"


def test_the_runs_page_fits_the_projector(app_server, app_runs, browser):
    """The Runs table's columns and the buttons "Download b…" and "Share (read-…" were cut at 1280 px, Large."""
    from helpers import write_run

    write_run(app_runs)  # one finished run at least, whatever ran before
    context = browser.new_context(viewport={"width": W, "height": H})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        page.goto(f"{app_server}/runs?large=1")
        expect(page.get_by_role("heading", name="tinygpt · Runs")).to_be_visible(timeout=60_000)
        expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
        idle(page)
        page.wait_for_timeout(1500)
        problems = probe_layout(page)
        print("layout probe, runs:", *problems, sep="\n    ", flush=True)
        cut = [p for p in problems if p.startswith(("button label", "DataFrame"))]
        assert not cut, "\n".join(cut)
    finally:
        context.close()
