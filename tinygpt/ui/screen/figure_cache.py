"""Figures kept in the session while their inputs stay the same (scrubbing back and forth rebuilds nothing)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import streamlit as st

FIGURES = "figures"  # {cache name: OrderedDict(key -> figure)}: figures rebuilt only when their inputs change


def cached_figure(name: str, key: Any, build: Callable[[], Any], max_entries: int = 16) -> Any:
    """The figure built for `key` in this session, building it only the first time (e.g. the attention grid per
    snapshot step: scrubbing back and forth then costs no rebuilding). Least recently used entries go first."""
    caches: dict[str, OrderedDict] = st.session_state.setdefault(FIGURES, {})
    cache = caches.setdefault(name, OrderedDict())
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = cache[key] = build()
    while len(cache) > max_entries:
        cache.popitem(last=False)
    return value
