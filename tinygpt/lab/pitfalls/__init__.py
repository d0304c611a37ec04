"""The pitfall lab: each classic transformer failure as runs that differ in one setting, and a computed verdict.

An `Experiment` names its runs ("correct" first), the settings each overrides on a shared base (the demo preset),
what to look for, and a `judge` that reads the runs' own numbers and returns a `Verdict`: `reproduced` (True, False,
or None while the runs are still training), the effect the pitfall should show, the observed numbers, and one
sentence. Nothing is canned: if the broken run happens to behave, the verdict says the pitfall did not reproduce.

Seven experiments: unscaled attention logits, causal mask misalignment, no learning-rate warmup, detached
residual, unstable softmax, shape drift (a silent broadcasting bug, with and without shape contracts) and memory
fragmentation (measured in-process, not trained: see tinygpt/lab/memory.py). Their settings were searched so the
pitfall shows on every seed tried, in about a minute of 2 CPU cores per experiment (tinygpt/bench/pitfalls.py
measures it; BENCHMARKS.md has the table).

tinygpt/lab/results.py turns run folders into `RunResult`s (`read_result`) and trains an experiment in this process
(`run_experiment`, for tests and the benchmark). Also here for the page's static tab: `shape_drift_cases()` (what a
shape contract says next to what PyTorch would have said without it).

Left out: experiments that need more than a minute or two of CPU. The settings were searched on Tiny Shakespeare,
the app's default corpus; the mask experiment's were also checked on English text that is not Shakespeare (licence
texts, `bench_pitfalls --text-file`), where its effect is as large.
"""
