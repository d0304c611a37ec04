"""`streamlit run` under tracemalloc: where the server's Python allocations grow. A diagnostic for
tests/browser/soak.py (`--trace`), not part of the app.

    .venv/bin/python tests/browser/trace_launcher.py TRACE.jsonl -- app.py --server.headless true ...

Each SIGUSR2 appends one JSON line to TRACE.jsonl: the time, the traced total, and the 25 source lines whose live
allocations grew most since the first snapshot (size and count differences). One frame per allocation keeps the
overhead to what a soak can bear; the lines named are where the memory was allocated, not who keeps it.
"""

from __future__ import annotations

import json
import signal
import sys
import time
import tracemalloc
from pathlib import Path


def main() -> None:
    trace_path = Path(sys.argv[1])
    args = sys.argv[sys.argv.index("--") + 1 :]
    tracemalloc.start(1)
    first: list[tracemalloc.Snapshot] = []

    def dump(signum, frame) -> None:
        snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        if not first:
            first.append(snapshot)
        grown = snapshot.compare_to(first[0], "lineno")[:25]
        row = {
            "t": time.time(),
            "traced_mb": tracemalloc.get_traced_memory()[0] / 2**20,
            "top": [
                {"where": str(s.traceback[0]), "size_diff_kb": s.size_diff / 1024, "count_diff": s.count_diff}
                for s in grown
            ],
        }
        with open(trace_path, "a") as out:
            out.write(json.dumps(row) + "\n")

    signal.signal(signal.SIGUSR2, dump)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *args]
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
