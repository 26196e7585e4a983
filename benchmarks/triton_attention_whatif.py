"""The Triton FlashAttention on A100: summary slowdowns against the rate measured by length.

The model prices MPT's ``attn_impl: triton`` (``Stack.attention = "triton"``, LLM Foundry's
vendored ``flash_attn_triton.py``) on A100 at the forward + backward rate Dao 2023 (arXiv
2307.08691, Fig. 4 (d), causal, head dim 128) measures for "FlashAttention Triton" at the
call's sequence length (:data:`clusterforge.perf.attention_length.TRITON_FWD_BWD_TFLOPS`:
50, 61, 68, 74, 78, 80 TFLOP/s at 512-16k). Before, every length ran at FlashAttention-2's
A100 peak rates (227.8 forward, 196.6 backward) divided by the paper's summary slowdowns
(1.4 forward, 2.0 backward): 110.7 TFLOP/s forward + backward. This prints calibration and
development with the measured rates (as modelled) and with the table emptied (the summary
slowdowns on every GPU, as before), and every LLM Foundry development row.

With ``--h100``, a what-if on top (the model keeps the summary slowdowns on H100): the
Triton kernel on H100 and H200 at FlashAttention v1's H100 forward + backward bars
(Dao-AILab/flash-attention ``assets/flash2_h100_fwd_bwd_benchmark.png`` at 4f285b35, causal,
head dim 128: 98, 109, 108, 126, 135, 137 TFLOP/s at 512-16k) times the A100 ratio of the
Triton bars to FlashAttention v1's (55, 62, 69, 76, 80, 83 in Fig. 4 (d)), i.e. the Triton
kernel as far behind FlashAttention v1 on H100 as on A100 (its docstring: "Overall Triton
forward + backward is slightly slower than CUDA forward + backward"; tested on A100 only).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/triton_attention_whatif.py [--h100]

Calibration and development rows only (never held-out); nothing is refitted.
"""

from __future__ import annotations

import statistics
import sys

from benchmarks.dp_bucket_whatif import Errors, _summary

from clusterforge.perf import attention_length
from validation.class_errors import fitted_errors
from validation.runs import predict_run

__all__ = ["FA1_FWD_BWD_TFLOPS", "LLM_FOUNDRY_TABLES", "h100_derived_points", "main"]

# FlashAttention v1 forward + backward TFLOP/s, causal, head dim 128, at 512-16k tokens:
# Dao 2023 Fig. 4 (d) (A100 80GB SXM4) and the H100 80GB SXM5 image of the same release [V].
FA1_FWD_BWD_TFLOPS = {
    "a100": (55.0, 62.0, 69.0, 76.0, 80.0, 83.0),
    "h100": (98.0, 109.0, 108.0, 126.0, 135.0, 137.0),
}

# name prefix of each LLM Foundry table's development rows -> the table
LLM_FOUNDRY_TABLES = {
    "llmfoundry-a100-mpt-": "A100 one node (llm_foundry_a100)",
    "llmfoundry-a100-80gb-": "A100 80GB 16-64 GPUs (pub_llm_foundry_a100_multinode)",
    "llmfoundry-a100-40gb-": "A100 40GB 32-128 GPUs (pub_llm_foundry_a100_multinode)",
    "llmfoundry-h100-mpt-": "H100 8-64 GPUs (llm_foundry_h100)",
    "llmfoundry-h100-large-": "H100 128-512 GPUs (pub_llm_foundry_h100_large)",
}


def _row_lines(before: Errors, after: Errors) -> None:
    print("\nLLM Foundry development rows: signed error, summary slowdowns -> measured by length")
    for name, (subset, _, err) in before.items():
        if subset == "development" and name.startswith("llmfoundry"):
            print(f"  {name:<40} {100 * err:+6.1f} -> {100 * after[name][2]:+6.1f} %")


def _table_lines(before: Errors, after: Errors) -> None:
    print("\nby table: runs, signed mean and MAPE, summary slowdowns -> measured by length")
    for prefix, table in LLM_FOUNDRY_TABLES.items():
        names = [n for n, v in before.items() if v[0] == "development" and n.startswith(prefix)]
        cells = []
        for errors in (before, after):
            errs = [100 * errors[n][2] for n in names]
            mape = statistics.fmean(map(abs, errs))
            cells.append(f"{statistics.fmean(errs):+5.1f} / {mape:4.1f} %")
        print(f"  {table:<56} {len(names):>2}  {cells[0]} -> {cells[1]}")


def h100_derived_points() -> tuple[tuple[int, float], ...]:
    """The H100 FlashAttention v1 bars times the A100 Triton / FlashAttention v1 ratio."""
    a100 = attention_length.TRITON_FWD_BWD_TFLOPS["a100-80gb"]
    fa1_a100, fa1_h100 = FA1_FWD_BWD_TFLOPS["a100"], FA1_FWD_BWD_TFLOPS["h100"]
    return tuple(
        (s, rate * h / a) for (s, rate), a, h in zip(a100, fa1_a100, fa1_h100, strict=True)
    )


def main() -> None:
    if "--h100" in sys.argv[1:]:
        for gpu_id in ("h100-sxm", "h200-sxm"):
            attention_length.TRITON_FWD_BWD_TFLOPS[gpu_id] = h100_derived_points()
        print("H100 at the derived rates:", [f"{r:.1f}" for _, r in h100_derived_points()])
    measured = fitted_errors()
    table = dict(attention_length.TRITON_FWD_BWD_TFLOPS)
    attention_length.TRITON_FWD_BWD_TFLOPS.clear()
    try:
        summary = fitted_errors()
    finally:
        attention_length.TRITON_FWD_BWD_TFLOPS.update(table)
        for gpu_id in ("h100-sxm", "h200-sxm"):
            attention_length.TRITON_FWD_BWD_TFLOPS.pop(gpu_id, None)
        predict_run.cache_clear()
    classes = {name: cls for name, (_, cls, _) in measured.items()}
    for subset in ("calibration", "development"):
        print(f"\n{subset}: MAPE, median signed | class runs MAPE (median)")
        print(f"  summary slowdowns  {_summary(summary, subset, classes)}")
        label = "+ H100 derived " if "--h100" in sys.argv[1:] else "measured by length"
        print(f"  {label} {_summary(measured, subset, classes)}")
    _row_lines(summary, measured)
    _table_lines(summary, measured)
    moved = [n for n in measured if abs(summary[n][2] - measured[n][2]) >= 0.003]
    print(f"\nruns moved by 0.3 points or more: {len(moved)}")
    for name in moved:
        if not name.startswith("llmfoundry"):
            print(f"  {measured[name][0]:<11} {name}")


if __name__ == "__main__":
    main()
