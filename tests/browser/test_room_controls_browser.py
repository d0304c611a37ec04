"""Instructor controls that hold, in real browsers at 1280x720 with Large fonts (issue 20): the instructor (key
entered) brings a learner's run to the projector, pauses it as a hold the learner cannot undo and lets go of it;
Large fonts survives a refresh without &large=1; a Share (read-only) link made on Runs opens the run's live view.
Three browser contexts (their own cookies): the instructor, the learner who owns the run, and a watcher."""

from __future__ import annotations

import re

from conftest import INSTRUCTOR_KEY
from playwright.sync_api import expect
from test_app_browser import (
    button,
    choose,
    choose_containing,
    go,
    idle,
    no_exception,
    set_number,
    snap,
    wait_step_above,
)

from tinygpt.runs.files import read_config_json
from tinygpt.runs.store import RunStore
from tinygpt.ui.host import runlist
from tinygpt.ui.words import run_words

PROJECTOR = {"width": 1280, "height": 720}
FONT_SIZE_JS = "() => getComputedStyle(document.documentElement).fontSize"


def open_app(browser, url: str):
    context = browser.new_context(viewport=PROJECTOR)
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto(url)
    expect(page.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    return context, page


def large_fonts(page, on: bool = True) -> None:
    toggle = page.get_by_role("switch", name="Large fonts (projector)")
    if toggle.is_checked() != on:
        page.locator("label").filter(has_text="Large fonts (projector)").click()
    expect(toggle).to_be_checked(checked=on)
    page.wait_for_function(f"() => getComputedStyle(document.documentElement).fontSize {'==' if on else '!='} '20px'")


def test_bring_to_projector_hold_share_and_large_fonts(app_server, app_runs, browser, shots):
    anna_ctx, anna = open_app(browser, app_server)
    large_fonts(anna)
    choose(anna, "Corpus", "Synthetic: copy")
    set_number(anna, "Max steps", 20000)
    idle(anna)
    button(anna, "Train").click()
    wait_step_above(anna, 5, timeout_s=60)
    run_id = re.search(r"[?&]run=([A-Za-z0-9_-]+)", anna.url).group(1)

    # The instructor: key entered once; Large fonts stays on across a refresh without &large=1 in the address.
    teach_ctx, teacher = open_app(browser, app_server)
    teacher.get_by_text(re.compile("^You: ")).first.click()
    box = teacher.get_by_label("Instructor key")
    box.fill(INSTRUCTOR_KEY)
    box.press("Enter")
    expect(teacher.get_by_text(re.compile("Instructor mode"))).to_be_visible()
    large_fonts(teacher)
    idle(teacher)
    teacher.goto(app_server)  # a refresh of the projector's tab
    expect(teacher.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    expect(teacher.get_by_role("switch", name="Large fonts (projector)")).to_be_checked()
    assert teacher.evaluate(FONT_SIZE_JS) == "20px" and "large=" not in teacher.url
    large_fonts(teacher, on=False)  # Bring to the projector turns it back on by itself

    # Room -> pick Anna's run -> Bring to the projector: her run on the Train page, large, no traceback.
    go(teacher, "Room", "tinygpt · Room")
    choose_containing(teacher, "Run", "copy")  # options: "learner · run name · state"; hers is the copy-task run
    idle(teacher)
    teacher.get_by_role("button", name="Bring to the projector").click()
    expect(teacher.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    name = runlist.run_names(RunStore(app_runs))[run_id]  # the Runs table's name, not the id
    whose = run_words.watching(read_config_json(RunStore(app_runs).path(run_id)))  # her name, said on the projector
    expect(teacher.get_by_text(f"On your screen, in large fonts: {whose}, «{name}».")).to_be_visible()
    no_exception(teacher)
    expect(teacher.get_by_role("switch", name="Large fonts (projector)")).to_be_checked()
    assert teacher.evaluate(FONT_SIZE_JS) == "20px" and f"run={run_id}" in teacher.url
    expect(teacher.get_by_text(re.compile(r"· running"))).to_be_visible()
    expect(teacher.get_by_text(re.compile("Changed since this run started"))).to_have_count(0)  # the run's settings
    teacher.screenshot(path=shots / "room-projector.png")

    # The instructor's pause is a hold: Anna's page says so, and her Resume and Step stay off.
    expect(button(teacher, "Pause")).to_be_enabled(timeout=30_000)
    button(teacher, "Pause").click()
    expect(anna.get_by_text(re.compile(r"· paused: paused by the instructor at step"))).to_be_visible(timeout=10_000)
    said = re.compile("Paused by the instructor, who holds it: Resume and Step stay off")
    expect(anna.get_by_text(said)).to_be_visible()
    expect(button(anna, "Resume")).to_be_disabled()
    expect(button(anna, "Step")).to_be_disabled()
    assert anna.get_by_text("paused by you").count() == 0
    no_exception(anna)
    anna.screenshot(path=shots / "room-hold-learner.png")
    expect(teacher.get_by_text(re.compile("and hold it"))).to_be_visible(timeout=10_000)
    teacher.screenshot(path=shots / "room-hold-instructor.png")

    # The instructor lets go (from the Room, where the holds are listed): training goes on, Anna has her run back.
    # The server is shared with the other browser tests, whose runs an instructor may hold too: Anna's is one more.
    go(teacher, "Room", "tinygpt · Room")
    expect(teacher.get_by_text(re.compile(r"You hold \d+ run\(s\)"))).to_be_visible()
    held = int(re.search(r"You hold (\d+) run", teacher.get_by_text(re.compile(r"You hold \d+ run")).inner_text())[1])
    assert held >= 1 and run_id in runlist.held_runs(RunStore(app_runs)), held
    no_exception(teacher)
    teacher.screenshot(path=shots / "room-holds.png")
    button(teacher, f"Let go: resume {held} held").click()
    expect(anna.get_by_text(re.compile(r"^step [\d,]+ / [\d,]+ .*· running"))).to_be_visible(timeout=15_000)
    expect(button(anna, "Pause")).to_be_enabled(timeout=10_000)
    expect(anna.get_by_text(re.compile("Paused by the instructor"))).to_have_count(0)

    # Share (read-only), made on Runs: the link opens the run's live view for someone else, no warning.
    go(anna, "Runs", "tinygpt · Runs")
    expect(anna.get_by_text(re.compile(r"the run in view \(named in the sidebar\)"))).to_be_visible()  # her run
    button(anna, "Share (read-only)").click()
    link = anna.locator("code").filter(has_text="view=1").first.inner_text().strip()
    assert link.endswith(f"/?run={run_id}&view=1"), link
    ben_ctx, ben = open_app(browser, f"{app_server}/runs?run={run_id}&view=1")  # a link made before the fix, too
    large_fonts(ben)
    idle(ben)
    expect(ben.get_by_text(re.compile(r"Watching .*'s run \(read-only\)")).first).to_be_visible()
    expect(ben.get_by_text(re.compile("not a setting"))).to_have_count(0)
    # Under load the link's page was seen mid-redraw with the controls twice (the old script run's copies not yet
    # removed: "resolved to 2 elements", both disabled): wait for the page to settle on one set
    expect(button(ben, "Pause")).to_have_count(1, timeout=60_000)
    for label in ("Pause", "Resume", "Step", "Stop"):  # a loaded server redraws the page slowly: a longer wait
        expect(button(ben, label)).to_have_count(1, timeout=60_000)  # a redraw can begin again (stop 49: "Resume" x2)
        expect(button(ben, label)).to_be_disabled(timeout=60_000)
    wait_step_above(ben, 0, timeout_s=30)  # the live view, counting
    no_exception(ben)
    snap(ben, shots / "room-share-view.png")
    ben.goto(link)  # the link as the Runs page prints it now
    expect(ben.get_by_text(re.compile(r"Watching .*'s run \(read-only\)")).first).to_be_visible()

    go(teacher, "Train", "tinygpt · Train")
    button(teacher, "Stop").click()
    expect(teacher.get_by_text(re.compile(r"· stopped"))).to_be_visible(timeout=30_000)
    for context in (anna_ctx, teach_ctx, ben_ctx):
        context.close()
