"""The flex dispatcher's EP communication across nodes: the model's per-layer-pass figures on
the layout of a published Nsight Systems budget, and HybridEP's measured rates as a what-if.

The budget (NVIDIA-NeMo/Megatron-Bridge 7ded17dae, pull request #5094,
skills/nemo-mbridge-perf-moe-comm-overlap/{SKILL.md,card.yaml}): Qwen3-30B-A3B on 16 H100
(two DGX H100), BF16, sequence 4,096, TP 1 PP 1 EP 16, micro-batch 1, GBS 1,024, forced
balance, HybridEP on 32 SMs (``moe_hybridep_num_sms = 32`` in the recipe,
src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py and perf_recipes/_common.py at 7ded17dae),
no EP overlap: 3,072 layer passes a step; per pass 2.69 ms of communication kernels
(9.079 ms concurrent with compute = 0.11 % of it), all but unhidden. This prints:

1. the probe: that layout as a scratch run (no validation row), the model's per-call and
   per-pass EP dispatch and combine seconds, the data-parallel seconds, and, beside them,
   what HybridEP's published H100 table (deepseek-ai/DeepEP branch hybrid-ep,
   docs/README_Hybrid-EP.md, added at 1dddd19; 4,096 tokens, hidden 7,168, top 8, 8 local
   experts, random routing, "algorithm bandwidth" over the (token, node) pairs, the own node
   included: tests/test_hybrid_ep.py ``count_rdma_send_from_routing_map``) gives for the same
   bytes, and the NCCL all-gather of the routing map that HybridEP runs before each dispatch
   across nodes (csrc/hybrid_ep/executor/executor.cu ``Executor::allgather_routing_map``
   at 34152ae and 94a9f8f);
2. every MoE calibration and development run (never held-out) under the model, variant A
   (cross-node flex dispatch and combine at HybridEP's kernel-only H100 rates by EP ranks
   and SMs) and variant B (A plus the routing-map all-gather in each forward), then MAPE
   and median per set and per development class.

It patches ``clusterforge.perf.ep_exposure._ep_raw_s`` for the run only.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/moe_flex_internode_whatif.py
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

from benchmarks.moe_ep_overlap_share_whatif import TEMPLATE_ROW, ab_run

import clusterforge.perf.ep_exposure as ep_module
from clusterforge.catalog import Gpu, ModelArch
from clusterforge.perf.comm import CommModel
from clusterforge.perf.flex_permute import flex_permute_s
from clusterforge.perf.host import FLEX_DROPLESS_IDLE_S
from clusterforge.perf.parallel import ParallelPlan, rank_groups
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import Stack
from validation.class_errors import print_set_lines, run_outcomes
from validation.runs import Run, best_prediction, load_runs, predict_run, run_comm, run_design

__all__ = ["main"]

# The budget (module docstring): communication per layer pass, and the passes of a step.
BUDGET_COMM_MS = 2.69
BUDGET_COMPUTE_MS = 4.74
BUDGET_PASSES = 1024 // 16 * 48
HYBRIDEP_SMS = 32

# A second trace on the same 16 H100 (Megatron-Bridge 228e9a3e7, 2026-07-27,
# skills/nemo-mbridge-perf-moe-dispatcher-selection/references/qwen35-h100-hybridep.md):
# Qwen3.5-35B-A3B (hidden 2,048, 256 experts, top 8; 40 layers, all MoE, plus one MTP layer:
# docs/models/qwen/qwen35-vl.md and the cuda-graphs card's "41 graphable layers"), the same
# batch and EP 16, HybridEP on 32 SMs, no EP overlap: HybridEP combine, dispatch and
# support/RDMA kernels 3.909, 2.845 and 0.968 s of one step's rank-0 trace.
QWEN35_KERNEL_S = {"combine": 3.909, "dispatch": 2.845, "support": 0.968}
QWEN35_PASSES = (64 * 40, 64 * 41)

# HybridEP's H100 table (module docstring), GB/s of algorithm bandwidth, BF16 dispatch and
# combine: {EP ranks: {SMs: (dispatch, combine)}}, kernel time only and through the Torch API.
KERNEL_GBYTE_PER_S = {
    16: {4: (44.40, 52.00), 8: (76.80, 68.00), 16: (71.71, 62.95)},
    32: {4: (52.60, 51.00), 8: (54.50, 56.40), 16: (57.69, 57.46)},
    64: {4: (48.00, 46.00), 8: (50.55, 51.03), 16: (49.97, 49.77)},
}
API_GBYTE_PER_S = {
    16: {4: (37.08, 42.47), 8: (57.74, 56.96), 16: (54.47, 53.35)},
    32: {4: (44.88, 43.60), 8: (46.54, 50.68), 16: (47.36, 52.53)},
    64: {4: (40.63, 41.00), 8: (41.46, 47.68), 16: (41.24, 46.57)},
}
# DeepEP V1's internode normal kernels (deepseek-ai/DeepEP docs/legacy.md at dd758ca; H800,
# one CX7 400 Gb/s NIC a GPU, 4,096 tokens, hidden 7,168, top 8, FP8 dispatch, BF16 combine;
# "bottleneck bandwidth" over the (token, node) pairs, the own node included:
# tests/legacy/test_internode.py ``num_rdma_token_sent``): {EP ranks: (dispatch, combine)}.
DEEPEP_V1_RDMA_GBYTE_PER_S = {16: (43.0, 43.0), 32: (58.0, 57.0), 64: (51.0, 50.0)}
ROUTING_MAP_BYTES = 1  # one bool per token and expert (``global_routing_map``, torch.bool)

RateTable = dict[int, dict[int, tuple[float, float]]]
RawFn = Callable[..., tuple[float, float]]
Results = dict[str, tuple[float, str]]


def table_rates(table: RateTable, ep: int, sms: int) -> tuple[float, float]:
    """(dispatch, combine) GB/s of ``table`` at the largest EP ranks and SM count measured
    at or below ``ep`` and ``sms`` (16 ranks and 4 SMs at least)."""
    ranks = max([r for r in table if r <= ep] or [min(table)])
    row = table[ranks]
    return row[max([s for s in row if s <= sms] or [min(row)])]


def algorithm_bytes(arch: ModelArch, plan: ParallelPlan, domain_gpus: int) -> float:
    """One call's (token, node) rows of one GPU, the own node included, BF16."""
    group = rank_groups(plan, "ep")[0]
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    rows = tokens * ep_module.flex_domains_per_token(arch, group, domain_gpus)
    return rows * arch.hidden_size * ep_module.ACT_BYTES / plan.layout.tp


def routing_map_gather_s(arch: ModelArch, plan: ParallelPlan, comm: CommModel) -> float:
    """HybridEP's NCCL all-gather of every EP rank's routing map before a dispatch across
    nodes (tokens x experts bools per rank)."""
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    size = tokens * arch.num_experts * ROUTING_MAP_BYTES * plan.layout.ep
    return comm.collective_time_s("all_gather", size, rank_groups(plan, "ep"))


def hybridep_call_s(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, domain_gpus: int, table: RateTable
) -> tuple[float, float]:
    """(dispatch, combine) seconds of one call at ``table``'s rates (the FP32 probabilities
    ride in the dispatch, as the model's)."""
    size = algorithm_bytes(arch, plan, domain_gpus)
    tokens = plan.micro_batch * plan.seq_length / plan.layout.cp
    probs = tokens * arch.top_k * ep_module.PROBS_BYTES
    dispatch, combine = table_rates(table, plan.layout.ep, stack.moe_flex_sms)
    return (size + probs) / (dispatch * 1e9), size / (combine * 1e9)


def variant_raw(base: RawFn, with_gather: bool) -> RawFn:
    """``_ep_raw_s`` with cross-node flex dispatch and combine on H100 at HybridEP's
    kernel-only rates, and with ``with_gather`` the routing-map all-gather per forward."""

    def raw(
        plan: ParallelPlan,
        arch: ModelArch,
        comm: CommModel,
        stack: Stack,
        gpu: Gpu | None,
        in_domain: bool,
        domain_gpus: int,
    ) -> tuple[float, float]:
        if in_domain or stack.moe_dispatcher != "flex" or gpu is None or gpu.id != "h100-sxm":
            return base(plan, arch, comm, stack, gpu, in_domain, domain_gpus)
        dispatch, combine = hybridep_call_s(arch, plan, stack, domain_gpus, KERNEL_GBYTE_PER_S)
        forward = backward = dispatch + combine
        if with_gather:
            forward += routing_map_gather_s(arch, plan, comm)
        return forward * (2 if plan.recompute == "full" else 1), backward

    return raw


@contextmanager
def patched(variant: str) -> Iterator[None]:
    """The model (``""``), variant ``"A"`` or ``"B"`` for the duration of the block."""
    base = ep_module._ep_raw_s
    if variant:
        ep_module._ep_raw_s = variant_raw(base, variant == "B")
    try:
        yield
    finally:
        ep_module._ep_raw_s = base


def probe_run(template: Run) -> Run:
    """The budget's layout (no EP overlap) with the recipe's 32 HybridEP SMs."""
    run = ab_run(template, "flex", False)
    return replace(run, name="probe-hybridep-2node", stack=replace(run.stack, moe_flex_sms=32))


def print_budget() -> None:
    """The two traces' per-pass figures."""
    print("Budget (#5094, Qwen3-30B-A3B, 16 H100, EP 16, HybridEP, no EP overlap), per pass:")
    print(f"  communication {BUDGET_COMM_MS:.2f} ms (2.6-2.8), compute {BUDGET_COMPUTE_MS:.2f} ms")
    low, high = QWEN35_PASSES
    parts = ", ".join(
        f"{k} {v / high * 1e3:.2f}-{v / low * 1e3:.2f}" for k, v in QWEN35_KERNEL_S.items()
    )
    total = sum(QWEN35_KERNEL_S.values())
    print(f"Qwen3.5-35B-A3B trace (same system), HybridEP kernels per pass, ms: {parts};")
    print(f"  total {total / high * 1e3:.2f}-{total / low * 1e3:.2f}")


def print_probe(template: Run) -> None:
    """The model's per-call and per-pass figures on the probe, and the sources' beside them."""
    run = probe_run(template)
    design = run_design(run)
    comm, gpu, domain = run_comm(design), design.compute.gpu, design.compute.nvlink_domain_gpus
    arch, stack = run.arch, run.stack
    for label in ("", "A", "B"):
        with patched(label):
            pred = best_prediction(run, comm)
            assert pred is not None
            plan = pred.plan
            fwd, bwd = ep_module._ep_raw_s(plan, arch, comm, stack, gpu, False, domain)
        dp_ms = pred.breakdown.dp_comm_s / BUDGET_PASSES * 1e3
        rest_ms = pred.step_time_s / BUDGET_PASSES * 1e3 - (fwd + bwd) * 1e3 - dp_ms
        print(
            f"  {label or 'model':5} step {pred.step_time_s:6.2f} s ({pred.step_time_s / 24.7138 - 1:+.1%})"
            f"; EP per pass {(fwd + bwd) * 1e3:.3f} ms (forward {fwd * 1e3:.3f}, backward "
            f"{bwd * 1e3:.3f}), DP {dp_ms:.4f} ms, EP + DP {(fwd + bwd) * 1e3 + dp_ms:.3f} ms"
            f" against {BUDGET_COMM_MS:.2f}; compute + idle {rest_ms:.3f} ms against "
            f"{BUDGET_COMPUTE_MS + FLEX_DROPLESS_IDLE_S * 1e3:.3f}"
        )
    group = rank_groups(plan, "ep")
    size = algorithm_bytes(arch, plan, domain)
    nccl_ms = comm.collective_time_s("all_to_all", size, group) * 1e3
    print(f"  one call: {size / 1e6:.2f} MB of (token, node) rows, about half crossing nodes")
    print(f"  model (NCCL all-to-all of those rows): {nccl_ms:.3f} ms a call, each direction")
    for label, table in (("kernel", KERNEL_GBYTE_PER_S), ("Torch API", API_GBYTE_PER_S)):
        d, c = hybridep_call_s(arch, plan, stack, domain, table)
        rates = table_rates(table, plan.layout.ep, stack.moe_flex_sms)
        print(
            f"  HybridEP {label:9} {rates[0]:.2f} / {rates[1]:.2f} GB/s: dispatch {d * 1e3:.3f},"
            f" combine {c * 1e3:.3f} ms a call; per pass {2 * (d + c) * 1e3:.3f} ms"
        )
    gather = routing_map_gather_s(arch, plan, comm) * 1e3
    permute = flex_permute_s(arch, plan, gpu_perf(gpu, plan.precision), stack)
    print(f"  routing-map all-gather (NCCL, model): {gather:.3f} ms a forward")
    print(f"  HybridEP permute + unpermute (model, priced as compute): {sum(permute) * 1e3:.3f} ms")


def print_row_rates(runs: list[Run]) -> None:
    """Each calibration or development run whose flex EP spans nodes: the model's algorithm
    GB/s a call against HybridEP's kernel table and DeepEP V1's, at its EP ranks."""
    print("\nCross-node flex runs: algorithm GB/s a call, model / HybridEP kernel / DeepEP V1")
    for run in runs:
        pred = predict_run(run).prediction
        if pred is None or run.stack.moe_dispatcher != "flex" or pred.plan.layout.ep == 1:
            continue
        design = run_design(run)
        domain = design.compute.nvlink_domain_gpus
        groups = rank_groups(pred.plan, "ep")
        if len({int(r) // domain for r in groups[0]}) == 1:
            continue
        size = algorithm_bytes(run.arch, pred.plan, domain)
        model = size / run_comm(design).collective_time_s("all_to_all", size, groups) / 1e9
        ep = pred.plan.layout.ep
        hybrid = table_rates(KERNEL_GBYTE_PER_S, ep, run.stack.moe_flex_sms)
        deepep = DEEPEP_V1_RDMA_GBYTE_PER_S[max(r for r in DEEPEP_V1_RDMA_GBYTE_PER_S if r <= ep)]
        print(
            f"  {run.name:36.36} EP {ep:3}: {model:6.2f} / {hybrid[0]:.2f}, {hybrid[1]:.2f} / "
            f"{deepep[0]:.0f}, {deepep[1]:.0f} ({size / 1e6:.1f} MB a call)"
        )


def main() -> None:
    everything = load_runs()
    print_budget()
    print("\nProbe (the budget's layout, no validation row):")
    print_probe(next(r for r in everything if r.name == TEMPLATE_ROW))
    runs = [r for r in everything if r.subset in ("calibration", "development")]
    print_row_rates(runs)
    results: list[Results] = []
    for label in ("", "A", "B"):
        with patched(label):
            results.append(run_outcomes(runs))
    print(f"\n{'run':40} {'model':>8} {'A':>8} {'B':>8}")
    for run in runs:
        if run.arch.num_experts == 1 or run.name not in results[0]:
            continue
        print(f"{run.name:40.40}" + "".join(f" {r[run.name][0]:+8.1%}" for r in results))
    print()
    for label, result in zip(("model", "A", "B"), results, strict=True):
        print_set_lines(label, result, runs)


if __name__ == "__main__":
    main()
