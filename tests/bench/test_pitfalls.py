"""python -m tinygpt.bench.pitfalls's table (tinygpt/bench/pitfalls.py)."""

from __future__ import annotations

from tinygpt.bench.pitfalls import table


def test_a_table_of_verdicts_with_and_without_numbers_lists_every_column():
    """A "not enough data" verdict records fewer numbers: the table took its columns from the first row and a
    later row's number raised KeyError (the grid's licence texts, residual), before --json was written."""
    rows = [
        {"seed": 1, "reproduced": None, "status": "not enough data", "seconds": 3.0, "observed": {"a": 1.0}},
        {"seed": 2, "reproduced": True, "seconds": 3.1, "observed": {"a": 2.0, "b": 0.5}},
    ]
    text = table(rows)
    assert "| seed | reproduced | s | a | b |" in text
    assert "| 1 | not enough data | 3.0 | 1.000 | - |" in text and "| 2 | **yes** | 3.1 | 2.000 | 0.500 |" in text
