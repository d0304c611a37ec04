"""A model health check's answer (tinygpt/lab/health.py, tinygpt/lab/step_checks.py): one of three outcomes (pass,
FAIL, or "not enough data" when there is too little to judge, never a silent pass), the number it measured and the
threshold it was held to."""

from __future__ import annotations

from dataclasses import dataclass

PASS, FAIL, NOT_ENOUGH = "pass", "FAIL", "not enough data"  # the three outcomes of a check


@dataclass
class Check:
    """One check's answer: the outcome, the number it measured, and the threshold that number was held to."""

    name: str
    outcome: str  # PASS, FAIL or NOT_ENOUGH (too few steps or nothing to measure: never a silent pass)
    value: float | None  # what was measured; None when there was nothing to measure
    threshold: str  # what `value` must satisfy to pass, in words: "< 1e-04", "== 0 exactly", ...
    detail: str  # what was measured, on what, and what the outcome means
    shown: str = ""  # the measured cell where `value` alone would not say what the outcome rests on ("" : value)

    @property
    def passed(self) -> bool:
        return self.outcome == PASS


def outcome_of(ok: bool) -> str:
    return PASS if ok else FAIL
