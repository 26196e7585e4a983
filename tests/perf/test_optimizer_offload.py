"""DeepSpeed ZeRO-Offload of the optimizer (``clusterforge.perf.optimizer_offload``): the
spec's check, the catalog's host DRAM bandwidth, the memory it frees, the parts of its time
and a prediction through the CLI."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from clusterforge.catalog import Node, host_dram_gbyte_per_s, load_catalog
from clusterforge.catalog.models import Cpu
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.optimizer_offload import (
    ADAM_HOST_BYTES,
    HOST_BYTES_PER_PARAM,
    HostMemory,
    grad_link_bytes,
    host_memory,
    offload_parts,
)
from clusterforge.perf.parallel import ParallelPlan, validate_plan
from clusterforge.perf.stack import stack_named
from clusterforge.perf.step import predict_step
from clusterforge.spec import WorkloadSpec

CATALOG = load_catalog()
DEEPSPEED = stack_named("deepspeed")


def _plan(zero: int = 3, offload: bool = True) -> ParallelPlan:
    return ParallelPlan(
        JobLayout.for_gpus(8, tp=1),
        global_batch=8,
        seq_length=8192,
        recompute="full",
        zero_stage=zero,
        optimizer_offload=offload,
    )


# --- spec and plan checks ---------------------------------------------------------------


def test_the_spec_refuses_offload_without_zero_naming_field_and_fix() -> None:
    with pytest.raises(ValidationError, match="optimizer_offload = true with zero_stage = 0"):
        WorkloadSpec(stack="deepspeed", zero_stage=0, optimizer_offload=True)
    with pytest.raises(ValidationError, match="set zero_stage to 1, 2 or 3"):
        WorkloadSpec(stack="deepspeed", zero_stage=0, optimizer_offload=True)


def test_the_spec_refuses_offload_on_another_stack() -> None:
    with pytest.raises(ValidationError, match="set stack to 'deepspeed'"):
        WorkloadSpec(stack="fsdp", zero_stage=3, optimizer_offload=True)


def test_the_spec_takes_offload_with_zero_1_to_3_and_defaults_off() -> None:
    assert WorkloadSpec().optimizer_offload is False
    for zero in (1, 2, 3):
        assert WorkloadSpec(stack="deepspeed", zero_stage=zero, optimizer_offload=True)


def test_a_plan_with_offload_and_zero_0_is_invalid() -> None:
    arch = CATALOG.models["llama3.1-8b"]
    with pytest.raises(PlanError, match="optimizer_offload with zero_stage = 0"):
        validate_plan(arch, _plan(zero=0), 8)


# --- catalog ------------------------------------------------------------------------------


def test_host_dram_is_sockets_times_channels_times_rate_times_8_bytes() -> None:
    # 2 x 8 channels x DDR5-4800 x 8 B; 2 x 8 x DDR5-5600 x 8 B; Grace 2 x 512 GB/s
    assert host_dram_gbyte_per_s(CATALOG, CATALOG.nodes["dgx-h200"]) == pytest.approx(614.4)
    assert host_dram_gbyte_per_s(CATALOG, CATALOG.nodes["dgx-h100"]) == pytest.approx(614.4)
    assert host_dram_gbyte_per_s(CATALOG, CATALOG.nodes["dgx-b200"]) == pytest.approx(716.8)
    assert host_dram_gbyte_per_s(CATALOG, CATALOG.nodes["gb200-nvl72-tray"]) == 1024.0
    assert host_dram_gbyte_per_s(CATALOG, CATALOG.nodes["gb300-nvl72-tray"]) == 1024.0


def test_every_catalog_node_has_a_host_dram_figure_with_its_source() -> None:
    for node in CATALOG.nodes:
        cpu = CATALOG.cpus[node.cpu]
        assert cpu.memory_gbyte_per_s and cpu.memory_source, node.id


def test_a_cpu_row_whose_bandwidth_disagrees_with_its_channels_is_refused() -> None:
    row = {"id": "x", "name": "x", "source": "s", "num_cores": 8, "tdp_w": 100.0}
    good = Cpu(**row, memory_channels=8, memory_mt_per_s=4800, memory_gbyte_per_s=307.2,
               memory_source="spec")  # fmt: skip
    assert good.memory_gbyte_per_s == 307.2
    with pytest.raises(ValidationError, match="is not memory_channels x memory_mt_per_s"):
        Cpu(**row, memory_channels=8, memory_mt_per_s=4800, memory_gbyte_per_s=400.0,
            memory_source="spec")  # fmt: skip
    with pytest.raises(ValidationError, match="needs a memory_source"):
        Cpu(**row, memory_gbyte_per_s=400.0)


# --- memory -------------------------------------------------------------------------------


def test_offload_removes_the_fp32_states_and_keeps_the_bf16_weights() -> None:
    arch = CATALOG.models["llama3.1-8b"]
    stages = (arch.num_layers,)
    on = memory_per_gpu(arch, _plan(offload=True), stages, DEEPSPEED)
    off = memory_per_gpu(arch, _plan(offload=False), stages, DEEPSPEED)
    assert off.optimizer_gib > 10 and on.optimizer_gib == 0.0
    # ZeRO-3: the partition is on the host; the contiguous gradient bucket stays on the GPU
    bucket_gib = DEEPSPEED.zero3_reduce_bucket_params * DEEPSPEED.grad_reduce_bytes / 1024**3
    assert off.gradients_gib > 3 + bucket_gib and on.gradients_gib == pytest.approx(bucket_gib)
    assert on.weights_gib == off.weights_gib and on.activations_gib == off.activations_gib
    # ZeRO-1: the BF16 gradients stay, half the FP32 buffer's bytes
    zero1_on = memory_per_gpu(arch, _plan(zero=1, offload=True), stages, DEEPSPEED)
    zero1_off = memory_per_gpu(arch, _plan(zero=1, offload=False), stages, DEEPSPEED)
    assert zero1_on.gradients_gib == pytest.approx(zero1_off.gradients_gib / 2)
    assert zero1_on.optimizer_gib == 0.0


# --- time ---------------------------------------------------------------------------------


def test_bytes_per_parameter_follow_deepspeed_and_cpu_adam() -> None:
    # unscale: read + write FP32 grad (8); Step_AVX: 4 FP32 loads + 3 FP32 stores (28);
    # FP32 -> BF16 cast on the host: read 4, write 2 (6); the BF16 copy read once more on its
    # way up (2: the driver's staging copy of the pageable temporary under ZeRO-3).
    assert ADAM_HOST_BYTES == 28
    assert HOST_BYTES_PER_PARAM == 8 + 28 + 6 + 2
    # ZeRO-3: BF16 partition down (2), back up (2), FP32 gradient down (4); ZeRO-1/2: FP32 down
    assert grad_link_bytes(3) == (6, 2)
    assert grad_link_bytes(1) == grad_link_bytes(2) == (4, 0)


def _parts(backward_s: float, ranks: int = 8, zero: int = 3):
    return offload_parts(
        owned_params=1e9,
        zero_stage=zero,
        ranks_per_host=ranks,
        link_gbyte_per_s=64.0,
        host_dram_gbyte_per_s=640.0,
        backward_s=backward_s,
    )


def test_backward_copies_hidden_behind_a_long_backward() -> None:
    parts = _parts(backward_s=10.0)
    host_s = 8 * 1e9 * 44 / 640e9
    param_up_s = 1e9 * 2 / 64e9
    assert parts.host_s == pytest.approx(host_s)
    assert parts.param_up_s == pytest.approx(param_up_s)
    assert parts.grad_link_s == pytest.approx(1e9 * 6 / 64e9)
    assert parts.exposed_s == pytest.approx(host_s + param_up_s)


def test_backward_copies_exposed_beyond_a_short_backward() -> None:
    grad_s = 1e9 * 6 / 64e9
    long_ = _parts(backward_s=10.0)
    short = _parts(backward_s=0.25 * grad_s)
    assert short.exposed_s - long_.exposed_s == pytest.approx(0.75 * grad_s)
    assert _parts(0.0, zero=1).grad_link_s == pytest.approx(1e9 * 4 / 64e9)


def test_host_passes_shared_by_the_hosts_ranks() -> None:
    assert _parts(10.0, ranks=8).host_s == pytest.approx(8 * _parts(10.0, ranks=1).host_s)


def _predict(plan: ParallelPlan, host: HostMemory | None, h100_comm):
    arch = CATALOG.models["llama3.1-8b"]
    gpu = CATALOG.gpus["h100-sxm"]
    return predict_step(arch, plan, gpu, h100_comm, 8, DEEPSPEED, host=host)


def test_the_offload_replaces_the_gpu_optimizer_step(h100_comm) -> None:
    host = host_memory(CATALOG, CATALOG.nodes["dgx-h100"])
    on = _predict(_plan(offload=True), host, h100_comm)
    off = _predict(_plan(offload=False), host, h100_comm)
    parts = on.optimizer_offload
    assert parts is not None and off.optimizer_offload is None
    assert parts.owned_params == pytest.approx(8.03e9 / 8, rel=0.01)
    assert parts.ranks_per_host == 8 and parts.host_dram_gbyte_per_s == pytest.approx(614.4)
    assert on.breakdown.optimizer_s == pytest.approx(parts.exposed_s)
    rest = on.step_time_s - on.breakdown.optimizer_s
    assert rest == pytest.approx(off.step_time_s - off.breakdown.optimizer_s)
    assert on.step_time_s > off.step_time_s
    assert on.as_dict()["optimizer_offload"]["host_s"] == pytest.approx(parts.host_s)


def test_offload_without_a_host_figure_is_a_clear_error(h100_comm) -> None:
    unknown = HostMemory("custom-node", None, 8)
    with pytest.raises(PlanError, match="has no DRAM bandwidth in the catalog"):
        _predict(_plan(), unknown, h100_comm)
    with pytest.raises(PlanError, match="needs the node's host DRAM bandwidth"):
        _predict(_plan(), None, h100_comm)


def test_a_node_whose_cpu_is_not_in_the_catalog_has_no_figure() -> None:
    node = CATALOG.nodes["dgx-h100"].model_copy(update={"id": "n", "cpu": "unknown-cpu"})
    assert isinstance(node, Node) and host_dram_gbyte_per_s(CATALOG, node) is None


# --- public CLI ---------------------------------------------------------------------------

OFFLOAD_SPEC = """\
name: zero3-offload
num_gpus: 8
node: dgx-h200
network:
  fabric: infiniband
  topology: rail-optimized
workload:
  model: llama3.1-8b
  tensor_parallel: 1
  global_batch: 8
  seq_length: 8192
  recompute: full
  zero_stage: 3
  stack: deepspeed
  optimizer_offload: {offload}
"""


def _predict_json(tmp_path, capsys, offload: str, *flags: str) -> dict:
    from clusterforge.cli.main import main

    spec = tmp_path / "offload.yaml"
    spec.write_text(OFFLOAD_SPEC.format(offload=offload))
    assert main(["predict", str(spec), *flags, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["plans"]
    return row


def test_predict_json_shows_the_offload_parts(tmp_path, capsys) -> None:
    on = _predict_json(tmp_path, capsys, "true")
    off = _predict_json(tmp_path, capsys, "false")
    parts = on["optimizer_offload"]
    assert on["plan"]["optimizer_offload"] is True and off["optimizer_offload"] is None
    assert parts["host_dram_gbyte_per_s"] == pytest.approx(614.4)
    assert parts["host_bytes_per_param"] == 44
    assert on["breakdown"]["optimizer_s"] == pytest.approx(parts["exposed_s"])
    assert sum(on["breakdown"].values()) == pytest.approx(on["step_time_s"])
    assert on["memory_gib"]["optimizer_gib"] == 0.0 < off["memory_gib"]["optimizer_gib"]


def test_the_cli_flag_turns_the_offload_on_and_off(tmp_path, capsys) -> None:
    flagged = _predict_json(tmp_path, capsys, "false", "--optimizer-offload")
    assert flagged["optimizer_offload"] is not None
    cleared = _predict_json(tmp_path, capsys, "true", "--no-optimizer-offload")
    assert cleared["optimizer_offload"] is None


def test_the_plan_search_bound_prices_the_offload() -> None:
    from clusterforge.assess.optimize.bounds import compute_bound_s

    fields = dict(model="llama3.1-8b", tensor_parallel=1, global_batch=8, seq_length=8192,
                  zero_stage=3, stack="deepspeed")  # fmt: skip
    on = compute_bound_s(WorkloadSpec(**fields, optimizer_offload=True), "dgx-h200", 8, CATALOG)
    off = compute_bound_s(WorkloadSpec(**fields), "dgx-h200", 8, CATALOG)
    assert on is not None and off is not None and on > off + 0.4  # >= 549 ms of host passes
