"""tinygpt: watch a tiny character-level transformer learn, live.  Run with `streamlit run app.py`.

This file is read twice. `streamlit run app.py` first imports it as the server's module (it finds `app` below, an
st.App, and serves it): tinygpt/ui/host/server.py then sets what must be set before any browser connects. Then, for
every page view and rerun, Streamlit runs it as the page script (`__main__`): the frame (page setup, navigation, who the
learner is, the run id in the URL, large fonts for projectors) is tinygpt/ui/frame.py, so that a page opened first by a
deep link can run it too. Each page under pages/ is a thin script over the tinygpt.ui modules (settings: the form as
data; resources: what the server shares; runinfo: what a page says about a run; room: learners and the instructor;
explain: help and "Show the code") and tinygpt.ui.charts (figures); all session state goes through tinygpt.ui.state.
"""

import streamlit as st

if __name__ == "__main__":  # a page view
    from tinygpt.ui import frame

    frame.run()
else:  # the server starting
    from starlette.middleware import Middleware

    from tinygpt.ui.host import server

    server.raise_header_limits()
    server.refuse_unreadable_widget_values()
    app = st.App(__file__, middleware=[Middleware(server.CookieLimit), Middleware(server.DefaultPageAlias)])
