"""A run as one download: config.json, metrics as CSV, events, samples, the latest checkpoint, and the figures as
one self-contained HTML page (plotly.js embedded once; nothing fetched from the internet when it is opened).

Pure: a run folder and figures in, bytes out (the Runs page hands them to a download button).
"""

from __future__ import annotations

import csv
import html
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from tinygpt.runs.files import CONFIG_FILE, CORPUS_FILE, checkpoint_stem, list_checkpoints


def _flatten(record: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def metrics_csv(run_dir: Path) -> bytes:
    """metrics.jsonl as CSV, nested groups flattened to columns (layer_grad_norms.L0.attn, ...)."""
    path = Path(run_dir) / "metrics.jsonl"
    rows, fields = [], []
    if path.exists():
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a torn last line
                if isinstance(record, dict):
                    flat = _flatten(record)
                    rows.append(flat)
                    fields.extend(k for k in flat if k not in fields)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields or ["step"])
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def _slug(title: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_") or "figure"


def figures_html(figures: dict[str, Any]) -> str:
    """The plotly figures as one self-contained HTML page (plotly.js embedded once, nothing fetched from the
    internet); Altair charts are listed with the name of their Vega-Lite spec file in the bundle."""
    parts, first = [], True
    for title, fig in figures.items():
        if fig is None:
            continue
        if hasattr(fig, "to_plotly_json"):
            parts.append(f"<h2>{html.escape(title)}</h2>" + fig.to_html(full_html=False, include_plotlyjs=first))
            first = False
        else:  # rendering Vega-Lite needs vega.js, which an offline page cannot fetch: ship the spec instead
            parts.append(
                f"<h2>{html.escape(title)}</h2><p>Vega-Lite chart: <code>figures/{_slug(title)}.vl.json</code> "
                "(open it in the Vega editor, or with Altair: <code>alt.Chart.from_json(...)</code>).</p>"
            )
    body = "\n".join(parts) or "<p>No figures.</p>"
    head = "<meta charset='utf-8'><title>tinygpt figures</title>"
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>"


def _spec(fig: Any) -> dict:
    return fig if isinstance(fig, dict) else fig.to_dict()


def make_bundle(run_dir: Path, figures: dict[str, Any] | None = None) -> bytes:
    """A zip of one run: config.json (and corpus.txt for a run on uploaded or pasted text, so `--config` of the
    bundle trains on it again), metrics.csv, evals/events/samples, the latest checkpoint, figures.html."""
    run_dir = Path(run_dir)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in (CONFIG_FILE, CORPUS_FILE, "status.json", "evals.jsonl", "events.jsonl", "samples.jsonl"):
            if (run_dir / name).exists():
                z.write(run_dir / name, name)
        z.writestr("metrics.csv", metrics_csv(run_dir))
        steps = list_checkpoints(run_dir)
        if steps:
            stem = checkpoint_stem(run_dir, steps[-1])
            for path in (stem.with_suffix(".json"), stem.with_suffix(".safetensors")):
                z.write(path, f"checkpoint/{path.name}")
        if figures:
            z.writestr("figures.html", figures_html(figures))
            for title, fig in figures.items():
                if fig is not None and not hasattr(fig, "to_plotly_json"):
                    z.writestr(f"figures/{_slug(title)}.vl.json", json.dumps(_spec(fig)))
    return buf.getvalue()
