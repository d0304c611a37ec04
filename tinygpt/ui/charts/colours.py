"""The charts' colours and line styles: the palette and its named colours, and the Altair encodings that keep a
series' colour and dash fixed as series appear (`colour_encoding`, `dash_encoding`, named by `dash_note`)."""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt

BLUE, ORANGE, GREEN, RED, PURPLE, GREY, PALE = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#888", "#aec7e8"
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
DASHES = ("solid", "dashed", "dotted")  # the order of `dash_encoding`'s line styles, as `dash_note` names them


def colour_encoding(
    field: str,
    domain: Sequence[str],
    colours: Sequence[str] | None = None,
    title: str | None = None,
    lines: bool = False,
) -> alt.Color:
    """A colour encoding with a fixed order (and colours), so colours do not swap as series appear."""
    scale = alt.Scale(domain=list(domain), range=list(colours)) if colours else alt.Scale(domain=list(domain))
    legend = alt.Legend(title=title, symbolType="stroke", symbolStrokeWidth=3) if lines else alt.Legend(title=title)
    return alt.Color(field, scale=scale, legend=legend, sort=list(domain))


def dash_encoding(field: str, domain: Sequence[str]) -> alt.StrokeDash:
    """Line styles in a fixed order (DASHES). No legend: a dash legend next to a colour legend draws invisible
    symbols in Vega-Lite, so the chart's subtitle names the styles instead (`dash_note`)."""
    styles = [[1, 0], [7, 4], [2, 2]]
    return alt.StrokeDash(field, scale=alt.Scale(domain=list(domain), range=styles[: len(domain)]), legend=None)


def dash_note(names: Sequence[str]) -> str:
    """The subtitle that names `dash_encoding`'s styles: "solid: training, dashed: validation"."""
    return ", ".join(f"{style}: {name}" for style, name in zip(DASHES, names, strict=False))


def palette_for(domain: Sequence[str]) -> list[str]:
    """One PALETTE colour per domain value, cycling when there are more values than colours."""
    return (PALETTE * (1 + len(domain) // len(PALETTE)))[: len(domain)]
