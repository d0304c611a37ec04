"""tinygpt/ui/charts/heatmaps.py: the plotly heatmaps read back through `to_dict()` (numpy arrays arrive as
base64 typed arrays; `chart_helpers.array` decodes them)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from chart_helpers import GROUPS, METRICS, array, attention

from tinygpt.ui.charts import heatmaps, masks, tokens

# ---------------------------------------------------------------- per-layer gradients over steps


def test_layer_grad_heatmap_groups_by_steps_with_lr_below():
    fig = heatmaps.layer_grad_heatmap(METRICS).to_dict()
    heat, lr = fig["data"]
    assert heat["type"] == "heatmap" and list(heat["y"]) == GROUPS
    z = array(heat["z"])
    assert z.shape == (len(GROUPS), len(METRICS))
    assert z[1, 0] == pytest.approx(math.log10(0.2 / 1.01), abs=1e-5)
    assert lr["type"] == "scatter" and lr["xaxis"] == "x2"
    assert fig["layout"]["xaxis2"]["title"]["text"] == "training step"
    assert not heatmaps.layer_grad_heatmap([]).to_dict()["data"]


# ---------------------------------------------------------------- attention


def test_attention_grid_is_one_figure_of_layers_x_heads():
    tokens = list("the cat\nsat")
    fig = heatmaps.attention_grid(attention(2, 3, len(tokens)), tokens).to_dict()
    cells = [d for d in fig["data"] if d["type"] == "heatmap"]
    assert len(cells) == 6
    assert all(d["zmin"] == 0 and d["zmax"] == 1 and d["coloraxis"] == "coloraxis" for d in cells)
    assert fig["layout"]["coloraxis"]["cmin"] == 0 and fig["layout"]["coloraxis"]["cmax"] == 1
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles == ["L0 H0", "L0 H1", "L0 H2", "L1 H0", "L1 H1", "L1 H2"]
    assert fig["layout"]["xaxis"]["ticktext"] == ["t", "h", "e", "␣", "c", "a", "t", "⏎", "s", "a", "t"]
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"  # the first query at the top
    x = list(cells[0]["x"])
    assert len(set(x)) == len(tokens) and x[3] == "'␣' (pos 3)"  # repeated characters stay separate columns
    assert "query %{y} → key %{x}: weight %{z:.3f}" in cells[0]["hovertemplate"]
    assert cells[0]["z"]["dtype"] == "f4"  # sent as a compact typed array, not JSON numbers


@pytest.mark.parametrize(("layers", "heads"), [(1, 1), (2, 3), (4, 4), (6, 8)])
def test_attention_grid_layout_matches_make_subplots(layers, heads):
    """The grid's layout is built by hand for speed; it must place subplots exactly where plotly's would."""
    from plotly.subplots import make_subplots

    fig = heatmaps.attention_grid(attention(layers, heads, 8), list("abcdefgh")).to_dict()
    height = fig["layout"]["height"]
    narrow = heads >= 8  # panels under 110 px: heads named along the top only, layers on the y titles
    titles = [(f"H{h}" if i == 0 else "") if narrow else f"L{i} H{h}" for i in range(layers) for h in range(heads)]
    ref = make_subplots(
        rows=layers,
        cols=heads,
        subplot_titles=titles,
        horizontal_spacing=min(0.03, 0.9 / max(1, heads - 1)),
        vertical_spacing=min(50 / height, 0.9 / max(1, layers - 1)),
    ).to_dict()["layout"]
    for k in range(layers * heads):
        for axis in ("xaxis", "yaxis"):
            name = f"{axis}{k + 1 if k else ''}"
            assert fig["layout"][name]["domain"] == pytest.approx(ref[name]["domain"], abs=1e-9)
            assert fig["layout"][name]["anchor"] == ref[name]["anchor"]
        assert fig["data"][k]["xaxis"] == ref[f"yaxis{k + 1 if k else ''}"]["anchor"]
    for k in range(layers * heads):  # axis titles on the outer edges only: keys along the bottom, queries left
        x_title = fig["layout"][f"xaxis{k + 1 if k else ''}"].get("title", {}).get("text")
        y_title = fig["layout"][f"yaxis{k + 1 if k else ''}"].get("title", {}).get("text")
        if narrow:
            assert x_title == ("key" if k == (layers - 1) * heads else None)
            assert y_title == (f"L{k // heads} query" if k % heads == 0 else None)
        else:
            assert x_title == ("key (attended to)" if k >= (layers - 1) * heads else None)
            assert y_title == ("query" if k % heads == 0 else None)
    for ours, theirs in zip(fig["layout"]["annotations"], ref["annotations"], strict=True):
        assert ours["text"] == theirs["text"]
        assert (ours["x"], ours["y"]) == pytest.approx((theirs["x"], theirs["y"]), abs=1e-9)


def test_a_16_head_grid_names_each_head_once_in_a_font_that_fits_its_panel():
    """Finding 5 (issue 20) / 8 (issue 24): with 16 heads the titles "L0 H0", "L0 H10", ... ran into each other."""
    fig = heatmaps.attention_grid(attention(2, 16, 8), list("abcdefgh"), large=True).to_dict()
    titles = [a["text"] for a in fig["layout"]["annotations"] if a["text"]]
    assert titles == [f"H{h}" for h in range(16)]
    panel_px = 850 / 16
    assert all(a["font"]["size"] * 0.6 * 3 <= panel_px for a in fig["layout"]["annotations"])  # "H15" fits


def test_attention_grid_keeps_the_last_max_tokens():
    tokens = [chr(ord("a") + i % 26) for i in range(100)]
    fig = heatmaps.attention_grid(attention(1, 1, 100), tokens, layer_names=["layer 0"], max_tokens=64).to_dict()
    heat = fig["data"][0]
    assert array(heat["z"]).shape == (64, 64)
    assert heat["x"][0] == "'k' (pos 36)" and heat["x"][-1] == "'v' (pos 99)"
    assert fig["layout"]["annotations"][0]["text"] == "layer 0 H0"
    assert "last 64 of 100" in fig["layout"]["title"]["text"]


@pytest.mark.parametrize("weights", [None, np.zeros((0, 0, 0, 0))])
def test_attention_grid_without_a_snapshot(weights):
    fig = heatmaps.attention_grid(weights, []).to_dict()
    assert fig["layout"]["annotations"][0]["text"] == "no attention snapshot yet"


def test_attention_grid_rejects_a_wrong_shape():
    with pytest.raises(ValueError, match="4 dimensions"):
        heatmaps.attention_grid(np.zeros((3, 3)), list("abc"))


def test_attention_grid_tolerates_tokens_of_the_wrong_length():
    fig = heatmaps.attention_grid(attention(1, 1, 4), list("ab")).to_dict()
    assert fig["layout"]["xaxis"]["ticktext"] == ["?", "?", "a", "b"]


def test_attention_detail_five_panels_step_by_step():
    size, scale = 6, 0.5
    rng = np.random.default_rng(1)
    qk = rng.normal(size=(size, size)) * 4
    mask = np.tril(np.ones((size, size), dtype=bool))
    masked = np.where(mask, qk * scale, -np.inf)
    weights = np.exp(masked - masked.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    fig = heatmaps.attention_detail(qk, qk * scale, mask, masked, weights, list("hello\n"), scale=scale).to_dict()
    assert [a["text"] for a in fig["layout"]["annotations"]] == [
        "1. scores Q·Kᵀ",
        "2. scaled: × 0.5",
        "3. mask",
        "4. masked scores",
        "5. softmax weights",
    ]
    panels = fig["data"]
    assert [p["coloraxis"] for p in panels] == ["coloraxis4", "coloraxis", "coloraxis2", "coloraxis", "coloraxis3"]
    assert np.array_equal(array(panels[2]["z"]), mask.astype(int))
    assert np.isnan(array(panels[3]["z"])[0, 1]) and np.isfinite(array(panels[3]["z"])[1, 0])
    layout = fig["layout"]
    assert layout["coloraxis"]["cmin"] == -layout["coloraxis"]["cmax"]  # diverging, centred at 0
    assert layout["coloraxis2"]["colorbar"]["ticktext"] == ["masked", "may attend"]
    assert layout["coloraxis3"]["cmin"] == 0 and layout["coloraxis3"]["cmax"] == 1
    assert layout["xaxis"]["ticktext"][-1] == "⏎"


def test_mask_matrix_of_causal_is_lower_triangular():
    size = 8
    fig = masks.mask_matrix(np.tril(np.ones((size, size), dtype=bool)), list("abcdefgh"), title="causal").to_dict()
    z = array(fig["data"][0]["z"])
    assert np.array_equal(z, np.tril(np.ones((size, size), dtype=int)))
    layout = fig["layout"]
    assert layout["title"]["text"] == "causal"
    assert layout["xaxis"]["title"]["text"] == "key position (attended to)"
    assert layout["yaxis"]["title"]["text"] == "query position (attending)"
    assert fig["data"][0]["colorbar"]["ticktext"] == ["masked", "may attend"]
    assert layout["xaxis"]["ticktext"] == list("abcdefgh")


def test_mask_matrix_without_tokens_labels_positions():
    fig = masks.mask_matrix(np.ones((3, 3), dtype=bool)).to_dict()
    assert fig["layout"]["xaxis"]["ticktext"] == ["0", "1", "2"]
    assert fig["layout"]["title"]["text"] == "Attention mask"


def test_attention_row_chart_layer_heads_by_context():
    fig = heatmaps.attention_row_chart(attention(2, 2, 5)[:, :, -1, :], list("a b\nc")).to_dict()
    heat = fig["data"][0]
    assert list(heat["y"]) == ["L0 H0", "L0 H1", "L1 H0", "L1 H1"]
    assert array(heat["z"]).shape == (4, 5)
    assert fig["layout"]["xaxis"]["ticktext"] == ["a", "␣", "b", "⏎", "c"]
    assert fig["layout"]["coloraxis"]["cmax"] == 1


# ---------------------------------------------------------------- attention that can be read aloud


def _ticktexts(fig: dict, axis: str) -> list[list[str]]:
    return [v.get("ticktext") for k, v in fig["layout"].items() if k.startswith(axis + "axis") and v.get("ticktext")]


def test_every_token_is_labelled_in_the_grid_and_the_step_by_step_view():
    """Reproduces "abcabcabcabc the" read as "a c b a c b h": the grid labelled every 2nd character and the
    detail view every 3rd-4th. Now every token has its label, in a font that fits."""
    text = "abcabcabcabc the quick brown fox"  # 32 characters, the demo's context
    weights = np.full((2, 2, 32, 32), 1 / 32)  # two heads a row: room for a 7 px label per token
    grid = heatmaps.attention_grid(weights, list(text)).to_dict()
    shown = text.replace(" ", "␣")  # spaces are drawn visible
    assert all(len(t) == 32 for t in _ticktexts(grid, "x")) and "".join(_ticktexts(grid, "x")[0]) == shown
    mats = [np.zeros((32, 32))] * 2 + [np.tril(np.ones((32, 32)))] + [np.zeros((32, 32))] * 2
    detail = heatmaps.attention_detail(*mats, list(text)).to_dict()
    assert _ticktexts(detail, "x") and all("".join(t) == shown for t in _ticktexts(detail, "x"))
    fonts = [v["tickfont"]["size"] for k, v in detail["layout"].items() if k.startswith("xaxis")]
    assert min(fonts) >= tokens.MIN_TOKEN_FONT


@pytest.mark.parametrize("per_row", [1, 2, 3, 5])
def test_step_by_step_panels_per_row(per_row):
    mats = [np.zeros((8, 8))] * 2 + [np.tril(np.ones((8, 8)))] + [np.zeros((8, 8))] * 2
    fig = heatmaps.attention_detail(*mats, list("abcdefgh"), per_row=per_row).to_dict()
    rows = {round(v["domain"][0], 3) for k, v in fig["layout"].items() if k.startswith("yaxis")}
    assert len(rows) == -(-5 // per_row)


def test_toy_mode_shows_the_number_in_every_cell():
    mats = [np.arange(64, dtype=float).reshape(8, 8) / 10] * 2 + [np.tril(np.ones((8, 8)))] + [np.zeros((8, 8))] * 2
    short = heatmaps.attention_detail(*mats, list("abcdefgh")).to_dict()
    assert all(trace.get("texttemplate") for trace in short["data"])  # <= 12 tokens: numbers on
    long = [np.zeros((20, 20))] * 2 + [np.tril(np.ones((20, 20)))] + [np.zeros((20, 20))] * 2
    assert not any(trace.get("texttemplate") for trace in heatmaps.attention_detail(*long, None).to_dict()["data"])


def test_every_mask_side_by_side():
    from tinygpt.attention import build_mask

    results = {m: (build_mask(m, 6, 3).numpy(), np.full((6, 6), 1 / 6)) for m in ("causal", "none", "off_by_one")}
    fig = masks.mask_comparison(results, list("abcdef")).to_dict()
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert titles[:3] == ["causal", "none", "off by<br>one"] and len(fig["data"]) == 6  # rows named on the y axes
    assert masks.mask_comparison({}, None).to_dict()["layout"]["title"]["text"]


def test_the_default_sliding_window_looks_different_from_causal_in_the_mask_panels():
    """Issue 24 finding 8: at the defaults (window 16) the mask panels, which draw the last 16 positions, showed
    the sliding window identical to causal."""
    from tinygpt.attention import build_mask
    from tinygpt.config import TransformerConfig
    from tinygpt.ui.charts import masks

    window = TransformerConfig().window
    shown = masks.mask_comparison.__kwdefaults__["max_tokens"]
    causal, sliding = (build_mask(m, 32, window=window).numpy()[-shown:, -shown:] for m in ("causal", "sliding_window"))
    assert (causal != sliding).sum() >= shown  # a band visibly narrower than the triangle


def test_the_score_colour_bar_says_which_panels_it_is_for():
    """Issue 24 finding 8: the bar was titled "score (1, 2, 4)", which reads like three score values."""
    z = np.zeros((4, 4))
    fig = heatmaps.attention_detail(z, z, np.tril(np.ones((4, 4))), z, z, list("abcd")).to_dict()
    titles = [fig["layout"][axis]["colorbar"]["title"]["text"] for axis in ("coloraxis", "coloraxis4")]
    assert all("panel" in t for t in titles) and "score (1, 2, 4)" not in titles, titles


@pytest.mark.parametrize("large", [False, True])
def test_the_key_titles_under_the_grid_fit_their_panels_at_1280_px(large):
    """Review (1280x720, Large fonts): the four "key (attended to)" titles under a 4-head grid ran into each
    other. Each title fits its share of the narrowest grid (heatmaps.GRID_MIN_PX), else it is just "key"."""
    for heads in (1, 2, 3, 4, 6):
        fig = heatmaps.attention_grid(attention(2, heads, 8), list("abcdefgh"), large=large).to_dict()
        titles = [fig["layout"][f"xaxis{k + 1 if k else ''}"].get("title", {}) for k in range(heads, 2 * heads)]
        for title in titles:
            if title.get("text"):
                width = len(title["text"]) * heatmaps.TITLE_CHAR_EM * title["font"]["size"]
                assert width <= heatmaps.GRID_MIN_PX / heads, (heads, large, title)
    fig = heatmaps.attention_grid(attention(2, 4, 8), list("abcdefgh"), large=True).to_dict()
    assert [fig["layout"][f"xaxis{k}"]["title"]["text"] for k in range(5, 9)] == ["key"] * 4
    one = heatmaps.attention_grid(attention(1, 1, 8), list("abcdefgh"), large=True).to_dict()
    assert one["layout"]["xaxis"]["title"]["text"] == "key (attended to)"
