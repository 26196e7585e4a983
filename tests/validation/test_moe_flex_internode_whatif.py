"""The flex dispatcher's EP communication across nodes (``benchmarks/moe_flex_internode_whatif.py``,
docs/validation.md): the model's transport rate against HybridEP's and DeepEP's published
internode tables, the Megatron-Bridge #5094 budget's per-pass gap, and the what-if variants'
effect on the one development row whose flex EP spans nodes."""

from __future__ import annotations

import pytest
from benchmarks.moe_ep_overlap_share_whatif import TEMPLATE_ROW
from benchmarks.moe_flex_internode_whatif import (
    BUDGET_COMM_MS,
    BUDGET_COMPUTE_MS,
    BUDGET_PASSES,
    DEEPEP_V1_RDMA_GBYTE_PER_S,
    KERNEL_GBYTE_PER_S,
    algorithm_bytes,
    patched,
    probe_run,
)

import clusterforge.perf.ep_exposure as ep_module
from clusterforge.perf.host import FLEX_DROPLESS_IDLE_S
from clusterforge.perf.parallel import rank_groups
from validation.runs import Run, best_prediction, load_runs, run_comm, run_design

DEEPEP_ROW = "pub-automodel-h100-gpt-oss-120b"


def _run(name: str) -> Run:
    return next(r for r in load_runs() if r.name == name)


def _algorithm_gbyte_per_s(run: Run) -> float:
    design = run_design(run)
    pred = best_prediction(run, run_comm(design))
    assert pred is not None
    size = algorithm_bytes(run.arch, pred.plan, design.compute.nvlink_domain_gpus)
    groups = rank_groups(pred.plan, "ep")
    return size / run_comm(design).collective_time_s("all_to_all", size, groups) / 1e9


def test_two_nodes_at_hybridep_kernel_dispatch_rate():
    """16 H100 ranks over two nodes: the model's NCCL all-to-all of the (token, node) rows runs
    at HybridEP's kernel-only BF16 dispatch rate (71.71 GB/s), faster than its combine."""
    rate = _algorithm_gbyte_per_s(probe_run(_run(TEMPLATE_ROW)))
    dispatch, combine = KERNEL_GBYTE_PER_S[16][16]
    assert rate == pytest.approx(dispatch, rel=0.02)
    assert rate > combine


def test_eight_nodes_at_deepep_v1_rate():
    """64 H100 ranks over eight nodes (AutoModel GPT-OSS 120B, DeepEP): the model's rate is
    DeepEP V1's published 64-EP internode dispatch rate (51 GB/s)."""
    rate = _algorithm_gbyte_per_s(_run(DEEPEP_ROW))
    assert rate == pytest.approx(DEEPEP_V1_RDMA_GBYTE_PER_S[64][0], rel=0.02)


def test_budget_gap_is_the_communication():
    """On the budget's layout the model's compute and idle per layer pass are the trace's
    within 2 %, and its EP and DP communication is 0.7-0.9 ms short of the trace's 2.69 ms."""
    run = probe_run(_run(TEMPLATE_ROW))
    design = run_design(run)
    comm = run_comm(design)
    pred = best_prediction(run, comm)
    assert pred is not None
    fwd, bwd = ep_module._ep_raw_s(
        pred.plan, run.arch, comm, run.stack, design.compute.gpu, False, 8
    )
    comm_ms = (fwd + bwd) * 1e3 + pred.breakdown.dp_comm_s / BUDGET_PASSES * 1e3
    rest_ms = pred.step_time_s / BUDGET_PASSES * 1e3 - comm_ms
    assert rest_ms == pytest.approx(BUDGET_COMPUTE_MS + FLEX_DROPLESS_IDLE_S * 1e3, rel=0.02)
    assert 0.7 < BUDGET_COMM_MS - comm_ms < 0.9


def test_variants_make_the_deepep_row_more_pessimistic():
    """Variants A and B lengthen the cross-node DeepEP row's step (it is already pessimistic),
    so neither is adopted."""
    run = _run(DEEPEP_ROW)
    comm = run_comm(run_design(run))
    steps = []
    for variant in ("", "A", "B"):
        with patched(variant):
            pred = best_prediction(run, comm)
            assert pred is not None
            steps.append(pred.step_time_s)
    assert steps[0] < steps[1] < steps[2]
