"""Number boxes whose range the server checks (tinygpt/ui/screen/numbers.py): a typed value out of range goes to
the nearer end with a sentence naming both, and the box shows the value used (a review typed 999,999,999 in Max
steps and got a 300-step run unsaid; a seed of -1 ran as 1337)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tinygpt.ui.screen.numbers import in_range, whole_number
from tinygpt.ui.train import train_keys

REPO = Path(__file__).resolve().parents[3]


def test_a_number_out_of_range_goes_to_the_nearer_end_and_says_so():
    assert in_range(999_999_999, 1, 1_000_000) == (
        1_000_000, "999,999,999 is more than the most it takes, 1,000,000; it is 1,000,000 now.")  # fmt: skip
    assert in_range(-1, 0, 2**31 - 1) == (0, "-1 is less than the least it takes, 0; it is 0 now.")
    assert in_range(12.5, 0.0, 10.0) == (10.0, "12.5 is more than the most it takes, 10; it is 10 now.")
    assert in_range(5, 1, 10) == (5, "")
    assert in_range(None, 1, 10) == (None, "") and in_range(True, 1, 10) == (True, "")
    assert in_range(float("nan"), 1, 10)[1] == ""  # not a number: the page's own guard refuses it


def test_max_steps_typed_over_its_limit_shows_the_limit_and_a_message():
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.number_input(key=train_keys.W_MAX_STEPS).set_value(999_999_999).run()
    assert not at.exception, at.exception
    assert at.number_input(key=train_keys.W_MAX_STEPS).value == 1_000_000
    said = " ".join(str(t.value).replace("\\", "") for t in at.toast)
    assert "Max steps: 999,999,999 is more than the most it takes, 1,000,000; it is 1,000,000 now." in said, said


def test_the_boxs_bare_default_from_the_browser_keeps_the_last_value_unsaid():
    """The browser sent a Seed box's own default, its lowest value (-2**53 + 1), with no key pressed: the Circuits
    page toasted "Seed: -9,007,199,254,740,991 is less than the least it takes, 0; it is 0 now." and the seed was
    0. Nobody types that number: the box keeps its last value, with no message."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    box = at.number_input(key=train_keys.W_MAX_STEPS)
    before = box.value
    box.set_value(-(2**53 - 1)).run()
    assert not at.exception, at.exception
    assert at.number_input(key=train_keys.W_MAX_STEPS).value == before
    assert not [t for t in at.toast if "less than the least" in str(t.value)]
    at.number_input(key=train_keys.W_MAX_STEPS).set_value(-5).run()  # a number typed out of range is still said
    assert at.number_input(key=train_keys.W_MAX_STEPS).value == 1
    said = " ".join(str(t.value).replace("\\", "") for t in at.toast)
    assert "Max steps: -5 is less than the least it takes, 1; it is 1 now." in said, said


def test_a_whole_number_box_says_what_it_kept_of_a_fraction_or_an_exponent():
    """A review typed "2.5" in Max steps and Batch size and got 2, and "1e12" and got a 1-step run, unsaid: the
    browser read a whole-number box's text as an integer. The typed number reaches the server, which says."""
    assert whole_number(2.5) == (3, "2.5 is not a whole number; it is 3 now.")
    assert whole_number(12.0) == (12, "") and whole_number(7) == (7, "") and whole_number(None) == (None, "")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    for typed, kept, said in [
        (2.5, 3, "Max steps: 2.5 is not a whole number; it is 3 now."),
        (1e12, 1_000_000, "Max steps: 1,000,000,000,000 is more than the most it takes, 1,000,000; it is 1,000,000 "
                          "now."),  # fmt: skip
        (-0.5, 1, "Max steps: -0.5 is not a whole number, and 0 is less than the least it takes, 1; it is 1 now."),
        (400.0, 400, ""),
    ]:
        at.number_input(key=train_keys.W_MAX_STEPS).set_value(typed).run()
        assert not at.exception, at.exception
        value = at.session_state[train_keys.W_MAX_STEPS]
        assert value == kept and isinstance(value, int), (typed, value)
        shown = " ".join(str(t.value).replace("\\", "") for t in at.toast)
        assert said in shown, (typed, shown)


def test_a_whole_number_box_read_back_from_the_browser_is_an_int_again_before_any_page_reads_it():
    """Drawn as a real-number box, a whole one comes back as 10.0 on every rerun: a guard that takes only ints read
    "Steps per Step click: the browser sent 10.0, which it cannot take; it is 1 again"."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.run()
    at.run()
    for key in (train_keys.W_STEP_N, train_keys.W_MAX_STEPS):
        value = at.session_state[key]
        assert isinstance(value, int) and not isinstance(value, bool), (key, value)
    assert not [t for t in at.toast if "cannot take" in str(t.value)]
