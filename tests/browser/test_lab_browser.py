"""The Experiments page in a real browser: a workshop link opens an experiment, and both runs' curves appear."""

from __future__ import annotations

from playwright.sync_api import expect

expect.set_options(timeout=30_000)


def test_an_experiment_link_trains_both_variants_side_by_side(app_server, page, shots):
    # A deep link, as an instructor would share it: the first script run of this page must still get the frame.
    page.goto(f"{app_server}/experiments?experiment=residual&source=synthetic:copy&tutorial=5")
    expect(page.get_by_role("heading", name="tinygpt · Experiments")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("Tutorial · 6. Residuals carry the gradient")).to_be_visible()
    expect(page.get_by_text("Detached residual path").first).to_be_visible()
    page.get_by_role("button", name="Run side by side").click()
    # Both runs' curves: the overlaid loss chart's legend names both variants, and the verdict has numbers.
    charts = page.locator('[data-testid="stVegaLiteChart"] svg')
    expect(charts.locator("text", has_text="detached residual").first).to_be_visible(timeout=90_000)
    expect(charts.first.locator("text", has_text="residual").first).to_be_visible()
    expect(page.get_by_text("First-layer attention gradient norm:")).to_be_visible(timeout=90_000)
    assert "lab=" in page.url  # the experiment's runs are in the address: a refresh reattaches
    page.screenshot(path=str(shots / "experiments.png"), full_page=True)
    page.reload()
    expect(page.get_by_text("First-layer attention gradient norm:")).to_be_visible(timeout=60_000)
