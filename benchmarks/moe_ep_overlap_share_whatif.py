"""The measured share of the flex dispatcher's communication that Megatron-Core's EP overlap
hides: two published step A/Bs against the model, then every MoE run with and without it.

Under ``overlap_moe_expert_parallel_comm`` (``Stack.moe_a2a_overlap``) the model hides the
flex dispatcher's dispatch and combine behind the other micro-batch's compute only up to the
share measured in NVIDIA-NeMo/Megatron-Bridge pull request #5094
(:data:`clusterforge.perf.ep_exposure.FLEX_OVERLAP_HIDDEN_SHARE`, 36.55 %). This prints:

- the two measured A/Bs of Qwen3-30B-A3B on 16 H100 (EP 16, GBS 1,024, micro-batch 1), each
  with the overlap off and on, against the model with every fitting byte hidden (share 1,
  the model before) and with the measured share: HybridEP with graphs of the router and the
  preprocess (pull request #5094: 24.7138 -> 20.99203 s, the trace's 36.55 %) and the
  all-to-all dispatcher without graphs or fused permutation (2026-05-18 run in
  docs/training/communication-overlap.md at 067f987df: 41.25 -> 31.31 s); a scratch layout,
  no validation row;
- every MoE calibration and development run (never held-out): share 1 (before), the model
  (after), and variant B, the measured share for the all-to-all dispatcher too (not
  adopted: the all-to-all A/B above measures a larger saving than the share leaves);
- MAPE and median per set and per development class for each.

It patches ``clusterforge.perf.ep_exposure`` for the run only.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_ep_overlap_share_whatif.py
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import clusterforge.perf.ep_exposure as ep_module
from clusterforge.job import JobLayout
from clusterforge.perf.compute import LayerTimes
from validation.class_errors import print_moe_variants, run_outcomes
from validation.runs import Run, best_prediction, load_runs, run_comm, run_design

__all__ = ["main"]

# The two published A/Bs (step seconds, overlap off / on); the layouts of both.
HYBRIDEP_STEP_S = (24.7138, 20.99203)  # card.yaml measured_result, pull request #5094
ALLTOALL_STEP_S = (41.25, 31.31)  # docs/training/communication-overlap.md, 067f987df
AB_GPUS = 16
AB_GLOBAL_BATCH = 1024
HYBRIDEP_SMS = 16  # moe-hybridep-num-sms default, moe-dispatcher-selection/card.yaml
TEMPLATE_ROW = "pub-mlmrecipe-h100-qwen3-30b-a3b-bf16"  # same model, GPU, precision, stack

Results = dict[str, tuple[float, str]]
# (label, flex share or None for the model's, the same share for the all-to-all dispatcher)
VARIANTS = (("share 1", 1.0, True), ("model", None, False), ("B a2a", None, True))


@contextmanager
def patched(share: float | None, alltoall_too: bool = False) -> Iterator[None]:
    """The flex share set to ``share`` (None: the model's) and, with ``alltoall_too``, the
    same share for the all-to-all dispatcher."""
    saved_share, saved_fn = ep_module.FLEX_OVERLAP_HIDDEN_SHARE, ep_module.ep_overlapped_s
    if share is not None:
        ep_module.FLEX_OVERLAP_HIDDEN_SHARE = share
    if alltoall_too:
        flex_share = ep_module.FLEX_OVERLAP_HIDDEN_SHARE

        def every_dispatcher(
            forward_s: float,
            backward_s: float,
            times: LayerTimes,
            step_share: float,
            interference: float,
            hidden_share: float = flex_share,
        ) -> float:
            return saved_fn(forward_s, backward_s, times, step_share, interference, hidden_share)

        ep_module.ep_overlapped_s = every_dispatcher
    try:
        yield
    finally:
        ep_module.FLEX_OVERLAP_HIDDEN_SHARE, ep_module.ep_overlapped_s = saved_share, saved_fn


def ab_run(template: Run, dispatcher: str, overlap: bool) -> Run:
    """The A/Bs' layout: TP 1, PP 1, EP 16 over 16 GPUs, GBS 1,024, micro-batch 1, forced
    balance; HybridEP with graphs of the router and preprocess, or all-to-all without."""
    plan = template.base.with_(
        layout=JobLayout(tp=1, pp=1, dp=AB_GPUS, ep=AB_GPUS),
        global_batch=AB_GLOBAL_BATCH,
        micro_batch=1,
    )
    flex = dispatcher == "flex"
    stack = replace(
        template.stack,
        moe_dispatcher=dispatcher,
        moe_a2a_overlap=overlap,
        moe_random_routing=True,
        moe_flex_sms=HYBRIDEP_SMS,
        cuda_graph_modules=("moe_router", "moe_preprocess") if flex else (),
    )
    name = f"ab-{dispatcher}-{'on' if overlap else 'off'}"
    return replace(template, name=name, base=plan, micro_batches=(1,), stack=stack)


def step_s(run: Run) -> float:
    pred = best_prediction(run, run_comm(run_design(run)))
    assert pred is not None, run.name
    return pred.step_time_s


def ab_table(template: Run) -> None:
    """Each A/B's measured and predicted steps: share 1, the model, variant B."""
    print("Qwen3-30B-A3B, 16 H100, EP 16, GBS 1,024, MBS 1: step s, overlap off -> on (saving)")
    for label, dispatcher, measured in (
        ("HybridEP #5094", "flex", HYBRIDEP_STEP_S),
        ("all-to-all 05-18", "alltoall", ALLTOALL_STEP_S),
    ):
        off, on = measured
        print(f"  {label:17} measured {off:6.2f} -> {on:6.2f} ({off - on:5.2f})")
        for share_label, share, every in VARIANTS:
            with patched(share, every):
                got = [step_s(ab_run(template, dispatcher, o)) for o in (False, True)]
            print(
                f"  {'':17} {share_label:8} {got[0]:6.2f} -> {got[1]:6.2f} "
                f"({got[0] - got[1]:5.2f}); against measured {got[0] / off - 1:+.1%} / "
                f"{got[1] / on - 1:+.1%}"
            )


def main() -> None:
    everything = load_runs()
    ab_table(next(r for r in everything if r.name == TEMPLATE_ROW))
    runs = [r for r in everything if r.subset in ("calibration", "development")]
    results = []
    for _, share, every in VARIANTS:
        with patched(share, every):
            results.append(run_outcomes(runs))
    print_moe_variants((label for label, _, _ in VARIANTS), results, runs)


if __name__ == "__main__":
    main()
