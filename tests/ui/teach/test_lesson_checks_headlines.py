"""Every lesson step's check headline (lesson_checks.Check.short), the line the presenter banner shows: built by the
check from its own numbers, so it carries the verdict's point and its key number, never a longer sentence cut with
"…" (the banner's first-sentence cut left step 11 at "... at step 3000 …", before the claim)."""

import re

import pytest

from tinygpt.lab import induction
from tinygpt.lab.registry import EXPERIMENTS
from tinygpt.lab.results import RunResult
from tinygpt.lab.verdict import CPU_COUNTS_ONLY
from tinygpt.ui.teach import lesson, lesson_checks, pitfall_checks, presenter
from tinygpt.ui.teach.lesson import Evidence, RunData
from tinygpt.ui.teach.lesson_evidence import _verdict


def metrics(losses, start=1):
    return [{"step": start + i, "loss": v} for i, v in enumerate(losses)]


def knob(name, old, new, step):
    return {"kind": "knob", "ok": True, "knob": name, "old": old, "new": new, "step": step}


def result(state="finished", steps=300, **fields) -> RunResult:
    base = dict(final_train_loss=None, final_val_loss=None, max_loss_early=None, clip_events_early=0,
                mean_entropy=None, mean_max_weight=None)  # fmt: skip
    return RunResult(state, steps, **{**base, **fields}, max_steps=steps)


def lecture(losses, events=(), state="running"):
    """A lecture run whose held-out loss, evaluated every 50 steps, follows its training loss 0.05 above it."""
    evals = [{"step": s, "val_loss": losses[s - 1] + 0.05} for s in range(50, len(losses) + 1, 50)]
    return Evidence(runs={"lecture": RunData("r", state, vocab_size=65, metrics=metrics(losses), events=list(events),
                                             evals=evals, eval_interval=50)})  # fmt: skip


def health(bug_fails: bool) -> dict:
    def rows(ok: bool) -> list[dict]:
        return [{"check": "attention rows sum to 1", "result": "pass" if ok else "FAIL",
                 "measured": "2.4e-07" if ok else "0.31", "threshold": "< 1e-04"},
                {"check": "no future leak", "result": "pass" if ok else "FAIL",
                 "measured": "0" if ok else "1.7", "threshold": "== 0 exactly"}]  # fmt: skip

    return {"correct": rows(True), "silent bug": rows(not bug_fails)}


def scaling_verdict(worse: bool) -> dict:
    scaled = result(mean_entropy=2.15, mean_max_weight=0.3, softmax_gain=0.2, final_train_loss=2.281,
                    final_loss_std=0.03, final_val_loss=2.30, layer_grad_norms={"L0.attn": 0.337})  # fmt: skip
    unscaled = result(mean_entropy=0.66, mean_max_weight=0.92, softmax_gain=0.05,
                      final_train_loss=2.769 if worse else 2.169, final_loss_std=0.03,
                      final_val_loss=2.80 if worse else 2.20, layer_grad_norms={"L0.attn": 0.153})  # fmt: skip
    return _verdict(EXPERIMENTS["scaling"].verdict({"scaled 1/sqrt(d_head)": scaled, "unscaled": unscaled}))


def residual_verdict(stalls: bool) -> dict:
    good = result(final_train_loss=2.3, final_loss_std=0.03, final_val_loss=2.35, layer_grad_norms={"L0.attn": 0.5})
    bad = result(final_train_loss=2.9 if stalls else 2.35, final_loss_std=0.03, final_val_loss=2.95 if stalls else 2.40,
                 layer_grad_norms={"L0.attn": 1e-5})  # fmt: skip
    return _verdict(EXPERIMENTS["residual"].verdict({"residual": good, "detached residual": bad}))


def shape_verdict(**silent_more) -> dict:
    good = result(initial_loss=4.2, final_train_loss=2.5, row_sum_error=0.0, leak=0.0, no_peek_loss=2.5)
    silent = result(initial_loss=4.2, final_train_loss=2.1, row_sum_error=0.93, leak=0.41, no_peek_loss=3.9,
                    snapshot_step=200, snapshot_chars=64, probe_step=200, leak_windows=(2, 64),
                    **silent_more)  # fmt: skip
    checked = result("failed", 0, reason="failed: softmax row sums: expected (B, H, T, 1), got (B, H, 1, T).")
    return _verdict(EXPERIMENTS["shape_drift"].verdict({"correct": good, "silent bug": silent,
                                                        "bug + shape contracts": checked}))  # fmt: skip


def induction_verdict(formed: bool) -> dict:
    def record(step, score, second=3.3):
        return {"step": step, "roles": {"previous": [[0.1, 0.1]], "induction": [[0.05, score]], "first": [[0.1, 0.1]],
                                        "self": [[0.1, 0.1]]},
                "baselines": {"previous": 0.1, "induction": 0.05, "first": 0.1, "self": 0.1},
                "copy_loss": {"first": 3.3, "second": second}}  # fmt: skip

    def final(mean):
        half = 1.96 * 0.05 / 256**0.5
        return {"head": "L1H1", "mean": mean, "std": 0.05, "low": mean - half, "high": mean + half, "rows": 256,
                "baseline": 0.05, "step": 190}  # fmt: skip

    two = [record(s, 0.05) for s in range(0, 100, 10)] + [record(s, 0.7, 0.5) for s in range(100, 200, 10)]
    flat = [record(s, 0.05) for s in range(0, 200, 10)]
    labels = list(induction.INDUCTION_VARIANTS)
    control = final(0.06) if formed else final(0.7)
    return _verdict(induction.induction_verdict({labels[0]: two, labels[1]: flat},
                                                final={labels[0]: final(0.7), labels[1]: control}))  # fmt: skip


def ablation(value: float, other: float = 0.05) -> dict:
    deltas = [[0.02, other, -0.01, 0.03], [0.04, value, 0.01, 0.00]]
    return {"head": "L1H1", "deltas": deltas, "step": 3000, "where": "the second copy of the repeated probe"}


PITFALL_KEYS = list(lesson.PITFALLS)
KNOB_STEPS = {"mask": ([2.2] * 60 + [0.4] * 40, [knob("mask", "causal", "none", 60)], "0.40"),
              "optim": ([2.2] * 60 + [3.1] * 40, [knob("learning_rate", 0.003, 0.1, 60)], "3.10")}  # fmt: skip

# (step name, evidence, what the check should say, a number its headline must carry)
CASES = [
    ("tensors", lecture([4.17] + [2.5] * 99), True, "2.50"),
    ("tensors", lecture([4.17] + [3.9] * 99, state="stopped"), False, "3.90"),  # "not seen" once it can't come
    ("shapes", Evidence(verdicts={"shape_drift": shape_verdict()}), True, "0.93"),
    ("scaling", Evidence(verdicts={"scaling": scaling_verdict(True)}), True, "0.92"),
    ("scaling", Evidence(verdicts={"scaling": scaling_verdict(False)}), False, "2.169"),
    ("mask", lecture(*KNOB_STEPS["mask"][:2]), True, KNOB_STEPS["mask"][2]),
    ("mask", lecture([2.2] * 60 + [2.0] * 400, [knob("mask", "causal", "none", 60)]), False, "2.00"),
    ("optim", lecture(*KNOB_STEPS["optim"][:2]), True, KNOB_STEPS["optim"][2]),
    ("optim", lecture([2.2] * 60 + [2.3] * 400, [knob("learning_rate", 0.003, 0.1, 60)]), False, "2.30"),
    ("heads", Evidence(runs={"heads": RunData("h", state="finished", scores=[
        {"step": 300, "roles": {"first": [[0.9, 0.1], [0.2, 0.1]], "self": [[0.1, 0.1], [0.1, 0.3]]},
         "baselines": {"first": 0.1, "self": 0.1}}])}), True, "0.90"),  # fmt: skip
    ("heads", Evidence(runs={"heads": RunData("h", state="finished", scores=[
        {"step": 300, "roles": {"first": [[0.3, 0.15], [0.12, 0.1]]}, "baselines": {"first": 0.1}}])}), False,
     "1.50x"),  # one specialist: the closest other head's ratio is said  # fmt: skip
    ("residual", Evidence(verdicts={"residual": residual_verdict(True)}), True, "2.900"),
    ("residual", Evidence(verdicts={"residual": residual_verdict(False)}), False, "2.350"),
    ("pitfalls", Evidence(verdicts={k: {"reproduced": True, "sentence": "x"} for k in PITFALL_KEYS}), True,
     f"{len(PITFALL_KEYS)} of the {len(PITFALL_KEYS)}"),
    ("pitfalls", Evidence(verdicts={k: {"reproduced": k != PITFALL_KEYS[0], "sentence": "x"} for k in PITFALL_KEYS}),
     False, EXPERIMENTS[PITFALL_KEYS[0]].title),  # by its title, never its key
    ("pitfalls", Evidence(verdicts={k: {"reproduced": None, "sentence": "x"} for k in PITFALL_KEYS[:3]}), None,
     f"{sum(EXPERIMENTS[k].measure is None for k in PITFALL_KEYS[3:])} not started"),  # memory: not measured yet
    ("health", Evidence(health=health(True)), True, "0.31"),
    ("health", Evidence(health=health(False)), False, "2.4e-07"),
    ("induction", Evidence(verdicts={"induction": induction_verdict(True)}), True, "0.70"),
    ("induction", Evidence(verdicts={"induction": induction_verdict(False)}), False, "0.70"),
    ("ablation", Evidence(ablation=ablation(0.671)), True, "+0.671"),
    ("ablation", Evidence(ablation=ablation(0.671, other=0.9)), True, "+0.900"),
    ("ablation", Evidence(ablation=ablation(0.04)), False, "+0.040"),
    ("lens", Evidence(lens={"names": ["embedding", "layer 1", "layer 2"], "hits": [3, 9, 21], "positions": 32}),
     True, "21/32"),
    ("lens", Evidence(lens={"names": ["embedding", "layer 1", "layer 2"], "hits": [3, 4, 4], "positions": 32}),
     False, "4/32"),
]  # fmt: skip
STEP = {step.key: step for step in lesson.STEPS}


def test_every_step_has_a_case_that_passes_and_one_that_does_not():
    """A new step's check gets its headline tested too."""
    for step in lesson.STEPS:
        said = {passed for name, _, passed, _ in CASES if name == step.key}
        assert True in said, step.key
        assert said & {False, None} or step.key == "shapes", step.key


@pytest.mark.parametrize("name, evidence, passed, number", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_the_headline_carries_the_verdicts_point_and_its_number_whole(name, evidence, passed, number):
    check = STEP[name].check(evidence)
    assert check.passed is passed, check.text
    line = check.short
    assert "…" not in line and "..." not in line, line
    assert len(line) <= lesson_checks.HEADLINE_LIMIT <= presenter.LIMIT, (len(line), line)
    assert number in line, (number, line)
    assert number in check.text or name == "pitfalls", check.text  # the same number as the Numbers popover's text


def test_the_induction_headlines_copy_losses_are_the_verdicts_figures():
    """A review's banner read "second-copy loss 4.170 → 2.060" beside Numbers' "4.17 to 2.06": kept to 2 decimals,
    printed with a zero padded on."""
    check = STEP["induction"].check(Evidence(verdicts={"induction": induction_verdict(True)}))
    assert check.short.endswith("second-copy loss 3.30 → 0.50") and "from 3.30 to 0.50" in check.text
    # the score before is said at its own step, the rise's onset (a review read "0.08 before the phase change at step
    # 1260" where the score just before 1260 was 0.25; 0.08 was at step 820), as the verdict's sentence says it
    onset = re.search(r"jumped from (\S+) at step (\d+), the phase change at step (\d+)", check.text)
    assert onset and f"best snapshot score {onset[1]} at step {onset[2]}, the phase change at step {onset[3]}; " \
        in check.short, (check.short, check.text)


def test_the_ablation_headline_says_which_head_carries_the_copying_not_where_a_sentence_was_cut():
    """Step 11 on the projector read "Zero-ablating L1H1, ... at step 3000 …": the claim and its verdict were cut."""
    check = STEP["ablation"].check(Evidence(ablation=ablation(0.671)))
    assert check.short == (
        "L1H1, the induction head, stands out: zero-ablating it adds +0.671 nats (the others +0.020 on average)"
    )
    assert "at step 3000" in check.text  # the whole sentence stays in the Numbers popover
    other = STEP["ablation"].check(Evidence(ablation=ablation(0.671, other=0.9)))
    # Not "L1H1 carries the copying ... L0H1's is larger": the line no longer argues with itself (a review's finding)
    assert other.short.endswith("; the largest is L0H1's +0.900: the copying needs that head too")
    # and not "stands out" over a heatmap whose darkest cell is another head's (a review's finding, step 11)
    assert other.passed and other.short.startswith("L1H1, the induction head, matters, with others:")


def test_a_check_without_a_verdict_yet_says_so_in_one_short_line():
    long_wait = {"reproduced": None, "undecided": "not enough data", "sentence": "Not measured: " + "x; " * 120}
    check = STEP["scaling"].check(Evidence(verdicts={"scaling": long_wait}))
    assert check.passed is None and len(check.text) > lesson_checks.HEADLINE_LIMIT
    assert check.short == "Unscaled attention logits: not enough data; what is missing is under Numbers"
    for step in lesson.STEPS:  # nothing started: every check's line is whole and short
        line = step.check(Evidence()).short
        assert "…" not in line and len(line) <= lesson_checks.HEADLINE_LIMIT, (step.key, line)


def test_the_shape_steps_line_says_what_was_measured_in_plain_words():
    """The review: step 2's line read "the silent bug's attention rows are off 1 by 5.77": off what, in what? A
    row of attention weights must add up to 1; the number is how far the bug's rows are from that, a sum of weights,
    and the loss beside it is in nats."""
    line = STEP["shapes"].check(Evidence(verdicts={"shape_drift": shape_verdict()})).short
    assert "off 1" not in line and "row sum" not in line, line
    assert "attention weights on the probe text adds up to as much as 0.93 away from 1 (a correct row: 1)" in line
    # measured on the checkpoint's held-out windows (an ended run), said so: a review read "as much as 14.65" with
    # nothing saying on what, no snapshot of that run above 11.23
    held = STEP["shapes"].check(Evidence(verdicts={"shape_drift": shape_verdict(rows_windows=(4, 64))})).short
    assert "attention weights on held-out windows adds up to as much as 0.93 away from 1" in held, held
    assert len(held) <= lesson_checks.HEADLINE_LIMIT, (len(held), held)
    assert "yet training loss fell 4.200 → 2.100 (last 20 steps)" in line, line
    assert len(line) <= lesson_checks.HEADLINE_LIMIT, (len(line), line)
    text = STEP["shapes"].check(Evidence(verdicts={"shape_drift": shape_verdict()})).text
    assert "off 1" not in text and ("add up to as much as 0.93 away from 1 (the largest over every layer, head and "
                                    "row; a correct row adds up to exactly 1)") in text  # fmt: skip


def test_the_shape_bugs_numbers_at_step_2_and_step_9_say_what_input_each_measured():
    """Review defect 3: step 2 said the bug's rows add up to "as much as 5.77 away from 1" and it "moves earlier
    logits by 1.66"; step 9's checklist said "attention rows sum to 1 FAIL (14.65...)", "no future leak FAIL
    (2.061...)". Step 2 reads the probe text's attention snapshot and 2 held-out windows, step 9 4 held-out windows:
    each says so, so the two are not read as contradicting."""
    text = STEP["shapes"].check(Evidence(verdicts={"shape_drift": shape_verdict()})).text
    assert "on the probe text (64 characters, attention snapshot at step 200), its attention weights" in text, text
    assert ("on 2 held-out windows of 64 characters (checkpoint of step 200), changing the future moves earlier "
            "logits by up to 0.41") in text, text  # fmt: skip
    rows = health(bug_fails=True)
    for label in rows:
        for row in rows[label]:
            row["measured on"] = "4 held-out windows of 64 characters (checkpoint of step 200)"
    check = STEP["health"].check(Evidence(health=rows))
    assert check.text.startswith("Measured attention rows sum to 1 on 4 held-out windows of 64 characters (checkpoint "
                                 "of step 200); no future leak on 4 held-out windows"), check.text  # fmt: skip
    assert "'silent bug': attention rows sum to 1 FAIL (0.31" in check.text
    assert check.short.endswith(", on 4 held-out windows of 64 characters (checkpoint of step 200)"), check.short
    assert len(check.short) <= lesson_checks.HEADLINE_LIMIT
    # The leak reads 2 windows (Model health's row says so): a second review saw "4 held-out windows" said of both
    for label in rows:
        for row in rows[label]:
            if row["check"] == "no future leak":
                row["measured on"] = "2 held-out windows of 64 characters (checkpoint of step 200)"
    check = STEP["health"].check(Evidence(health=rows))
    assert "no future leak on 2 held-out windows of 64 characters (checkpoint of step 200)" in check.text
    assert "held-out windows" not in check.short  # two inputs: the headline names neither


def test_a_knob_steps_lines_name_the_knob_by_its_word_not_its_config_field():
    """The review: "learning_rate" reached the projector. Every line of the learning-rate step says "LR", as the
    chart's marker and the form's slider do."""
    waits = STEP["optim"].check(lecture([2.2] * 60)).text
    assert "LR has not been set to 0.1" in waits and "learning_rate" not in waits, waits
    for losses in ([2.2] * 60 + [3.1] * 40, [2.2] * 60 + [2.3] * 400, [2.2] * 62):
        check = STEP["optim"].check(lecture(losses, [knob("learning_rate", 0.003, 0.1, 60)]))
        for said in (check.text, check.short):
            assert "LR 0.003 → 0.1" in said and "learning_rate" not in said, said


def test_the_pitfalls_are_named_by_their_titles_and_the_count_says_what_it_leaves_out():
    """Review, step 8: "scaling, mask, ..., shape_drift" (internal keys) and "7 of 7" under "The eight pitfalls"."""
    verdicts = {k: {"reproduced": True, "sentence": "x"} for k in PITFALL_KEYS}
    verdicts["memory"] = {"reproduced": None, "sentence": "x", "undecided": CPU_COUNTS_ONLY}
    verdicts["shape_drift"]["halted"] = {"bug + shape contracts": {"state": "failed", "step": 0}}
    check = lesson.all_pitfalls(Evidence(verdicts=verdicts))
    trained = [k for k in PITFALL_KEYS if EXPERIMENTS[k].measure is None]
    assert f"{len(trained)} of the {len(trained)} trained pitfalls reproduced" in check.text
    assert f"{EXPERIMENTS['memory'].title}, is measured, not trained" in check.text, check.text
    assert "shape_drift" not in check.text and EXPERIMENTS["shape_drift"].title in check.text


def test_a_verdicts_headline_leads_with_the_held_out_loss():
    """Review, steps 3 and 6: "final loss 2.527 vs 2.215", the training losses, where held-out ones existed."""
    line = lesson.STEPS[2].check(Evidence(verdicts={"scaling": scaling_verdict(True)})).headline
    assert "final held-out loss 2.800 vs 2.300 (training 2.769 vs 2.281)" in line, line
    line = lesson.STEPS[5].check(Evidence(verdicts={"residual": residual_verdict(True)})).headline
    assert "final held-out loss 2.950 vs 2.350 (training 2.900 vs 2.300)" in line, line


def test_a_pitfall_measured_at_set_up_is_not_measured_yet_never_not_started():
    """A review's learners read "not started: Memory fragmentation" at step 8 for seconds: the memory demo is
    measured in the server at the step's Set up, never started as a run."""
    measured = [k for k in PITFALL_KEYS if EXPERIMENTS[k].measure is not None]
    assert measured, "the test needs a pitfall measured in the server"
    trained = {k: {"reproduced": True, "sentence": "x"} for k in PITFALL_KEYS if k not in measured}
    check = pitfall_checks.all_pitfalls(Evidence(verdicts=trained))
    assert check.passed is None and not check.settled, check.text
    assert f"not measured yet: {EXPERIMENTS[measured[0]].title}" in check.text and "not started" not in check.text
    # Set up measures it and decides the check at once: it asks before closing the answers (a review's step 8 did not)
    assert check.set_up_decides
    one_training = {**trained, next(iter(trained)): {"reproduced": None}}  # a run still training: Set up won't decide
    assert not pitfall_checks.all_pitfalls(Evidence(verdicts=one_training)).set_up_decides


def test_the_lens_step_is_judged_on_held_out_windows_with_their_noise():
    """A review: the lens step passed on one 32-character probe (1/31 -> 14/31, a 3-position bar, no noise) under
    "the right character tops the list by the last layer". On held-out windows, paired window by window."""
    probe = {"names": ["embeddings", "after layer 0", "after layer 1"], "hits": [1, 2, 14], "positions": 31}
    windows = {"right": [[0.05, 0.1, 0.0, 0.08], [0.2, 0.25, 0.15, 0.2], [0.5, 0.45, 0.4, 0.55]], "context": 32,
               "val_tokens": 100_000}  # fmt: skip
    check = STEP["lens"].check(Evidence(lens={**probe, "windows": windows}))
    assert check.passed is True, check.text
    assert check.text.startswith("Top guess right on 4 held-out windows (128 positions), by where the stream is "
                                 "read: embeddings 6%, after layer 0 20%, after layer 1 48%. The last layer's share "
                                 "is 42 points above the embedding's, ± ")  # fmt: skip
    assert check.text.endswith("On the probe text: top guess right, by where the stream is read: embeddings 1/31, "
                               "after layer 0 2/31, after layer 1 14/31.")  # fmt: skip
    assert check.short.startswith("The prediction forms in the layers: the top guess is right at 6% of 128 held-out "
                                  "positions after the embedding, 48% at the last layer (± ")  # fmt: skip
    flat = {**windows, "right": [[0.1, 0.3, 0.0, 0.2], windows["right"][1], [0.2, 0.1, 0.15, 0.1]]}
    check = STEP["lens"].check(Evidence(lens={**probe, "windows": flat}))
    assert check.passed is False and check.short.startswith("The last layer gains nothing beyond noise")
    one = {**windows, "right": [[0.1], [0.2], [0.5]]}
    assert STEP["lens"].check(Evidence(lens={**probe, "windows": one})).passed is None  # one window: no spread


def test_the_ablation_step_says_its_noise_over_the_probe_rows_and_an_interval_across_the_bar_decides_nothing():
    """A review: "the copying depends on L1H1" with no ±; recomputed over the 64 rows: +0.671 (s.e. 0.024), 0.244
    (s.e. 0.024) above the others' mean, row by row."""
    noisy = {**ablation(0.671, other=0.05), "se": 0.024, "gap_se": 0.024, "rows": 64}
    check = STEP["ablation"].check(Evidence(ablation=noisy))
    assert check.passed is True, check.text
    assert "over the 64 probe rows, L1H1's change is +0.671 ± 0.072 and" in check.text
    assert "above the others' mean (3 s.e., paired row by row)" in check.text
    wide = {**noisy, "gap_se": 0.25}  # the gap's interval reaches under the 0.1 bar
    check = STEP["ablation"].check(Evidence(ablation=wide))
    assert check.passed is None and check.settled and "an interval straddles its bar of 0.1 nats" in check.text
