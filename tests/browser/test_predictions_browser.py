"""Predict, then run, in real browsers: the instructor and six learners, each in their own browser context. Each
learner answers the first step's question; the instructor's pane and Room page show the count per answer while
they answer, naming no one; the instructor sets the step up, its check appears (the lecture run's loss falls from
ln 65), the learners' radios give way to their answers graded and the Room shows the share right; the names appear
only on the instructor's toggle; the CSV downloads with every step's counts; a learner's own record (one HTML file)
downloads and opens offline with their answer. Screenshots go to
test-output/screenshots/predictions/.
"""

from __future__ import annotations

import csv
import io
import re
import time

import pytest
from conftest import OUTPUT, become_instructor, own_server
from playwright.sync_api import expect
from test_app_browser import no_exception
from test_lesson_browser import SHORT_S, open_page, pane, pane_button, shows_step

from tinygpt.ui.teach import lesson
from tinygpt.ui.teach.predictions import NOT_SURE

STEP = lesson.STEPS[0]
WRONG_ANSWER = next(c for c in STEP.answers.choices if c != STEP.answers.seen)
ANSWERS = [STEP.answers.seen] * 3 + [WRONG_ANSWER] * 2 + [NOT_SURE]  # six learners: 3 right of the 5 graded


@pytest.fixture(scope="module")
def predict_server(tmp_path_factory):
    with own_server(tmp_path_factory, "predictions") as served:
        yield served


def pane_text_matches(page, pattern: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = pane(page).inner_text()
        if re.search(pattern, text):
            return text
        page.wait_for_timeout(500)
    pytest.fail(f"the pane never read /{pattern}/ in {timeout_s:.0f} s; it reads:\n{pane(page).inner_text()}")


def test_six_learners_predict_the_room_sees_the_spread_and_the_check_grades_them(browser, predict_server):
    base, _ = predict_server
    shots = OUTPUT / "screenshots" / "predictions"
    shots.mkdir(parents=True, exist_ok=True)
    teach_ctx, teacher = open_page(browser, base)
    become_instructor(teacher)
    teacher.get_by_role("button", name="Teach the lesson").click()
    shows_step(teacher, 0)
    learners = [open_page(browser, base) for _ in ANSWERS]
    names = []
    for (_, page), answer in zip(learners, ANSWERS, strict=True):
        shows_step(page, 0)
        names.append(re.sub(r"^You: ", "", page.get_by_text(re.compile("^You: ")).first.inner_text()).strip())
        pane(page).locator('[data-testid="stRadio"]').get_by_text(answer, exact=True).click()
        expect(pane(page).get_by_text("You may change it until the check appears.")).to_be_visible()
        if len(names) == 3:  # live, while the others still answer
            pane_text_matches(teacher, r"3 answered", 30)
    # the pane's line leaves out the answers nobody chose ("over 10: 0"): every line counts on a 720-pixel projector
    pane_text_matches(teacher, r"6 answered: .*under 2: 2 · between 3 and 5: 3 · not sure: 1", 30)
    teacher.locator('[data-testid="stSidebarNav"] a').filter(has_text="Room").first.click()
    expect(teacher.get_by_role("heading", name="tinygpt · Room")).to_be_visible()
    expect(teacher.get_by_text(re.compile(r"^6 answered: "))).to_be_visible(timeout=30_000)
    expect(teacher.get_by_text("The share right appears with the check.")).to_be_visible()
    main = teacher.locator('[data-testid="stMain"]')
    assert not any(name in main.inner_text() for name in names)  # on the projector: nobody named
    teacher.screenshot(path=shots / "room-while-answering.png", full_page=True)

    # The check: the instructor sets the step up (the lecture run trains; its loss falls from ln 65).
    pane_button(teacher, "Set up this step").click()
    expect(teacher.get_by_role("heading", name="tinygpt · Train")).to_be_visible(timeout=60_000)
    pane_text_matches(teacher, r"Check: seen", SHORT_S)
    pane_text_matches(teacher, r"3 right of 5 graded \(60%\)", 30)
    for (_, page), answer in zip(learners, ANSWERS, strict=True):
        expect(pane(page).locator('[data-testid="stRadio"]')).to_have_count(0, timeout=30_000)  # final now
        grade = {STEP.answers.seen: "right", WRONG_ANSWER: "wrong", NOT_SURE: "you were not sure"}[answer]
        found = re.escape(f'the check found "{STEP.answers.seen}"')  # named by the answer the check confirms
        pane_text_matches(page, rf"Your prediction: {re.escape(answer)} · {found} · {grade}", 30)
        no_exception(page)
    learners[0][1].screenshot(path=shots / "learner-graded.png")

    # A learner's record: one HTML file, downloaded from their pane, that opens offline and shows their answer.
    first = learners[0][1]
    pane(first).get_by_role("button", name="Make my lesson (HTML)").click()  # made now; then downloaded as made
    with first.expect_download() as saved:
        pane(first).get_by_role("button", name=re.compile("Download my lesson")).click()
    record = OUTPUT / "screenshots" / "predictions" / "my-lesson.html"
    saved.value.save_as(record)
    offline = browser.new_context(offline=True, viewport={"width": 1280, "height": 720})
    fetched: list[str] = []
    offline.on("request", lambda r: fetched.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    view = offline.new_page()
    view.goto(record.resolve().as_uri())
    expect(view.get_by_role("heading", name=re.compile(f"My tinygpt lesson: {re.escape(names[0])}"))).to_be_visible()
    expect(view.get_by_text(f"Your prediction: {ANSWERS[0]}")).to_be_visible()
    expect(view.get_by_text(f"Step 1: {STEP.section}")).to_be_visible()
    view.screenshot(path=shots / "learner-record.png", full_page=True)
    assert not fetched, f"the record fetched from elsewhere: {fetched[:3]}"
    offline.close()
    teacher.locator('[data-testid="stSidebarNav"] a').filter(has_text="Room").first.click()
    expect(teacher.get_by_role("heading", name="tinygpt · Room")).to_be_visible()
    right = teacher.locator('[data-testid="stMetric"]').filter(has_text="Right")  # 3 of the 5 graded: "not sure" isn't
    expect(right).to_contain_text("60%", timeout=30_000)
    assert not any(name in main.inner_text() for name in names)
    teacher.get_by_text("Name the learners beside their answers").click()
    for name in names:
        expect(main.get_by_text(name, exact=True).first).to_be_visible(timeout=30_000)
    teacher.screenshot(path=shots / "room-after-check-named.png", full_page=True)
    teacher.get_by_role("button", name=re.compile("Make the room's spread")).click()
    with teacher.expect_download() as download:
        teacher.get_by_role("button", name=re.compile("Download the room's spread")).click()
    rows = list(csv.DictReader(io.StringIO(download.value.path().read_text())))
    mine = {r["answer"]: r for r in rows if r["key"] == STEP.key}
    assert mine[STEP.answers.seen]["learners"] == "3" and mine[STEP.answers.seen]["grade"] == "right"
    assert mine[WRONG_ANSWER]["learners"] == "2" and mine[NOT_SURE]["learners"] == "1"
    assert {r["key"] for r in rows} == set(lesson.STEP_KEYS)
    assert not any(name in download.value.path().read_text() for name in names)
    no_exception(teacher)
    for context in (teach_ctx, *(c for c, _ in learners)):
        context.close()
