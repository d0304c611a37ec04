"""The presenter view (issue 37): on the projector (the instructor, Large fonts on) the lesson is a banner across
the top of every page, not a narrow sidebar pane where a check runs to 20-30 lines: the step and its title, the
Predict question, the room's spread of answers, and the check's headline, in its colour (seen, not seen, not
enough data yet), with the whole text and the runs' progress in a popover; Back, Next, Set up and Prepare as in
the pane, and "Watch for" and the lecture run's reset in another. Four rows, so a 720-pixel projector still shows
the page under it. The sidebar keeps one line for the lesson, so nothing is shown twice.

The pieces are tinygpt/ui/teach/lesson_view.py's (where the lesson is, the setup, the check and its refresh) and
tinygpt/ui/teach/prediction_view.py's (the spread, no learner named); this module only lays them out. The check's line
is its own headline (lesson_checks.Check.short: the verdict's point, built by the check from its numbers): it used to
be the check's text cut to its first sentence, and on the ablation step that cut stopped at "... at step 3000 …",
before the claim. Learners and the instructor without Large fonts keep the sidebar pane.
"""

from __future__ import annotations

import streamlit as st

from tinygpt.runs.owners import Actor
from tinygpt.ui import state
from tinygpt.ui.screen import fonts
from tinygpt.ui.teach import lesson, lesson_reset, lesson_view, long_runs, teach_keys
from tinygpt.ui.teach.lesson import STEPS
from tinygpt.ui.words import safe

LIMIT = 240  # characters: about three lines of the banner at Large fonts on a 1280-pixel screen (tests hold it)


def shown(actor: Actor) -> bool:
    """The banner instead of the sidebar pane: the instructor's screen with Large fonts (the projector)."""
    return bool(actor.instructor) and fonts.large_fonts()


def _check(check: lesson.Check, lines: list[str]) -> None:
    """check_view's drawing for the banner: the check's headline in its colour, its whole text and the runs'
    progress one click away (a popover: an expander's row, and the Predict line's second, pushed the page's own
    chart below a 720-pixel projector's edge)."""
    alert, more = st.columns([5, 1.5], vertical_alignment="center")
    with alert:
        lesson_view.show_check(check, check.short)
    with more.popover("Numbers", width="stretch", help="The check in full, with its numbers"):
        st.caption(f"**Check:** {check.status} · computed from the runs every {teach_keys.REFRESH_S:.0f} s.")
        st.markdown(safe.md(check.text))
        for line in lines:
            st.caption(safe.md(line))


def _close_more(key: str) -> None:
    """The Reset button's callback: it runs before the script, while the popover's state may still be set."""
    state.put(key, False)


def banner(shop, actor: Actor) -> None:
    """The lesson as a banner at the top of the main area (drawn before the page, so above its title)."""
    at = lesson_view.position(shop, actor)
    if at is None:
        return
    index, seen, data = at
    step = STEPS[index]
    st.sidebar.caption(f"**Lesson {index + 1}/{len(STEPS)}** is on the banner above the page (Large fonts).")
    with st.sidebar:
        long_runs.draw()
    # Large fonts' header is 3.75rem tall over a 3.2rem top padding (tinygpt/ui/frame.py): the banner's top edge
    # went under it in the 1280x720 screenshot. A style element only, drawn in the sidebar: no gap in the page.
    st.sidebar.html("<style>.st-key-lesson_pane { margin-top: 0.8rem; }</style>")
    moved = None
    with st.container(border=True, key="lesson_pane"):  # the pane's key: the lesson's browser test reads it
        # One paragraph: the step, where it plays and its question. "Watch for" is under More: as this paragraph's
        # help its icon wrapped onto a line of its own at 1280x720 (a review: the page below the projector's edge).
        lesson_view.title(index, f"**Lesson {index + 1}/{len(STEPS)} · {step.section}** · "
                          f"{lesson_view.where_line(index, data)} · **Predict:** {step.predict}")  # fmt: skip
        st.fragment(run_every=teach_keys.REFRESH_S)(lesson_view.check_view)(index, actor, seen, draw=_check)
        # No icons in this row: five labels whole at Large fonts in the main column of a 1280-pixel screen.
        setup, back, forward, prepare, more = st.columns([3.4, 1.6, 1.6, 4.2, 2], vertical_alignment="center")
        with setup:
            lesson_view.setup_button(step, actor, icon=False)
        help_ = "Back and Next move the whole room: every learner's lesson follows."
        if back.button("Back", disabled=index == 0, key="lesson_back", width="stretch", help=help_):
            moved = index - 1
        if forward.button("Next", disabled=index == len(STEPS) - 1, key="lesson_next", width="stretch", help=help_):
            moved = index + 1
        with prepare:
            lesson_view.prepare_button(actor, icon=False, short=True)
        # What the sidebar pane shows below its buttons, folded: "Watch for", and on a step that broke the lecture
        # run its reset (named on the button, so the room's instructor finds it). Its open state is kept, so that
        # the reset closes it: a review's projector showed the popover open over the reset run's page.
        # Keyed by the lecture run too: the reset's new run is a new popover, closed (a review saw the browser open
        # the old one again 1-4 s after the reset had closed it).
        key = f"{teach_keys.W_BANNER_MORE}:{(data['runs'].get(lesson.LECTURE) or {}).get('run')}"
        with more.popover("Reset" if step.reset else "More", width="stretch", key=key, on_change="rerun"):
            st.markdown(f"**Watch for:** {step.watch}")
            lesson_reset.pane_part(step, actor, on_click=_close_more, args=(key,))
    if moved is not None:
        lesson_view.move_to(moved, actor)
