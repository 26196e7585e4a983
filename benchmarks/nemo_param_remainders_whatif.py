"""What-if: NeMo 1.0's distributed fused Adam keeping only the 16-bit remainders of the FP32
master weights in BF16 runs (model unchanged).

NeMo 1.0 (``nemo/collections/nlp/models/language_modeling/megatron_base_model.py``,
``setup_optimization``, NVIDIA/NeMo at 7ed545578ff5) passes ``store_params=False`` and
``store_param_remainders=True`` to Apex's ``DistributedFusedAdam`` when the optimizer state is
FP32 and the model BF16 (not with ``fp8_params``, which stores full masters): the optimizer
keeps 2 bytes of each FP32 master weight (the low half; the BF16 parameter is the high half)
plus the two FP32 moments, 10 bytes per parameter where the model prices 12
(``Stack.optimizer_bytes``). This patches ``optimizer_bytes`` to 10 on the BF16 rows of the
given files (recipes that ran NeMo 1.0's ``distributed_fused_adam``) and prints, for each
calibration and development row whose plan or figure moves, the memory-fitted prediction
before and after, then the files' rows as a whole. Held-out rows are skipped.

Superseded by the ``optimizer_state`` option (:mod:`clusterforge.perf.optimizer_state`,
``benchmarks/optimizer_state_rows.py``): of these BF16 rows, the recipes keep remainders only
for the Llama 3.1 rows; the GPT-3 175B yaml sets ``fp8_params: true`` (full masters), the
Nemotron-4 15B yaml runs Megatron-Core's ``mcore_distributed_optim`` and the Nemotron-4 340B
yaml sets ``optim.dtype: bf16`` (BF16 moments, no masters).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/nemo_param_remainders_whatif.py \
        [pub_dgxc_nemo_h100_scale.toml pub_dgxc_llama31_cp_h100.toml]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace

from validation.runs import Outcome, Run, load_runs, predict_run

__all__ = ["REMAINDER_OPTIMIZER_BYTES", "main"]

# FP32 exp_avg + exp_avg_sq (8 bytes) + the 16-bit remainder of the FP32 master (2 bytes).
REMAINDER_OPTIMIZER_BYTES = 10.0
DEFAULT_FILES = ("pub_dgxc_nemo_h100_scale.toml", "pub_dgxc_llama31_cp_h100.toml")


def _patched(run: Run) -> Run:
    return replace(run, stack=replace(run.stack, optimizer_bytes=REMAINDER_OPTIMIZER_BYTES))


def _figure(outcome: Outcome) -> str:
    if outcome.prediction is None:
        return "does not fit".rjust(24)
    plan = outcome.prediction.plan
    return f"{outcome.predicted:9.1f} {outcome.error * 100:+6.1f} % {plan.recompute:>9}"


def _summary(label: str, outcomes: list[Outcome]) -> None:
    errors = [o.error for o in outcomes if o.prediction is not None]
    missing = len(outcomes) - len(errors)
    mape = statistics.fmean(abs(e) for e in errors) * 100
    median = statistics.median(errors) * 100
    print(
        f"{label}: {len(errors)} runs fit ({missing} not), MAPE {mape:.2f} %, median {median:+.2f} %"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=list(DEFAULT_FILES))
    args = parser.parse_args()
    runs = [
        r
        for r in load_runs()
        if r.file in args.files
        and r.subset in ("calibration", "development")
        and r.base.precision == "bf16"
    ]
    before = [predict_run(r) for r in runs]
    after = [predict_run(_patched(r)) for r in runs]
    print(f"{'run':50} {'published':>9}  {'before':>24}  {'after':>24}")
    for run, old, new in zip(runs, before, after, strict=True):
        if _figure(old) != _figure(new):
            print(f"{run.name:50} {run.published:9.1f}  {_figure(old)}  {_figure(new)}")
    _summary("before", before)
    _summary("after ", after)


if __name__ == "__main__":
    main()
