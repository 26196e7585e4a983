"""FP8 cast passes by GPU: Transformer Engine writes transposed FP8 copies only where the
GPU's FP8 GEMMs need the TN layout (Hopper), not on Blackwell (compute capability 10.x)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, fp8
from clusterforge.perf.compute import layer_times
from clusterforge.perf.fp8 import (
    _widths,
    fp8_layer_bytes,
    fp8_weight_cast_bytes_per_micro,
    te_writes_fp8_transposes,
)
from clusterforge.perf.roofline import gpu_perf
from clusterforge.perf.stack import stack_named

PLAN = ParallelPlan(
    JobLayout(tp=2, pp=1, dp=4), global_batch=64, micro_batch=2, seq_length=8192, precision="fp8"
)


@pytest.mark.parametrize("gpu", ["b200", "gb200", "gb300"])
def test_te_writes_no_fp8_transposes_on_blackwell(gpu) -> None:
    bridge = stack_named("megatron-bridge")
    assert te_writes_fp8_transposes(bridge, "h100-sxm")
    assert not te_writes_fp8_transposes(bridge, gpu)
    assert te_writes_fp8_transposes(stack_named("torchtitan"), gpu)  # not TE's rule


@pytest.mark.parametrize("gpu", ["b200", "gb200"])
def test_nemo_25x_stack_writes_no_fp8_transposes_on_blackwell(gpu) -> None:
    # Transformer Engine v2.1-v2.3 (the NeMo 25.x releases) already skip the transposed copy
    # for compute capability >= 10, as v2.9 does.
    nemo = stack_named("nemo")
    assert te_writes_fp8_transposes(nemo, "h100-sxm")
    assert not te_writes_fp8_transposes(nemo, gpu)


@pytest.mark.parametrize("scaling", ["delayed", "dynamic"])
def test_blackwell_te_cast_bytes_drop_exactly_the_transposed_writes(models, scaling) -> None:
    arch = models["llama3-8b"]
    stack = replace(stack_named("megatron-core"), fp8_scaling=scaling)
    hopper = fp8_layer_bytes(arch, PLAN, stack, "h100-sxm")
    blackwell = fp8_layer_bytes(arch, PLAN, stack, "b200")
    tokens = PLAN.micro_batch * PLAN.seq_length
    norm_fed, others, grads, activation_out = _widths(arch, PLAN)
    fused = norm_fed + activation_out
    # Hopper: the FP8 norm/activation outputs get a transpose pass (read 1 + write 1 B), the
    # other casts write 1 B more; Blackwell: neither.
    assert hopper[0] - blackwell[0] == pytest.approx(
        tokens * (2.0 * fused + 1.0 * (others - activation_out))
    )
    assert hopper[1] - blackwell[1] == pytest.approx(tokens * grads)
    assert fp8_layer_bytes(arch, PLAN, stack) == hopper  # no GPU named: the Hopper rule


def test_non_te_stacks_cast_the_same_on_every_gpu(models) -> None:
    arch, stack = models["llama3-8b"], stack_named("torchtitan")
    assert fp8_layer_bytes(arch, PLAN, stack, "b200") == fp8_layer_bytes(
        arch, PLAN, stack, "h100-sxm"
    )


def test_blackwell_cached_weight_cast_writes_no_transpose() -> None:
    stack = stack_named("megatron-core")  # BF16 weights, FP8 copy cast once per step
    hopper = fp8_weight_cast_bytes_per_micro(1e9, PLAN, stack, 4, "h100-sxm")
    blackwell = fp8_weight_cast_bytes_per_micro(1e9, PLAN, stack, 4, "gb200")
    assert hopper == pytest.approx(1e9 * 4.0 / 4) and blackwell == pytest.approx(1e9 * 3.0 / 4)


def test_blackwell_layer_time_uses_the_gpus_layout_rule(models, monkeypatch) -> None:
    arch, stack = models["llama3-8b"], stack_named("megatron-bridge")
    perf = gpu_perf(load_catalog().gpus["b200"], "fp8")
    with_gpu = layer_times(arch, PLAN, perf, stack)
    monkeypatch.setattr(fp8, "_non_tn_fp8_gemms", lambda gpu_id: False)  # as if TN-only
    as_hopper = layer_times(arch, PLAN, perf, stack)
    assert with_gpu.forward_s < as_hopper.forward_s
    assert with_gpu.backward_s < as_hopper.backward_s
