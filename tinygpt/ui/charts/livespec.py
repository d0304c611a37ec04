"""Live charts: a cached Vega-Lite template plus named datasets (`live_spec`), and the layers left out while their
data is empty (`drop_empty_layers`). Pure: JSON in, JSON out; no Streamlit. Tested in tests/ui/charts/ and
tests/ui/test_first_minutes.py.
"""

from __future__ import annotations

import functools
import json
import re
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
    """The spec without the layers that would draw nothing: an empty dataset, or one whose rows the layer's filter
    all leaves out (the validation points before the first evaluation, a marker's labels on the side it is not on).
    Vega computes a shared scale's domain from every layer's data, one extent per dataset, and an empty one warns
    "Infinite extent for field "step"" in the browser's console: about 20 at every Train press, from charts that
    wait for their first step and from the knob, non-finite and previous-run layers that have nothing yet. Which
    layers go depends only on which of them are empty, so the spec stays the same between refreshes until one
    fills. A panel left with nothing to draw keeps one layer, its scales fixed (no extent to compute)."""
    datasets = spec.get("datasets") or {}

    def empty(layer: dict) -> bool:
        name = (layer.get("data") or {}).get("name")
        if name is None:
            return False
        rows = datasets.get(name) or []
        tests = [_field_test(step.get("filter")) for step in layer.get("transform", [])]
        if None in tests:  # a transform this cannot read: the layer stays if there are rows at all
            return not rows
        return not any(all(row.get(field) == value for field, value in tests) for row in rows)

    def prune(view: dict) -> dict:
        if isinstance(view.get("layer"), list):
            kept = [layer for layer in view["layer"] if not empty(layer)] or [_fixed_scales(view["layer"][0])]
            return {**view, "layer": kept}
        for concat in ("vconcat", "hconcat", "concat"):
            if isinstance(view.get(concat), list):
                return {**view, concat: [prune(part) for part in view[concat]]}
        return view

    out = VegaLite(prune(spec))
    # Altair lists a layer's selections (hover, zoom) at the top, by the names of the views they belong to: a
    # selection of views that are all gone goes with them.
    names = set(re.findall(r'"name": "(view_[^"]+)"', json.dumps({k: v for k, v in out.items() if k != "datasets"})))
    params = []
    for param in spec.get("params", []):
        views = param.get("views")
        if views is None or any(view in names for view in views):
            params.append({**param, "views": [v for v in views if v in names]} if views else param)
    if "params" in spec:
        out["params"] = params
    return out


def _fixed_scales(layer: dict) -> dict:
    """A copy of `layer` whose x and y scales have fixed domains (0-1; 0.01-1 on a log scale)."""
    layer = json.loads(json.dumps(layer))
    for channel in ("x", "y"):
        encoding = layer.get("encoding", {}).get(channel)
        if isinstance(encoding, dict) and encoding.get("type") == "quantitative":
            scale = encoding.get("scale") or {}
            encoding["scale"] = {**scale, "domain": [0.01, 1] if scale.get("type") == "log" else [0, 1]}
    return layer


_FIELD_TEST = re.compile(r"""^\(?datum\.(\w+) ===? '([^']*)'\)?$""")


def _field_test(expression: object) -> tuple[str, str] | None:
    """(field, value) of a filter `datum.side == 'left'` or `(datum.series === 'val')`, the two the charts write
    (Altair's `alt.datum.x == v` and a string); None for any other transform."""
    match = _FIELD_TEST.match(expression) if isinstance(expression, str) else None
    return (match.group(1), match.group(2)) if match else None
