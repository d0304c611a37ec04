"""The pitfalls step's check (tinygpt/ui/teach/lesson.py, "The eight pitfalls"): every pitfall's verdict counted,
and the runs that ended early counted against the step's "how many crash?". Each pitfall is named by its title on
the Experiments page (never its internal key), and a count of fewer than the step's title says which it leaves out
and why. Pure: no Streamlit."""

from __future__ import annotations

from tinygpt.lab.registry import EXPERIMENTS
from tinygpt.lab.verdict import CPU_COUNTS_ONLY
from tinygpt.ui.teach.lesson_checks import PITFALLS, Check, Evidence, number_word


def all_pitfalls(ev: Evidence) -> Check:
    """Every pitfall together (the lab's registry): each one's verdict, counted. A verdict that ended undecided is
    never counted as reproduced: the memory demo on CPU (allocation counts, not fragmentation) is named as not
    judged; a pitfall with a clause not measured makes the whole check "not enough data". A pitfall with no verdict
    yet is "training or queued": a review read "(3 training)" of three runs waiting for a slot."""
    done = {k: v for k, v in ev.verdicts.items() if k in PITFALLS and v.get("reproduced") is not None}
    shown = [k for k, v in done.items() if v["reproduced"]]
    undecided = {k: v["undecided"] for k, v in ev.verdicts.items() if k in PITFALLS and k not in done
                 and v.get("undecided")}  # fmt: skip
    counts_only = [k for k, why in undecided.items() if why == CPU_COUNTS_ONLY]
    # A pitfall measured in the server (the memory demo), not trained, is "not measured yet" until its Set up has
    # measured it: a review's learners read "not started: Memory fragmentation" for seconds at step 8, which never
    # starts a run of it
    missing = [k for k in PITFALLS if k not in ev.verdicts and not _measured_here(k)]
    unmeasured_yet = [k for k in PITFALLS if k not in ev.verdicts and _measured_here(k)]
    waiting = [k for k in PITFALLS if k in ev.verdicts and k not in done and k not in undecided]
    judged = [k for k in PITFALLS if k not in counts_only]
    count = _count(len(shown), judged, counts_only)
    text = count
    unmeasured = [k for k in undecided if k not in counts_only]
    if missing or waiting or unmeasured or unmeasured_yet:
        parts = ([f"not started: {_titles(missing)}"] if missing else []) + (
            [f"training or queued: {_titles(waiting)}"] if waiting else []) + (
            [f"not measured yet: {_titles(unmeasured_yet)}"] if unmeasured_yet else []) + (
            [f"not enough data: {_titles(unmeasured)}"] if unmeasured else [])  # fmt: skip
        kinds = ((missing, "not started"), (waiting, "training or queued"), (unmeasured_yet, "not measured yet"),
                 (unmeasured, "not measured"))  # fmt: skip
        counts = ", ".join(f"{len(ks)} {what}" for ks, what in kinds if ks)
        return Check(
            None,
            f"Not enough data yet: {text} so far; {'; '.join(parts)}.",
            settled=not missing and not waiting and not unmeasured_yet,
            headline=f"Not enough data yet: {_count(len(shown), judged, counts_only, True)} so far ({counts})",
            set_up_decides=bool(unmeasured_yet) and not (missing or waiting or unmeasured),
        )  # only unmeasured clauses left: nothing more will come
    failed = [k for k in judged if k not in shown]
    crashed, crash_text = _crashes(ev, judged)
    short = _count(len(shown), judged, counts_only, True)
    tail = count[len(short) :]  # "; the eighth, ..., not judged": after the titles, which belong to the count
    if failed:
        not_shown = f"{short}; not: {_titles(failed)}"
        return Check(False, f"{short}; did not reproduce: {_titles(failed)}{tail}. {crash_text}", headline=not_shown)
    unjudged = f" ({_titles(counts_only)} measured, not judged on CPU)" if counts_only else ""
    at_most = number_word(ALMOST_NONE)
    crash_line = f"; {len(crashed)} of {len(judged)} crashed: {_verdict_words(len(crashed))} (at most {at_most})"
    if len(crashed) > ALMOST_NONE:  # the step's "almost none crash" is graded on these runs, not assumed
        return Check(False, f"{short}: {_titles(judged)}{tail}. {crash_text}",
                     headline=f"{short}{crash_line}")  # fmt: skip
    return Check(True, f"{short}: {_titles(judged)}{tail}. {crash_text}",
                 headline=f"{short}{crash_line}{unjudged}")  # fmt: skip


def _measured_here(key: str) -> bool:
    """Whether the pitfall is measured in the server at its step's Set up (Experiment.measure), not trained."""
    return key in EXPERIMENTS and EXPERIMENTS[key].measure is not None


def _title(key: str) -> str:
    """A pitfall as the Experiments page names it (its registry title), never its internal key ("shape_drift")."""
    return EXPERIMENTS[key].title if key in EXPERIMENTS else key


def _titles(keys: list[str]) -> str:
    return ", ".join(_title(k) for k in keys)


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
            "eleventh", "twelfth")  # fmt: skip


def _count(shown: int, judged: list[str], unjudged: list[str] | tuple = (), short: bool = False) -> str:
    """ "7 of the 7 trained pitfalls reproduced; the eighth, Memory fragmentation, is measured, not trained:
    allocation counts on CPU, not judged": the step is titled with all the registry's pitfalls, so a count of fewer
    says which ones it leaves out and why (from the registry: an experiment with `measure` trains nothing)."""
    kind = " trained" if unjudged and all(EXPERIMENTS[k].measure is None for k in judged if k in EXPERIMENTS) else ""
    line = f"{shown} of the {len(judged)}{kind} pitfalls reproduced"
    if not unjudged or short:  # short: the banner's line, which names the left-out ones after it
        return line
    how = ["measured, not trained" if k in EXPERIMENTS and EXPERIMENTS[k].measure is not None else "not judged"
           for k in unjudged]  # fmt: skip
    if len(unjudged) == 1 and len(PITFALLS) <= len(ORDINALS):
        which = f"the {ORDINALS[len(PITFALLS) - 1]}, {_title(unjudged[0])}, is {how[0]}"
    else:
        which = "; ".join(f"{_title(k)} is {h}" for k, h in zip(unjudged, how, strict=True))
    return f"{line}; {which}: {CPU_COUNTS_ONLY} on CPU, not judged"


# "Which ones crash?" in the step's own words (lesson.py): a crash is a run that stops before its last step by
# itself, because the bug made training fail: diverged (the trainer stopped it, the loss or a tensor non-finite or
# blown up) or failed with an error. That is what the answer "almost none (one at most)" is
# about: the other bugs train to their last step, and only their verdict's numbers tell. So a divergence counts.
# The guard's exclusion is part of the rule, said wherever the rule is: a review's learner counted shape drift's
# "bug + shape contracts" (failed at step 0, the contract refusing the bug) as a second crash, by the words then
# shown, and was graded wrong (Experiment.guards, `_crashes`).
CRASH = "stopped before its last step by itself, diverged or failed; a guard stopping a bug on purpose is no crash"
# The same rule as the projector's question says it: the banner ran to four lines at 1280x720 (a review)
CRASH_SHORT = "diverge or fail before their last step; a guard's stop is no crash"
ALMOST_NONE = 1  # "almost none crash": at most one pitfall ends its training early on its own
ALMOST = number_word(ALMOST_NONE)  # "one": the threshold as the choices and the check say it


def _verdict_words(crashed: int) -> str:
    return "almost none" if crashed <= ALMOST_NONE else "more than almost none"


def answer_choices() -> tuple[str, str, str]:
    """Step 8's choices, with the rule that grades them ("almost none" is at most ALMOST_NONE): a review's learner
    answered "a few" to "1 of 7 crashed", never told that one counts as almost none. Short: a label wrapped to
    three lines put its radio a line off, under the choice above it (a review's 1280x720 sidebar)."""
    return ("most of them (more than half)", f"a few ({number_word(ALMOST_NONE + 1)} or more, up to half)",
            f"almost none ({number_word(ALMOST_NONE)} at most)")  # fmt: skip


def _crashes(ev: Evidence, judged: list[str]) -> tuple[list[str], str]:
    """The pitfalls whose runs crashed (CRASH: ended before their last step by themselves, diverged or failed with
    an error), and sentences naming each early end and how the count answers "how many crash?". A run stopped by
    a guard the experiment adds on purpose (Experiment.guards: shape drift's "bug + shape contracts", the contract
    refusing the bug's tensor at step 0) is named but not counted: the guard stopped it, the bug did not crash."""
    crashed, counted, guarded = [], [], []
    for key in judged:
        for label, end in (ev.verdicts.get(key, {}).get("halted") or {}).items():
            guard = EXPERIMENTS[key].guards.get(label) if key in EXPERIMENTS else None
            said = f"'{label}' ({_title(key)}) {end['state']} at step {end.get('step')}"
            if guard:
                guarded.append(f"{said} (its guard, {guard}, stopped it)")
                continue
            counted.append(said)
            if key not in crashed:
                crashed.append(key)
    which = f": {'; '.join(counted)}" if counted else ""
    verdict = _verdict_words(len(crashed))
    text = (f"{len(crashed)} of {len(judged)} crashed (a crash: a run {CRASH}){which}. "
            f"{verdict[0].upper()}{verdict[1:]}, since at most {number_word(ALMOST_NONE)} counts as "
            "almost none.")  # fmt: skip
    if guarded:
        text += f" Not counted as crashes: {'; '.join(guarded)}."
    return crashed, text
