"""tinygpt/ui/screen/flashes.py: one-shot messages belong to the run they are about (issue 32): a flash raised for one
run is never shown over another, and a flash about no run shows whatever run is in view. Through AppTest.from_function,
the session state a real page has, no server or run folder."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402


def shown(at: AppTest) -> list[str]:
    """The messages on the page by kind, without the escapes that show them as text (tinygpt.ui.words.safe.md)."""
    return [e.value.replace("\\", "") for kind in (at.success, at.info, at.warning, at.error) for e in kind]


def test_a_flash_about_another_run_is_not_shown_over_the_run_in_view_and_is_dropped():
    """Bring to the projector: the flashes of the run shown before must not appear over the one brought."""

    def page():
        from tinygpt.ui.run import in_view
        from tinygpt.ui.screen import flashes

        flashes.flash("info", "LR -> 0.1: applies at the next step", run_id="run-aaaaaaaa")
        flashes.flash("success", "Opened run B.", run_id="run-bbbbbbbb")
        flashes.flash("warning", "Ignored the run in the address")  # about no run: shown over any
        in_view.set_run_id("run-bbbbbbbb")
        flashes.show_flashes()  # the run in view
        in_view.set_run_id("run-aaaaaaaa")
        flashes.show_flashes()  # back on the first run: its old news is gone, not kept for it

    at = AppTest.from_function(page).run()
    assert not at.exception, at.exception
    assert shown(at) == ["Opened run B.", "Ignored the run in the address"]


def test_show_flashes_takes_the_run_a_page_shows_over_the_session_run():
    def page():
        from tinygpt.ui.run import in_view
        from tinygpt.ui.screen import flashes

        in_view.set_run_id("run-aaaaaaaa")
        flashes.flash("success", "Resumed run B from its last checkpoint.", "run-bbbbbbbb")
        flashes.flash("info", "Changed run A.", "run-aaaaaaaa")
        flashes.show_flashes(run_id="run-bbbbbbbb")

    at = AppTest.from_function(page).run()
    assert shown(at) == ["Resumed run B from its last checkpoint."]


def test_with_no_run_in_view_only_flashes_about_no_run_show():
    def page():
        from tinygpt.ui.screen import flashes

        flashes.flash("success", "Deleted run A.")
        flashes.flash("info", "Changed run A.", run_id="run-aaaaaaaa")
        flashes.show_flashes()

    at = AppTest.from_function(page).run()
    assert shown(at) == ["Deleted run A."]


def test_the_same_flash_twice_shows_once_but_the_same_words_about_two_runs_are_two_flashes():
    def page():
        from tinygpt.ui import state
        from tinygpt.ui.run import in_view
        from tinygpt.ui.screen import flashes

        for _ in range(2):  # a widget callback that fired twice before the page drew its messages
            flashes.flash("success", "Resumed.", run_id="run-aaaaaaaa")
        flashes.flash("success", "Resumed.", run_id="run-bbbbbbbb")
        assert len(state.get(flashes.FLASH)) == 2
        in_view.set_run_id("run-aaaaaaaa")
        flashes.show_flashes()
        flashes.show_flashes()  # popped: nothing left to show a second time

    at = AppTest.from_function(page).run()
    assert not at.exception, at.exception
    assert shown(at) == ["Resumed."]


def test_a_flash_shown_in_a_run_the_frame_reruns_at_once_is_shown_again_in_the_rerun():
    """The Large fonts switch reruns the page once more (fonts.remount_grids): the messages its first run showed
    are pending again, so the rerun shows them ("On your screen, in large fonts: anna's run" vanished); once."""

    def page():
        import streamlit as st

        from tinygpt.ui.screen import flashes

        if not st.session_state.get("seeded"):
            st.session_state["seeded"] = True
            flashes.flash("success", "On your screen, in large fonts.")
            flashes.show_flashes()
            flashes.show_again()  # what remount_grids does before its rerun
            st.rerun()
        flashes.show_flashes()

    at = AppTest.from_function(page).run()
    assert not at.exception, at.exception
    assert shown(at) == ["On your screen, in large fonts."]
    at.run()
    assert shown(at) == []  # shown once in the rerun, then gone
