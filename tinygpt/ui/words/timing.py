"""What a seconds axis can and cannot say, from the runs' own records: the words under Compare's "seconds" charts.

Seconds compare settings only when the runs trained on the same footing. Each run says how it trained: its metrics'
"clock" (seconds trained, pauses and the queue left out; tinygpt.runs.loop), its evals' "load_avg" (the machine's
1-minute load average at each eval) and its status's "device" and "threads". A run written before a field existed
lacks it, and the words then say what is unknown instead of assuming the usual case. Pure: no Streamlit.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

# Median loads further apart than this (and a ratio above LOAD_RATIO) make seconds a measure of the machine: on
# 2 cores a run beside one other busy process took 2-9x as long a step (BENCHMARKS.md, threads).
LOAD_GAP = 1.0
LOAD_RATIO = 1.5
FEW = 4  # runs named one by one; more are summed up (27 runs' loads made a 2,200-character caption)


def _numbers(records: Any, field: str) -> list[float]:
    out = []
    for record in records or []:
        value = record.get(field) if isinstance(record, Mapping) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and value >= 0:
            out.append(float(value))
    return out


def _names(names: list[str]) -> str:
    """Up to FEW names, then how many more: a caption on a projector, not a list."""
    shown = ", ".join(names[:FEW])
    return shown if len(names) <= FEW else f"{shown} and {len(names) - FEW} more"


def _span(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1f}" if round(low, 1) == round(high, 1) else f"{low:.1f}-{high:.1f}"


def seconds_notes(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Sentences for a seconds axis over `runs` (run name -> {"metrics", "evals", "status"}), most important first:
    what the seconds count, the machine load each run trained under (and a warning when the loads differ enough to
    explain a gap), and devices or thread counts that differ. Empty for no runs."""
    if not runs:
        return []
    notes = []
    stepped = {name: [r for r in run.get("metrics") or [] if isinstance(r, Mapping)] for name, run in runs.items()}
    empty = [name for name, records in stepped.items() if not records]
    unclocked = [name for name, records in stepped.items() if records and not any("clock" in r for r in records)]
    if any(records and any("clock" in r for r in records) for records in stepped.values()):
        notes.append("Seconds are each run's training time: pauses and waits in the queue are left out.")
    if unclocked:
        notes.append(f"{_names(unclocked)} recorded wall-clock time only (written by an older version): "
                     "its seconds include any pause or wait in the queue.")  # fmt: skip
    if empty:
        notes.append(f"{_names(empty)} took no step: nothing of it is on the seconds axis.")
    loads = {name: _numbers(run.get("evals"), "load_avg") for name, run in runs.items() if name not in empty}
    known = {name: values for name, values in loads.items() if values}
    if known:
        medians = {name: statistics.median(values) for name, values in known.items()}
        if len(known) <= FEW:
            spans = " · ".join(f"{name} {_span(values)}" for name, values in known.items())
            notes.append(f"Machine load while each trained (1-minute average at its evals): {spans}.")
        else:  # a projector's caption, not a table: the range, and the runs at either end
            quiet, busy = min(medians, key=medians.get), max(medians, key=medians.get)
            every = [v for values in known.values() for v in values]
            notes.append(f"Machine load while they trained (1-minute average at their evals): {_span(every)} "
                         f"across {len(known)} runs; the quietest {quiet} (median {medians[quiet]:.1f}), the "
                         f"busiest {busy} ({medians[busy]:.1f}).")  # fmt: skip
        low, high = min(medians.values()), max(medians.values())
        if high - low > LOAD_GAP and high > LOAD_RATIO * max(low, 0.1):
            notes.append("The loads differ: a run on a busier machine is slower for that alone, so part of a gap "
                         "in seconds is the machine, not the settings. Compare steps, or rerun them side by side.")
    missing = [name for name in loads if name not in known]
    if missing:
        notes.append(f"No machine load recorded for {_names(missing)}: a gap in seconds may be the load, "
                     "not the settings.")  # fmt: skip
    for field, word in (("device", "devices"), ("threads", "thread counts")):
        said = {name: (run.get("status") or {}).get(field) for name, run in runs.items()}
        by_value: dict[str, list[str]] = {}
        for name, value in said.items():
            if value not in (None, ""):
                by_value.setdefault(str(value), []).append(name)
        if len(by_value) > 1:
            each = " · ".join(f"{value} ({_names(names)})" for value, names in by_value.items())
            notes.append(f"They trained on different {word}: {each}.")
    return notes
