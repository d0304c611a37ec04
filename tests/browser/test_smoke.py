"""The app starts, renders its title, and shows no Python exception."""

from playwright.sync_api import expect


def test_app_loads(app_server, page, shots):
    page.goto(app_server)
    expect(page.get_by_text("tinygpt").first).to_be_visible()
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    page.screenshot(path=shots / "smoke.png", full_page=True)
