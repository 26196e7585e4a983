"""Host issue time of an MoE layer's forward after the dispatcher's device-to-host sync."""

from __future__ import annotations

from dataclasses import replace

import pytest

import clusterforge.perf.host as host_module
from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.host import (
    FLEX_DROPLESS_IDLE_S,
    HOST_OP_S,
    INTERLEAVED_OVERLAP_CHUNK_S,
    MOE_FORWARD_TE_MODULES,
    MOE_FORWARD_TORCH_OPS,
    TE_MODULE_S,
    flex_dropless_idle_s,
    host_cpu,
    interleaved_overlap_idle_s,
    moe_forward_host_s,
)
from clusterforge.perf.stack import stack_named

BRIDGE = stack_named("megatron-bridge")


def _plan(seq: int, recompute: str = "none") -> ParallelPlan:
    return ParallelPlan(
        JobLayout(tp=1, pp=1, dp=8, ep=8),
        global_batch=8,
        micro_batch=1,
        seq_length=seq,
        sequence_parallel=False,
        recompute=recompute,  # type: ignore[arg-type]
        zero_stage=1,
    )


def test_issue_time_counts_te_modules_and_torch_calls_at_their_host_cost(models) -> None:
    # 6 Transformer Engine module calls and 30 other PyTorch calls from one MoE layer's sync
    # to the next; on x86 13.48 us per PyTorch call (TransformerEngine #2053, DGX H100).
    arch = models["gpt-oss-120b"].model_copy(update={"linear_bias": False})
    assert sum(MOE_FORWARD_TE_MODULES.values()) == 6
    assert sum(MOE_FORWARD_TORCH_OPS.values()) == 30
    got = moe_forward_host_s(arch, BRIDGE, "x86")
    assert got == pytest.approx(6 * TE_MODULE_S["x86"] + 30 * 13.48e-6)
    # Grace issues each call about 2.75x slower (37.08 vs 13.48 us per torch Linear).
    assert moe_forward_host_s(arch, BRIDGE, "grace") / got == pytest.approx(37.08 / 13.48)


def test_dense_layers_and_stacks_without_the_sync_issue_nothing_extra(models) -> None:
    assert moe_forward_host_s(models["llama3-8b"], BRIDGE, "x86") == 0.0
    assert moe_forward_host_s(models["gpt-oss-120b"], stack_named("torchtitan"), "x86") == 0.0


def test_cuda_graph_scopes_become_one_launch_each(models) -> None:
    arch = models["gpt-oss-120b"]
    eager = moe_forward_host_s(arch, BRIDGE, "x86")
    graphs = replace(BRIDGE, cuda_graph_modules=("attn", "moe_router", "moe_preprocess"))
    captured_te = MOE_FORWARD_TE_MODULES["attn"]
    captured_ops = sum(MOE_FORWARD_TORCH_OPS[s] for s in ("attn", "moe_router", "moe_preprocess"))
    want = eager - captured_te * TE_MODULE_S["x86"] - (captured_ops - 3) * HOST_OP_S["x86"]
    assert moe_forward_host_s(arch, graphs, "x86") == pytest.approx(want)
    assert want < eager


def test_superchips_run_grace_hosts() -> None:
    gpus = load_catalog().gpus
    assert host_cpu(gpus["gb200"]) == "grace"
    assert host_cpu(gpus["gb300"]) == "grace"
    assert host_cpu(gpus["h100-sxm"]) == "x86"
    assert host_cpu(gpus["b200"]) == "x86"


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_a_short_moe_forward_waits_for_the_host(models, h100, h100_comm, recompute) -> None:
    # 128 tokens per GPU: the GPU work of a gpt-oss layer's forward is far below the ~0.6 ms
    # the host needs to issue it, so the step grows by the difference in each forward
    # (and again in each recomputed forward).
    arch, plan = models["gpt-oss-120b"], _plan(seq=128, recompute=recompute)
    no_sync = replace(BRIDGE, moe_dispatch_sync=False)
    synced = predict_step(arch, plan, h100, h100_comm, 8, BRIDGE)
    free = predict_step(arch, plan, h100, h100_comm, 8, no_sync)
    host = moe_forward_host_s(arch, BRIDGE, "x86")
    extra = synced.breakdown.compute_s - free.breakdown.compute_s
    passes = 2 if recompute == "full" else 1
    assert 0 < extra < passes * arch.num_layers * host


def test_a_long_moe_forward_hides_the_host(models, h100, h100_comm) -> None:
    arch, plan = models["gpt-oss-120b"], _plan(seq=32768)
    no_sync = replace(BRIDGE, moe_dispatch_sync=False)
    synced = predict_step(arch, plan, h100, h100_comm, 8, BRIDGE)
    free = predict_step(arch, plan, h100, h100_comm, 8, no_sync)
    assert synced.step_time_s == pytest.approx(free.step_time_s)


def test_dense_predictions_do_not_change(models, h100, h100_comm) -> None:
    arch = models["llama3-8b"]
    plan = ParallelPlan(
        JobLayout(tp=1, pp=1, dp=8),
        global_batch=8,
        micro_batch=1,
        seq_length=128,
        sequence_parallel=False,
        recompute="none",
        zero_stage=1,
    )
    synced = predict_step(arch, plan, h100, h100_comm, 8, BRIDGE)
    free = predict_step(arch, plan, h100, h100_comm, 8, replace(BRIDGE, moe_dispatch_sync=False))
    assert synced.step_time_s == free.step_time_s


def test_the_eager_expert_bias_adds_two_calls_per_local_expert(models) -> None:
    # gpt-oss's experts carry biases; Megatron-Core adds the second linear's bias in Python
    # (two splits, a multiply and an add per local expert, a cat and a cast): 4 + 2 x 16
    # more calls with 16 local experts, 4 + 2 x 2 with 2.
    arch = models["gpt-oss-120b"]
    no_bias = moe_forward_host_s(arch.model_copy(update={"linear_bias": False}), BRIDGE, "x86")
    for local in (16, 2):
        got = moe_forward_host_s(arch, BRIDGE, "x86", local_experts=local)
        assert got - no_bias == pytest.approx((4 + 2 * local) * HOST_OP_S["x86"])
    fused = replace(BRIDGE, moe_expert_bias_eager=False)
    assert moe_forward_host_s(arch, fused, "x86", local_experts=16) == pytest.approx(
        moe_forward_host_s(arch.model_copy(update={"linear_bias": False}), fused, "x86")
    )


def test_drop_and_pad_skips_the_sync_and_its_host_floor(models, h100, h100_comm) -> None:
    # Megatron-Core core_v0.15.0 ``_maybe_dtoh_and_synchronize`` copies and blocks only when
    # not ``drop_and_pad``: with capacity padding the split sizes are host constants.
    arch, plan = models["gpt-oss-120b"], _plan(seq=128)
    dropped = replace(BRIDGE, moe_drop_and_pad=True)
    assert moe_forward_host_s(arch, BRIDGE, "x86") > 0.0
    assert moe_forward_host_s(arch, dropped, "x86") == 0.0
    no_sync = replace(dropped, moe_dispatch_sync=False)
    dropped_step = predict_step(arch, plan, h100, h100_comm, 8, dropped).step_time_s
    assert dropped_step == predict_step(arch, plan, h100, h100_comm, 8, no_sync).step_time_s
    assert dropped_step < predict_step(arch, plan, h100, h100_comm, 8, BRIDGE).step_time_s


def test_the_flex_dispatcher_idle_is_the_published_budget_per_layer_pass(models) -> None:
    # Megatron-Bridge 7ded17dae: 24.7138 s step, 22.820667 s GPU-active union, 64
    # micro-batches x 48 layers per GPU: 0.616 ms of idle per layer pass.
    arch = models["qwen3-30b-a3b"]
    flex = replace(BRIDGE, moe_dispatcher="flex")
    assert abs(FLEX_DROPLESS_IDLE_S - 0.616e-3) < 1e-6
    assert flex_dropless_idle_s(arch, flex, "x86", 4096) == FLEX_DROPLESS_IDLE_S
    # Not where the source's cause is absent or unmeasured.
    assert flex_dropless_idle_s(arch, flex, "x86", 8192) == 0.0
    assert flex_dropless_idle_s(arch, flex, "grace", 4096) == 0.0
    assert flex_dropless_idle_s(arch, BRIDGE, "x86", 4096) == 0.0
    for changed in (
        replace(flex, moe_a2a_overlap=True),
        replace(flex, moe_drop_and_pad=True),
        replace(flex, moe_dispatch_sync=False),
    ):
        assert flex_dropless_idle_s(arch, changed, "x86", 4096) == 0.0
    assert flex_dropless_idle_s(models["llama3-8b"], flex, "x86", 4096) == 0.0


def test_the_flex_dispatcher_idle_floors_each_layer_pass(models, h100, h100_comm) -> None:
    # A forward long enough to hide the host floor still idles the measured figure per layer.
    arch, plan = models["qwen3-30b-a3b"], _plan(seq=4096)
    flex = replace(BRIDGE, moe_dispatcher="flex")
    synced = predict_step(arch, plan, h100, h100_comm, 8, flex)
    free = predict_step(arch, plan, h100, h100_comm, 8, replace(flex, moe_dispatch_sync=False))
    extra = synced.breakdown.compute_s - free.breakdown.compute_s
    assert extra == pytest.approx(arch.num_layers * FLEX_DROPLESS_IDLE_S, rel=1e-6)


def test_the_interleaved_ep_overlap_costs_the_published_ab_per_model_chunk(models) -> None:
    # Megatron-Bridge #1760: 17.2 s with the overlap, 16.0 s without, plus the 1.867 s the
    # model credits the overlap with, over 128 micro-batches x 4 model chunks: 5.99 ms.
    assert abs(INTERLEAVED_OVERLAP_CHUNK_S - 5.99e-3) < 1e-5
    arch = models["qwen3-30b-a3b"]
    overlap = replace(BRIDGE, moe_a2a_overlap=True)
    # PP 2 x VP 12 over 48 layers: two layers per chunk, half the chunk's cost per layer.
    got = interleaved_overlap_idle_s(arch, overlap, "x86", 2, 12)
    assert got == pytest.approx(INTERLEAVED_OVERLAP_CHUNK_S / 2, rel=1e-9)
    # Not where the source did not run: PP 1, no VP, a Grace host, no overlap, dense.
    assert interleaved_overlap_idle_s(arch, overlap, "x86", 1, 1) == 0.0
    assert interleaved_overlap_idle_s(arch, overlap, "x86", 2, 1) == 0.0
    assert interleaved_overlap_idle_s(arch, overlap, "grace", 2, 12) == 0.0
    assert interleaved_overlap_idle_s(arch, BRIDGE, "x86", 2, 12) == 0.0
    assert interleaved_overlap_idle_s(models["llama3-8b"], overlap, "x86", 2, 12) == 0.0


# PP 2 without VP is a plan Megatron-Core refuses under the overlap (test_ep_overlap_rules.py).
@pytest.mark.parametrize(("pp", "vpp", "applies"), [(2, 12, True), (1, 1, False)])
def test_the_interleaved_ep_overlap_cost_reaches_the_step_only_where_it_was_measured(
    models, h100, h100_comm, monkeypatch, pp, vpp, applies
) -> None:
    arch = models["qwen3-30b-a3b"]
    plan = ParallelPlan(
        JobLayout(tp=1, pp=pp, dp=8, ep=8, vpp=vpp),
        global_batch=64,
        micro_batch=1,
        seq_length=4096,
        sequence_parallel=False,
        zero_stage=1,
    )
    overlap = replace(BRIDGE, moe_a2a_overlap=True)
    priced = predict_step(arch, plan, h100, h100_comm, 8, overlap)
    # the prediction names the per-chunk figure it used (0 where the schedule is not interleaved)
    assert priced.ep_overlap_chunk_s == (INTERLEAVED_OVERLAP_CHUNK_S if applies else 0.0)
    assert priced.as_dict()["ep_overlap_chunk_s"] == priced.ep_overlap_chunk_s
    monkeypatch.setattr(host_module, "INTERLEAVED_OVERLAP_CHUNK_S", 0.0)
    free = predict_step(arch, plan, h100, h100_comm, 8, overlap)
    if applies:
        assert priced.step_time_s > free.step_time_s
    else:
        assert priced.step_time_s == free.step_time_s
