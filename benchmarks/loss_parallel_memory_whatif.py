"""Before/after: torchtitan's loss under PyTorch loss parallelism holds 16 B per logit, not 12.

With tensor parallelism torchtitan runs the cross-entropy inside ``loss_parallel()``
(pytorch/torchtitan@9dec370:train.py line 57, ``enable_loss_parallel``). PyTorch's handler
for its backward, ``_nll_loss_and_log_softmax_backward`` in
``torch/distributed/tensor/parallel/loss.py`` (PyTorch v2.5.1, a8d6afb5, a release before
the rows' torch 1963fc8, and unchanged at 02eef6b8 and 3be12382), keeps the saved FP32
log-probabilities, builds an FP32 ``zeros_like`` gradient, adds ``exp(x)`` to it and
multiplies by the output gradient: four FP32 tensors of the logits' size at once, 16 B per
logit, where PyTorch's fused ``log_softmax`` backward holds 12 (``LOSS_PEAK_BYTES["torch"]``).
The model prices it (``Stack.loss_parallel``, ``LOSS_PARALLEL_PEAK_BYTES``); this script
compares it with the model without it.

Prints, for the calibration and development memory rows, the predicted memory before
(without) and after (with), and, for the calibration and development training runs, the
MAPE per set and class before and after and every run whose chosen plan or fit changes.

    PYTHONPATH=src:. python benchmarks/loss_parallel_memory_whatif.py
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from benchmarks.memory_whatif_common import compare, patched_memory

from clusterforge.perf.memory import MemoryBreakdown, memory_per_gpu


def _patched(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
    return memory_per_gpu(arch, plan, stages, replace(stack, loss_parallel=False))


def main() -> None:
    compare(patched_memory(_patched), nullcontext())


if __name__ == "__main__":
    main()
