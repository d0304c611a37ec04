"""The live view's server cost: its refresh period adapts to the room, and its chart data goes out as Arrow bytes
built without pandas (tinygpt/ui/host/live.py, tinygpt/ui/explain.arrow_rows)."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest

from tinygpt.ui.charts import curves
from tinygpt.ui.host import live
from tinygpt.ui.screen import explain


def test_period_is_the_base_rate_for_a_small_room_and_grows_in_steps_with_the_room():
    assert live.period_for(1) == live.period_for(8) == 0.45
    assert live.period_for(9) == live.period_for(16) == 0.9
    assert live.period_for(21) == 1.35  # 20 learners and the instructor
    assert live.period_for(10_000) == live.MAX_S
    assert live.period_for(0) == 0.45  # nobody counted yet: this session itself
    # the room's refreshes per second stay bounded however many watch (~SESSIONS_PER_STEP / BASE_S)
    assert max(n / live.period_for(n) for n in range(1, 64)) <= live.SESSIONS_PER_STEP / live.BASE_S + 1e-9


def test_watchers_count_sessions_seen_in_the_window_once_each():
    room = live.Watchers(window_s=10)
    for session in ("a", "b", "a", "c"):
        room.refreshed(session, now=100.0)
    assert room.count(now=105.0) == 3
    room.refreshed("a", now=108.0)
    assert room.count(now=112.0) == 1  # b and c last seen 12 s ago: gone
    room.left("a")
    assert room.count(now=112.0) == 0
    # the app's window outlasts the sidebar's 30 s lease keeper, so an open page that shows no live run counts
    assert live.WINDOW_S > 2 * 30


def _read(data: bytes) -> list[dict]:
    return pa.ipc.open_stream(data).read_all().to_pylist()


def test_arrow_rows_keep_every_value_and_every_column():
    rows = [{"step": 1, "loss": 4.2, "series": "train"}, {"step": 2, "loss": None, "series": "val", "extra": True}]
    out = explain.arrow_rows(rows)
    assert isinstance(out, bytes)
    assert _read(out) == [{**rows[0], "extra": None}, rows[1]]  # a key missing from a row: null
    nan = _read(explain.arrow_rows([{"x": math.nan}]))[0]["x"]
    assert math.isnan(nan)
    assert _read(explain.arrow_rows([])) == []


def test_arrow_rows_that_pyarrow_cannot_type_go_to_streamlit_as_they_are():
    rows = [{"a": "x"}, {"a": 1}]
    assert explain.arrow_rows(rows) is rows


def test_a_live_chart_spec_goes_out_with_arrow_datasets_and_the_same_spec():
    metrics = [{"step": s, "loss": 4.0 - s / 100, "lr": 1e-3, "grad_norm": 1.0} for s in range(1, 301)]
    spec = curves.loss_chart(metrics, [], [], 65, max_points=400)
    out = explain.arrow_datasets(spec)
    assert {k: v for k, v in out.items() if k != "datasets"} == {k: v for k, v in spec.items() if k != "datasets"}
    assert set(out["datasets"]) == set(spec["datasets"])
    for name, rows in spec["datasets"].items():
        assert _read(out["datasets"][name]) == [{k: r.get(k) for k in rows[0]} for r in rows] if rows else True
    assert "datasets" not in explain.arrow_datasets({"mark": "line"})


@pytest.mark.parametrize("n", [1, 8, 9, 21, 40])
def test_every_period_is_a_multiple_of_the_base(n):
    steps = live.period_for(n) / live.BASE_S
    assert abs(steps - round(steps)) < 1e-9


def test_a_closed_session_stops_counting_at_once():
    open_ids = {"s1", "s2"}
    room = live.Watchers(window_s=75, connected=lambda sid: sid in open_ids)
    room.refreshed("a", now=0.0, streamlit_id="s1")
    room.refreshed("b", now=0.0, streamlit_id="s2")
    room.refreshed("c", now=0.0)  # no Streamlit session known: counted while seen
    assert room.count(now=1.0) == 3
    open_ids.discard("s2")  # b closed its tab
    assert room.count(now=1.0) == 2


def test_sessions_watching_one_run_share_its_charts_while_they_are_fresh():
    """The room watching the instructor's run builds its three charts once per FRESH_S, not once per page."""
    from tinygpt.ui.train import train_view

    builds = []

    def figures_for(steps: int, run: str = "/runs/abc", fresh_s: float = 60.0):
        key = (run, None, (False, None, 0.0, "steps"))
        records = (steps, steps, 100.0 + steps, 0, 0)
        return train_view.shared_figures(key, records, lambda: builds.append(steps) or {"loss": steps}, fresh_s)

    assert figures_for(10) == figures_for(10) == {"loss": 10} and builds == [10]  # the second page got the first's
    assert figures_for(11) == {"loss": 10} and builds == [10]  # newer records, but the charts are still fresh
    assert figures_for(12, fresh_s=0.0) == {"loss": 12} and builds == [10, 12]  # stale: rebuilt from the new records
    assert figures_for(12, fresh_s=0.0) == {"loss": 12} and builds == [10, 12]  # the same records: never rebuilt
    assert figures_for(12, run="/runs/other") == {"loss": 12} and builds == [10, 12, 12]  # another run: its own
    for n in range(train_view.SHARED_ENTRIES + 5):  # bounded: the least recently used go first
        figures_for(1, run=f"/runs/r{n}")
    assert len(train_view._shared) == train_view.SHARED_ENTRIES


@pytest.mark.parametrize("lease, period", [("20", 20 / 3), ("600", 30.0), ("2", 1.0), (None, 30.0), ("x", 30.0)])
def test_open_pages_renew_leases_well_within_the_lease(monkeypatch, lease, period):
    """Issue 22, finding 10: the sidebar's keep-alive ran every 30 s whatever the lease, so with a 20 s lease a
    learner reading Sample found their run 'paused: nobody watched for 20 s'."""
    from tinygpt.ui.host import resources

    if lease is None:
        monkeypatch.delenv("TINYGPT_LEASE_SECONDS", raising=False)
    else:
        monkeypatch.setenv("TINYGPT_LEASE_SECONDS", lease)
    assert resources.keepalive_seconds() == pytest.approx(period)
    source = (Path(__file__).resolve().parents[3] / "tinygpt" / "ui" / "frame.py").read_text()
    assert "@st.fragment(run_every=keepalive_seconds())" in source  # the sidebar fragment uses it
