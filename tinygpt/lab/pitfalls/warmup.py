"""The pitfall "No learning-rate warmup": its runs, what to look for, and its judge."""

from __future__ import annotations

from ...schedule import lr_at
from ..experiment import Experiment
from ..verdict import RunResult, Verdict, all_of, decide, diverged_at, fmt, gt3, say

WARMUP_HURTS = 0.1  # nats: at the high LR, no warmup must end (and be at a third of the run) at least this much worse
WARMUP_SAME = 0.05  # nats: at the demo LR, the two must end within this of each other
EXPECTED = (
    "at lr 1e-2 no warmup stalls (higher loss a third of the way in and at the end) or diverges; "
    "at lr 2e-3 warmup makes no difference"
)


def judge(results: dict[str, RunResult]) -> Verdict:
    hw, hn = results["warmup, lr 1e-2"], results["no warmup, lr 1e-2"]
    dw, dn = results["warmup, lr 2e-3"], results["no warmup, lr 2e-3"]
    observed = {
        "loss at 1/3, lr 1e-2, no warmup": hn.mid_loss,
        "loss at 1/3, lr 1e-2, warmup": hw.mid_loss,
        "final loss, lr 1e-2, no warmup": hn.final_train_loss,
        "final loss, lr 1e-2, warmup": hw.final_train_loss,
        "final loss, lr 2e-3, no warmup": dn.final_train_loss,
        "final loss, lr 2e-3, warmup": dw.final_train_loss,
        "early clipped steps, lr 1e-2, no warmup / warmup": f"{hn.clip_events_early} / {hw.clip_events_early}",
        "diverged": ", ".join(f"{label} at step {r.diverged_step or r.steps}" for label, r in results.items()
                              if diverged_at(r)) or None,
    }  # fmt: skip
    hurts_clause = f"at lr 1e-2, no warmup at least {WARMUP_HURTS} nats worse (a third in and at the end) or diverged"
    if diverged_at(hw) and diverged_at(hn):
        hurts, high = None, f"At lr 1e-2 both runs diverged (warmup {diverged_at(hw)}, no warmup {diverged_at(hn)})"
        hurts_clause += " (not measured: both runs diverged)"
    elif diverged_at(hw):
        hurts = False
        high = f"At lr 1e-2 the warmup run {diverged_at(hw)} while no warmup trained to the end"
    elif diverged_at(hn):  # the strongest form of the pitfall: the first full-size steps break the model outright
        hurts = True
        high = (
            f"At lr 1e-2, no warmup {diverged_at(hn)} while warmup trained to the end (loss {fmt(hw.final_train_loss)})"
        )
    else:
        hurts = all_of(
            gt3(hn.mid_loss, hw.mid_loss, WARMUP_HURTS), gt3(hn.final_train_loss, hw.final_train_loss, WARMUP_HURTS)
        )
        high = (
            f"At lr 1e-2, no warmup {say(hurts, 'stalls', 'does not stall', 'was not compared')}: loss "
            f"{fmt(hn.mid_loss)} vs {fmt(hw.mid_loss)} a third of the way in, {fmt(hn.final_train_loss)} vs "
            f"{fmt(hw.final_train_loss)} at the end"
        )
    same_clause = f"at lr 2e-3, the two final losses within {WARMUP_SAME} nats"
    if diverged_at(dw) and diverged_at(dn):
        same, demo = None, "At the demo's lr 2e-3 both runs diverged"
        same_clause += " (not measured: both runs diverged)"
    elif diverged_at(dw) or diverged_at(dn):
        broke = "no warmup" if diverged_at(dn) else "warmup"
        same, demo = False, f"At the demo's lr 2e-3 {broke} {diverged_at(dn or dw)} and the other did not"
    elif dn.final_train_loss is None or dw.final_train_loss is None:
        same, demo = None, "At the demo's lr 2e-3 the final losses were not measured"
    else:
        same = abs(dn.final_train_loss - dw.final_train_loss) <= WARMUP_SAME
        demo = (
            f"At the demo's lr 2e-3 warmup {'makes no difference' if same else 'does make a difference'}: "
            f"{fmt(dn.final_train_loss)} vs {fmt(dw.final_train_loss)}"
        )
    return decide(EXPECTED, {hurts_clause: hurts, same_clause: same}, observed, f"{high}. {demo}.")


EXPERIMENT = Experiment(
    key="warmup",
    title="No learning-rate warmup",
    what_to_look_for=(
        "Adam's first updates move every weight by about the learning rate, whatever its gradient. At the "
        "demo's lr 2e-3 that is harmless for this small pre-LN model: with or without warmup the runs end "
        "alike (measured). At lr 1e-2 the first full-size steps knock it onto a plateau near the "
        "letter-frequency loss (~3.1-3.2 nats) that it leaves late, and it ends worse; 100 warmup steps "
        "avoid that. Four runs: both regimes, with and without warmup."
    ),
    expected=EXPECTED,
    base=dict(max_steps=300, warmup_steps=100),
    variants={
        "warmup, lr 1e-2": dict(learning_rate=1e-2),
        "no warmup, lr 1e-2": dict(learning_rate=1e-2, warmup_steps=0),
        "warmup, lr 2e-3": dict(learning_rate=2e-3),
        "no warmup, lr 2e-3": dict(learning_rate=2e-3, warmup_steps=0),
    },
    judge=judge,
    code=(lr_at,),
)
