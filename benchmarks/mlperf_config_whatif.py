"""What-if: what the MLPerf Training submissions' own configurations run beyond the rows.

Not a model change (``src/`` is untouched); development and calibration rows only (held-out
rows are never predicted here). Three probes, each printed per row and, where a row field
changes, as calibration / development MAPE per class before and after:

``cudnn``
    ``attention = "cudnn"`` on the two v4.1 H100 GPT-3 development rows (NVIDIA Eos n32 and
    Oracle n192). Their ``config_common.sh`` (mlcommons/training_results_v4.1@b87b9e3,
    ``NVIDIA/benchmarks/gpt3/implementations/eos_n32_ngc24.09_nemo/`` and
    ``Oracle/benchmarks/gpt3/DGXH100_128x8x64x4x8_mbs2/``) leaves
    ``#export NVTE_FUSED_ATTN=0 # Disable cuDNN fused attention`` commented out, so
    Transformer Engine picks its backend; ``get_attention_backend`` prefers FusedAttention
    (cuDNN) over FlashAttention on sm90 from TE 1.8 on. The submissions do not pin the TE
    release (``TE_REVISION=SKIP`` in the Dockerfile: the NGC PyTorch 24.09 image's own), and
    Oracle's system description names PyTorch 24.04 while its Dockerfile names 24.09, so the
    rows keep the stack's default and this stays a what-if.
``tp-bound``
    The v4.1 Eos n32 row with the userbuffers TP exposure set to zero: an upper bound of what
    any TP-overlap setting of the config (ring exchange with 1 SM, pipelined reduce-scatter
    with 24 SMs and atomic GEMMs, ``conf/tp_overlap/h100tp4mbs2.yaml``) could recover.
``dp-exposed``
    The Cisco Llama 3.1 8B row with its data-parallel collectives not overlapped (the stack's
    ``dp_overlap`` off): how far the model's DP traffic would go if none of it hid.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/mlperf_config_whatif.py
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

from clusterforge.perf import exposure
from validation.runs import Run, load_runs, predict_run

__all__ = ["CISCO_ROW", "CUDNN_ROWS", "EOS_ROW", "main"]

EOS_ROW = "pub-mlperf-v41-nvidia-eos-n32-256gpu"
ORACLE_ROW = "pub-mlperf-v41-oracle-bmgpuh100-n192-1536gpu"
CUDNN_ROWS = (EOS_ROW, ORACLE_ROW)
CISCO_ROW = "pub-mlperf-v51-cisco-hpf-n16-llama31-8b-128gpu"

Errors = dict[str, tuple[str, str, float]]  # name -> (set, class, signed error)


def _errors(change: Callable[[Run], Run]) -> Errors:
    """Signed errors of every calibration and development run after ``change``."""
    predict_run.cache_clear()
    out: Errors = {}
    for run in load_runs():
        if run.subset not in ("calibration", "development"):
            continue
        outcome = predict_run(change(run))
        if outcome.prediction is not None:
            out[run.name] = (run.subset, outcome.run_class, outcome.error)
    return out


def _summary(errors: Errors, subset: str) -> str:
    by_class: dict[str, list[float]] = defaultdict(list)
    for sub, cls, err in errors.values():
        if sub == subset:
            by_class[cls].append(err)
    every = [e for v in by_class.values() for e in v]
    cells = "; ".join(
        f"{c} {len(v)} {100 * statistics.fmean(map(abs, v)):.2f}"
        for c, v in sorted(by_class.items())
    )
    mape = 100 * statistics.fmean(map(abs, every))
    return f"{len(every)} runs MAPE {mape:.2f} % median {100 * statistics.median(every):+.2f} % | {cells}"


def _cudnn(run: Run) -> Run:
    if run.name not in CUDNN_ROWS:
        return run
    return replace(run, stack=replace(run.stack, attention="cudnn"))


def _no_dp_overlap(run: Run) -> Run:
    if run.name != CISCO_ROW:
        return run
    return replace(run, stack=replace(run.stack, dp_overlap=False))


def _tp_zero_errors() -> Errors:
    """Errors with the userbuffers TP exposure of every layer set to zero."""
    original = exposure._tp_exposed_s

    def zero(*args: object) -> float:
        stack = args[3]
        if getattr(stack, "tp_overlap", False) and stack.tp_overlap_kind == "userbuffers":  # type: ignore[attr-defined]
            return 0.0
        return float(original(*args))  # type: ignore[arg-type]

    exposure._tp_exposed_s = zero  # type: ignore[assignment]
    try:
        return _errors(lambda r: r)
    finally:
        exposure._tp_exposed_s = original
        predict_run.cache_clear()


def _row(label: str, names: tuple[str, ...], before: Errors, after: Errors) -> None:
    for name in names:
        print(
            f"  {label:10} {name:50} {100 * before[name][2]:+6.1f} -> {100 * after[name][2]:+6.1f} %"
        )


def main() -> None:
    before = _errors(lambda r: r)
    cudnn = _errors(_cudnn)
    print("cudnn: attention = 'cudnn' on the v4.1 H100 GPT-3 development rows")
    _row("cudnn", CUDNN_ROWS, before, cudnn)
    for subset in ("calibration", "development"):
        print(f"  {subset:11} as modelled {_summary(before, subset)}")
        print(f"  {subset:11} cudnn       {_summary(cudnn, subset)}")
    print("tp-bound: userbuffers TP exposure zero (upper bound, not a mechanism)")
    _row("tp-bound", (EOS_ROW,), before, _tp_zero_errors())
    print("dp-exposed: the Cisco row's DP collectives not overlapped")
    _row("dp-exposed", (CISCO_ROW,), before, _errors(_no_dp_overlap))
    predict_run.cache_clear()


if __name__ == "__main__":
    main()
