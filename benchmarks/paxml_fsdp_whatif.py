"""What Paxml/Praxis runs that the ``maxtext`` stack of the Paxml rows does not, priced as a
what-if on the development and calibration rows (the model is not changed by it).

The Paxml rows (``validation/pub_paxml_fsdp_h100.toml``, ``validation/pub_jaxtoolbox_pax_fsdp.toml``)
map to the ``maxtext`` stack, frozen with their held-out twins. Read in the sources those
rows ran (NVIDIA's Paxml fork nvjax-svc-0/paxml, branch ``patch/te_support-2024-03-08``;
nvjax-svc-0/praxis at 5c5d5d3, 2024-03-03; NVIDIA/dgxc-benchmarking ``paxml/configure.sh``
at 143b90d), two costs true of Paxml and not of MaxText, so not part of that stack:

- ``copies``: the layer loop without XLA's while-loop double buffering
  (``--xla_gpu_enable_while_loop_double_buffering=false`` in the recipe): every iteration
  copies the pipelined all-gather's carried weights (``Stack.scan_carry_copies``).
- ``dropout``: ``GPT5BBase`` sets ``input_dropout_prob = 0.1`` on the repeated block; praxis
  ``StackedTransformer.__call__`` applies it to its input, and the block is one layer
  repeated ``x_times`` times (``model_params.py``: ``stacked_transformer_tpl.num_layers = 1``),
  so every layer's input (5B rows only). Priced as HBM traffic only (read and write of the
  BF16 activation in the forward, the rematerialised forward and the backward, 12 bytes per
  element); the threefry bits are not priced (a lower bound).

The one-hot embedding matmuls, which Paxml and every MaxText recipe of the stack's rows run,
are in the model (``Stack.embedding_onehot``, :mod:`clusterforge.perf.embedding`).

For every Paxml development row, prints the signed error as predicted, with each cost alone
and with both, and the ms each adds per step; then the per-class MAPE of development and
calibration with both applied to the Paxml rows (every other row unchanged).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/paxml_fsdp_whatif.py

Development and calibration rows only (never held-out).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import clusterforge.perf.step as step_module
from clusterforge.catalog import ModelArch
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, memory_time_s
from clusterforge.perf.stack import Stack
from clusterforge.perf.step import Prediction, predict_step
from validation.class_errors import class_summary
from validation.runs import Run, load_runs, predict_run, run_comm, run_design

PAXML_FILES = ("pub_paxml_fsdp_h100.toml", "pub_jaxtoolbox_pax_fsdp.toml")
# GPT5BBase's input dropout (nvjax-svc-0/paxml configs.py); the 175B config has none.
DROPOUT_LAYERS = 24
# Bytes per element of one input dropout over forward, rematerialised forward and backward.
DROPOUT_BYTES = 12.0
CANDIDATES = ("copies", "dropout")


def dropout_layer_s(arch: ModelArch, plan: ParallelPlan, perf: GpuPerf) -> float:
    """Seconds per layer and micro-batch of one input dropout (HBM traffic only)."""
    return memory_time_s(DROPOUT_BYTES * tokens_per_gpu(plan) * arch.hidden_size, perf, 3)


@contextmanager
def patched(name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Any:
    """Replace ``clusterforge.perf.step.<name>`` by ``wrap(original)`` for the block."""
    original = getattr(step_module, name)
    setattr(step_module, name, wrap(original))
    try:
        yield
    finally:
        setattr(step_module, name, original)


def _with_dropout(original: Callable[..., float]) -> Callable[..., Any]:
    def cast(arch: ModelArch, plan: ParallelPlan, stack: Stack, perf: GpuPerf, layers: int):
        extra = dropout_layer_s(arch, plan, perf) * layers
        return original(arch, plan, stack, perf, layers) + extra

    return cast


def varied_prediction(run: Run, candidates: tuple[str, ...]) -> Prediction:
    """The run's prediction with ``candidates`` applied to a Paxml run (the model's chosen
    plan kept); any other run, or no candidate, as predicted."""
    pred = predict_run(run).prediction
    assert pred is not None, run.name
    if not candidates or run.file not in PAXML_FILES:
        return pred
    design = run_design(run)
    stack = replace(run.stack, scan_carry_copies="copies" in candidates)
    dropout = "dropout" in candidates and run.arch.num_layers == DROPOUT_LAYERS
    with patched("fp8_weight_cast_s", _with_dropout if dropout else lambda f: f):
        return predict_step(
            run.arch,
            pred.plan,
            design.compute.gpu,
            run_comm(design),
            design.compute.nvlink_domain_gpus,
            stack,
        )


def signed_error(run: Run, candidates: tuple[str, ...]) -> float:
    """The run's signed error (positive = optimistic) with ``candidates`` applied."""
    return float(getattr(varied_prediction(run, candidates), run.metric)) / run.published - 1.0


def added_ms(run: Run, candidates: tuple[str, ...]) -> float:
    """Milliseconds ``candidates`` add to the run's predicted step."""
    base = varied_prediction(run, ()).step_time_s
    return (varied_prediction(run, candidates).step_time_s - base) * 1e3


def _per_class(runs: list[Run], candidates: tuple[str, ...]) -> str:
    return class_summary(runs, lambda run: signed_error(run, candidates))


def main() -> None:
    runs = [r for r in load_runs() if r.subset in ("development", "calibration")]
    paxml = sorted((r for r in runs if r.file in PAXML_FILES), key=lambda r: (r.file, r.name))
    assert all(r.subset != "heldout" for r in paxml)
    header = "".join(f"{c:>16}" for c in (*CANDIDATES, "all"))
    print(f"{'run':<42} {'now':>7} {'miss ms':>8}{header}   (error, ms added per step)")
    for run in paxml:
        step_s = varied_prediction(run, ()).step_time_s
        miss_ms = step_s * signed_error(run, ()) * 1e3
        cells = "".join(
            f"{100 * signed_error(run, c):+8.1f}% {added_ms(run, c):6.0f}"
            for c in (*((c,) for c in CANDIDATES), CANDIDATES)
        )
        print(f"{run.name:<42} {100 * signed_error(run, ()):+6.1f}% {miss_ms:8.0f}{cells}")
    for subset in ("development", "calibration"):
        chosen = [r for r in runs if r.subset == subset]
        print(f"{subset} now:        {_per_class(chosen, ())}")
        print(f"{subset} with all:   {_per_class(chosen, CANDIDATES)}")


if __name__ == "__main__":
    main()
