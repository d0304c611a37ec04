"""What the Circuits page's head ablation measured, and which heads' changes stand out of its noise.

`ablation_words`: the windows it scored, said as they are. `ablation_noise`: each head's loss change judged as the
lab judges a held-out gap (tinygpt.lab.verdict): the validation windows are scored with every head on and with one
head off, window by window, so the change of each of the ABLATION batches pairs with the clean pass's on the same
windows; `held_out_variance` counts the batches' spread and the held-out text's own size (a short text's windows
overlap). A review read "Red heads matter; near-white heads could be removed" over cells of +.002 and -.000 with no
noise said, and recomputed them on other windows as +.004 and +.001.

Pure: a `lens.head_ablation` result (circuits_view.ablation's, with its windows and batch count) in, words out.
"""

from __future__ import annotations

import math

import numpy as np

from tinygpt.inside.heads import head_name
from tinygpt.lab.verdict import NOISE_SIGMAS, held_out_variance

LISTED = 6  # heads a sentence names at most, the largest changes first; "+N more" says how many it leaves out


def ablation_words(result: dict) -> str:
    """What the ablation scored, said as it is: windows drawn at random, overlapping, from the held-out split (a
    review read "10,240 validation tokens" on a text whose held-out split was 1,972 characters)."""
    (rows, width), split = result["windows"], result["held_out"]
    return (
        f"{rows} held-out windows of {width} ({result['tokens']:,} characters), drawn at random, overlapping, "
        f"from {split:,} held-out characters; every head ablated in turn, in {result['seconds']:.2f} s."
    )


def head_noise(result: dict, mode: str) -> dict[str, tuple[float, float]] | None:
    """{head name: (the loss change, its standard error)} over the validation windows, paired batch by batch; None
    without the per-window changes (a result cached before they were kept) or with fewer than two batches."""
    windows = result.get(mode, {}).get("val_windows")
    batches = int(result.get("batches") or 0)
    if windows is None or batches < 2:
        return None
    windows = np.asarray(windows, dtype=np.float64)  # (L, H, N): each window's mean loss change
    L, H, N = windows.shape
    if N % batches:
        return None
    per_batch = windows.reshape(L, H, batches, N // batches).mean(axis=3)  # (L, H, batches)
    shape = (N // batches, int(result["windows"][1]))  # (B, T) of one batch
    out = {}
    for layer in range(L):
        for head in range(H):
            variance = held_out_variance(per_batch[layer, head].tolist(), shape, int(result["held_out"]))
            if variance is None:
                return None
            out[head_name(layer, head)] = (float(windows[layer, head].mean()), math.sqrt(variance))
    return out


def ablation_noise(result: dict, mode: str) -> str:
    """ "Beyond 3 s.e. of its noise …: L1H3 +0.158 ± 0.012 …; within it: the other 6 …": which heads' changes the
    windows can tell from zero, "" where the noise was not kept."""
    noise = head_noise(result, mode)
    if noise is None:
        return ""
    said = (f"± {NOISE_SIGMAS:g} s.e. of the {result['batches']} batches' paired changes, the held-out text's size "
            "counted")

    def listed(names: list[str]) -> str:
        names = sorted(names, key=lambda n: -abs(noise[n][0]))
        words = [f"{n} {noise[n][0]:+.3f} ± {NOISE_SIGMAS * noise[n][1]:.3f}" for n in names[:LISTED]]
        return ", ".join(words) + (f", +{len(names) - LISTED} more" if len(names) > LISTED else "")

    up = [n for n, (d, se) in noise.items() if d - NOISE_SIGMAS * se > 0]
    down = [n for n, (d, se) in noise.items() if d + NOISE_SIGMAS * se < 0]
    within = [n for n in noise if n not in up and n not in down]
    parts = []
    if up:
        parts.append(f"Switching off {listed(up)} raised the loss beyond its noise ({said}): "
                     f"{'this head matters on its own' if len(up) == 1 else 'each matters on its own'}.")  # fmt: skip
    else:
        parts.append(f"No head's change is beyond its noise ({said}): on these windows no single head is shown to "
                     "matter alone.")  # fmt: skip
    if down:
        parts.append(f"Switching off {listed(down)} lowered the loss beyond its noise.")
    if within:
        parts.append(f"Within their noise, not told from zero: {listed(within)}.")
    return " ".join(parts)


def second_copy_words(measured: dict, panel: str, experiment: bool) -> str:
    """The Circuits heatmap's `panel` (induction.second_copy_rows at the checkpoint, summed up by
    circuits_view.second_copy_measured): what it scored, whether this run copies at all, and the heads whose change
    stands out of the probe rows' noise (3 s.e., paired row by row). A review read "the numbers the lesson's
    ablation check reads" under a learner's own run, whose second copy (5.10 nats) was no cheaper than its first
    (5.08): no copying to ablate, and no noise said."""
    rows, first, second, gap_se = measured["rows"], measured["first"], measured["second"], measured["gap_se"]
    said = (f"Panel '{panel}': the change of the loss on the second copy of {rows} repeated random probes, where only "
            "copying from the first copy predicts.")
    if experiment:
        said += " The induction experiment's ablation check (and the lesson's) reads it at the run's last checkpoint."
    gap, bar = first - second, NOISE_SIGMAS * gap_se
    if gap - bar <= 0:
        return (f"{said} This run does not copy here: its second copy costs {second:.2f} nats against the first "
                f"copy's {first:.2f} (± {bar:.2f}, {NOISE_SIGMAS:g} s.e. over the rows), so no head has copying to "
                "lose; the panel's changes are not an induction circuit's.")
    noise = {head_name(layer, head): (d, se) for layer, row in enumerate(zip(measured["deltas"], measured["se"],
             strict=True)) for head, (d, se) in enumerate(zip(*row, strict=True))}  # fmt: skip
    up = sorted((n for n, (d, se) in noise.items() if d - NOISE_SIGMAS * se > 0), key=lambda n: -noise[n][0])
    words = [f"{n} {noise[n][0]:+.3f} ± {NOISE_SIGMAS * noise[n][1]:.3f}" for n in up[:LISTED]]
    heads = (", ".join(words) + (f", +{len(up) - LISTED} more" if len(up) > LISTED else "")) if up else ""
    return (f"{said} It copies: second copy {second:.2f} nats against the first's {first:.2f}. "
            + (f"Beyond {NOISE_SIGMAS:g} s.e. of the rows' paired noise: {heads}." if up else
               f"No head's change is beyond {NOISE_SIGMAS:g} s.e. of the rows' paired noise."))
