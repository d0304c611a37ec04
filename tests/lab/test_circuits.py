"""Head-role scores against attention patterns built by hand, the repeated probe, the phase change finder, and the
scores the training loop stores with every snapshot."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import tiny_config

from tinygpt.attention import build_mask
from tinygpt.config import DataConfig, TransformerConfig
from tinygpt.data import COPYVAR_CHOICES, load_corpus, make_synthetic, solve
from tinygpt.inside import heads
from tinygpt.lab import induction
from tinygpt.model import TinyGPT
from tinygpt.probes import attention_forward
from tinygpt.runs.control import QueueControl
from tinygpt.runs.files import read_events, read_json, read_scores
from tinygpt.runs.knobs import knob_answer, knobs_now
from tinygpt.runs.loop import run_training
from tinygpt.runs.store import RunStore

T = 16
PHASE_TEST_STEPS = 1800  # of the experiment's 3000: its best head passed 0.4 by ~1500 on 5 of 5 seeds
CAUSAL = build_mask("causal", T).numpy()


def uniform_head(size: int = T) -> np.ndarray:
    mask = build_mask("causal", size).numpy()
    return mask / mask.sum(axis=-1, keepdims=True)  # (T, T): every visible key the same weight


def previous_token_head(size: int = T) -> np.ndarray:
    pattern = np.zeros((size, size))
    pattern[0, 0] = 1.0
    pattern[np.arange(1, size), np.arange(size - 1)] = 1.0  # row t looks at t - 1
    return pattern


def induction_head(n: int) -> np.ndarray:
    """On r_0 .. r_{n-1} r_0 .. r_{n-1}: the second copy's r_i looks at i + 1; the first copy looks at itself."""
    pattern = np.eye(2 * n)
    rows = np.arange(n, 2 * n)
    pattern[rows] = 0.0
    pattern[rows, rows - n + 1] = 1.0
    return pattern


def scores_of(pattern: np.ndarray) -> dict[str, float]:
    scores, _ = heads.role_scores(
        pattern[None, None], CAUSAL[: len(pattern), : len(pattern)], heads.ROLES[:1] + heads.ROLES[2:]
    )
    rows, keys = heads.role_keys("induction", len(pattern))
    scores["induction"] = heads.stripe_score(pattern[None, None], rows, keys)
    return {role: float(value[0, 0]) for role, value in scores.items()}


def test_a_pure_previous_token_head_scores_one_there_and_zero_elsewhere():
    s = scores_of(previous_token_head())
    assert s["previous"] == 1.0 and s["self"] == 0.0 and s["first"] == pytest.approx(1 / (T - 1))  # row 1's t-1 is 0


def test_a_pure_induction_head_on_a_repeated_sequence():
    s = scores_of(induction_head(T // 2))
    assert s["induction"] == 1.0
    assert s["previous"] < 0.1  # only row n (whose i + 1 is 1, not n - 1) ... none look back one
    assert 0.4 < s["self"] < 0.6  # the first copy looks at itself


def test_a_uniform_head_scores_exactly_its_baseline():
    pattern = uniform_head()
    s = scores_of(pattern)
    _, baselines = heads.role_scores(pattern[None, None], CAUSAL)
    for role in ("previous", "self", "first"):
        assert s[role] == pytest.approx(baselines[role])
        assert baselines[role] == pytest.approx(np.mean(1.0 / np.arange(2, T + 1)))  # 1 / (t + 1), t = 1 .. T-1
    rows, keys = heads.role_keys("induction", T)
    assert s["induction"] == pytest.approx(heads.uniform_baseline(CAUSAL, rows, keys))


def test_baselines_follow_the_mask():
    none = np.ones((T, T), dtype=bool)
    rows, keys = heads.role_keys("previous", T)
    assert heads.uniform_baseline(none, rows, keys) == pytest.approx(1 / T)
    window = build_mask("sliding_window", T, window=2).numpy()
    assert heads.uniform_baseline(window, rows, keys) == pytest.approx(0.5)  # each row sees itself and t - 1


def test_the_repeated_probe_holds_two_copies_of_distinct_characters():
    vocab = list("\n.>abcdefghijklmnopqrstuvwxyz")
    idx = heads.induction_probe(vocab, 32)
    assert idx.shape == (heads.INDUCTION_ROWS, 32)
    first, second = idx[:, :16], idx[:, 16:]
    assert torch.equal(first, second)
    assert all(len(set(row.tolist())) == 16 for row in first)  # so "the previous occurrence" is one position
    assert all(vocab[i].isalpha() for i in idx.flatten().tolist())  # no structure characters
    assert torch.equal(idx, heads.induction_probe(vocab, 32))  # the same probe at every snapshot
    assert heads.induction_probe(vocab, 64).shape == (heads.INDUCTION_ROWS, 52)  # n: capped by the 26 letters
    assert heads.induction_probe(["a"], 32) is None and heads.induction_probe(vocab, 3) is None


def test_copy_losses_read_the_two_halves():
    n, V = 4, 6
    idx = torch.tensor([[1, 2, 3, 4, 1, 2, 3, 4]])
    logits = torch.zeros(1, 2 * n, V)
    logits[0, n:-1] = -20.0
    logits[0, torch.arange(n, 2 * n - 1), idx[0, n + 1 :]] = 20.0  # the second copy predicted perfectly
    first, second = heads.copy_losses(logits, idx)
    assert first == pytest.approx(np.log(V)) and second == pytest.approx(0.0, abs=1e-6)


def record(step: int, induction: float, first: float = 3.3, second: float = 3.3, previous: float = 0.1) -> dict:
    roles = {
        "previous": [[previous, 0.1]],
        "induction": [[0.05, induction]],
        "first": [[0.1, 0.1]],
        "self": [[0.1, 0.1]],
    }
    baselines = {"previous": 0.1, "induction": 0.05, "first": 0.1, "self": 0.1}
    return {"step": step, "roles": roles, "baselines": baselines, "copy_loss": {"first": first, "second": second}}


def test_phase_change_is_where_the_best_score_and_the_in_context_gain_jump():
    records = [record(s, 0.05) for s in range(0, 100, 10)]
    records += [record(100, 0.3, second=2.5), record(110, 0.6, second=1.0)]
    records += [record(s, 0.7, second=0.5) for s in range(120, 200, 10)]
    change = heads.phase_change(records)
    assert change.found and change.head == "L0H1"
    assert change.score.step == 110 and change.score.onset == 90 and change.score.before == 0.05
    assert change.score.after == 0.7 and change.gap.step == 110
    assert change.second_before == 3.3 and change.second_after == 0.5
    flat = heads.phase_change([record(s, 0.05 + 0.001 * s) for s in range(0, 200, 10)])
    assert not flat.found and flat.score is None


def test_head_roles_say_since_when():
    records = [record(s, 0.05, previous=0.1) for s in range(0, 50, 10)]
    records += [record(s, 0.8 if s >= 80 else 0.05, previous=0.6) for s in range(50, 120, 10)]
    rows = {r.name: r for r in heads.head_roles(records)}
    assert rows["L0H0"].role == "previous" and rows["L0H0"].since == 50
    assert rows["L0H1"].role == "induction" and rows["L0H1"].since == 80
    assert rows["L0H1"].sentence == (
        "L0H1 is an induction head since step 80 (score 0.80, 16.0x its uniform baseline 0.05)."
    )
    early = {r.name: r for r in heads.head_roles(records, step=45)}
    assert early["L0H0"].role is None and early["L0H1"].role is None


def test_the_loop_stores_scores_with_every_snapshot(tmp_path, tiny_text):
    store = RunStore(tmp_path)
    config = tiny_config(tiny_text)
    with store.create(config.to_dict(), owner="cli") as writer:
        run_dir = writer.run_dir
    assert run_training(run_dir, config) == "finished"
    records = read_scores(run_dir)
    snapshots = [s["step"] for s in store.reader(run_dir.name).attention_index()["snapshots"]]
    assert [r["step"] for r in records] == snapshots == [0, 5, 10, 15, 20]
    first = records[0]
    L, H = config.model.num_layers, config.model.num_heads
    for role in heads.ROLES:
        grid = np.array(first["roles"][role])
        assert grid.shape == (L, H) and ((grid >= 0) & (grid <= 1)).all()
        assert 0 < first["baselines"][role] < 1
    assert set(first["copy_loss"]) == {"first", "second"}
    assert len(first["residual"]["resid"]) == L + 1 and len(first["residual"]["attn"]) == L


def test_copyvar_repeats_pseudo_words_of_every_length_back_to_back():
    task = make_synthetic("copyvar", 500, 12, seed=0)
    assert task.text == "".join(w + w for w, _ in task.problems)  # no separators, no lines
    lengths = {len(w) for w, _ in task.problems}
    assert lengths == set(range(4, 13))  # no fixed offset
    assert all(a == w and solve("copyvar", w) == w for w, a in task.problems)
    follow: dict[str, set[str]] = {}
    for word, _ in task.problems:
        for i in range(2, len(word)):
            follow.setdefault(word[i - 2 : i], set()).add(word[i])
    assert max(len(s) for s in follow.values()) <= COPYVAR_CHOICES  # a second-order chain: t-1 and t tell t+1
    assert make_synthetic("copyvar", 50, 12, seed=0) == make_synthetic("copyvar", 50, 12, seed=0)
    corpus = load_corpus(DataConfig(source="synthetic:copyvar", synthetic_examples=200, synthetic_digits=12), 32)
    assert corpus.description.startswith("synthetic copyvar (200 words of 4-12 letters, each twice)")


def final(mean: float, std: float = 0.05, rows: int = 256, head: str = "L0H1", baseline: float = 0.05) -> dict:
    """What circuits.final_induction returns for a run's last checkpoint."""
    half = 1.96 * std / rows**0.5
    return {"head": head, "mean": mean, "std": std, "low": mean - half, "high": mean + half, "rows": rows,
            "baseline": baseline, "step": 190}  # fmt: skip


def test_the_verdict_needs_both_jumps_together_and_a_flat_control():
    two = [record(s, 0.05) for s in range(0, 100, 10)]
    two += [record(s, 0.7, second=0.5) for s in range(100, 200, 10)]
    flat = [record(s, 0.05) for s in range(0, 200, 10)]
    labels = list(induction.INDUCTION_VARIANTS)
    measured = {labels[0]: final(0.7), labels[1]: final(0.06)}
    verdict = induction.induction_verdict({labels[0]: two, labels[1]: flat}, final=measured)
    assert verdict.reproduced is True and verdict.status == "reproduced"
    assert verdict.observed["phase change step (score)"] == 100
    assert verdict.observed["second-copy loss before"] == 3.3 and verdict.observed["second-copy loss after"] == 0.5
    jumped = ("The best induction score of the training-time snapshots (L0H1's at the jump and at the last "
              "snapshot) jumped from 0.05 at step 90, the phase change at step 100")  # fmt: skip
    assert jumped in verdict.sentence
    assert (
        "L0H1's own snapshot score jumped at step 100; the final measurement at step 190 picks L0H1: 0.70 ± 0.05"
        in verdict.sentence
    )
    flat_control = {**measured, labels[1]: final(0.7)}
    assert induction.induction_verdict({labels[0]: two, labels[1]: two}, final=flat_control).reproduced is False
    assert induction.induction_verdict({labels[0]: flat, labels[1]: flat}, final=measured).reproduced is False
    assert induction.induction_verdict({labels[0]: two, labels[1]: flat}, ended=False).reproduced is None


def test_the_verdict_score_comes_from_many_probe_rows_not_the_two_live_ones():
    """Issue 23 finding 3: seed 12 of the copyvar experiment ended at 0.374 on the live score's 2 probe rows, under
    the 0.4 bar, and the verdict said "did not reproduce", while the same head scored 0.44-0.45 on 256 rows."""
    labels = list(induction.INDUCTION_VARIANTS)
    two = [record(s, 0.05) for s in range(0, 100, 10)] + [record(s, 0.374, second=0.5) for s in range(100, 200, 10)]
    flat = [record(s, 0.05) for s in range(0, 200, 10)]
    measured = {labels[0]: final(0.445, std=0.12), labels[1]: final(0.06)}
    verdict = induction.induction_verdict({labels[0]: two, labels[1]: flat}, final=measured)
    assert verdict.reproduced is True, verdict.sentence
    assert "0.45 ± 0.12 across 256 probe rows (mean's 95% interval 0.43-0.46)" in verdict.sentence
    assert verdict.observed["best score after"] == 0.45 and verdict.observed["probe rows"] == 256


def test_an_induction_verdict_on_too_few_rows_says_not_enough_data_and_a_red_one_names_its_clause():
    labels = list(induction.INDUCTION_VARIANTS)
    two = [record(s, 0.05) for s in range(0, 100, 10)] + [record(s, 0.7, second=0.5) for s in range(100, 200, 10)]
    flat = [record(s, 0.05) for s in range(0, 200, 10)]
    for measured in (None, {labels[0]: final(0.7, rows=2), labels[1]: final(0.06)}, {labels[0]: final(0.7)}):
        verdict = induction.induction_verdict({labels[0]: two, labels[1]: flat}, final=measured)
        assert verdict.reproduced is None and verdict.status == "not enough data", verdict.sentence
        assert verdict.sentence.startswith("Not enough data") and "at least 64" in verdict.sentence
    low = {labels[0]: final(0.38), labels[1]: final(0.06)}
    verdict = induction.induction_verdict({labels[0]: two, labels[1]: flat}, final=low)
    assert verdict.reproduced is False
    assert verdict.sentence.endswith("Failed: its best head ending above 0.4 (mean over 256 probe rows).")
    wide = {labels[0]: final(0.7), labels[1]: final(0.5)}
    verdict = induction.induction_verdict({labels[0]: two, labels[1]: flat}, final=wide)
    assert verdict.sentence.endswith("Failed: the 1-layer control's best head within lift 0.15 of uniform.")


def by_length(scores: dict[int, float], baseline: float = 0.05) -> dict:
    """final() with a measurement at each probe length {n: mean}, the longest as its top level."""
    out = {**final(scores[max(scores)], baseline=baseline), "length": max(scores)}
    out["by_length"] = {n: {**final(m, baseline=baseline), "length": n} for n, m in scores.items()}
    return out


def test_the_control_is_judged_at_every_probe_length_not_only_the_one_it_is_flat_at():
    """Issue 23 finding 4: the 1-layer control was near uniform at the probe's length (16) only; at 8-10, lengths of
    the copy task's own words, its best head scored 0.14-0.20 (2-3x uniform), and the verdict still said it "stays
    near the uniform baseline". It is now measured at 8, 12 and 16 and must stay far below the 2-layer model at each."""
    assert induction.probe_lengths(32) == (8, 12, 16) and induction.probe_lengths(16) == (4, 6, 8)
    assert heads.induction_probe(list("abcdefghijklmnopqrstuvwxyz"), 32, half_length=8).shape == (2, 16)
    labels = list(induction.INDUCTION_VARIANTS)
    two = [record(s, 0.05) for s in range(0, 100, 10)] + [record(s, 0.7, second=0.5) for s in range(100, 200, 10)]
    flat = [record(s, 0.05) for s in range(0, 200, 10)]
    positional = {labels[0]: by_length({8: 0.6, 12: 0.6, 16: 0.6}), labels[1]: by_length({8: 0.45, 12: 0.2, 16: 0.06})}
    verdict = induction.induction_verdict({labels[0]: two, labels[1]: flat}, final=positional)
    assert verdict.reproduced is False
    assert "Failed: at every probe length (8, 12, 16), the control at most 50% as far above uniform" in verdict.sentence
    assert "By probe length, best score 2 layers / control: 8: 0.60 / 0.45, 12: 0.60 / 0.20, 16: 0.60 / 0.06" in (
        verdict.sentence
    )
    assert verdict.observed["best score at length 8, 2 layers / control"] == "0.60 / 0.45 (uniform 0.05)"
    far_below = {labels[0]: by_length({8: 0.6, 12: 0.6, 16: 0.6}), labels[1]: by_length({8: 0.2, 12: 0.1, 16: 0.06})}
    verdict = induction.induction_verdict({labels[0]: two, labels[1]: flat}, final=far_below)
    assert verdict.reproduced is True, verdict.sentence
    assert "within lift 0.15 of uniform on the longest probe (16 letters twice)" not in verdict.sentence  # held


def test_induction_spread_measures_the_same_score_as_the_live_one_on_the_same_rows():
    torch.manual_seed(0)
    vocab = list("abcdefghijklmnopqrstuvwxyz .")
    model = TinyGPT(TransformerConfig(vocab_size=len(vocab), hidden_dim=32, num_layers=2, num_heads=2, max_seq_len=16))
    model.eval()
    spread = induction.induction_spread(model, vocab)  # (256, 16) probe: 8 random letters twice
    assert spread["rows"] == 256 and spread["std"] > 0 and spread["low"] < spread["mean"] < spread["high"]
    assert spread["baseline"] == pytest.approx(heads.uniform_baseline(
        build_mask("causal", 16).numpy(), *heads.role_keys("induction", 16)))  # fmt: skip
    live_idx = heads.induction_probe(vocab, 16)  # the live score's 2 rows
    probe = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7]])
    with torch.no_grad():
        _, maps = attention_forward(model, probe)
    weights = torch.stack([m[0] for m in maps]).numpy()  # (L, H, T, T)
    live = heads.snapshot_scores(model, weights, probe, live_idx)["roles"]["induction"]
    two_rows = induction.induction_spread(model, vocab, rows=2, seed=heads.PROBE_SEED)
    # The head is chosen on other rows (issue 33), so compare the chosen head's score, not the live maximum.
    layer, head = (int(n) for n in two_rows["head"][1:].split("H"))
    assert two_rows["mean"] == pytest.approx(np.asarray(live)[layer, head], abs=1e-4)
    configs = induction.induction_configs("synthetic:copyvar", seed=7)
    assert [c.model.num_layers for c in configs.values()] == [2, 1]
    assert {c.train.seed for c in configs.values()} == {7}


@pytest.mark.slow  # ~1 minute on 2 cores: the experiment's own settings, stopped once the phase change is past
def test_a_two_layer_model_forms_an_induction_head_and_a_one_layer_model_cannot(tmp_path):
    configs = induction.induction_configs("synthetic:copyvar", seed=1337)
    store, records = RunStore(tmp_path), {}
    for label, config in configs.items():
        with store.create(config.to_dict(), owner="cli") as writer:
            run_dir = writer.run_dir
        control = QueueControl()

        def stop_at(record, control=control):
            if record["step"] == PHASE_TEST_STEPS:
                control.send({"cmd": "stop"})

        assert run_training(run_dir, config, control, threads=1, on_record=stop_at) == "stopped"
        records[label] = read_scores(run_dir)
    two, one = (heads.phase_change(records[label]) for label in configs)
    assert two.final_score > heads.ROLE_THRESHOLD, two
    assert two.gap is not None and two.second_after < two.second_before - 1.0, two  # the second copy got cheap
    assert heads.lift(one.final_score, one.baseline) < induction.CONTROL_MAX_LIFT, one


def test_read_scores_drops_what_a_rewound_run_abandoned(tmp_path):
    writer = RunStore(tmp_path).create({}, owner="cli")
    for step, score in ((0, 0.1), (10, 0.2), (20, 0.3), (10, 0.9), (20, 0.8)):  # resumed from step 0's checkpoint
        writer.append_scores({"step": step, "score": score, "roles": {"induction": [[score]]}})
    writer.close()
    assert [(r["step"], r["score"]) for r in read_scores(writer.run_dir)] == [(0, 0.1), (10, 0.9), (20, 0.8)]
    assert read_scores(tmp_path / "nothing") == []


def test_a_head_switched_off_live_is_answered_and_marked(tmp_path, tiny_text):
    config = tiny_config(tiny_text)
    with RunStore(tmp_path).create(config.to_dict(), owner="cli") as writer:
        run_dir = writer.run_dir
    control = QueueControl()

    def switch(record):
        if record["step"] == 8:
            control.send({"cmd": "knob", "name": "ablated_heads", "value": "L1H0", "request": "r1"})
        if record["step"] == 9:
            control.send({"cmd": "knob", "name": "ablated_heads", "value": "L5H0", "request": "r2"})

    assert run_training(run_dir, config, control, on_record=switch) == "finished"
    events = read_events(run_dir)
    applied, refused = knob_answer(events, "r1"), knob_answer(events, "r2")
    assert applied["ok"] and applied["old"] == "" and applied["new"] == "L1H0" and applied["step"] == 8
    assert not refused["ok"] and "layers 0-1" in refused["error"]
    assert knobs_now(read_json(run_dir / "config.json"), events)["ablated_heads"] == "L1H0"
    late = read_scores(run_dir)[-1]  # the switched-off head still attends; it just writes nothing
    assert len(late["roles"]["previous"]) == config.model.num_layers


def test_scores_of_a_one_character_probe_warn_nothing():
    """Issue 24 finding 8: the tests printed numpy's "Mean of empty slice" from here (a probe too short for a
    role has no rows to average): such a score is NaN, "not enough data", and no warning."""
    import warnings

    weights, mask = np.ones((2, 4, 1, 1)), np.ones((1, 1), dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores, baselines = heads.role_scores(weights, mask)
    assert scores["previous"].shape == (2, 4) and np.isnan(scores["previous"]).all()
    assert np.isnan(baselines["previous"])


def test_second_copy_ablation_equals_switching_each_head_off_in_the_model():
    """The numbers the lesson's ablation check and the Circuits heatmap's second-copy panel both read: each head's
    zero ablation against the model's own live head switch, on the same repeated probe rows."""
    torch.manual_seed(0)
    model = TinyGPT(TransformerConfig(vocab_size=12, hidden_dim=32, num_layers=2, num_heads=4, max_seq_len=16))
    for p in model.parameters():  # a trained-looking model: GPT-2's init makes every head's effect tiny
        p.data.normal_(0, 0.3)
    model.eval()
    vocab = list("abcdefghijkl")
    deltas = induction.second_copy_ablation(model, vocab, rows=8)  # (L, H)
    probe = heads.induction_probe(vocab, 16, 8, induction.VERDICT_SEED)  # (8, 2n)
    with torch.no_grad():
        clean = heads.copy_losses(model(probe), probe)[1]
        for layer, head in [(0, 1), (1, 3)]:
            model.config.ablated_heads = f"L{layer}H{head}"  # the live knob: the model zeroes that head itself
            try:
                expected = heads.copy_losses(model(probe), probe)[1] - clean
            finally:
                model.config.ablated_heads = ""
            assert deltas[layer, head] == pytest.approx(expected, abs=1e-5)
            model.config.ablated_heads = f"L{layer}H{head}"  # the first copy's change, measured the same way
            try:
                off = heads.copy_losses(model(probe), probe)[0]
            finally:
                model.config.ablated_heads = ""
            first = off - heads.copy_losses(model(probe), probe)[0]
            changed = induction.first_copy_change(model, vocab, layer, head, rows=8)
            assert changed == pytest.approx(first, abs=1e-5)
    assert deltas.shape == (2, 4) and np.abs(deltas).max() > 1e-3
    rows = induction.second_copy_rows(model, vocab, rows=8)  # the same, row by row: the Circuits panel's noise
    assert rows["deltas"].shape == (2, 4, 8) and np.allclose(rows["deltas"].mean(-1), deltas, atol=1e-6)
    with torch.no_grad():
        assert (rows["first"].mean(), rows["second"].mean()) == pytest.approx(heads.copy_losses(model(probe), probe))
    assert induction.head_index("L1H3") == (1, 3)
    short = TinyGPT(TransformerConfig(vocab_size=12, hidden_dim=32, num_layers=1, num_heads=2, max_seq_len=3))
    assert induction.second_copy_ablation(short, vocab) is None  # no space for two copies: nothing measured
