"""What to look for in each chart: `CHART_HELP[name]`, one or two sentences the app shows under the chart.

Keys are the chart functions' names (plus "update_ratios", the ratio view of `layer_grad_chart`), which is also how
the "Show the code" expander finds a chart's library functions (tinygpt/ui/workshop.py). Plain text only: this
module imports nothing, so reading the help never loads altair or plotly.
"""

CHART_HELP: dict[str, str] = {
    "loss_chart": "Training loss should start near the dashed ln(V) line (a uniform guess over the vocabulary) and "
    "fall below it within a few dozen steps. Validation loss pulling away upward from training loss is overfitting.",
    "lr_chart": "The learning rate the optimizer used at each step: a linear warmup, then a cosine decay. "
    "The faint line is the plan; the vertical rule is where training is now.",
    "grad_norm_chart": "The size of the whole gradient before clipping (log scale). Points above the clip line were "
    "scaled down to it; many clipped steps early on usually mean the learning rate is too high or warmup too short.",
    "layer_grad_chart": "Gradient norm of each layer's parameters, above the learning rate on the same steps. "
    "Layers should stay within a few orders of magnitude of each other; a line falling to the floor is a layer that "
    "no longer learns (for example a detached residual path).",
    "update_ratios": "How much one step changes each layer's weights, relative to their size. Around 1e-3 is the "
    "classic healthy value; far above it training is unstable, far below it that layer barely moves.",
    "layer_grad_heatmap": "Rows are layers, columns are steps, colour is the gradient norm (log10). A row that "
    "goes dark stopped receiving gradient; a bright column is a gradient spike, often followed by a loss spike.",
    "attention_grid": "Each square is one head: row = the character attending, column = the character attended to. "
    "Early in training rows are flat; watch heads specialise, e.g. a bright diagonal just left of the main one is a "
    "head that looks at the previous character.",
    "attention_detail": "One head, step by step: raw scores q·k, scaled by 1/sqrt(d_head) (without scaling the "
    "colours get darker and softmax saturates), the mask, the masked scores (blank = not allowed) and softmax rows "
    "that each sum to 1.",
    "mask_matrix": "Which keys each query position may attend to. The causal mask is lower-triangular: no position "
    "sees the future. Anything above the diagonal lets the model peek at the characters it must predict.",
    "head_stats_chart": "Entropy of each head's attention (nats, averaged over positions): near ln(T) a head looks "
    "everywhere, near 0 it looks at one character. Max weight near 1 means softmax has saturated to one-hot.",
    "next_char_chart": "The model's probabilities for the next character, before (temperature 1, no filtering) and "
    "after temperature, top-k and top-p. Lower temperature sharpens the bars; top-k and top-p cut the tail to zero.",
    "attention_row_chart": "Where each head looked when it produced the newest character: one row per layer and "
    "head, one column per context character.",
    "compare_chart": "The same curve for several runs on one axis: the gap between the lines is the effect of the "
    "settings that differ (see the table).",
    "memory_chart": "Where the memory goes. Parameters, gradients and optimizer state grow with the model; "
    "activations grow with batch x context, and the attention maps with context squared.",
}
