"""The lesson pane's session keys (tinygpt/ui/teach/lesson_view.py) and the learner's Predict radio."""

from __future__ import annotations

LESSON_STEP = "lesson_step"  # the lesson step this session's pane shows (tinygpt/ui/teach/lesson_view.py)
LESSON_SEEN = "lesson_seen"  # the room's step when the pane last followed it (a later move takes it along)
LESSON_LAST_CHECK = "lesson_last_check"  # (step, check, lines): the pane's last computed check, drawn first
LESSON_HELD_CHECK = "lesson_held_check"  # (step key, runs, monotonic time, check): a check not shown yet, computed
LESSON_FOLLOWED = "lesson_followed"  # the room's lecture run this learner's pane last saw (a reset moves them once)
LESSON_SHOWN = "lesson_shown"  # the page's last full run drew the lesson pane (False: drawn without it)
LESSON_PENDING = "lesson_pending"  # {widget key: value} a lesson setup sets at the start of the page it opens
LESSON_RUNS = "lesson_runs"  # {role: {label: run_id}}: the runs a learner's own setup started for the lesson
W_BANNER_MORE = "w_banner_more"  # the banner's "Reset"/"More" popover's open state (closed by a reset)
W_NEW_CLASS = "w_new_class"  # Room, Clear the answers: start the lesson again at step 1 with a fresh lecture run
W_PREDICT = "w_predict"  # Lesson: a learner's answer to a step's question, the radio w_predict:<step key>

REFRESH_S = 3.0  # how often a lesson pane re-reads the room's position and its check, the Room's spread its answers,
# and the banner its long runs: one pace, so a learner's pane and the projector move together
HELD_RECHECK_S = 15.0  # a check not shown yet (answers still open) is computed again at most this often: its pane
# then refreshes every REFRESH_S with the room's answers (step 8's check reads 21 runs: on a loaded server the
# projector's count of answers lagged the learners' clicks by 7-10 s, one check computation per refresh)
