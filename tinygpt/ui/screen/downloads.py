"""A file made on request, then downloaded: "Make" builds it in the script run, "Download" sends those bytes.

Not Streamlit's deferred download (a callable as `data`): it makes the file at the click and keeps it only until two
script runs of the session have ended, and a page with a fragment refreshing every 3 s (the lesson pane, the Room's
spread) ends two in 3-6 s. A CI run's learner clicked "Download my lesson" on a loaded machine and the browser's
download was cancelled: the file was gone when the browser asked for it. Bytes given to the button stay served as
long as the button is on the page. Making it on request keeps the cost (reading every run) off the other script runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st

from tinygpt.ui import state

MADE = "made_downloads"  # {key: (bytes or text, time.time() when made)}: the files this session made, by button


def made_download(key: str, what: str, make: Callable[[], str | bytes], *, file_name: str, mime: str,
                  help: str | None = None) -> None:  # fmt: skip
    """A "Make <what>" button and, once made, "Download <what>" with the time it was made (what it holds is
    as of then: a later answer needs a new make)."""
    made: dict = state.get(MADE) or {}
    again = key in made
    st.button(f"Make {what} again" if again else f"Make {what}", key=f"{key}_make", width="stretch",
              icon=":material/refresh:" if again else ":material/description:", help=help,
              on_click=_make, args=(key, make))  # fmt: skip
    if key in made:
        data, when = made[key]
        st.download_button(f"Download {what} (made {time.strftime('%H:%M:%S', time.localtime(when))})", data,
                           file_name=file_name, mime=mime, on_click="ignore", icon=":material/download:", key=key,
                           width="stretch")  # fmt: skip


def _make(key: str, make: Callable[[], str | bytes]) -> None:
    """The click's callback: made before the script run draws the buttons, so they say it is made."""
    state.put(MADE, {**(state.get(MADE) or {}), key: (make(), time.time())})
