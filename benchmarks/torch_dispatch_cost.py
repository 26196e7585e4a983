"""Host seconds per eager PyTorch call on this machine's CPU, without a GPU (a lower bound).

Times calls on tiny CPU tensors, where the kernel does almost nothing, so what is measured
is Python, the binding and the ATen dispatcher (with and without autograd recording). A
CUDA call adds the launch (``cudaLaunchKernel``) and the CUDA caching allocator on top, which
this cannot measure; :mod:`clusterforge.perf.host` takes its per-call figures from
TransformerEngine issue #2053 instead. Prints microseconds per call, median of 7 repeats.

    python benchmarks/torch_dispatch_cost.py
"""

from __future__ import annotations

import statistics
import timeit

import torch


def _per_call_us(stmt: str, env: dict[str, object], number: int = 20000) -> float:
    runs = timeit.repeat(stmt, globals=env, number=number, repeat=7)
    return statistics.median(runs) / number * 1e6


def main() -> None:
    torch.set_num_threads(1)
    x = torch.ones(8)
    w = torch.ones(8, 8)
    xg = torch.ones(8, requires_grad=True)
    linear = torch.nn.Linear(8, 8)
    env = {"torch": torch, "x": x, "w": w, "xg": xg, "linear": linear, "xb": torch.ones(1, 8)}
    cases = {
        "add (no grad)": "x + x",
        "add (autograd)": "xg + xg",
        "sum (no grad)": "x.sum()",
        "view": "x.view(2, 4)",
        "matmul 8x8": "w @ x",
        "nn.Linear forward (autograd)": "linear(xb)",
    }
    print(f"torch {torch.__version__}, 1 thread")
    for name, stmt in cases.items():
        print(f"{name:32s} {_per_call_us(stmt, env):6.2f} us per call")


if __name__ == "__main__":
    main()
