"""The live knobs in real browsers (issue 32): a burst of arrow-key presses on Warmup changes warmup only, and the
run's events hold every applied change with the value that was on screen; a learner watching the instructor's
run through its link sees the run's knobs (read-only) follow the instructor's change, and is not told "paused by
you" when the instructor pauses. Two browser contexts (their own cookies): the instructor and a learner."""

from __future__ import annotations

import re

from conftest import become_instructor
from playwright.sync_api import expect
from test_app_browser import button, check_radio, choose, events_of, idle, no_exception, set_number, wait_step_above


def open_app(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto(url)
    expect(page.get_by_role("heading", name="tinygpt · Train")).to_be_visible()
    return context, page


def start_run(page) -> str:
    idle(page)  # a rerun in flight draws the form twice for a moment (two "Max steps" boxes)
    choose(page, "Corpus", "Synthetic: copy")
    set_number(page, "Max steps", 100000)
    idle(page)
    button(page, "Train").click()
    wait_step_above(page, 5, timeout_s=60)
    return re.search(r"[?&]run=([A-Za-z0-9_-]+)", page.url).group(1)


def knob_changes(app_runs, run_id: str, knob: str) -> list[dict]:
    return [e for e in events_of(app_runs, run_id) if e.get("kind") == "knob" and e.get("knob") == knob and e["ok"]]


def test_a_burst_of_key_presses_on_warmup_changes_warmup_only(app_server, app_runs, browser):
    context, page = open_app(browser, app_server)
    run_id = start_run(page)
    lr = page.get_by_role("slider", name="Learning rate")
    idle(page)
    lr.focus()
    for value in ("0.005", "0.01", "0.02", "0.05"):  # one stop a press, each answered before the next
        lr.press("ArrowRight")
        expect(lr).to_have_attribute("aria-valuetext", value)
        expect(page.get_by_text(f"LR → {value}: applied after step", exact=False)).to_be_visible(timeout=30_000)
    page.wait_for_timeout(6_000)  # longer than any window a stale copy of the exact box was once let through
    warmup = page.get_by_role("slider", name="Warmup steps")
    start = int(warmup.get_attribute("aria-valuetext"))
    warmup.focus()
    for _ in range(20):
        warmup.press("ArrowRight")
        page.wait_for_timeout(60)  # a person's key repeat, faster than the page's script runs
    expect(warmup).to_have_attribute("aria-valuetext", str(start + 20))
    expect(page.get_by_text(re.compile(rf"warmup → {start + 20}: applied after step"))).to_be_visible(timeout=30_000)
    idle(page)
    page.wait_for_timeout(2_000)  # a stray command, had one been sent, is answered by now
    rates = [e["new"] for e in knob_changes(app_runs, run_id, "learning_rate")]
    assert rates == [0.005, 0.01, 0.02, 0.05], rates  # never back: no stale value rode along with warmup
    warmups = [e["new"] for e in knob_changes(app_runs, run_id, "warmup_steps")]
    assert warmups and warmups[-1] == start + 20 and warmups == sorted(warmups), warmups
    assert len(warmups) < 20, warmups  # a slider sends once it rests: the burst is one change, or a few
    assert {e["knob"] for e in events_of(app_runs, run_id) if e.get("kind") == "knob"} <= {
        "learning_rate", "min_lr", "warmup_steps"}  # fmt: skip
    expect(lr).to_have_attribute("aria-valuetext", "0.05")  # the screen and the run agree
    no_exception(page)
    button(page, "Stop").click()
    # Closing at once could drop the click's message: a 100,000-step run would then hold a training slot for the
    # lease's 10 minutes, and the next module's runs would queue behind it (CI, stop 37: the lab's last pair).
    expect(page.get_by_text(re.compile(r"· stopped"))).to_be_visible(timeout=30_000)
    context.close()


def test_a_learner_watching_the_instructors_run_follows_its_mask_and_is_not_told_they_paused_it(
    app_server, app_runs, browser
):
    teach_ctx, teacher = open_app(browser, app_server)
    become_instructor(teacher)
    run_id = start_run(teacher)

    learner_ctx, learner = open_app(browser, f"{app_server}/?run={run_id}&view=1")
    wait_step_above(learner, 5, timeout_s=60)
    causal = learner.get_by_role("radio", name="causal (language model)", exact=True)
    none = learner.get_by_role("radio", name="none (sees the future)", exact=True)
    expect(causal).to_be_checked()
    expect(none).to_be_disabled()  # the instructor's run: read-only here
    expect(learner.get_by_text("Changed since this run started", exact=False)).to_have_count(0)

    idle(teacher)
    check_radio(teacher, "none (sees the future)")
    expect(teacher.get_by_text(re.compile(r"mask → none: applied after step \d+"))).to_be_visible(timeout=30_000)
    expect(none).to_be_checked(timeout=10_000)  # the learner's Mask control follows the run within seconds
    assert [(e["old"], e["new"]) for e in knob_changes(app_runs, run_id, "mask")] == [("causal", "none")]

    idle(teacher)
    button(teacher, "Pause").click()
    expect(teacher.get_by_text(re.compile(r"paused by you at step \d+"))).to_be_visible(timeout=30_000)
    expect(learner.get_by_text(re.compile(r"paused by the instructor at step \d+"))).to_be_visible(timeout=30_000)
    expect(learner.get_by_text(re.compile("paused by you"))).to_have_count(0)
    no_exception(learner)
    no_exception(teacher)
    # A watcher who opens Gradients while the run is paused follows the instructor's resume (a review's watcher read
    # "step 513 · paused by the instructor" there while the run trained past step 2,200: follow.follow_idle_run)
    learner.goto(f"{app_server}/gradients?run={run_id}&view=1")
    paused_at = int(re.search(r"paused by the instructor at step (\d+)", learner.get_by_text(
        re.compile(r"paused by the instructor at step \d+")).first.inner_text(timeout=60_000)).group(1))  # fmt: skip
    idle(teacher)
    button(teacher, "Resume").click()
    wait_step_above(learner, paused_at + 5, timeout_s=60)
    expect(learner.get_by_text(re.compile(r"paused by the instructor"))).to_have_count(0)
    no_exception(learner)
    button(teacher, "Stop").click()
    expect(teacher.get_by_text(re.compile(r"· stopped"))).to_be_visible(timeout=30_000)  # as above
    learner_ctx.close()
    teach_ctx.close()
