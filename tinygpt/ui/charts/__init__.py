"""The app's charts: pure functions from run data to a figure. No streamlit, no file IO.

- `theme.py`: the theme (font sizes, line width, plot sizes; projector-sized with `large=True`) and the styling
  applied to an Altair chart or a plotly figure.
- `colours.py`: the palette and its named colours, line styles, the colour and dash encodings.
- `markers.py`: labelled rules and numbered knob-change badges, in glyphs the chart font has.
- `style.py`: what the line charts share (thinning, the step axis, hover points, reference lines, a chart's
  finish). The chart modules import these four, never the other way round.
- `livespec.py`: the live-chart templates (a cached spec plus named datasets) and the layers left out while their
  data is empty; `style` re-exports them.
- `curves.py`: one run's training curves in Altair (loss, learning rate, gradient norm).
- `parts.py`: the charts of the model's parts (per-layer gradient norms and update ratios, per-head attention
  statistics).
- `heatmaps.py`: the plotly heatmaps (attention maps all heads and one head step by step, the newest character's
  attention row, per-layer gradients over steps).
- `masks.py`: the mask in force, and every mask side by side with the attention it produces.
- `tokens.py`: what the heatmaps share: token axes with every token labelled, square cells, colour scales.
- `compare.py`: several runs on one axis and the settings that differ, next-character bars, memory by category.
- `help.py`: `CHART_HELP`, what to look for in each chart.
Pages import the module that draws the chart they need; this package re-exports nothing.

Inputs are plain data as `tinygpt.runs.reader.RunReader` hands it out (lists of dicts, None where a value was not
finite), numpy arrays (attention maps, masks, probabilities) and lists of characters. Outputs are figures:
Altair (Vega-Lite) for line and bar charts, plotly for heatmaps. Every chart has a title, axis titles with units
and hover tooltips. Tests read the figures through `to_dict()`; no browser is needed.

Deliberately left out: computing what is drawn (entropies, memory estimates, sampling filters live in the engine
and arrive here as numbers), log-scale loss axes, and colours that assume a light background (Streamlit's theme
supplies the background, so the same figures work in the dark theme).
"""
