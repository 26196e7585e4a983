"""Activation offloading to host memory and context parallelism without overlap."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fabric_double import IdealFabricComm

from clusterforge.catalog import load_catalog
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.memory import resident_layers
from clusterforge.perf.offload import host_link_gbyte_per_s, offload_stall_s
from clusterforge.perf.stack import stack_named

NEMO = stack_named("nemo")


def _plan(**changes: object) -> ParallelPlan:
    plan = ParallelPlan(
        JobLayout(tp=1, pp=1, dp=64),
        global_batch=256,
        micro_batch=2,
        seq_length=8192,
        sequence_parallel=False,
        recompute="none",
        zero_stage=3,
        precision="fp8",
    )
    return plan.with_(**changes)


def test_offloaded_layers_leave_hbm_and_one_stays_in_transfer() -> None:
    assert resident_layers(80, 0) == 80
    assert resident_layers(80, 40) == 41
    assert resident_layers(10, 50) == 1


def test_offloading_cuts_activation_memory_about_in_proportion(models) -> None:
    gpu = load_catalog().gpus["gb200"]
    comm = IdealFabricComm.for_node("gb200-nvl72-tray")
    arch = models["llama3-70b"]
    kept = predict_step(arch, _plan(), gpu, comm, 72, NEMO)
    half = predict_step(arch, _plan(offload_layers=40), gpu, comm, 72, NEMO)
    ratio = half.memory.activations_gib / kept.memory.activations_gib
    assert 0.45 < ratio < 0.6
    assert not kept.fits and half.fits  # the published GB200 recipe needs the offload


def test_offload_copies_hide_behind_compute_on_c2c_but_not_on_slow_links() -> None:
    assert host_link_gbyte_per_s(load_catalog().gpus["gb200"]) > 5 * host_link_gbyte_per_s(
        load_catalog().gpus["h100-sxm"]
    )
    fast = offload_stall_s(
        activation_bytes=4e9, link_gbyte_per_s=450, forward_s=0.01, backward_s=0.02
    )
    slow = offload_stall_s(
        activation_bytes=4e9, link_gbyte_per_s=64, forward_s=0.01, backward_s=0.02
    )
    assert fast == 0.0
    assert slow == pytest.approx(2 * 4e9 / 64e9 - 0.03)


def test_offloading_costs_time_where_the_host_link_is_slow(models, h100, h100_comm) -> None:
    arch = models["llama3-8b"]
    plan = _plan(layout=JobLayout(dp=8), global_batch=64, micro_batch=4)
    kept = predict_step(arch, plan, h100, h100_comm, 8, NEMO)
    moved = predict_step(arch, plan.with_(offload_layers=16), h100, h100_comm, 8, NEMO)
    assert moved.step_time_s > kept.step_time_s
    assert moved.memory.activations_gib < kept.memory.activations_gib


def test_offload_layers_must_leave_a_layer_on_the_gpu(models, h100, h100_comm) -> None:
    arch = models["llama3-8b"]
    with pytest.raises(PlanError, match="offload_layers"):
        predict_step(arch, _plan(offload_layers=arch.num_layers), h100, h100_comm, 8, NEMO)


def test_context_parallel_gather_before_attention_is_exposed(models, h100, h100_comm) -> None:
    arch = models["llama3-8b"]
    plan = _plan(
        layout=JobLayout(dp=2, cp=4), global_batch=16, micro_batch=1, seq_length=32768, zero_stage=1
    )
    ring = predict_step(arch, plan, h100, h100_comm, 8, NEMO)
    gathered = predict_step(arch, plan, h100, h100_comm, 8, replace(NEMO, cp_overlap=False))
    assert gathered.breakdown.cp_comm_s > 2 * ring.breakdown.cp_comm_s
    assert gathered.step_time_s > ring.step_time_s


def test_fp8_parameters_are_gathered_in_fp8() -> None:
    """NeMo stores FP8 parameters, so its ZeRO/FSDP all-gathers move one byte per weight."""
    assert stack_named("nemo").gathered_weight_bytes("fp8") == 1.0
    assert stack_named("nemo").gathered_weight_bytes("bf16") == 2.0
    assert stack_named("megatron-core").gathered_weight_bytes("fp8") == 2.0
    assert stack_named("torchtitan").gathered_weight_bytes("fp8") == 1.0
