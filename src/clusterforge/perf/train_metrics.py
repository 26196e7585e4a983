"""Training metrics evaluated on every micro-batch's logits: memory-bound passes over the
``tokens x vocabulary`` logits outside the loss, on the last pipeline stage."""

from __future__ import annotations

from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack

__all__ = ["TRAIN_METRIC_BYTES_PER_LOGIT", "TRAIN_METRIC_KERNELS", "train_metrics_s"]

# Training metrics on the logits (Composer's ``LanguageCrossEntropy`` and
# ``LanguagePerplexity``, ``composer/metrics/nlp.py`` v0.16-v0.17, which LLM Foundry's MPT
# registers as training metrics by default, ``use_train_metrics``): Composer's
# ``_train_microbatch`` calls ``_eval_train_metrics`` after every micro-batch's backward,
# under no_grad and the autocast context, and each metric runs
# ``torch.nn.CrossEntropyLoss(reduction='sum')`` on the BF16 logits: ``log_softmax`` in
# BF16 (PyTorch's ``cunn_SoftMaxForward`` for a 50,368-wide row reads it for the max, for the
# sum of exponentials and for the output it writes: 3 x 2 + 2) and autocast's FP32 cast in
# front of ``nll_loss`` (2 + 4) = 14 B per logit, three kernels. [D] by counting passes.
TRAIN_METRIC_BYTES_PER_LOGIT = 14.0
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
