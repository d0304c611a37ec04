"""`python -m tinygpt.bench`: the speed, sampling, quality and worker benchmarks (tinygpt/bench/throughput.py)."""

from .throughput import main

main()
