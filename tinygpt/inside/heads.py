"""What each attention head does, as numbers, and the induction-head phase change they reveal.

A head's role score is the share of its attention that goes to one particular key, averaged over the query rows
where that key exists; each lies in [0, 1]. Its *baseline* is the same number for a head that spreads its weight
evenly over the keys the mask lets it see (under the causal mask, 1/(t+1) at row t), so a score far above its
baseline is a pattern, not chance:

    role        weight read      rows                   text                          reference
    previous    A[t, t-1]        t = 1 .. T-1           the run's probe text          Elhage et al. 2021
    self        A[t, t]          t = 1 .. T-1           the run's probe text
    first       A[t, 0]          t = 1 .. T-1           the run's probe text          the "attention sink"
    induction   A[n+i, i+1]      i = 0 .. n-1           random tokens repeated twice  Olsson et al. 2022
                                                        r_0 .. r_{n-1} r_0 .. r_{n-1}  (prefix matching)

Row 0 is left out of the first three: its only key is itself. The induction query n+i is the second occurrence of
r_i, and i+1 is the token that followed its first occurrence: a head that attends there (and copies it) predicts
the second half, which no amount of memorising the training data can do, since the tokens are random. The same
probe gives the *in-context loss*: the loss on the second copy against the first (which is random, near
ln(choices)); an induction circuit makes the second copy cheap. Each half holds distinct characters (lowercase
letters of the vocabulary where there are enough), so "the previous occurrence" is one position.

`snapshot_scores` computes all of it, plus the residual stream's norms (tinygpt.inside.lens), for the training loop's
attention snapshots (tinygpt.runs: attention/scores.jsonl, one line per snapshot). `phase_change` finds the step where
the best induction score jumps; tinygpt/lab/induction.py judges the experiment built on it.

Shape legend: L layers, H heads, T query positions, S key positions (S == T), B probe rows, n half the probe. Left out:
the OV "copying" score (Olsson's second criterion; tinygpt.inside.lens's head ablation measures a head's worth
instead), path patching, scores on real text for the induction role."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..attention import mask_rows
from ..model import TinyGPT
from .lens import residual_stream

ROLES = ("previous", "induction", "first", "self")
ROLE_DEFINITIONS = {
    "previous": "previous-token score: the mean attention weight on the token just before, A[t, t-1], on the "
    "run's probe text (Elhage et al. 2021)",
    "induction": "induction (prefix-matching) score: on random characters repeated twice, the mean weight a token "
    "in the second copy puts on the token that followed its first occurrence, A[n+i, i+1] (Olsson et al. 2022)",
    "first": "first-token (attention sink) score: the mean weight on position 0, A[t, 0], on the run's probe text",
    "self": "self score: the mean weight on the diagonal, A[t, t], on the run's probe text",
}


ROLE_NOUNS = {"previous": "a previous-token head", "induction": "an induction head", "first": "a first-token head",
              "self": "a self head"}  # fmt: skip


ROLE_THRESHOLD = 0.4  # the induction verdict's bar for its best head (above every uniform baseline at T >= 8)
# A head plays a role at this many times its uniform baseline: the lesson's "specialised" (BENCHMARKS.md, "The
# multiple-heads step"); a score of 0.4 left Circuits without a role for a head the lesson called specialised.
ROLE_RATIO = 2.0
INDUCTION_ROWS = 2  # random probes averaged per snapshot: 2 keep the scores' cost near 2% of a demo step
PROBE_SEED = 0  # the same random probe at every snapshot, so scores change only because the model did


def role_keys(role: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(query rows, key columns) that a role's score reads in a (size, size) pattern; for "induction" `size` is
    the repeated probe's length 2n."""
    if role == "induction":
        n = size // 2
        rows = np.arange(n, 2 * n)  # the second copy
        return rows, rows - n + 1  # the token after the first occurrence of the same token
    rows = np.arange(1, size)
    keys = {"previous": rows - 1, "self": rows, "first": np.zeros_like(rows)}
    if role not in keys:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    return rows, keys[role]


def stripe_score(weights: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The mean of weights[..., rows[j], keys[j]] over j: (..., T, S) -> (...); NaN (not enough data, and no numpy
    "Mean of empty slice" warning) when the probe is too short to have any such row."""
    weights = np.asarray(weights)
    if len(rows) == 0:
        return np.full(weights.shape[:-2], np.nan)
    return weights[..., rows, keys].mean(axis=-1)


def uniform_baseline(mask: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> float:
    """The score of a head with uniform attention over the keys each row may see: mean of mask[t, k] / visible(t).
    (T, S) bool mask, True = may attend."""
    mask = np.asarray(mask, dtype=bool)
    if len(rows) == 0:  # too short a probe: not enough data
        return float("nan")
    visible = np.maximum(mask.sum(axis=-1), 1)  # (T,)
    return float((mask[rows, keys] / visible[rows]).mean())


def role_scores(weights: np.ndarray, mask: np.ndarray, roles: Sequence[str] = ("previous", "first", "self")):
    """{role: (L, H) scores} and {role: baseline} of an (L, H, T, T) pattern on ordinary text."""
    size = np.asarray(weights).shape[-1]
    scores, baselines = {}, {}
    for role in roles:
        rows, keys = role_keys(role, size)
        scores[role] = stripe_score(weights, rows, keys)
        baselines[role] = uniform_baseline(mask, rows, keys)
    return scores, baselines


def probe_pool(vocab: Sequence[str]) -> list[int]:
    """Token ids the random probe draws from: the vocabulary's lowercase letters if there are at least 8 (the bulk
    of text, and structure characters like ">" or a newline mean something in training text), else its letters
    and digits, else every token."""
    for keep in (str.islower, str.isalnum):
        pool = [i for i, ch in enumerate(vocab) if keep(ch)]
        if len(pool) >= 8:
            return pool
    return list(range(len(vocab)))


def induction_probe(
    vocab: Sequence[str],
    max_len: int,
    rows: int = INDUCTION_ROWS,
    seed: int = PROBE_SEED,
    device=None,
    half_length: int | None = None,
) -> torch.Tensor | None:
    """(rows, 2n) token ids: n distinct random characters, then the same n again; n = min(half_length or
    max_len // 2, max_len // 2, pool). None when the context cannot hold two copies of two characters
    (max_seq_len < 4 or a 1-character vocabulary)."""
    pool = torch.tensor(probe_pool(vocab))
    n = min(half_length or max_len // 2, max_len // 2, len(pool))
    if n < 2:
        return None
    generator = torch.Generator().manual_seed(seed)
    half = torch.stack([pool[torch.randperm(len(pool), generator=generator)[:n]] for _ in range(rows)])  # (B, n)
    return torch.cat([half, half], dim=1).to(device)  # (B, n) twice -> (B, 2n)


def copy_losses(logits: torch.Tensor, idx: torch.Tensor) -> tuple[float, float]:
    """Mean loss on the first and on the second copy of a repeated probe: logits (B, 2n, V), idx (B, 2n)."""
    first, second = copy_row_losses(logits, idx)
    return float(first.mean()), float(second.mean())


def copy_row_losses(logits: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's mean loss on its first and second copy, (B,) each. Position t predicts idx[t + 1]. First copy: t = 0
    .. n-2 (targets r_1 .. r_{n-1}, random). Second: t = n .. 2n-2 (the same targets, which a model that looks back
    reads off the first copy). Position n-1 (target r_0, not yet repeated) belongs to neither."""
    n = idx.shape[1] // 2
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2).float(), idx[:, 1:], reduction="none")  # (B, 2n-1)
    return losses[:, : n - 1].mean(1), losses[:, n:].mean(1)


@torch.no_grad()
def snapshot_scores(
    model: TinyGPT, probe_weights: np.ndarray, probe_idx: torch.Tensor, induction_idx: torch.Tensor | None
) -> dict[str, Any]:
    """One JSON-ready record for an attention snapshot (the loop adds "step"):

        roles       {role: [[score per head] per layer]}             every role of ROLES
        baselines   {role: the uniform-attention score}              under the mask in force now
        copy_loss   {"first", "second"}                              loss on each copy of the repeated probe
        residual    tinygpt.inside.lens.residual_stream's norms on the probe text

    `probe_weights` (L, H, T, T) is the snapshot itself (inside.attention_maps of `probe_idx` (1, T)). One more
    forward, without dropout, runs the repeated probe (B, 2n) and the probe text, batched when their lengths match.
    Without a repeated probe (induction_probe gave None) the induction role and copy_loss are None."""
    config = model.config
    switch = model.training and config.dropout > 0  # as inside.attention_maps: no dropout on what we measure
    rows = 0 if induction_idx is None else induction_idx.shape[0]
    together = rows and induction_idx.shape[1] == probe_idx.shape[1]
    if switch:
        model.eval()
    try:
        if rows:
            batch = torch.cat([induction_idx, probe_idx]) if together else induction_idx  # (B [+ 1], 2n)
            logits, maps, stream = residual_stream(model, batch, return_attention=True)
        if not together:
            stream = residual_stream(model, probe_idx)[2]
    finally:
        if switch:
            model.train()
    mask = mask_rows(config.mask, 0, probe_weights.shape[-1], config.window).numpy()  # (T, T)
    scores, baselines = role_scores(probe_weights, mask)
    copy = None
    if rows:
        maps = torch.stack([m[:rows].float().mean(0) for m in maps]).cpu().numpy()  # L x (H, 2n, 2n) -> (L, H, 2n, 2n)
        ind_rows, ind_keys = role_keys("induction", maps.shape[-1])
        scores["induction"] = stripe_score(maps, ind_rows, ind_keys)
        ind_mask = mask_rows(config.mask, 0, maps.shape[-1], config.window).numpy()
        baselines["induction"] = uniform_baseline(ind_mask, ind_rows, ind_keys)
        first, second = copy_losses(logits[:rows], induction_idx)
        copy = {"first": round(first, 4), "second": round(second, 4)}
    probe_row = -1 if together else 0  # the probe text is the batch's last row, or its own forward's only one
    return {
        "roles": {r: np.round(scores[r], 4).tolist() if r in scores else None for r in ROLES},
        "baselines": {r: round(baselines[r], 4) if r in baselines else None for r in ROLES},
        "copy_loss": copy,
        "residual": {k: [round(float(v[probe_row]), 4) for v in vals] for k, vals in stream.items()},
    }


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def score_rows(records: Sequence[dict], roles: Sequence[str] = ROLES) -> list[dict]:
    """Records to long rows for charts: {step, layer, head, name, role, score, baseline}, None scores skipped."""
    rows = []
    for record in records:
        for role in roles:
            grid = (record.get("roles") or {}).get(role)
            if not grid:
                continue
            base = (record.get("baselines") or {}).get(role)
            for layer, heads in enumerate(grid):
                for head, score in enumerate(heads):
                    if score is not None:
                        name = head_name(layer, head)
                        rows.append(dict(step=record["step"], layer=layer, head=head, name=name, role=role,
                                         score=score, baseline=base))  # fmt: skip
    return rows


def lift(score: float, baseline: float) -> float:
    """How far a score is from its uniform baseline toward 1: (score - baseline) / (1 - baseline)."""
    return (score - baseline) / (1.0 - baseline) if baseline < 1.0 else 0.0


def dominant_role(record: dict, layer: int, head: int, ratio: float = ROLE_RATIO) -> str | None:
    """The role a head plays in one record: among the roles whose score is at least `ratio` times its uniform
    baseline, the one the most times above it; None when no score is."""
    grids, bases = record.get("roles") or {}, record.get("baselines") or {}
    times = {role: grids[role][layer][head] / bases[role] for role in ROLES if grids.get(role) and
             (bases.get(role) or 0) > 0 and grids[role][layer][head] is not None}  # fmt: skip
    best = max(times, key=times.get, default=None)
    return best if best is not None and times[best] >= ratio else None


@dataclass
class HeadRole:
    """One row of the head table at a step."""

    layer: int
    head: int
    role: str | None  # the dominant role, None: no score reaches ROLE_RATIO times its baseline
    since: int | None  # the first step of the unbroken run of snapshots, up to this one, with that role
    scores: dict[str, float | None] = field(default_factory=dict)  # every role's score at this step
    baselines: dict[str, float | None] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return head_name(self.layer, self.head)

    @property
    def sentence(self) -> str:
        if self.role is None:
            return f"{self.name} has no dominant role (no score reaches {ROLE_RATIO:g}x its uniform baseline)."
        score, base, kind = self.scores[self.role], self.baselines[self.role], ROLE_NOUNS[self.role]
        return f"{self.name} is {kind} since step {self.since} (score {score:.2f}, {score / base:.1f}x its uniform " \
               f"baseline {base:.2f})."  # fmt: skip


def record_at(records: Sequence[dict], step: int | None) -> int | None:
    """The index of the newest record at or before `step` (None: the newest of all); None when there is none."""
    if not records:
        return None
    if step is None:
        return len(records) - 1
    before = [i for i, r in enumerate(records) if r["step"] <= step]
    return before[-1] if before else 0


def head_roles(records: Sequence[dict], step: int | None = None, ratio: float = ROLE_RATIO) -> list[HeadRole]:
    """Every head's dominant role at `step` (the newest record at or before it), and since when it has held it."""
    at = record_at(records, step)
    if at is None:
        return []
    record = records[at]
    grid = next(g for g in (record.get("roles") or {}).values() if g)
    out = []
    for layer, heads in enumerate(grid):
        for head in range(len(heads)):
            role = dominant_role(record, layer, head, ratio)
            since = None
            if role is not None:
                i = at
                while i > 0 and dominant_role(records[i - 1], layer, head, ratio) == role:
                    i -= 1
                since = records[i]["step"]
            scores = {r: (record["roles"].get(r) or [[None] * len(heads)] * len(grid))[layer][head] for r in ROLES}
            out.append(HeadRole(layer, head, role, since, scores, dict(record.get("baselines") or {})))
    return out


def best_series(records: Sequence[dict], role: str = "induction") -> list[dict]:
    """{step, score, name} of the best-scoring head of `role` at every record (None-free)."""
    out = []
    for record in records:
        grid = (record.get("roles") or {}).get(role)
        if grid:
            score, layer, head = max((s, lay, h) for lay, heads in enumerate(grid) for h, s in enumerate(heads))
            out.append({"step": record["step"], "score": score, "name": head_name(layer, head)})
    return out


def head_series(records: Sequence[dict], name: str, role: str = "induction") -> list[dict]:
    """{step, score} of one head's `role` score at every record that has it: that head's own curve. best_series is
    the top of every snapshot, and which head is on top can change between snapshots (2 noisy probe rows)."""
    layer, head, out = int(name[1 : name.index("H")]), int(name[name.index("H") + 1 :]), []
    for record in records:
        grid = (record.get("roles") or {}).get(role)
        try:
            score = grid[layer][head]
        except (TypeError, IndexError):
            continue
        if score is not None:
            out.append({"step": record["step"], "score": score})
    return out


def head_jump(records: Sequence[dict], name: str) -> Jump | None:
    """The jump in head `name`'s own induction score (`find_jump`), None where it has none: the only step a sentence
    may say that head jumped at. The phase change is the best series' jump, maybe another head's (one screen put
    L1H2 and L1H1 beside the phase change at step 1260; L1H1's own score jumped at about 1880)."""
    return find_jump([(p["step"], p["score"]) for p in head_series(records, name)], MIN_SCORE_JUMP)


def copy_loss_series(records: Sequence[dict]) -> list[dict]:
    """{step, first, second, gap} per record: the repeated probe's loss on each copy and first - second."""
    out = []
    for record in records:
        copy = record.get("copy_loss")
        if copy and copy.get("first") is not None and copy.get("second") is not None:
            out.append({"step": record["step"], **copy, "gap": copy["first"] - copy["second"]})
    return out


MIN_SCORE_JUMP = 0.2  # the best induction score must rise at least this much to count as a phase change
MIN_GAP_RISE = 0.5  # nats: the second copy must become at least this much cheaper than the first


# What a phase change is, the one definition every check, caption, chart marker and verdict uses: a rise counts as
# a jump when at least JUMP_SHARE of it happens within JUMP_WINDOW of the run's steps (so far). A steady ramp (0.05
# -> 0.5 over 3,000 steps makes a quarter of its rise in a quarter of the steps) is a ramp, not a phase change.
JUMP_WINDOW = 0.25
JUMP_SHARE = 0.5
JUMP_SMOOTHING = 5  # points in the running median the steepness is read from (live scores come from 2 probe rows)


@dataclass
class Jump:
    """Where a rising series crosses halfway from its start to its end (the median of its last three points)."""

    step: int  # the first step at or above the midpoint
    onset: int  # the last step before it still within 10% of the rise from the start
    before: float  # the value at `onset`
    after: float  # the value at the end
    steepest: float = 1.0  # the largest share of the rise made within JUMP_WINDOW of the run's steps
    window: int = 0  # that window, in steps

    @property
    def abrupt(self) -> bool:
        return self.steepest >= JUMP_SHARE

    @property
    def shape(self) -> str:
        """ "a jump (64% of the rise within 500 steps)" or "a ramp (only 27% of the rise within any 750 steps)"."""
        share = f"{self.steepest:.0%} of the rise within"
        return (
            f"a jump ({share} {self.window} steps)" if self.abrupt else f"a ramp (only {share} any {self.window} steps)"
        )


def _steepest_share(steps: Sequence[int], values: Sequence[float], rise: float) -> tuple[float, int]:
    """(the largest share of `rise` that the running median of `values` makes within JUMP_WINDOW of the run, that
    window in steps)."""
    smooth = running_median(values, JUMP_SMOOTHING // 2)
    at = np.asarray(steps)
    window = int(round(JUMP_WINDOW * (at[-1] - at[0])))
    ends = np.searchsorted(at, at + window, side="right")  # (n,) the first point past each point's window
    best = max(float(smooth[i:end].max() - smooth[i]) for i, end in enumerate(ends))
    return min(best / rise, 1.0), window


def running_median(values: Sequence[float], half: int) -> np.ndarray:
    """The median of each point's neighbourhood values[i - half : i + half + 1] (cut at the ends), (n,).

    The training loop asks for it on every snapshot of a long run (tinygpt.runs.moments: 2,000 score records for a
    20,000-step run): the whole windows go as one (n - 2 half, 2 half + 1) view, and np.median of each row is the
    same number the per-point call gave (a test holds them equal), at a thousandth of the cost."""
    v = np.asarray(values, dtype=float)
    n, width = len(v), 2 * half + 1
    out = np.empty(n)
    if n >= width:
        out[half : n - half] = np.median(np.lib.stride_tricks.sliding_window_view(v, width), axis=1)
    for i in [*range(min(half, n)), *range(max(half, n - half), n)]:  # the ends: shorter windows
        out[i] = np.median(v[max(0, i - half) : i + half + 1])
    return out


def find_rise(points: Sequence[tuple[int, float]], min_rise: float) -> Jump | None:
    """The midpoint crossing of a series of (step, value) that rises by at least `min_rise`, abrupt or not (`Jump.
    abrupt`), else None."""
    # A diverging run's scores go NaN or infinite: no rise is read from them (a NaN end made `rise < min_rise`
    # false and the midpoint search found nothing: StopIteration inside the training loop failed the run).
    points = [(s, v) for s, v in points if v is not None and math.isfinite(v)]
    if len(points) < 3:
        return None
    steps, values = [p[0] for p in points], [p[1] for p in points]
    start, end = values[0], float(np.median(values[-3:]))
    rise = end - start
    if not rise >= min_rise:
        return None
    i = next((j for j, v in enumerate(values) if v >= start + rise / 2), None)
    if i is None:
        return None
    onset = max([j for j in range(i) if values[j] <= start + 0.1 * rise], default=0)
    steepest, window = _steepest_share(steps, values, rise)
    return Jump(steps[i], steps[onset], values[onset], values[-1], steepest, window)


def find_jump(points: Sequence[tuple[int, float]], min_rise: float) -> Jump | None:
    """The midpoint crossing of a series of (step, value) that jumps (rises by at least `min_rise`, at least
    JUMP_SHARE of that within JUMP_WINDOW of its steps), else None: a ramp is no jump."""
    rise = find_rise(points, min_rise)
    return rise if rise is not None and rise.abrupt else None


def jump_window(points: Sequence[tuple[int, float]], min_rise: float) -> tuple[int, int] | None:
    """(first, last) step of a jump in (step, value) points: from its onset (`find_jump`) to the first point at or
    above 90% of the rise, so the midpoint crossing that the charts mark lies inside it. None without a jump."""
    jump = find_jump(points, min_rise)
    if jump is None:
        return None
    start, end = points[0][1], float(np.median([v for _, v in points[-3:]]))
    top = start + 0.9 * (end - start)
    last = next((s for s, v in points if s >= jump.step and v >= top), points[-1][0])
    return jump.onset, last


def phase_point(record: dict) -> tuple[float | None, float | None]:
    """One score record's (best induction score, first-copy minus second-copy loss): the two series whose jumps
    make the phase change (`phase_change`), for a caller that follows them record by record (the training loop
    keeps the snapshots and checkpoints inside the jump: tinygpt.runs.retention.Moments)."""
    best = best_series([record])
    gap = copy_loss_series([record])
    return (best[0]["score"] if best else None), (gap[0]["gap"] if gap else None)


@dataclass
class PhaseChange:
    """The induction-head phase change in one run's score records (Olsson et al. 2022, sec. 3)."""

    score: Jump | None  # the best head's induction score jumping (None: no rise of MIN_SCORE_JUMP, or a ramp)
    gap: Jump | None  # the in-context gain, first-copy loss - second-copy loss, jumping (MIN_GAP_RISE)
    head: str | None  # the best induction head at the end
    final_score: float | None  # its score there
    baseline: float | None  # the uniform-attention induction score
    second_before: float | None = None  # second-copy loss at the score jump's onset, and at the end
    second_after: float | None = None
    score_ramp: Jump | None = None  # the score's rise when it was a ramp, not a jump (what the verdict says it was)
    gap_ramp: Jump | None = None
    jump_head: str | None = None  # the best head at the score jump's step (`score.step`): `head` may be another

    @property
    def found(self) -> bool:
        return self.score is not None and self.gap is not None

    @property
    def whose(self) -> str:
        """Whose score the jump is in, from the best series itself: "L1H2's at the jump and at the last snapshot",
        or "L1H2's at the jump, L1H1's at the last snapshot" when the top head changed between them. "" without a
        score jump."""
        if self.score is None or self.jump_head is None:
            return ""
        if self.jump_head == self.head:
            return f"{self.head}'s at the jump and at the last snapshot"
        return f"{self.jump_head}'s at the jump, {self.head}'s at the last snapshot"


def phase_change(records: Sequence[dict]) -> PhaseChange:
    best = best_series(records)
    copy = copy_loss_series(records)
    score_rise = find_rise([(p["step"], p["score"]) for p in best], MIN_SCORE_JUMP)
    gap_rise = find_rise([(p["step"], p["gap"]) for p in copy], MIN_GAP_RISE)
    score, gap = (r if r is not None and r.abrupt else None for r in (score_rise, gap_rise))
    baseline = (records[-1].get("baselines") or {}).get("induction") if records else None
    change = PhaseChange(score, gap, best[-1]["name"] if best else None, best[-1]["score"] if best else None, baseline)
    change.score_ramp, change.gap_ramp = (r if r is not None and not r.abrupt else None for r in (score_rise, gap_rise))
    if score is not None:
        change.jump_head = next(p["name"] for p in best if p["step"] == score.step)
    if score is not None and copy:
        second = {p["step"]: p["second"] for p in copy}
        change.second_before, change.second_after = second.get(score.onset), copy[-1]["second"]
    return change
