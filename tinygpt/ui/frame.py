"""The frame every page runs inside: page setup, navigation, who the learner is, the run id in the URL, and an
optional large-font mode for projectors. app.py calls `run()` on every script run; each page calls `require()`
first, which runs the frame itself when Streamlit ran the page alone (a deep link opened first).

A module, not app.py's own body, so that `require()` can call it (it used to exec app.py's source) and so that what
must exist once per server (the import lock, the favicon) exists once.
"""

import sys
import threading

import streamlit as st

from tinygpt.ui import state
from tinygpt.ui.host import server
from tinygpt.ui.people import room
from tinygpt.ui.run import in_view
from tinygpt.ui.screen import flashes, fonts, numbers
from tinygpt.ui.teach import teach_keys
from tinygpt.ui.words import picking, safe

_IMPORTS = threading.Lock()


@st.cache_resource(show_spinner=False)
def _favicon():
    """A favicon drawn here: a Material icon as page_icon is fetched from fonts.gstatic.com, and the app must work
    offline without calling out."""
    from PIL import Image, ImageDraw

    image = Image.new("RGBA", (32, 32), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((0, 0, 31, 31), radius=7, fill=(255, 75, 75, 255))
    for i, row in enumerate((6, 12, 18, 24)):  # a tiny attention pattern: lower-triangular squares
        for j in range(i + 1):
            draw.rectangle((5 + 6 * j, row, 9 + 6 * j, row + 4), fill=(255, 255, 255, 255 - 40 * (i - j)))
    return image


def _one_thread() -> None:
    """The server process only draws charts and runs tiny forward passes (sampling, probes, ablation); the training
    workers, each a separate process, need the cores. Set on every page run, not only where this module imports
    torch: its own imports (state -> resources -> the model) already have, so that branch never ran, and the server
    ran torch on every core. On a busy 2-core machine two threads made the Circuits page's ablation of the
    induction model 13-38 s against 1.1-1.6 s on one (issue 35, BENCHMARKS.md)."""
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


OTHER_RUNS_PAGES = ("Runs", "Experiments", "Room")  # pages that draw runs other than the one in view


def run() -> None:
    """Draw the frame and run the current page inside it (app.py, on every script run)."""
    server.refuse_unreadable_widget_values()  # idempotent: for servers started without app.py's server half (tests)
    numbers.whole_again()  # whole-number boxes come back from the browser as 10.0: ints before any page reads them
    st.set_page_config(page_title="tinygpt: watch a transformer learn", page_icon=_favicon(), layout="wide")

    learner = room.current()
    PAGES = [
        # Material icons ship with Streamlit (no web font is fetched; emoji need a system emoji font).
        TRAIN := st.Page("pages/train.py", title="Train", icon=":material/model_training:", default=True),
        st.Page("pages/attention.py", title="Attention", icon=":material/grid_on:"),
        st.Page("pages/circuits.py", title="Circuits", icon=":material/hub:"),
        st.Page("pages/gradients.py", title="Gradients", icon=":material/show_chart:"),
        st.Page("pages/sample.py", title="Sample", icon=":material/edit_note:"),
        RUNS := st.Page("pages/runs.py", title="Runs", icon=":material/folder_open:"),
        EXPERIMENTS := st.Page("pages/experiments.py", title="Experiments", icon=":material/science:"),
    ]
    if learner.instructor:
        PAGES.append(st.Page("pages/room.py", title="Room", icon=":material/groups:"))
    # The navigation first, before torch: on a fresh server the first view shows the real menu and a "starting"
    # line at once, instead of ~5 s of a blank page under Streamlit's raw file-name menu.
    page = st.navigation(PAGES)

    starting = st.empty()  # on every run, so the page's elements keep their places from the first run to the next
    if "torch" not in sys.modules:
        starting.info(
            "Starting tinygpt: loading PyTorch (only the first visit after the server starts waits for this)."
        )
        # torch, pandas and plotly are imported once, here, before any page runs: browser tabs opening at once would
        # otherwise import them concurrently (a measured start-up race); the lock makes the others wait for the first.
        with _IMPORTS:
            import pandas  # noqa: F401
            import plotly  # noqa: F401
            import torch  # noqa: F401
        starting.empty()
    _one_thread()

    from tinygpt.ui.host import live
    from tinygpt.ui.host.resources import get_manager, get_store, keepalive_seconds, report_position, touch, touch_mine
    from tinygpt.ui.screen import backlog  # after the first paint: these import torch
    from tinygpt.ui.teach import workshop

    backlog.reconnect_on_overflow()  # a browser whose websocket queue filled up reconnects instead of going deaf
    store = get_store()
    shop = workshop.sync_workshop(page.url_path == EXPERIMENTS.url_path)  # ?preset=...&lock=1: a link, kept
    # The URL's ?run= wins if the run is this learner's, or no learner's (a CLI-trained or prepared run: the
    # instructor's, opened read-only), or the link says view=1; else the session's run goes back.
    run_id = in_view.sync_run_id(store, learner)
    if state.pop(in_view.SHARED_OPEN) and page.url_path == RUNS.url_path:
        st.switch_page(TRAIN)  # a share link made on Runs (/runs?run=...&view=1) opens that run's live view
    touch(run_id)  # any page that shows a run keeps its lease (live pages also renew it on every refresh)
    live.seen(live.session_token())  # one more session in the room: live charts refresh a little slower
    report_position(learner, state.get(teach_keys.LESSON_STEP), run_id)  # the Room table's "lesson step" and "in view"

    @st.fragment(run_every=keepalive_seconds())
    def keep_my_runs() -> None:
        """Every third of a lease (30 s at most), whatever page the learner reads (Sample does not refresh by
        itself): their own live and queued runs keep their leases. Drawn first in the sidebar, so its place never
        moves. It also counts this session in the room, which sets how often live charts refresh (ui/host/live.py)."""
        touch_mine(learner)
        live.seen(live.session_token())
        report_position(
            learner, state.get(teach_keys.LESSON_STEP), in_view.run_id()
        )  # a learner reading one page still shows on the Room
        lesson_started()

    def lesson_started() -> None:
        """A page without the lesson's pane looks for the lesson every LESSON_WATCH_S, not only every 30 s (the
        keepalive's): two of three learners' panes came 28 and 31 s after "Teach the lesson", and they missed step
        1's question (a review). Second in the sidebar, always there and drawing nothing: no place moves."""
        if state.get(teach_keys.LESSON_SHOWN) is not True and workshop.lesson_started_unseen():
            state.put(teach_keys.LESSON_SHOWN, None)  # once: the full run this asks for draws the pane
            st.rerun(scope="app")

    with st.sidebar:
        keep_my_runs()
        st.fragment(run_every=LESSON_WATCH_S)(lesson_started)()
        st.markdown("### tinygpt")
        st.caption("A tiny character-level GPT, trained live while you watch.")
        if run_id:  # its readable name (the Runs table's first column); the id is for links and files
            from tinygpt.runs.names import store_names

            name = store_names(store.root).get(run_id) or run_id
            rd = in_view.checked_run_reader(run_id)  # the folder sync_run_id found: no second look-up
            now = picking.now_unlike_the_name(rd.config(), rd.events) if rd is not None else ""
            if rd is not None:
                in_view.sidebar_drawn(run_id, rd.events)  # a live view redraws the page after a knob change
            now = f" · {safe.md(now)}" if now else ""  # a name keeps its start settings; the knobs move
            # Drawn on the page's runs, not as a timed fragment: a sidebar fragment refreshing every second detached
            # the main area's buttons mid-click (Sample's Generate, in the browser tests)
            # Runs, Experiments and Room draw other runs: there the line says where this one is drawn (a review's
            # instructor read "Run: …lecture run" over the pitfall lab's runs on Experiments)
            label = "Run on Train and the run pages" if page.title in OTHER_RUNS_PAGES else "Run"
            st.caption(f"{label}: **{safe.md(name)}**{now}",
                       help=f"Run id `{run_id}` (links and the run's folder use it)")  # fmt: skip
        else:
            st.caption("No run in view: start one on **Train** or open one on **Runs**.")
        room.large_fonts_before_toggle()  # this browser's choice (a cookie), or what a page asked for
        large = st.toggle(
            "Large fonts (projector)", key=fonts.W_LARGE, persist_state="session", on_change=room.large_fonts_changed
        )
        if shop.locked:
            st.caption(":material/lock: Settings locked by the workshop link.")
        room.sidebar(learner)
    workshop.tutorial_pane(shop)
    workshop.hide_controls(shop)
    for problem in shop.errors:
        st.warning(f"Workshop link: {safe.md(problem)}")

    # Local CSS only (no fonts or scripts are fetched from the internet). Live charts rerun every second; Streamlit
    # fades elements that a rerun has not redrawn yet, which makes a live page blink, so stale elements stay opaque.
    css = (
        "[data-testid='stElementContainer'][data-stale='true'] { opacity: 1 !important; transition: none !important; }"
    )
    # A tab opened by the program (a lesson step's Set up opens the tab its check reads) is scrolled into view by
    # Streamlit with block 'nearest': the page jumped ~1,000 px down and the lesson banner with the check left the
    # projector (a review, step 9). A scroll margin taller than any page makes the tab's box overflow the view on
    # both sides, where 'nearest' does nothing; sideways (a tab bar wider than the page) it still scrolls.
    css += " [role='tab'] { scroll-margin-block: 100000px; }"
    if large:  # Streamlit sizes text in rem: everything scales; the page title and top margin shrink to make room
        css += " html { font-size: 20px !important; }"
        css += " [data-testid='stMainBlockContainer'] { padding-top: 3.2rem !important; }"
        css += " h1 { font-size: 1.9rem !important; padding: 0 0 0.4rem 0 !important; }"
    st.html(f"<style>{css}</style>")

    room.write_pending_cookies()
    flashes.show_flashes()
    mark_frame()  # this script run has its frame: require() lets the page through
    st.session_state.pop(fonts.GRID_DRAWN, None)  # set by the page if it draws a data grid (fonts.remount_grids)
    try:
        page.run()
    finally:  # sync_run_id's look-up is this script run's: a fragment's later rerun looks again
        st.session_state.pop(in_view.CHECKED, None)
    fonts.remount_grids()  # after a Large fonts switch, the data grids again, under the new size

    # After the first page is on screen: start the run manager, whose forkserver imports torch once (seconds on a busy
    # machine), so that the first click on Train forks a ready worker instead of waiting for torch.
    get_manager()


def require() -> None:
    """Every page calls this first. When a `pages/` folder exists, Streamlit starts each server process (and each
    AppTest run) in its old pages-directory mode and leaves it only once a script calls st.navigation; a deep link
    (e.g. /attention) opened first then runs the page alone, without app.py: no navigation, run id or workshop
    settings. Then run the frame here, in this same script run (so a button click is not lost): it calls
    st.navigation, which switches Streamlit's mode for good, and runs this page inside it; stop after it."""
    if frame_marked():
        return
    run()
    st.stop()


# ---------------------------------------------------------------- the frame flag: did the frame run before the page?

FRAME_RAN = "frame_ran"
LESSON_WATCH_S = 4.0  # how often a page without the lesson's pane looks for a lesson the instructor started


def mark_frame() -> None:
    """The frame calls this just before running the page."""
    st.session_state[FRAME_RAN] = True


def frame_marked() -> bool:
    """Whether the frame ran before the page in this script run (require asks); clears the mark."""
    return bool(st.session_state.pop(FRAME_RAN, False))
