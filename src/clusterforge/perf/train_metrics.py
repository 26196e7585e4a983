"""Training metrics evaluated on every micro-batch's logits: memory-bound passes over the
``tokens x vocabulary`` logits outside the loss, on the last pipeline stage, and their
synchronisation across all ranks after every step (host time, the GPU drained)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from clusterforge.perf.host import HOST_OP_S, HostCpu
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack

if TYPE_CHECKING:
    from clusterforge.perf.comm import CommModel

__all__ = [
    "TRAIN_METRIC_BYTES_PER_LOGIT",
    "TRAIN_METRIC_KERNELS",
    "TRAIN_METRIC_STATES",
    "train_metrics_collectives_s",
    "train_metrics_s",
    "train_metrics_sync_s",
]

# Training metrics on the logits (Composer's ``LanguageCrossEntropy`` and
# ``LanguagePerplexity``, ``composer/metrics/nlp.py`` v0.16-v0.17, which LLM Foundry's MPT
# registers as training metrics by default, ``use_train_metrics``): Composer's
# ``_train_microbatch`` calls ``_eval_train_metrics`` after every micro-batch's backward,
# under no_grad and the autocast context, and each metric runs
# ``torch.nn.CrossEntropyLoss(reduction='sum')`` on the BF16 logits. ``cross_entropy_loss``
# has no autocast kernel and decomposes into ``log_softmax`` and ``nll_loss``; autocast
# runs ``log_softmax`` with ``dtype=float32`` (``fp32_set_opt_dtype``,
# ``aten/src/ATen/autocast_mode.cpp``) and ATen's ``log_softmax(input, dim, dtype)`` takes its fused half-to-float path only for
# FP16 input: a BF16 input is first cast to FP32 (``input_.toType(dtype)``,
# ``aten/src/ATen/native/SoftMax.cpp``, PyTorch 2.0-2.1), 2 + 4 B per logit. An FP32 row
# of the vocabulary (50,368 here; any above ~12,000) does not fit the 48 KiB
# ``sharedMemPerBlock`` that ``host_softmax`` checks for its shared-memory kernel (``aten/src/ATen/native/cuda/SoftMax.cu``), so ``cunn_SoftMaxForward``
# reads it for the max, for the sum of exponentials and for the output it writes: 4 x 3 + 4.
# 22 B per logit, three kernels with ``nll_loss`` (which reads one entry per row); the same
# passes as the forward of PyTorch's eager cross-entropy on FP32 logits
# (:data:`clusterforge.perf.logits.TORCH_CROSS_ENTROPY_BYTES`). [D] by counting passes.
TRAIN_METRIC_BYTES_PER_LOGIT = 22.0
TRAIN_METRIC_KERNELS = 3


def train_metrics_s(logits: float, perf: GpuPerf, stack: Stack) -> float:
    """Seconds of the stack's training-metric cross-entropies over ``logits`` logits."""
    if stack.train_metric_passes == 0:
        return 0.0
    passes = stack.train_metric_passes
    return memory_time_s(
        passes * TRAIN_METRIC_BYTES_PER_LOGIT * logits,
        perf,
        num_kernels=passes * TRAIN_METRIC_KERNELS,
    )


# After every batch Composer's training loop reads the loss to the host (``.cpu().item()``,
# the GPU drains) and then ``_compute_and_log_metrics`` deep-copies the training metrics and
# calls ``compute()`` on each (``composer/trainer/trainer.py`` v0.16.3-v0.17.2), which
# synchronises every state across all ranks (torchmetrics v1.0.3, Composer's ``<1.1`` pin:
# ``Metric._sync_dist`` with ``gather_all_tensors``): for a scalar state a barrier, one
# ``torch.zeros_like`` per rank in a Python list, one ``all_gather`` into that list, whose
# NCCL backend copies each rank's slot out of a flat buffer (``ProcessGroupNCCL::allgather``,
# PyTorch 2.0-2.1), then ``torch.stack`` and the sum. ``LanguageCrossEntropy`` and
# ``LanguagePerplexity`` hold two scalar states each (``sum_loss``, ``total_items``).
TRAIN_METRIC_STATES = 2
SYNC_CALLS_PER_RANK = 2  # zeros_like and the copy-out
SYNC_CALLS_PER_STATE = 4  # barrier, all_gather, stack, sum


def train_metrics_sync_s(stack: Stack, num_ranks: int, cpu: HostCpu) -> float:
    """Host seconds per step to synchronise the training metrics' states over ``num_ranks``
    ranks, each call at :data:`~clusterforge.perf.host.HOST_OP_S` (the collectives' own
    latency is :func:`train_metrics_collectives_s`)."""
    states = stack.train_metric_passes * TRAIN_METRIC_STATES
    calls = states * (SYNC_CALLS_PER_STATE + SYNC_CALLS_PER_RANK * num_ranks)
    return calls * HOST_OP_S[cpu]


# The NCCL barrier is an all-reduce of a one-element tensor followed by a device synchronise
# (``ProcessGroupNCCL::barrier`` and ``WorkNCCL::synchronizeInternal``, PyTorch 2.0-2.1); the
# state's all-gather moves one FP32 scalar per rank. [D] from the calls above.
BARRIER_BYTES = 4.0
STATE_BYTES_PER_RANK = 4.0


def train_metrics_collectives_s(stack: Stack, comm: CommModel, num_ranks: int) -> float:
    """Seconds per step the host waits on the training metrics' collectives over all
    ``num_ranks`` ranks: per state the barrier's all-reduce and the all-gather, each at the
    communication model's time for its bytes (latency-bound). They run one after another
    between the step's host synchronisations, with the GPU drained, so none overlaps."""
    states = stack.train_metric_passes * TRAIN_METRIC_STATES
    if states == 0 or num_ranks < 2:
        return 0.0
    world = np.arange(num_ranks).reshape(1, num_ranks)
    barrier = comm.collective_time_s("all_reduce", BARRIER_BYTES, world)
    gather = comm.collective_time_s("all_gather", STATE_BYTES_PER_RANK * num_ranks, world)
    return states * (barrier + gather)
