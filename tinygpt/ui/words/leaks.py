"""What a run's mask history means for what a page shows, in words computed from the run's config and knob events
(pure: no Streamlit). A mask that shows a position the character it must predict (config.LEAKING_MASKS) makes
every loss under it, held-out included, fall because the model copies the answer, and puts bright cells right of
the diagonal in its attention maps. The pages said neither: the Train chart's caption called such curves the usual
case, and the Attention page showed a snapshot taken under mask none with captions about the causal mask."""

from __future__ import annotations

from typing import NamedTuple

from tinygpt.config import LEAKING_MASKS
from tinygpt.lab.evals import eval_gap, gap_words
from tinygpt.lab.verdict import clears
from tinygpt.runs.knobs import knobs_at, leak_spans, mask_spans, under_leak
from tinygpt.ui.words import safe
from tinygpt.ui.words.runinfo import checkpoint_where

SEES = {"none": "every position sees the characters after it", "off_by_one": "every position sees the next character"}


def mask_at(config: dict, events: list[dict], step: int) -> str:
    """The mask in force at `step` (runs.knobs.knobs_at)."""
    return str(knobs_at(config, events, step).get("mask") or "causal")


def stretch_at(config: dict, events: list[dict], step: int) -> tuple[str, int, int | None]:
    """(mask, first step, last step) of the stretch of the run's mask that `step` falls in, over the whole
    history the events record (a snapshot at step 11,000 lies in "steps 10,647-11,199" even though the change
    back came later); last is None for the stretch still in force."""
    mask = mask_at(config, events, step)
    last = max([step, *(e["step"] for e in events if isinstance(e.get("step"), int))])
    spans = mask_spans(config, events, last) or [(mask, 0, last)]
    for i, (m, a, b) in enumerate(spans):
        if a <= step < b or i == len(spans) - 1:
            return (m, a, None if i == len(spans) - 1 else b) if m == mask else (mask, step, None)
    return mask, 0, None


def _span(mask: str, first: int, last: int, ongoing: bool) -> str:
    """ "mask none in steps 10,648-11,199", or "mask none from step 10,648" for a stretch still in force: the steps
    trained under it. A stretch runs from the change recorded at its `first` step, applied after that step (the
    Train page's "applied after step 1842, from step 1843"; a review read "from step 1,842" beside it)."""
    return f"mask {mask} " + (f"from step {first + 1:,}" if ongoing else f"in steps {first + 1:,}-{last:,}")


def _spans_said(config: dict, events: list[dict], step: int) -> tuple[list[tuple[str, int, int]], str, bool]:
    """(the leaking stretches up to `step`, them in words, whether the last is in force at `step`)."""
    spans = leak_spans(config, events, step)
    ongoing = bool(spans) and spans[-1][2] == step and mask_at(config, events, step) in LEAKING_MASKS
    said = ", ".join(_span(m, a, b, ongoing and i == len(spans) - 1) for i, (m, a, b) in enumerate(spans))
    return spans, said, ongoing


FELL_BY = 0.05  # nats: the held-out loss under a leak must fall at least this much below its value before to be said


def held_out_under(evals: list[dict], first: int, last: int) -> tuple[dict, dict] | None:
    """(the last eval at or before a leaking stretch began, the last eval inside it), or None without both. A run
    under the leak from its start has no eval before it: its first eval inside the stretch stands in (a review's run
    under mask none from step 0 read "Too few evals under it" beside 57 evals, 2.477 falling to 0.07)."""

    def val(e):
        return (
            e.get("val_loss")
            if isinstance(e.get("val_loss"), (int, float)) and isinstance(e.get("step"), int)
            else None
        )

    before = [e for e in evals if val(e) is not None and e["step"] <= first]
    during = [e for e in evals if val(e) is not None and first < e["step"] <= last]
    if not before and len(during) >= 2:
        return during[0], during[-1]
    return (before[-1], during[-1]) if before and during else None


def _fall(pair: tuple[dict, dict]) -> tuple[bool, str]:
    """(whether the held-out loss of `held_out_under`'s pair fell beyond its noise, the change and that noise in
    words, ", -0.254 ± 0.031"): the paired held-out noise the captions use (lab.evals.eval_gap); by FELL_BY or more
    for evals that recorded no batches. A review read "fell (3.549 → 3.451)" where two of five batches rose."""
    then, now = pair
    gap = eval_gap(then, now)
    if gap is None:
        return now["val_loss"] < then["val_loss"] - FELL_BY, ""
    return clears(gap, 0.0)[0] is False, f", {gap_words(gap)}"


def best_without_leak(config: dict, events: list[dict], evals, first: int) -> dict | None:
    """The run's best held-out eval up to step `first` under no leaking mask, or None: what the model predicted at
    its best, which copying beats and a model disturbed by the change of mask does not."""
    spans = leak_spans(config, events, first)
    scored = [e for e in evals if isinstance(e.get("val_loss"), (int, float)) and isinstance(e.get("step"), int)
              and e["step"] <= first and not under_leak(e["step"], spans)]  # fmt: skip
    return min(scored, key=lambda e: e["val_loss"]) if scored else None


class LeakFall(NamedTuple):
    """What the held-out loss did under a leak (`copied_under`): `fell` beyond its noise (`noise`: ", -0.254 ±
    0.031", "" for evals without batches), `copied` (fell, and below the run's best without the leak), and
    `against_best`: "", ", below the run's best without the leak (…)" or " but stayed above … (…)"."""

    fell: bool
    noise: str
    copied: bool
    against_best: str


def copied_under(config: dict, events: list[dict], evals, first: int, pair: tuple[dict, dict]) -> LeakFall:
    """Whether copying shows under the leak: the held-out loss fell beyond its noise and below the run's best
    without the leak. A review's short texts showed a fall out of an over-fitted model's held-out loss (4.257 ->
    4.003, near ln V) while the training loss jumped from 0.65 to 3.96: no copying, said as copying."""
    then, now = pair
    fell, noise = _fall(pair)
    if not fell:
        return LeakFall(False, noise, False, "")
    best = best_without_leak(config, events, list(evals), first)
    if best is None or best is then:
        return LeakFall(True, noise, True, "")
    said = f"the run's best without the leak ({best['val_loss']:.3f} at step {best['step']:,})"
    if now["val_loss"] < best["val_loss"]:
        return LeakFall(True, noise, True, f", below {said}")
    return LeakFall(True, noise, False, f" but stayed above {said}")


def loss_leak_note(config: dict, events: list[dict], step: int, evals: list[dict] = ()) -> str | None:
    """The Train loss chart's note on the stretches the run trained under a leaking mask, up to `step` (None when
    it never did). What the losses did under the first stretch is read from the run's evals, not assumed: a
    review's branch read "both curves fall" while its held-out loss went 2.476 -> 2.468. A leak lets the model copy
    the character it must predict (the evals run the same mask, so the held-out loss can fall too); after the
    stretch the losses measure prediction again."""
    spans, said, ongoing = _spans_said(config, events, step)
    if not spans:
        return None
    why = "; ".join(f"mask {m}: {SEES[m]}" for m in dict.fromkeys(m for m, _, _ in spans))
    pair = held_out_under(list(evals), spans[0][1], spans[0][2])
    if pair is None:
        seen = "Too few evals under it to say what the held-out loss did."
    else:
        (then, now), under = pair, copied_under(config, events, evals, spans[0][1], pair)
        numbers = f"{then['val_loss']:.3f} at step {then['step']:,}, {now['val_loss']:.3f} at step {now['step']:,}"
        moved = f"fell ({numbers}{under.noise}){under.against_best}" if under.fell else \
            f"did not fall{' beyond its noise' if under.noise else ''} ({numbers}{under.noise})"
        seen = (f"Under it the held-out loss {moved}: the model copies the character it must predict, a leak, not "
                "learning." if under.copied else
                f"Under it the held-out loss {moved}: no copying shows"
                + (" yet." if ongoing and len(spans) == 1 else "."))  # fmt: skip
    text = (
        f"This run trained with {said} ({why}). {seen} A loss under a leaking mask is no model's that writes text "
        "one character at a time (the evals run the same mask)."
    )
    if ongoing:
        return text + " It is in force to the last step on this chart: no loss since then measures prediction."
    back = mask_at(config, events, step)
    return text + (
        f" Mask {back} from step {spans[-1][2] + 1:,}: the losses after it measure prediction again (a jump up "
        "there is the copying undone, not overfitting)."
    )


def snapshot_note(config: dict, events: list[dict], step: int, what: str = "snapshot") -> str | None:
    """What the attention maps of a `what` ("snapshot", "checkpoint") at `step` show when it was taken under a
    leaking mask (None otherwise): which mask, in which steps, and what the cells right of the diagonal are."""
    mask, first, last = stretch_at(config, events, step)
    if mask not in LEAKING_MASKS:
        return None
    # The mask outside the stretch, as the run had it: "the heads the causal mask trains" was said of a run that
    # trained under a sliding window before its leak and never under causal (a review)
    outside = mask_at(config, events, first - 1) if first > 0 else None
    if outside is None and last is not None:
        outside = mask_at(config, events, last + 1)
    scrub = (f" Scrub to a step outside that stretch to see the heads the {outside} mask trains."
             if outside and outside not in LEAKING_MASKS else "")  # fmt: skip
    return (
        f"This {what} (step {step:,}) was taken under {_span(mask, first, last or 0, last is None)}: {SEES[mask]}, "
        "so bright cells right of the diagonal are heads reading the character they must predict, which a causal "
        f"model never sees.{scrub}"
    )


def checkpoint_caption(config: dict, events: list[dict], ck: int, step: int) -> str:
    """The step-by-step panels' caption: the checkpoint they use (the latest at or before `step`) and its mask, and the
    snapshot's mask beside it when the two differ (the grid above may show a leak the panels do not)."""
    mask, shown = mask_at(config, events, ck), mask_at(config, events, step)
    text = f"From the checkpoint at step {ck:,} ({checkpoint_where(ck, step)}), with the knobs as they were then: "
    text += f"mask {mask}."
    if shown != mask:
        text += f" The grid above, at step {step:,}, was taken under mask {shown}."
    return text


def compared_note(runs: dict[str, tuple[dict, list[dict], list[dict]]]) -> str | None:
    """Under Runs' comparison ({name: (config, events, metrics)}): the compared runs that trained under a leaking
    mask, and when, or None. The chart's help says the gap between the lines is the effect of what differs; under
    a leak that effect is copying, and a review read a leaking run's curves far below the causal run's as the
    better setting."""
    said = []
    for name, (config, events, metrics) in runs.items():
        step = int((metrics[-1].get("step") or 0) if metrics else 0)  # the newest step recorded
        if spans := _spans_said(config, events, step)[1]:
            said.append(f"«{safe.md(name)}» trained with {spans}")  # a name may carry a file's name: shown as text
    if not said:
        return None
    return (f"{'; '.join(said)}: a mask that shows each position the character it must predict lets the model copy "
            "it, so a lower loss there is copying, not a better setting (Train's note on that run says what its "
            "held-out loss did).")  # fmt: skip
