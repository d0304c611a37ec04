"""Benchmarks: scripts that print numbers (BENCHMARKS.md), run by hand, never by the app or the tests' clock.

`python -m tinygpt.bench` (throughput), `python -m tinygpt.bench.speedrun`, `.pitfalls`, `.circuits`, `.lecture`,
`.gpu`, `.sampling` (against a cache-less generate), `.queue` (a live run behind prepared ones), `.prepare` (the
lesson's *Prepare the long runs*: each run's seconds, the wall until all end, the verdicts); `worker` holds the
worker measurements the first one runs.
"""
