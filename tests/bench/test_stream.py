"""tinygpt/bench/stream.py stays runnable: the ratio it prints is the health check's, and a detached 4-layer model
reads far under a correct one from its first step."""

from __future__ import annotations

from tinygpt.bench.stream import ratios


def test_the_stream_bench_reads_the_checks_ratio_correct_over_detached():
    correct = ratios(4, 32, 2, detached=False, at=(0, 2))
    detached = ratios(4, 32, 2, detached=True, at=(0, 2))
    assert len(correct) == len(detached) == 2
    assert min(correct) >= 1.0 and max(detached) < 0.01, (correct, detached)
