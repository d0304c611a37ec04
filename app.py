"""tinygpt: watch a tiny character-level transformer learn, live.  Run with `streamlit run app.py`.

The frame (page setup, navigation, who the learner is, the run id in the URL, large fonts for projectors) is
tinygpt/ui/frame.py, so that a page opened first by a deep link can run it too. Each page under pages/ is a thin
script over the tinygpt.ui modules (settings: the form as data; resources: what the server shares; runinfo: what a
page says about a run; room: learners and the instructor; explain: help and "Show the code") and tinygpt.ui.charts
(figures); all session state goes through tinygpt.ui.state.
"""

from tinygpt.ui import frame

frame.run()
