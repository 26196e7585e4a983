"""DeepSpeed's CPU Adam step on the host: what the byte counts leave of the 8k gap.

The model prices the host passes of ZeRO-Offload (:mod:`clusterforge.perf.optimizer_offload`)
at 44 B per owned parameter over the node's peak DRAM bandwidth, shared by its ranks: 42 B
of unscale, Adam and cast, and 2 B for the BF16 copy read once more on its way up
(``UPLOAD_HOST_BYTES``). This what-if prints the rows without that read (42 B, the model
before it), with it (44 B) and with every byte of the ZeRO-3 upload at DRAM (50 B), then
what remains of the two 8k development rows' excess:

- ZeRO-3 writes the updated FP32 partition into the GPU's BF16 shard with
  ``fp16_partitioned_groups_flat[i].data.copy_(fp32_partitioned_groups_flat[i].data)``
  (``deepspeed/runtime/zero/stage3.py`` ``_reassign_or_swap_out_partitioned_parameters``,
  deepspeedai/DeepSpeed at edaa7221267243c7be7fb49c5d5f5c4fb97b4641). The FP32 partition is
  made by ``.to(cpu).clone()`` in ``_create_fp32_partitions`` and never pinned (only the
  gradient buffers are, ``grad_partitions_flat_buffer`` and ``subgroup_gradient_buffer``,
  under ``pin_memory``).
- PyTorch casts a CPU-to-GPU copy of another dtype on the CPU into a new tensor,
  ``iter.tensor(1).to(iter.dtype(0))`` (``aten/src/ATen/native/cuda/Copy.cu``
  ``copy_kernel_cuda``): a fresh, pageable BF16 temporary.
- A copy from pageable memory is staged by the CUDA driver: "the CUDA driver must first
  allocate a temporary page-locked, or pinned, host array, copy the host data to the pinned
  array, and then transfer the data from the pinned array to device memory" (M. Harris, "How
  to Optimize Data Transfers in CUDA C/C++", NVIDIA Technical Blog, 2012): read 2 B (the
  model's 44 B) and write 2 B more on the host.
- Write-back memory is write-allocate: "write misses cause cache line fills" (Intel 64 and
  IA-32 Architectures Software Developer's Manual, Vol. 3A, "Methods of Caching Available",
  WB). The in-place stores of the unscale and of ``Step_AVX`` hit lines their own loads just
  brought in; the two fresh destinations (the BF16 temporary and the staging buffer) are
  read before they are written: 2 B each.

50 B counts every one of these bytes at DRAM, the most the upload can add: the staging buffer
is the driver's, reused, and may stay in the last-level cache, and the temporary is a fresh
allocation whose pages the kernel zeroes on first touch (mmap(2), MAP_ANONYMOUS), which
leaves the line in the cache before the cast writes it. ZeRO-1/2 casts into a pinned BF16
buffer (``stage_1_and_2.py`` ``step``); no offloaded row runs it.

Then, for the 8k rows only, the host bandwidth the measured step implies (the model's host
passes plus the row's remaining excess, at the model's bytes) and, as a cross-check, the
same author's published 8k step without offload, without recomputation and with ZeRO-2
(stas00/ml-engineering at 2943345982c3, ``insights/when-to-upgrade-gpus/README.md``, "Step
decomposition @ 8k", total 461 TFLOPS on H200 and 778 on B200, ``bench_decompose.py``
defaults ZERO_STAGE 2, OFFLOAD_OPTIMIZER 0, GRAD_CHECKPOINT 0): not a validation row,
printed only to compare.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/cpu_adam_host_whatif.py

Calibration and development rows only (never held-out).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import clusterforge.perf.optimizer_offload as offload
from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run

__all__ = [
    "PAGEABLE_UPLOAD_HOST_BYTES",
    "PUBLISHED_8K_NO_OFFLOAD_TFLOPS",
    "estimate_tflo_8k",
    "host_bytes",
    "main",
]

# ZeRO-3 upload through pageable memory beyond the model's read of the BF16 copy (module
# docstring): the staging copy's write (2) and the write-allocate reads of the temporary and
# of the staging buffer (2 + 2).
PAGEABLE_UPLOAD_HOST_BYTES = 2.0 + 2.0 + 2.0
# stas00/ml-engineering 2943345982c3, README "Step decomposition @ 8k", total TFLOPS per GPU.
PUBLISHED_8K_NO_OFFLOAD_TFLOPS = {"dgx-h200": 461.0, "dgx-b200": 778.0}
SEQ_8K = 8192


def estimate_tflo_8k() -> float:
    """benchmark.py ``estimate_tflos`` for one 8k sequence of Llama-3.1-8B (the source's
    dense_N = 7,504,658,432; attention 6 s^2 x 128 x 32 heads x 32 layers), in TFLO."""
    dense = 6 * 7_504_658_432 * SEQ_8K
    attention = 6 * SEQ_8K**2 * 128 * 32 * 32
    return (dense + attention) / 1e12


@contextmanager
def host_bytes(bytes_per_param: float) -> Iterator[None]:
    """Predict with ``bytes_per_param`` host bytes per owned parameter."""
    saved = offload.HOST_BYTES_PER_PARAM
    offload.HOST_BYTES_PER_PARAM = bytes_per_param
    predict_run.cache_clear()
    try:
        yield
    finally:
        offload.HOST_BYTES_PER_PARAM = saved
        predict_run.cache_clear()


def _errors(runs: list[Run], bytes_per_param: float) -> dict[str, float]:
    with host_bytes(bytes_per_param):
        return {r.name: predict_run(r).error for r in runs}


def _step_s(run: Run, bytes_per_param: float) -> float:
    with host_bytes(bytes_per_param):
        pred = predict_run(run).prediction
        assert pred is not None
        return pred.step_time_s


def _variants() -> list[float]:
    """Host bytes per parameter: without the upload's read, the model's, all at DRAM."""
    model = offload.HOST_BYTES_PER_PARAM
    return [model - offload.UPLOAD_HOST_BYTES, model, model + PAGEABLE_UPLOAD_HOST_BYTES]


def _rows(offloaded: list[Run], errors: dict[float, dict[str, float]]) -> None:
    variants = _variants()
    heads = "".join(f" {f'{b:.0f} B':>9}" for b in variants)
    print(
        f"{'row':<30} {'published':>9}{heads}  step s: published / "
        + " / ".join(f"{b:.0f} B" for b in variants)
    )
    for run in offloaded:
        model_err = errors[variants[1]][run.name]
        published_s = _step_s(run, variants[1]) * (1 + model_err)
        cells = "".join(f" {100 * errors[b][run.name]:>+8.1f}%" for b in variants)
        steps = " / ".join(f"{_step_s(run, b):.2f}" for b in variants)
        print(f"{run.name:<30} {run.published:>9.0f}{cells}  {published_s:.2f} / {steps}")


def _implied(offloaded: list[Run], before: dict[str, float]) -> None:
    print("\n8k rows: host bandwidth the measured step implies (the model's bytes, the rest of")
    print("the excess taken as host passes), and the published 8k step without offload")
    print("(ZeRO-2, no recomputation; stas00/ml-engineering README 'Step decomposition @ 8k')")
    for run in offloaded:
        if run.base.seq_length != SEQ_8K:
            continue
        pred = predict_run(run).prediction
        assert pred is not None and pred.optimizer_offload is not None
        parts = pred.optimizer_offload
        published_s = pred.step_time_s * (1 + before[run.name])
        excess_s = published_s - pred.step_time_s
        host_bytes_all = parts.ranks_per_host * parts.owned_params * parts.host_bytes_per_param
        implied = host_bytes_all / (parts.host_s + excess_s) / 1e9
        plain_s = estimate_tflo_8k() / PUBLISHED_8K_NO_OFFLOAD_TFLOPS[run.node]
        print(
            f"  {run.name:<30} excess {excess_s:.2f} s, host {parts.host_s:.2f} s ->"
            f" {parts.host_s + excess_s:.2f} s: {implied:.0f} GB/s of"
            f" {parts.host_dram_gbyte_per_s:.1f} ({100 * implied / parts.host_dram_gbyte_per_s:.0f}"
            f" %); published no-offload step {plain_s:.3f} s, offloaded {published_s:.2f} s"
            f" (+{published_s - plain_s:.2f} s)"
        )


def _summary(label: str, runs: list[Run], errors: Callable[[Run], float]) -> None:
    print(f"  {label:<22}" + class_summary(runs, errors, medians=True))


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("calibration", "development")]
    fitted = [r for r in runs if predict_run(r).prediction is not None]
    development = [r for r in fitted if r.subset == "development"]
    calibration = [r for r in fitted if r.subset == "calibration"]
    offloaded = [r for r in development if r.base.optimizer_offload]
    assert not any(r.base.optimizer_offload for r in calibration)
    errors = {b: _errors(fitted, b) for b in _variants()}
    print("offloaded development rows: signed error with host bytes per parameter")
    _rows(offloaded, errors)
    _implied(offloaded, errors[_variants()[1]])
    print(f"\ndevelopment ({len(development)} runs): MAPE, median | class MAPE (median)")
    for b in _variants():
        _summary(f"{b:.0f} B", development, lambda r, e=errors[b]: e[r.name])
    for b in _variants():
        cal = statistics.fmean(abs(errors[b][r.name]) for r in calibration)
        both = statistics.fmean(abs(errors[b][r.name]) for r in fitted)
        print(
            f"  {b:.0f} B: calibration ({len(calibration)}) MAPE {100 * cal:.2f} %,"
            f" calibration + development ({len(fitted)}) {100 * both:.2f} %"
        )


if __name__ == "__main__":
    main()
