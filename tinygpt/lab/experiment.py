"""An `Experiment`: runs that differ in one setting ("correct" first) on a shared base (the demo preset), what
to look for, and a `judge` that reads the runs' own numbers and returns a `Verdict`. Each pitfall is one module in
tinygpt/lab/pitfalls/ holding its settings, its text and its judge; tinygpt/lab/registry.py lists them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import RunConfig
from ..data import min_corpus_chars
from ..presets import preset
from .verdict import ENDED, NOT_ENOUGH_DATA, Clause, RunResult, Verdict, diverged_at

# The corpora of BENCHMARKS.md's pitfall grid. Not "text": the English prose measured there came in through
# `bench_pitfalls --text-file`, and a learner's own pasted or uploaded text is a corpus no benchmark has seen.
MEASURED_SOURCES = ("shakespeare", "synthetic:copy")


@dataclass
class Experiment:
    key: str
    title: str
    what_to_look_for: str
    variants: dict[str, dict[str, Any]]  # label -> overrides of the base preset; the first one is "correct"
    judge: Callable[[dict[str, Any]], Verdict]
    expected: str  # the effect the broken run should show (what `judge` checks)
    base: dict[str, Any] = field(default_factory=dict)
    probes: bool = False  # judge needs the leak score / no-peek loss of each run's last checkpoint
    measure: Callable[[int], dict[str, Any]] | None = None  # measured in-process instead of trained (memory)
    # The corpus it always runs on, where its effect needs one (a task where order matters); None: the page's choice
    source: str | None = None
    code: tuple[Callable, ...] = ()  # the functions behind its claim, shown under "Show the code"
    # Corpora on which the effect was measured not to show, with why (BENCHMARKS.md, every pitfall x 3 corpora):
    # the page says so before the runs start, and the verdict names the clause that failed.
    does_not_show_on: dict[str, str] = field(default_factory=dict)
    # Runs whose early end (diverged, or failed) is the pitfall showing, so the judge reads it (the naive softmax
    # overflowing, the shape contract stopping the bug at step 0); any other run that ended before its step budget
    # leaves nothing to judge the claim on: "not enough data", with the reason.
    ends_early_as_pitfall: tuple[str, ...] = ()
    # Variants with a guard that stops the bug on purpose, and the guard's name: their early end is the guard
    # working, not the bug crashing (the lesson's "how many crash?", tinygpt/ui/teach/pitfall_checks.py).
    guards: dict[str, str] = field(default_factory=dict)
    # Its claim is about how well the runs learn (loss clauses): judged only where held-out loss can tell learning
    # from memorising (`memorised`), and each loss clause checked against the held-out loss too.
    loss_claims: bool = False
    # Clauses that are consequences of the pitfall rather than the pitfall itself, with the corpora they were seen
    # on ({clause: (source, ...)}): its judge marks them (`verdict.Clause(consequence=True)`), the verdict turns on
    # the pitfall's own clauses only, and a consequence that did not show on this text is reported as measured,
    # "not seen on this text (it was on Tiny Shakespeare)", not as a failure.
    consequences: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Variants whose memorising can only narrow the gaps the claim reads on held-out loss (the reference, where the
    # claim is "the broken run ends higher"): a memorised one whose held-out loss rose from its best (`_rose`) leaves
    # a reproduced verdict standing, said so.
    memorising_narrows: tuple[str, ...] = ()
    # What its verdict does where a run learns a short text by heart, for one without loss_claims whose judge reads
    # held-out loss all the same (the mask's): said before the runs start, as for loss claims (`held_out_warning`).
    memorising_note: str = ""

    def not_its_runs(self, configs: dict[str, dict]) -> str | None:
        """Why runs ({label: config.json dict}, e.g. named in a ?lab= address) are not this experiment's, or None
        when each has its variant's own settings. Only the variant's settings are compared: the base may differ
        (a lesson's shorter runs, another seed or text), and a setting an older config lacks is not held against
        it. Without this, another experiment's two runs were judged as this one's (a review's finding)."""
        for label, variant in self.variants.items():
            config = configs.get(label) or {}
            flat = {k: v for section in config.values() if isinstance(section, dict) for k, v in section.items()}
            flat.update({k: v for k, v in config.items() if not isinstance(v, dict)})
            for name, wanted in variant.items():
                if name in flat and flat[name] != wanted:
                    return (f"its {label!r} run has {name} = {flat[name]!r}, where this experiment's has "
                            f"{wanted!r}")  # fmt: skip
        return None

    def measured_on(self, source: str) -> bool:
        """Whether the benchmark (tinygpt.bench.pitfalls: every pitfall x 5 seeds) ran it on `source`: Tiny
        Shakespeare, the copy task, or its own corpus. Never a learner's own text ("text"): nothing measured it."""
        return source == self.source or source in MEASURED_SOURCES

    def claims(self, source: str | None = None) -> list[str]:
        """Its claim in words, before the runs start: which clauses are the pitfall itself (what the verdict turns
        on) and which are consequences, each with the corpora it was seen on and, for `source`, whether this corpus
        is one of them. One markdown line each."""
        if not self.consequences:
            every = "Every clause of it is the pitfall itself: the verdict turns on all of them."
            return [f"**The pitfall:** {self.expected}. {every}"]
        lines = [
            f"**The claim:** {self.expected}. **The pitfall itself**, what the verdict turns on, is every clause but "
            f"the consequence{'s' if len(self.consequences) > 1 else ''} below."
        ]
        for name, seen_on in self.consequences.items():
            where = Clause(None, consequence=True, seen_on=seen_on).where()
            here = ""
            if source is not None:
                if source in seen_on:
                    here = " (this corpus too)"
                elif not self.measured_on(source):
                    here = "; not benchmarked on this corpus: these runs measure it"
                else:
                    here = "; this corpus is not among them"
            lines.append(
                f"**A consequence, not the pitfall:** {name}, seen on {where}{here}. It is measured and reported; "
                "where it does not show, the verdict says so and stands on the pitfall's own clauses."
            )
        return lines

    def held_out_warning(self, text: str) -> str:
        """ "" or, for a learner's own text shorter than what the runs read (steps x batch x context), the sentence
        to show before the runs start: they will read it several times over and may learn it by heart, and then
        the verdict says "not enough data" (`memorised` measures it from the held-out loss)."""
        if not (self.loss_claims or self.memorising_note) or self.source is not None or not text:
            return ""
        configs = self.configs().values()
        if len(text) < max(min_corpus_chars(c.model.max_seq_len) for c in configs):
            return ""  # no run can start on it, and Run says why: "read 153,600 times over" of one character (a review)
        reads = max(c.train.max_steps * c.train.batch_size * c.model.max_seq_len for c in configs)
        if len(text) >= reads:
            return ""
        train = int(len(text) * 0.9)  # the runs train on its first 90% (data.Corpus, val_fraction 0.1)
        times = reads / max(train, 1)
        # "enough to learn it by heart" only where it is: a review read it of a 58 kB text read twice, whose runs
        # did not (held-out loss fell, every loss verdict reproduced); the 1.8 kB texts read 57 times did
        by_heart = ", enough to learn it by heart" if times >= MEMORISE_READS else ""
        read = (f"This text has {len(text):,} characters, {train:,} of them for training, and each run reads "
                f"{reads:,}: about {times:,.0f} times over{by_heart}.")  # fmt: skip
        if self.memorising_note:  # a review's 1.5 kB licence: no word before the mask's runs, where the others had one
            return f"{read} {self.memorising_note}"
        return (
            f"{read} Where the held-out loss shows "
            f"{'that' if by_heart else 'the runs learned it by heart'}, the verdict is \"not enough data\". On a text "
            # (a review could not parse "held-out loss tells learning from memorising on a text of at least …")
            f"of at least {reads:,} characters (one that no run reads twice), the held-out loss can tell learning "
            "from memorising."
        )

    def configs(
        self, seed: int = 1337, source: str = "shakespeare", text: str = "", overrides: dict[str, Any] | None = None
    ) -> dict[str, RunConfig]:
        """One RunConfig per variant: same data and seed, one setting apart. `overrides` change the shared base
        (e.g. fewer steps in a test); a variant's own settings always win, so the runs stay one setting apart. An
        experiment with its own `source` runs on it whatever `source` is asked for."""
        source, text = (self.source, "") if self.source else (source, text)
        out = {}
        for label, variant in self.variants.items():
            settings = {**self.base, **(overrides or {}), **variant, "seed": seed, "source": source}
            if source == "text":
                settings["text"] = text
            out[label] = preset("demo", **settings)
        return out

    def verdict(self, results: dict[str, Any]) -> Verdict:
        """Judge `results` ({label: RunResult}, or a measurement's {label: numbers}); pending until all runs ended."""
        if self.measure is None:
            waiting = _waiting(self, results)
            if waiting:
                return Verdict(None, self.expected, {}, waiting)
            short = ended_early(results, self.ends_early_as_pitfall)
            if short:
                sentence = f"Not enough data to judge: {'; '.join(short)}, so the claim was not tested."
                return Verdict(None, self.expected, {}, sentence, undecided=NOT_ENOUGH_DATA)
            fitted = over_fitted(results) if self.loss_claims else {}
            by_heart = memorised(fitted)
            if by_heart:  # no verdict, but every clause is measured and said: a vanishing gradient or a saturated
                judged = self.judge(results)  # softmax does not depend on the text's size (a review: dropped unsaid)
                who = memorised_labels(fitted)
                if judged.reproduced and who and set(who) <= set(self.memorising_narrows) and all(
                        _rose(results[label]) for label in who):  # fmt: skip
                    # A review: "not enough data" on a detached run 0.57 nats worse held out than a residual run
                    # that memorised: memorising raises the reference's held-out loss, so the gap is only narrower
                    # its held-out loss rose from its best: memorising shows, no "may have" about it
                    why = memorised(fitted, rose=True).split("; the held-out split")[0]
                    return dataclasses.replace(judged, sentence=f"{judged.sentence} ({why[0].upper()}{why[1:]}; "
                        "its held-out loss rose from its best, so memorising raised it: it can only narrow the "
                        "held-out gaps read here, and they clear their bars all the same.)")  # fmt: skip
                # the judge's "Failed: ..." is no verdict here (a review: "Not enough data" above "Failed: ...")
                measured = judged.sentence.replace(" Failed: ", " Not met on these runs (not judged, as said): ")
                sentence = f"Not enough data to judge: {by_heart}. Measured all the same: {measured}"
                return Verdict(None, self.expected, judged.observed, sentence, undecided=NOT_ENOUGH_DATA)
        elif set(results) != set(self.variants):
            return Verdict(None, self.expected, {}, "Not measured yet.")
        return self.judge(results)


# Held-out evidence. A run whose held-out loss ends this far above its loss on the training windows (the same eval)
# has learned its text by heart: on 2,000 characters "no warmup" and "unscaled logits" trained faster and were worse
# held-out (issue 33). 0.3 nats: on Tiny Shakespeare at the lab's 200-600 steps the two differ by under 0.05.
MEMORISED = 0.3


def _gaps(results: dict[str, RunResult]) -> dict[str, float]:
    return {label: r.final_val_loss - r.final_eval_train_loss for label, r in results.items()
            if r.final_val_loss is not None and r.final_eval_train_loss is not None}  # fmt: skip


def _rose(run: RunResult) -> bool:
    """Whether a run's held-out loss rose from its best by the end: memorising raised it, so a reference's can only
    narrow a gap. One still at or near its best while far above the training loss is held-out text learned along
    with the training text (a short text's held-out split repeats it): there memorising may lower it and widen the
    gap (the 5-seed benchmark's 2 kB text: "Reproduced" on every seed, the scaled run's held-out loss falling).
    Risen beyond the two evals' paired noise where they recorded their batches (RunResult.held_out_rose), else by
    OVER_FIT_RISE: the sentence it allows says the loss rose, so it must have, to a sceptic too."""
    if run.held_out_rose is not None:
        return run.held_out_rose
    return run.final_val_loss is not None and run.best_val_loss is not None and (
        run.final_val_loss - run.best_val_loss > OVER_FIT_RISE)  # fmt: skip


def memorised_labels(results: dict[str, RunResult]) -> list[str]:
    """The runs that memorised their text: a held-out loss over MEMORISED above their training loss. None where
    every run read its text less than once: a held-out loss above the training loss is then the held-out split
    being another kind of text (the licence texts' last tenth is one licence, unlike the rest), not memorising.
    The grid's licence texts were called "memorised" at 0.33-0.49 nats with 150,000 of their 213,588 training
    characters read (BENCHMARKS.md, issue 33): a false amber."""
    if all(r.chars_read and r.train_chars and r.chars_read < r.train_chars for r in results.values()):
        return []
    return [label for label, gap in _gaps(results).items() if gap > MEMORISED]


def memorised(results: dict[str, RunResult], rose: bool = False) -> str:
    """ "" when no run memorised its text (memorised_labels), else why its loss clauses cannot be judged and the
    size of text that could: one the runs read about once (a text read once cannot be memorised before it is
    learned). `rose`: the run's held-out loss rose from its best, so it memorised; else it "may have"."""
    if not memorised_labels(results):
        return ""
    gaps = _gaps(results)
    label = max(gaps, key=gaps.get)
    run = results[label]
    need = max((r.chars_read or 0) for r in results.values())
    split = f" of {run.val_tokens:,} characters" if run.val_tokens else ""  # what it rests on, said (a review)
    size = f"; a text of at least {need:,} characters (what these runs read) would" if need else ""
    return (
        # "may have": a held-out loss far above the training loss is memorising or held-out text unlike the training
        # text, as Train's caption says (a review read "memorised" as a fact of a run at 1.86 nats a character)
        f"the {label} run {'memorised' if rose else 'may have memorised'} its text: its held-out loss ended "
        f"{gaps[label]:.3f} nats above its training "
        # Both the last eval's (its held-out and training-split scores), not the last steps' mean the loss clauses
        # quote: a review read 0.668 here and 0.689 there for one run, unexplained
        f"loss ({run.final_val_loss:.3f} vs {run.final_eval_train_loss:.3f}, its last eval's held-out and "
        # Said of that run, whichever side of the pitfall it is on: "a lower training loss here is memorising" read
        # as said of the detached run, whose loss was the higher (a review)
        f"training-split scores; over {MEMORISED}), so how low its loss went may be memorising, not learning, and "
        f"the gaps between the runs memorising, not the pitfall; the held-out split{split} is too small to tell the "
        f"two apart{size}"
    )


MEMORISE_READS = 10  # passes over a text after which the lab's small runs are told they may learn it by heart
OVER_FIT_RISE = 0.05  # nats a run's last held-out loss sits above its best: the held-out loss rose (over-fitting)


def over_fitted(results: dict[str, RunResult]) -> dict[str, RunResult]:
    """The runs `memorised` may call memorised: those whose held-out loss rose from its best by the end, or whose
    best is not known (an older reading), and those that read their text at least MEMORISE_READS times over. A
    held-out loss above the training loss from the first eval on, still falling at the last, is held-out text
    unlike the training text, not memorising, on a text read a few times (a review's licence run: held-out
    2.843 → 2.507, falling at every eval, called "memorised" for a 0.49 gap). Read 10 times or more, it is
    memorising all the same: a review's 2 kB text, read ~85 times, held out 200 characters that mostly repeat the
    training text, so the held-out loss fell with it (2.05 → 0.96) while ending 0.50 above the training loss, and
    the lab called the unscaled pitfall "Reproduced" on it."""
    return {label: r for label, r in results.items() if r.best_val_loss is None or r.final_val_loss is None
            or r.final_val_loss - r.best_val_loss > OVER_FIT_RISE or _passes(r) >= MEMORISE_READS}  # fmt: skip


def _passes(run: RunResult) -> float:
    """How many times over a run read its training text (0 when not recorded)."""
    return run.chars_read / run.train_chars if run.chars_read and run.train_chars else 0.0


def _waiting(experiment: Experiment, results: dict[str, RunResult]) -> str:
    """ "" when every run has ended, else a neutral sentence saying what is still going on."""
    missing = [label for label in experiment.variants if label not in results]
    if missing:
        return f"Waiting for {', '.join(missing)}."
    going = [f"{label} at step {r.steps} of {r.max_steps or '?'} ({r.state})" for label, r in results.items()]
    if all(r.state in ENDED or r.state == "stopped" for r in results.values()):
        return ""
    busy = [r for r in results.values() if r.state not in (*ENDED, "stopped")]
    # Queued runs wait for a training slot: "Still training: … at step 0 of 200 (queued)" was said of runs that
    # had not started (a review's learner, her experiment queued behind the lesson's prepared runs).
    said = "Waiting for a training slot" if all(r.state == "queued" for r in busy) else "Still training"
    return f"{said}: " + "; ".join(g for g, r in zip(going, results.values(), strict=True) if r in busy) + "."


def ended_early(results: dict[str, RunResult], as_pitfall: tuple[str, ...] = ()) -> list[str]:
    """Why each run that ended before its step budget cannot be judged, e.g. "the residual run finished at step 5
    of 300" or "the warmup, lr 1e-2 run diverged at step 40 of 300"; [] when every run ran (a run in `as_pitfall`
    may end early: that is the effect being measured)."""
    out = []
    for label, r in results.items():
        if label in as_pitfall and r.state in ("diverged", "failed"):
            continue
        of = f" of {r.max_steps}" if r.max_steps else ""
        if diverged_at(r):
            out.append(f"not measured: the {label} run {diverged_at(r)}{of}, before the end of its training")
        elif r.state == "stopped":
            out.append(f"the {label} run was stopped at step {r.steps}{of}: run the experiment again to judge it")
        elif r.state == "failed":
            why = f" ({r.reason.rstrip('.')})" if r.reason else ""
            out.append(f"the {label} run failed at step {r.steps}{of}{why}")
        elif not r.ran_to_the_end:
            out.append(f"the {label} run {r.state} at step {r.steps}{of}")
    return out
