"""Live charts: a cached Vega-Lite template plus named datasets (`live_spec`), and the layers left out while their
data is empty (`drop_empty_layers`). Pure: JSON in, JSON out; no Streamlit. Tested in tests/ui/charts/ and
tests/ui/test_first_minutes.py.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

MAX_ROWS = 5000  # Altair's default guard on rows per DataFrame: thinning keeps every frame under it, so it stays on


# Live charts are a cached template plus named datasets. The template (every layer, encoding, colour and title)
# is built with Altair once per shape (theme, series present, title) and kept as JSON; each refresh only computes
# the rows. Two reasons, both measured on the Train page at 2 Hz: building and validating three Altair charts took
# ~70 ms each on the server; and Streamlit names Altair's data by a hash of its content, so every refresh changed
# the spec and the browser rebuilt all three views from scratch. With stable dataset names the spec stays
# byte-identical between refreshes and the browser swaps the data into the existing view (hover and zoom survive).


class VegaLite(dict):
    """A Vega-Lite spec as plain JSON data, its rows in named top-level `datasets` (`to_dict()` like Altair's)."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self)


@functools.lru_cache(maxsize=256)
def _template_json(builder: Callable[..., Any], key: tuple) -> str:
    return json.dumps(builder(*key).to_dict())


def live_spec(builder: Callable[..., Any], key: tuple, datasets: dict[str, list[dict]]) -> VegaLite:
    """`builder(*key)`'s Altair chart as a spec (built once per key), filled with `datasets` (name -> rows), without
    the layers whose dataset is empty (`drop_empty_layers`)."""
    spec = VegaLite(json.loads(_template_json(builder, key)))
    spec["datasets"] = {name: rows[:MAX_ROWS] for name, rows in datasets.items()}
    return drop_empty_layers(spec)


def drop_empty_layers(spec: VegaLite) -> VegaLite:
    """The spec without the layers that would draw an empty dataset. Vega computes a shared scale's domain from
    every layer's data, one extent per dataset, and an empty one warns "Infinite extent for field "step"" in the
    browser's console: about 20 at every Train press, from charts that wait for their first step and from the
    knob, non-finite and previous-run layers that have nothing yet. Which layers go depends only on which datasets
    are empty, so the spec stays the same between refreshes until one fills. When nothing is left to draw, one
    layer stays, its scales fixed to 0-1 (no extent to compute)."""
    layers = spec.get("layer")
    if not isinstance(layers, list):
        return spec

    def empty(layer: dict) -> bool:
        name = (layer.get("data") or {}).get("name")
        return name is not None and not spec["datasets"].get(name)

    kept = [layer for layer in layers if not empty(layer)]
    if not kept:
        first = json.loads(json.dumps(layers[0]))
        for channel in ("x", "y"):
            encoding = first.get("encoding", {}).get(channel)
            if isinstance(encoding, dict) and encoding.get("type") == "quantitative":
                encoding["scale"] = {**encoding.get("scale", {}), "domain": [0, 1]}
        kept = [first]
    # Altair lists a layer's selections (hover, zoom) at the top, by the names of the views they belong to: a
    # selection of views that are all gone goes with them.
    names = {layer.get("name") for layer in kept}
    params = []
    for param in spec.get("params", []):
        views = param.get("views")
        if views is None or any(view in names for view in views):
            params.append({**param, "views": [v for v in views if v in names]} if views else param)
    out = VegaLite({**spec, "layer": kept})
    if "params" in spec:
        out["params"] = params
    return out
