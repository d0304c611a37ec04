"""The room's session keys: this browser's learner and the cookies the frame still has to write, a start waiting for
"stop my other run first?", the workshop link's settings and lock, and the Room page's widgets."""

from __future__ import annotations

import streamlit as st

LEARNER = "learner"  # tinygpt.runs.owners.Actor: this browser's learner (tinygpt/ui/people/room.py)
LEARNER_COOKIES = "learner_cookies"  # {cookie: value} the frame still has to write (a new learner, a rename)
PENDING_START = "pending_start"  # {"action", "what"}: a start waiting for "stop my other run first?" (admission)
W_LEARNER_NAME = "w_learner_name"
W_INSTRUCTOR_KEY = "w_instructor_key"
W_SHOW_KEY = "w_show_key"  # Room: the instructor key revealed (off on every visit)
W_ROOM_PICK = "w_room_pick"
W_SPREAD_NAMES = "w_spread_names"  # Room: the learners named beside their answers (off on every visit)

# ---------------------------------------------------------------- workshop mode (settings in the URL)

WORKSHOP_PARAMS = "workshop_params"  # the workshop link's query parameters, kept across page switches
WORKSHOP_LOCKED = "workshop_locked"  # ?lock=1: every setting read-only


def locked() -> bool:
    return bool(st.session_state.get(WORKSHOP_LOCKED))
