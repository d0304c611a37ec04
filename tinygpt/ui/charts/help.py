"""What to look for in each chart: `CHART_HELP[name]`, one or two sentences the app shows under the chart.

Keys are the chart functions' names (plus "update_ratios", the ratio view of `layer_grad_chart`), which is also how
the "Show the code" expander finds a chart's library functions (tinygpt/ui/teach/workshop.py). Plain text only: this
module imports nothing, so reading the help never loads altair or plotly.
"""

CHART_HELP: dict[str, str] = {
    "loss_chart": "Training loss should start near the dashed ln(V) line (a uniform guess) and fall below it within "
    "a few dozen steps. With the settings unchanged, validation loss rising while training loss falls is "
    "overfitting; a gap from the first eval is not (held-out text unlike the training text). Under a mask that "
    "shows the next character both curves plunge once the model copies it: the note says if it did.",
    "lr_chart": "The learning rate the optimizer used at each step. The faint line is the plan from now on, "
    "with the knobs in force (none for a finished or stopped run); the vertical rule is where training is now.",
    "grad_norm_chart": "The size of the whole gradient before clipping (log scale). Points above the clip line were "
    "scaled down to it (orange points).",
    "layer_grad_chart": "Gradient norm of each layer's parameters, above the learning rate on the same steps. "
    "Layers should stay within a few orders of magnitude of each other; a line falling to the floor is a layer that "
    "no longer learns (for example a detached residual path).",
    "update_ratios": "How much one step changes each layer's weights, relative to their size. Around 1e-3 is the "
    "classic healthy value; far above it training is unstable, far below it that layer barely moves.",
    "layer_grad_heatmap": "Rows are layers, columns are steps, colour is the gradient norm (log10). A row that "
    "goes dark stopped receiving gradient; a bright column is a gradient spike, often followed by a loss spike.",
    "update_ratio_heatmap": "Rows are layers, columns are steps, colour is the update/weight ratio (log10): how much "
    "one step changed that layer's weights relative to their size. Around -3 (1e-3) is healthy; a dark row barely "
    "moves, a bright column is an unstable step.",
    "attention_grid": "Each square is one head: row = the character attending, column = the character attended to. "
    "Early in training rows are flat; watch heads specialise, e.g. a bright diagonal just left of the main one is a "
    "head that looks at the previous character.",
    "attention_detail": "One head, step by step: raw scores q·k, multiplied by the run's scale, the mask, the "
    "masked scores (blank = not allowed) and softmax rows that each sum to 1.",
    "mask_matrix": "Which keys each query position may attend to (row = query, column = key).",
    "mask_comparison": "The same head on the same text and checkpoint under each mask: each mask's panel shows what "
    "it allows, its weights panel where the head then looks. Under none and off by one it can look at the character "
    "it must predict.",
    "head_stats_chart": "Entropy of each head's attention (nats, averaged over positions): on the dashed line a "
    "head spreads its weight evenly over every key the mask lets it see, near 0 it looks at one character. Max "
    "weight near 1 means softmax has saturated to one-hot.",
    "next_char_chart": "The model's probabilities at the step that drew the last character (from the characters "
    "before it), before (temperature 1, no filtering) and after temperature, top-k and top-p. Lower temperature "
    "sharpens the bars; top-k and top-p cut the tail to zero.",
    "attention_row_chart": "Where each head looked when it produced the newest character: one row per layer and "
    "head, one column per context character.",
    "compare_chart": "The same curve for several runs on one axis: the gap between the lines comes from what "
    "differs between them, which the table lists; a different seed alone moves a curve too. Runs on different "
    "texts (another corpus, or data.text_sha256 in the table) differ by their text as well: their losses are not on "
    "one scale.",
    "lab_compare_chart": "The experiment's runs on one axis, solid the training loss, dashed the held-out loss: the "
    "runs share their text, seed and batches and differ only in the settings the experiment names (the mask "
    "experiment's three runs one each, the warmup experiment's four in warmup and learning rate), so the gap "
    "between two lines is the effect of what differs between those two.",
    "memory_chart": "Where the memory goes. Parameters, gradients and optimizer state grow with the model; "
    "activations grow with batch x context, and the attention maps with context squared.",
    "role_history_chart": "Each head's role scores over training, one panel per role, the dashed line a head with "
    "uniform attention. A previous-token head rises first; an induction head appears later, often suddenly, once it "
    "can read a previous-token head's output (Olsson et al. 2022). Purple rules are live knob changes.",
    "residual_chart": "Left: the size of the residual stream entering each block (solid) and of what that block's "
    "LayerNorm hands on (dashed). Right: how much each attention and MLP sublayer writes into the stream.",
    "phase_change_chart": "Top: the best head's induction score in each run, at each training-time snapshot. "
    "Bottom: the loss on the first and the second copy of a repeated random probe. When the 2-layer model forms an "
    "induction head, the second copy becomes cheap to predict at the same step (red rule); the 1-layer control "
    "cannot compose two heads and stays flat.",
    "ablation_heatmap": "How much the loss rises when one head is switched off (zero: its output set to 0; mean: "
    "set to its average over the validation tokens). Each head is switched off alone: a red head matters on its "
    "own; a near-white one changes little alone, which does not say several could go at once (heads can stand in "
    "for each other). Blue: switching that head off lowered the loss on these windows. Which validation cells stand "
    "out of their noise is said below.",
    # said only where the probe's panel is drawn (a review read it under a heatmap whose probe was refused)
    "ablation_probe": "The probe's panel is one text, with no noise of its own, so a cell near zero there says "
    "little. On the probe an induction head's ablation shows most where text repeats.",
    "ablated_probs_chart": "For every position of the probe, the probability the model gives the character that "
    "really comes next, with all heads on (blue) and with the chosen head ablated (red).",
    "logit_lens_chart": "The stream after each layer read through the final LayerNorm and the output head, as if "
    "the model stopped there: the top guess in each cell (✓ = the right next character) and its probability as "
    "colour. The layer where the answer first appears is where it was computed. The embeddings row mostly guesses the "
    "input character itself: the output head is the embedding matrix (tied), and a vector scores highest against "
    "itself.",
}


def mask_caption(mode: str, window: int) -> str:
    """What the mask in force lets each query see, for the mask matrix's caption."""
    return {
        "causal": "Causal: lower-triangular, each position sees itself and the past, never the future.",
        "none": "None: every position sees every other, the future included, so the model can read the very "
        "character it must predict: training loss falls 'too well' and samples are garbage.",
        "off_by_one": "Off by one: the causal mask shifted one column right, so position t also sees t+1, exactly "
        "the character it must predict (the classic misaligned tril).",
        "sliding_window": f"Sliding window: causal, and only the last {window} positions (itself included): a "
        "band along the diagonal.",
    }.get(mode, f"Mask {mode}.")


# "multiplied by 1 (no scaling)", not "1 (1 (no scaling))" (a review)
SCALE_WORDS = {"head_dim": "1/√d_head", "hidden_dim": "1/√d_model (the common bug)", "none": "no scaling"}


def detail_caption(
    attn_scale: str, scale: float, head_dim: int | None, mask: str, window: int, multiplier: float = 1.0
) -> str:
    """The step-by-step view's caption, from the knobs the checkpoint was saved with; `multiplier` the model's
    attn_scale_mult (the softmax lab's ×24 read "multiplied by 24 (1 (no scaling))": a review)."""
    words, mult = SCALE_WORDS.get(attn_scale, attn_scale), ""
    if head_dim and attn_scale == "head_dim" and abs(scale * head_dim**0.5 - 1) > 1e-6:
        mult = f" × {scale * head_dim**0.5:g}"
    elif attn_scale != "head_dim" and abs(multiplier - 1) > 1e-9:
        words, mult = ("no 1/√d scaling" if attn_scale == "none" else words), f" × {multiplier:g}"
    saturate = " Without the 1/√d_head scale the scores grow with d_head and softmax saturates." if scale >= 1 else ""
    return f"Scores q·k are multiplied by {scale:.4g} ({words}{mult}).{saturate} " + mask_caption(mask, window)
