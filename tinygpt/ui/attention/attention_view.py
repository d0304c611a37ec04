"""The Attention page's figures, each built from one source and cached per session by what it depends on:
all heads from a snapshot or a checkpoint, one head step by step, every mask on the same text, and the head
statistics with the uniform reference of the mask in force. The numbers come from tinygpt.inside.maps.
"""

from __future__ import annotations

from typing import Any

from tinygpt.attention import build_mask
from tinygpt.config import MASKS
from tinygpt.inside import maps as inside
from tinygpt.runs.knobs import attention_spans
from tinygpt.runs.reader import RunReader
from tinygpt.ui.charts import heatmaps, masks, parts
from tinygpt.ui.charts import help as help_text
from tinygpt.ui.host import resources
from tinygpt.ui.screen import figure_cache
from tinygpt.ui.words import runinfo

TOY_PROBE_CHARS = 10  # toy mode's probe: short enough that every cell can show its number on a projector


def grid(rd: RunReader, step: int, probe: str, large: bool) -> tuple[Any, tuple | None, str, int]:
    """(figure, cache key, where it came from, the step it shows) of all heads at `step`: the run's own snapshot
    when `probe` is the run's probe, else `probe` run through the checkpoint nearest the step; (None, None, "",
    step) while custom text has no checkpoint to run through. The step shown is the one whose mask the page
    names (tinygpt.ui.words.leaks)."""
    index = rd.attention_index()
    run_probe = index.get("probe_text", "")
    if probe == run_probe and index.get("snapshots"):

        def from_snapshot():
            return heatmaps.attention_grid(rd.load_attention(step), index.get("tokens", list(run_probe)), large=large)

        key = (rd.run_id, "snapshot", step, large)
        return figure_cache.cached_figure("attn_grid", key, from_snapshot), key, f"snapshot at step {step}", step
    ck = runinfo.nearest_checkpoint(rd.checkpoints(), step)
    if ck is None:
        return None, None, "", step

    def from_checkpoint():
        loaded = resources.cached_model(str(rd.run_dir), ck)
        idx, tokens = inside.encode_probe(loaded.model, loaded.tokenizer, probe)
        return heatmaps.attention_grid(inside.attention_maps(loaded.model, idx), tokens, large=large)

    key = (rd.run_id, "ckpt", ck, probe, large)
    return figure_cache.cached_figure("attn_grid", key, from_checkpoint), key, f"checkpoint at step {ck}", ck


def detail(rd: RunReader, ck: int, layer: int, head: int, text: str, per_row: int, large: bool) -> tuple[Any, str]:
    """(figure, caption) of one head step by step at checkpoint `ck`, the caption from that checkpoint's knobs."""

    def build():
        loaded = resources.cached_model(str(rd.run_dir), ck)
        idx, tokens = inside.encode_probe(loaded.model, loaded.tokenizer, text)
        d = inside.attention_steps(loaded.model, idx, layer, head)
        fig = heatmaps.attention_detail(
            d["qk"], d["scaled"], d["mask"], d["masked"], d["weights"], tokens, per_row=per_row, large=large
        )
        model = loaded.config.model
        caption = help_text.detail_caption(
            model.attn_scale, d["scale"], model.head_dim, d["mask_mode"], d["window"], model.attn_scale_mult
        )
        return fig, caption

    return figure_cache.cached_figure("attn_detail", (rd.run_id, ck, layer, head, text, per_row, large), build)


def masks_side_by_side(rd: RunReader, ck: int, layer: int, head: int, text: str, window: int, large: bool):
    """Every mask mode on the same text and checkpoint, with the weights one head produces under each."""

    def build():
        loaded = resources.cached_model(str(rd.run_dir), ck)
        idx, tokens = inside.encode_probe(loaded.model, loaded.tokenizer, text)
        results = inside.attention_under_masks(loaded.model, idx, layer, head, MASKS, window)
        title = f"Every mask on the same text: L{layer} H{head}, checkpoint at step {ck}"
        # 12 positions at Large fonts: 16 in four panels of ~107 px overprinted their letters (a review); the title
        # says how many of the text's positions are drawn
        return masks.mask_comparison(results, tokens, title=title, large=large, max_tokens=12 if large else 16)

    return figure_cache.cached_figure("attn_masks", (rd.run_id, ck, layer, head, text, window, large), build, 4)


def mask_matrix(mode: str, window: int, tokens: list[str], large: bool) -> tuple[Any, str]:
    """(figure, caption) of the mask in force now."""
    mask = build_mask(mode, len(tokens), window).numpy()
    fig = masks.mask_matrix(mask, tokens, title=f"Mask: {mode}", large=large)
    return fig, help_text.mask_caption(mode, window)


def head_stats(rd: RunReader, mode: str, window: int, large: bool):
    """Entropy and max weight per head over training, with the uniform-attention entropy under the mask in force
    (the mean of ln(visible keys), not ln(T)) as the reference line: one over the steps of each stretch of mask and
    window the run trained under (runs.knobs.attention_spans), each labelled with its steps (a review's run,
    sliding window to step 1,009 and none after, read only "uniform under the none mask in force now = 3.47"
    across every step, where the window's uniform was 2.1)."""
    index = rd.attention_index()
    seq_len = len(index.get("tokens") or index.get("probe_text") or "")
    uniform = []
    if seq_len > 1:
        newest = max([int(s["step"]) for s in index.get("snapshots", [])] or [0])
        spans = attention_spans(rd.config(), rd.events, max(newest, 1)) or [(mode, window, 0, newest)]
        # The steps under each pattern, as the other pages count them (a change recorded at a applies from a + 1),
        # all of one pattern's stretches in one label: two labels of one value lay on each other (a review)
        ranges: dict[tuple, list[str]] = {}
        for m, w, a, b in spans:
            ranges.setdefault((m, w), []).append(f"{a + 1 if a else 0:,}-{b:,}")
        for m, w, a, b in spans:  # each stretch of mask and window, its line over its own steps
            value = inside.uniform_entropy(build_mask(m, seq_len, w or window).numpy())
            if len(spans) > 1:  # short: several labels share the plot's width (the chart's caption says the rest)
                label = f"uniform, {m}" + (f" {w}" if w else "") + f", steps {', '.join(ranges[m, w])}: {value:.2f}"
            else:
                pattern = f"the {m} mask" + (f" (window {w})" if w else "")
                label = f"uniform under {pattern} in force now (T={seq_len}): mean ln(visible keys) = {value:.2f}"
            uniform.append((value, label, a, b))
    uniform = tuple(uniform)
    steps = tuple(int(s["step"]) for s in index.get("snapshots", []))
    key = (rd.run_id, steps, uniform, large)  # rebuilt only when the snapshots or the mask changed

    def build():
        return parts.head_stats_chart(resources.head_stats(rd), uniform=uniform, large=large)

    return figure_cache.cached_figure("head_stats", key, build, 2)
