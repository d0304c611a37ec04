"""User-supplied text on a page, shown as text: never as markdown, a link, an image or HTML.

Streamlit renders the strings given to st.warning, st.error, st.info, st.markdown and captions as markdown, so a
crafted link (`?run=[Click here to log in](http://...)`, `![](http://...)`) put a fake login link inside the app
and made the browser fetch an image from an address of the link's author. Every message that can carry a
user's string (URL parameters, uploaded text, exception messages naming a value) goes through `md()` first.
"""

from __future__ import annotations

import re

# CommonMark lets a backslash escape any ASCII punctuation; Streamlit's own directives (":red[...]",
# ":material/icon:") and math ("$...$") are built from the same characters.
_PUNCTUATION = re.compile(r"([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")


def md(text: object) -> str:
    """`text` with every markdown, directive and HTML character escaped, on one line (a newline could start a
    heading or a list), so Streamlit shows exactly these characters."""
    return _PUNCTUATION.sub(r"\\\1", " ".join(str(text).split()))
