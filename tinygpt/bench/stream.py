"""`python -m tinygpt.bench.stream`: where Model health's "gradient carried down the residual stream" check draws
its line (tinygpt.lab.health.STREAM_CARRIES).

The check divides the loss's gradient norm at the residual stream's input (below block 0) by its norm at the
stream's output (above the last block). The skip path hands the gradient down unchanged and each sublayer adds its
own, so a correct stream reads about 1 or more; a detached residual leaves only the sublayers' Jacobians, which
shrink it layer after layer. This prints the ratio for correct and detached models of 1-6 layers and two widths,
at initialisation and after 50 and 300 AdamW steps on a task they can learn (every second token repeats the one
before it), on one thread: the numbers the threshold 0.5 rests on (BENCHMARKS.md, "Model health: the stream check").
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from tinygpt.config import Interventions, TransformerConfig
from tinygpt.interventions import attach
from tinygpt.lab.health import STREAM_CARRIES, check_gradient_carried_down_the_stream
from tinygpt.model import TinyGPT

VOCAB, CONTEXT, BATCH = 65, 32, 8


def _copy_batch(generator: torch.Generator) -> torch.Tensor:
    """(BATCH, CONTEXT + 1) random tokens where every odd position repeats the one before it: learnable."""
    x = torch.randint(0, VOCAB, (BATCH, CONTEXT + 1), generator=generator)
    x[:, 1::2] = x[:, 0:-1:2]
    return x


def ratios(layers: int, width: int, heads: int, detached: bool, at: tuple[int, ...], seed: int = 0) -> list[float]:
    """The check's measured ratio at each step in `at` of one model's training."""
    torch.manual_seed(seed)
    model = TinyGPT(TransformerConfig(vocab_size=VOCAB, max_seq_len=CONTEXT, num_layers=layers, num_heads=heads,
                                      hidden_dim=width))  # fmt: skip
    attach(model, Interventions(detach_residual=detached))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(seed)
    probe = _copy_batch(torch.Generator().manual_seed(seed + 1))  # (B, T + 1): the same windows at every step
    out = []
    for step in range(max(at) + 1):
        if step in at:
            out.append(float(check_gradient_carried_down_the_stream(model, probe[:, :-1], probe[:, 1:]).value))
        x = _copy_batch(generator)  # (B, T + 1)
        loss = F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 50, 300])
    args = parser.parse_args()
    torch.set_num_threads(1)
    at = tuple(args.steps)
    print(f"|grad| at the stream's input / at its output, at steps {', '.join(map(str, at))} "
          f"(the check passes at >= {STREAM_CARRIES:g})")  # fmt: skip
    print("| layers | width x heads | residual | detached |")
    print("|---:|---|---|---|")
    for layers in (1, 2, 4, 6):
        for width, heads in ((64, 4), (128, 1)):
            cells = [" / ".join(f"{r:.2g}" for r in ratios(layers, width, heads, d, at)) for d in (False, True)]
            print(f"| {layers} | {width} x {heads} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
