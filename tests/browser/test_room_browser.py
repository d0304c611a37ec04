"""Two learners and an instructor on one server, each in their own browser context (their own cookies)."""

from __future__ import annotations

import re

from conftest import INSTRUCTOR_KEY
from playwright.sync_api import expect
from test_app_browser import button, choose, idle, no_exception, set_number, status_step, wait_step_above


def open_app(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto(url)
    expect(page.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    return context, page


def test_learners_own_their_runs_and_the_instructor_steers_any(app_server, browser, shots):
    anna_ctx, anna = open_app(browser, app_server)
    choose(anna, "Corpus", "Synthetic: copy")
    set_number(anna, "Max steps", 20000)
    idle(anna)
    button(anna, "Train").click()
    wait_step_above(anna, 5, timeout_s=60)
    run_id = re.search(r"[?&]run=([A-Za-z0-9_-]+)", anna.url).group(1)
    annas_link = anna.url

    # Ben opens the link Anna copied from her address bar: his own session, not her run.
    ben_ctx, ben = open_app(browser, annas_link)
    expect(ben.get_by_text(re.compile("another learner's run"))).to_be_visible()
    assert run_id not in ben.url
    # A read-only share: Ben watches Anna's run; every control is disabled for him.
    ben.goto(f"{app_server}/?run={run_id}&view=1")
    expect(ben.get_by_text(re.compile(r"Watching .*'s run \(read-only\)"))).to_be_visible()
    for label in ("Pause", "Resume", "Step", "Stop"):
        expect(button(ben, label)).to_be_disabled()
    no_exception(ben)

    # The instructor enters the key once, opens Anna's run and pauses it; Anna's page follows within 3 s.
    teach_ctx, teacher = open_app(browser, app_server)
    teacher.get_by_text(re.compile("^You: ")).first.click()
    box = teacher.get_by_label("Instructor key")
    box.fill(INSTRUCTOR_KEY)
    box.press("Enter")
    expect(teacher.get_by_text(re.compile("Instructor mode"))).to_be_visible()
    teacher.goto(f"{app_server}/?run={run_id}")
    expect(button(teacher, "Pause")).to_be_enabled(timeout=30_000)
    button(teacher, "Pause").click()
    expect(anna.get_by_text(re.compile(r"· paused: paused by the instructor"))).to_be_visible(timeout=3_000)
    expect(button(anna, "Resume")).to_be_disabled()  # a hold: only the instructor lets go (issue 20, finding 3)
    assert status_step(anna) > 0
    teacher.locator('[data-testid="stSidebarNav"] a').filter(has_text="Room").first.click()
    expect(teacher.get_by_role("heading", name="tinygpt · Room")).to_be_visible()
    # The counter, one line per owner: the learners' line counts Anna's held run as paused.
    expect(teacher.get_by_text(re.compile(r"Learners' runs: \d+ training · \d+ queued · 1 paused"))).to_be_visible()
    # The README's picture: the room's loss chart and table drawn, the key hidden behind its switch.
    expect(teacher.locator('[data-testid="stVegaLiteChart"] svg').first).to_be_visible(timeout=30_000)
    expect(teacher.get_by_test_id("stTable").first).to_be_visible(timeout=30_000)  # cells wrap (room_table)
    expect(teacher.get_by_text("Show the instructor key")).to_be_visible()
    expect(teacher.get_by_text(INSTRUCTOR_KEY)).to_have_count(0)
    teacher.screenshot(path=shots / "room.png")
    button(anna, "Stop").click()
    expect(anna.get_by_text(re.compile(r"· stopped"))).to_be_visible(timeout=30_000)
    for context in (anna_ctx, ben_ctx, teach_ctx):
        context.close()
