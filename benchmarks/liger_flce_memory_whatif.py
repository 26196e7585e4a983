"""What-if: Liger's fused linear cross-entropy in place of the whole logits (DeepSpeed rows).

The ml-engineering DeepSpeed ZeRO-3 runs (validation/pub_mleng_zero3_h200_b200.toml) use
Liger-Kernel 0.8.0's fused linear cross-entropy; the rows state ``cross_entropy = "te"``,
which the memory model prices as the whole BF16 logits (2 B per logit). Liger's
``fused_linear_cross_entropy_forward`` (liger-kernel 0.8.0,
``liger_kernel/ops/fused_linear_cross_entropy.py``) never holds the whole logits: it walks
the tokens in chunks of ``next_power_of_2(ceil(BT / ceil(V / H)))`` (BF16 logits of one
chunk), and keeps, from the forward into the backward, ``grad_weight =
torch.zeros_like(weight)`` (BF16, ``accum_dtype`` None as the Hugging Face integration
passes it); per chunk ``grad_weight += torch.mm(grad_logits_chunk.t(), _input_chunk).float()``
holds the BF16 product and its FP32 copy beside it. Under ZeRO-3 the output layer's
weight is gathered in BF16 for the loss (beyond the one gathered layer the model counts).

The loss transient is then, per GPU, ``grad_weight`` + product + FP32 copy (8 B per output
weight), the gathered output weight above a layer's (2 B each) and one chunk's logits,
against one recomputed layer in the backward, whichever is larger. Model unchanged.

    PYTHONPATH=src:. python benchmarks/liger_flce_memory_whatif.py
"""

from __future__ import annotations

import importlib
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from clusterforge.perf.memory import (
    GIB,
    LOSS_PEAK_BYTES,
    MemoryBreakdown,
    activation_bytes_per_layer,
    layer_params_per_gpu,
    memory_per_gpu,
)
from clusterforge.perf.roofline import BF16_BYTES
from clusterforge.perf.uncertainty import run_class
from validation.memory_rows import load_memory_rows
from validation.runs import Run, best_prediction, load_runs, run_comm, run_design

# grad_weight (BF16), the chunk's BF16 product, its FP32 copy: bytes per output weight.
LIGER_WEIGHT_GRAD_BYTES = 2.0 + 2.0 + 4.0


def _liger_bytes(arch: Any, plan: Any) -> float:
    """Liger's loss transient on one GPU (no TP: the rows' runs have none)."""
    tokens = plan.micro_batch * plan.seq_length
    h, v = arch.hidden_size, arch.vocab_size
    chunk = 2 ** math.ceil(math.log2(math.ceil(tokens / math.ceil(v / h))))
    gathered = BF16_BYTES * max(0.0, v * h - layer_params_per_gpu(arch, plan))
    return LIGER_WEIGHT_GRAD_BYTES * v * h + gathered + BF16_BYTES * chunk * v


def _patched(arch: Any, plan: Any, stages: Any, stack: Any) -> MemoryBreakdown:
    mem = memory_per_gpu(arch, plan, stages, stack)
    if stack.name != "deepspeed" or stack.cross_entropy != "te" or plan.layout.pp > 1:
        return mem
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    layer = activation_bytes_per_layer(arch, plan.with_(recompute="none"), stack)
    layer = layer if plan.recompute == "full" else 0.0
    te_loss = LOSS_PEAK_BYTES["te"] * tokens * arch.vocab_size / plan.layout.tp
    delta = max(layer, _liger_bytes(arch, plan)) - max(layer, te_loss)
    return replace(mem, activations_gib=mem.activations_gib + delta / GIB)


# The modules that call memory_per_gpu (the package re-exports functions of the same names).
PATCHED = ("clusterforge.perf.search", "clusterforge.perf.step")


@contextmanager
def liger_loss() -> Iterator[None]:
    """The model with Liger's loss transient on the DeepSpeed stack, for the block."""
    modules: list[Any] = [importlib.import_module(name) for name in PATCHED]
    saved = [m.memory_per_gpu for m in modules]
    for module in modules:
        module.memory_per_gpu = _patched
    try:
        yield
    finally:
        for module, original in zip(modules, saved, strict=True):
            module.memory_per_gpu = original


def _predict_all(runs: list[Run]) -> dict[str, Any]:
    return {r.name: best_prediction(r, run_comm(run_design(r))) for r in runs}


def _memory_rows() -> list[tuple[str, float, float | None, bool]]:
    out = []
    for row in load_memory_rows():
        if row.subset == "heldout":
            continue
        pred = best_prediction(row.run, run_comm(run_design(row.run)))
        gib = pred.memory.total_gib if pred is not None else None
        out.append((row.id, row.measured_gib, gib, pred is not None))
    return out


def _plan(pred: Any) -> str:
    if pred is None:
        return "no plan fits"
    p = pred.plan
    return f"mb {p.micro_batch} {p.recompute} ({p.recompute_layers} layers) {pred.memory.total_gib:.1f} GiB {pred.tokens_per_s_per_gpu:.1f} tok/s/GPU"


def _mape(runs: list[Run], preds: dict[str, Any]) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        pred = preds[run.name]
        if pred is None:
            continue
        err = abs(getattr(pred, run.metric) / run.published - 1.0)
        groups[run.subset].append(err)
        groups[f"{run.subset} {run_class(run.arch, pred.plan, run.stack)}"].append(err)
    return {k: statistics.fmean(v) for k, v in sorted(groups.items())}


def main() -> None:
    runs = [r for r in load_runs() if r.subset != "heldout"]
    before_rows, before = _memory_rows(), _predict_all(runs)
    with liger_loss():
        after_rows, after = _memory_rows(), _predict_all(runs)
    print(f"  {'memory row':<42} {'GiB':>6} {'before':>7} {'after':>7}")
    for (rid, measured, b, fit_b), (_, _, a, fit_a) in zip(before_rows, after_rows, strict=True):
        if b is None or a is None or abs(a - b) > 1e-9 or fit_a != fit_b:
            eb = f"{(b / measured - 1) * 100:+6.1f} %" if b else "no fit"
            ea = f"{(a / measured - 1) * 100:+6.1f} %" if a else "no fit"
            print(f"  {rid:<42} {measured:>6.1f} {eb:>8} {ea:>8}")
    print("training runs whose plan or fit changes:")
    for run in runs:
        b, a = before[run.name], after[run.name]
        if (b is None) != (a is None) or (b is not None and b.plan != a.plan):
            print(f"  {run.name}: {_plan(b)} -> {_plan(a)}")
    mb, ma = _mape(runs, before), _mape(runs, after)
    for key in mb:
        print(f"  {key:<36} MAPE {mb[key] * 100:5.2f} % -> {ma.get(key, 0.0) * 100:5.2f} %")


if __name__ == "__main__":
    main()
