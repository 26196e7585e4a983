"""The torchao float8 single-node rows: the attention kernel the runs executed, and a what-if.

pytorch/ao's e2e tables (``validation/pub_torchao_float8_1node.toml``) ran torchtitan's
Llama 3 8B with per-op selective activation checkpointing under ``torch.compile``. What
the torchtitan of each table ran for the attention (pytorch/torchtitan):

* H100 (0da8901b, 2025-03-10): plain ``F.scaled_dot_product_attention``; PyTorch 2.7's SDPA
  tries FlashAttention-2 first on sm_90 (cuDNN opt-in since 2.5.1): the stack's
  ``sdpa_flash`` as priced.
* MI300X (2c8b5947, 2025-08-08): ``ScaledDotProductAttention`` with FLASH, EFFICIENT, MATH
  (``torch.cuda.get_device_capability()`` is (9, 4) on gfx942, below the (10, 0) gate):
  the ROCm flash backend, the stack's ``sdpa_flash`` as priced.
* B200 (6fc499f6, 2025-08-14): ``ScaledDotProductAttention._init_backend`` puts
  ``SDPBackend.CUDNN_ATTENTION`` first when ``has_cuda_capability(10, 0)`` ("Add CuDNN on
  B200 w/ highest priority", since 3b85aa31f, 2025-05-14), under ``sdpa_kernel(...,
  set_priority=True)``: cuDNN's fused attention. The per-op policy's ``_save_list``
  (``torchtitan/models/llama3/infra/parallelize.py``) names ``mm``, SDPA's efficient and
  flash ops, ``reduce_scatter_tensor`` and ``max``, not
  ``aten._scaled_dot_product_cudnn_attention``, so the cuDNN forward is recomputed in the
  backward (added to the list in b39377f9f, 2025-12-01, after these runs).

Scenarios for the B200 development row (everything else as the model stands):

* ``cudnn``: cuDNN attention at the model's measured B200 rates, output saved.
* ``cudnn_rerun``: the same, with the forward rerun in the backward (what 6fc499f6 runs).
  The saved attention output it no longer keeps (one BF16 [s, h] per layer) is not taken
  off the memory estimate; at 8B over 8 GPUs memory does not bind.
* ``sdpa_fa2_b200``: PyTorch SDPA's FlashAttention-2 at its measured B200 rate, 375.107 /
  308.783 TFLOP/s forward / backward (NVIDIA/cudnn-frontend
  ``benchmark/sdpa_benchmark_training/artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv``
  at 9793df5, 2025-07-16: ``pyt_flash_attention``, batch 1, 8,192 x 8,192, 128 / 8 heads,
  head dim 128, causal; NGC PyTorch 25.06, cuDNN 9.10.2), against the model's
  FlashAttention-2 estimate (0.44 of the BF16 MAMF). Not what these runs executed; it is
  what a B200 torchtitan run before 3b85aa31f, or one restricted to FLASH / EFFICIENT
  (context parallelism), runs.

And for the H100 row, ``h100_catalog``: the row as first mapped, on the catalog H100 SXM
(80 GB, 3.35 TB/s, 700 W), against the row as it stands: Meta's 96 GB HBM2e H100 at
2.4 TB/s (pytorch/ao ``torchao/testing/float8/roofline_utils.py`` at 8c81863ba, "custom to
Meta's H100 variant"), peak between SXM and NVL as ``validation/pub_torchtitan_h100.toml``
maps the same part.

Last, the B200 row's run at the full 1000 W and without ``torch.compile``, once with the
FlashAttention-2 rate measured above and once with cuDNN rerun, beside the two step logs of
pytorch/torchtitan pull request 1196 (2025-05-14, "Use cudnn backend on B200": Llama 3 8B
on B200, ``tps`` 10,902 before and 12,211 after; configuration and power limit not stated,
so an indication only, not a row).

Prints each scenario's prediction of the rows it changes and the development set's MAPE,
median signed error and per-class MAPE with it. Development rows only (held-out rows are
never predicted here).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/torchao_attention_whatif.py
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from clusterforge.catalog import ModelArch
from clusterforge.perf import attention, step
from clusterforge.perf.compute import LayerTimes
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.roofline import GpuPerf
from clusterforge.perf.stack import Stack
from validation.runs import Outcome, Run, load_runs, predict_run

__all__ = ["main"]

B200_ROW = "pub-torchao-b200-8b-bf16"
H100_ROW = "pub-torchao-h100-8b-bf16"
# PyTorch SDPA FlashAttention-2 on B200 (cudnn-frontend 9793df5, see the module docstring)
SDPA_FA2_B200_TFLOPS = (375.107, 308.783)  # forward, backward


@contextmanager
def _attention_rerun() -> Iterator[None]:
    """Under torchtitan's per-op policy with cuDNN attention, every layer's attention
    forward rerun in the backward (the policy's save list without the cuDNN op)."""
    original = step.layer_times  # type: ignore[attr-defined]

    def patched(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack) -> LayerTimes:
        times = original(arch, plan, perf, stack)
        per_op = plan.recompute == "selective" and stack.selective_recompute == "every_other_matmul"
        if not (per_op and stack.attention == "cudnn"):
            return times
        return replace(times, recompute_s=times.recompute_s + times.attention_forward_s)

    step.layer_times = patched  # type: ignore[attr-defined]
    try:
        yield
    finally:
        step.layer_times = original  # type: ignore[attr-defined]


@contextmanager
def _sdpa_fa2_b200() -> Iterator[None]:
    """PyTorch SDPA's FlashAttention-2 at its measured B200 forward and backward rates."""
    original = attention._fused_attention_rates

    def patched(
        stack: Stack, perf: GpuPerf, arch: ModelArch | None = None, length: float | None = None
    ) -> tuple[float, float]:
        if stack.attention == "sdpa_flash" and perf.gpu_id == "b200":
            forward, backward = SDPA_FA2_B200_TFLOPS
            ratio = attention.FLASH_BACKWARD_WORK_RATIO * forward / backward
            return forward * perf.attention_scale, ratio
        return original(stack, perf, arch, length)

    attention._fused_attention_rates = patched
    try:
        yield
    finally:
        attention._fused_attention_rates = original


def _development() -> list[Run]:
    return [r for r in load_runs() if r.subset == "development"]


def _predict(runs: list[Run]) -> dict[str, Outcome]:
    predict_run.cache_clear()
    outcomes = {r.name: predict_run(r) for r in runs}
    predict_run.cache_clear()
    return {k: o for k, o in outcomes.items() if o.prediction is not None}


def _summary(outcomes: dict[str, Outcome]) -> str:
    errors = [o.error for o in outcomes.values()]
    classes: dict[str, list[float]] = defaultdict(list)
    for o in outcomes.values():
        classes[o.run_class].append(abs(o.error))
    parts = "; ".join(
        f"{k} {len(v)} runs {statistics.fmean(v) * 100:.2f} %" for k, v in sorted(classes.items())
    )
    mape = statistics.fmean(abs(e) for e in errors) * 100
    median = statistics.median(errors) * 100
    return f"development runs {len(errors)}  MAPE {mape:.2f} %  median signed {median:+.2f} %\n  {parts}"


def _row_override(runs: list[Run], name: str, change: Callable[[Run], Run]) -> list[Run]:
    return [change(r) if r.name == name else r for r in runs]


def _scenarios(runs: list[Run]) -> dict[str, tuple[list[Run], list[Callable[[], object]]]]:
    """Name -> (the development rows as the scenario maps them, patches it runs under)."""

    def cudnn(run: Run) -> Run:
        return replace(run, stack=replace(run.stack, attention="cudnn"))

    def h100(run: Run) -> Run:
        return replace(run, gpu=())

    return {
        "as mapped": (runs, []),
        "cudnn": (_row_override(runs, B200_ROW, cudnn), []),
        "cudnn_rerun": (_row_override(runs, B200_ROW, cudnn), [_attention_rerun]),
        "sdpa_fa2_b200": (runs, [_sdpa_fa2_b200]),
        "h100_catalog": (_row_override(runs, H100_ROW, h100), []),
    }


def _run_scenario(rows: list[Run], patches: list[Callable[[], object]]) -> dict[str, Outcome]:
    if not patches:
        return _predict(rows)
    with patches[0]():  # type: ignore[attr-defined]
        return _run_scenario(rows, patches[1:])


def _full_power_eager() -> None:
    """The B200 row at 1000 W without torch.compile, FlashAttention-2 and cuDNN."""
    run = next(r for r in _development() if r.name == B200_ROW)
    eager = replace(run, stack=replace(run.stack, fused_elementwise=False), gpu_power_limit_w=None)
    cudnn = replace(eager, stack=replace(eager.stack, attention="cudnn"))
    with _sdpa_fa2_b200():
        flash = _predict([eager])[B200_ROW].predicted
    with _attention_rerun():
        rerun = _predict([cudnn])[B200_ROW].predicted
    print("== B200 row at 1000 W, no torch.compile (pytorch/torchtitan pull 1196 logs)")
    print(f"  SDPA FlashAttention-2 (measured rate) {flash:9,.1f}  log before 10,902")
    print(f"  cuDNN, forward rerun                  {rerun:9,.1f}  log after  12,211")


def main() -> None:
    runs = _development()
    base = _predict(runs)
    for name, (rows, patches) in _scenarios(runs).items():
        outcomes = _run_scenario(rows, patches)
        print(f"== {name}")
        for key, o in outcomes.items():
            b = base[key]
            if name == "as mapped" and "torchao" not in key:
                continue
            if name != "as mapped" and abs(o.predicted - b.predicted) < 1e-6 * b.predicted:
                continue
            print(
                f"  {key:40} published {o.run.published:9,.1f}  as mapped {b.predicted:9,.1f} "
                f"({b.error * 100:+5.1f} %)  here {o.predicted:9,.1f} ({o.error * 100:+5.1f} %)"
            )
        print("  " + _summary(outcomes))
    _full_power_eager()


if __name__ == "__main__":
    main()
