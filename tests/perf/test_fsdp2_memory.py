"""FSDP2's root unit in memory (:mod:`clusterforge.perf.fsdp2_memory`), by hand on Llama 3 8B:
the root (embedding and output layer, 2 x 128256 x 4096 parameters) stays unsharded through
the step and leaves its all-gather block in the copy-in stream's pool, where the model's
prefetched layer unit stood."""

from __future__ import annotations

import dataclasses

import pytest

from clusterforge.catalog import ModelArch
from clusterforge.job import JobLayout
from clusterforge.perf.fsdp2_memory import fsdp2_root_bytes, root_unit_params
from clusterforge.perf.memory import layer_params_per_gpu, memory_per_gpu
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack import STACK_NAMES, stack_named

SHAPE = {
    "num_layers": 32,
    "hidden_size": 4096,
    "num_heads": 32,
    "num_kv_heads": 8,
    "ffn_hidden_size": 14336,
    "gated_mlp": True,
    "vocab_size": 128256,
}
LLAMA3_8B = ModelArch(**SHAPE)
ROOT = 2 * 128256 * 4096  # embedding + output layer
# Q, K, V, output projection, two norms, gate/up/down: 4096 x (4096 + 2 x 1024) + 4096^2
# + 2 x 4096 + 3 x 4096 x 14336.
LAYER = 25_165_824 + 16_777_216 + 8_192 + 176_160_768
TITAN = stack_named("torchtitan")
OFF = dataclasses.replace(TITAN, fsdp2_root_unit="none")
STAGES = (32,)


def _plan(precision: str = "bf16", zero_stage: int = 3, pp: int = 1) -> ParallelPlan:
    return ParallelPlan(
        JobLayout(dp=8 // pp, pp=pp),
        seq_length=8192,
        global_batch=8,
        micro_batch=1,
        zero_stage=zero_stage,
        precision=precision,
    )


def _extra_bytes(plan: ParallelPlan, stages: tuple[int, ...] = STAGES) -> float:
    on = memory_per_gpu(LLAMA3_8B, plan, stages, TITAN)
    off = memory_per_gpu(LLAMA3_8B, plan, stages, OFF)
    assert on.reserve_gib == off.reserve_gib
    return (on.total_gib - off.total_gib) * 2**30


def test_the_root_and_layer_units_of_llama3_8b() -> None:
    assert root_unit_params(LLAMA3_8B, _plan()) == ROOT
    assert layer_params_per_gpu(LLAMA3_8B, _plan()) == LAYER


def test_bf16_fsdp_adds_the_unsharded_root_and_the_copy_in_block_less_one_layer() -> None:
    """BF16 on 8 GPUs: unsharded root 2 x 1,050,673,152 B = 2,101,346,304 B, and the copy-in
    block of the same size less the 2 x 218,112,000 B of the prefetched layer the model
    already counts: 3,766,468,608 B (3.51 GiB) per GPU."""
    expected = 2 * ROOT + (2 * ROOT - 2 * LAYER)
    assert expected == 3_766_468_608
    assert _extra_bytes(_plan()) == pytest.approx(expected, rel=1e-9)


def test_fp8_layers_gather_one_byte_but_the_root_stays_bf16() -> None:
    """torchao's float8 converts every linear but ``output``: the root is gathered in BF16,
    the model's prefetched layer in FP8 (1 B), so the copy-in part is 2 x root - layer."""
    expected = 2 * ROOT + (2 * ROOT - LAYER)
    assert _extra_bytes(_plan("fp8")) == pytest.approx(expected, rel=1e-9)


def test_with_pipeline_stages_only_the_copy_in_block_of_the_first_stage() -> None:
    """PP 2: the first stage's root is the embedding alone, 525,336,576 parameters; the
    stage stays gathered (already counted) and the model counts no all-gather output there,
    so the whole BF16 block is added: 1,050,673,152 B."""
    plan = _plan(pp=2)
    assert fsdp2_root_bytes(LLAMA3_8B, plan, TITAN, LAYER, False) == ROOT
    assert _extra_bytes(plan, (16, 16)) == pytest.approx(ROOT, rel=1e-9)


def test_zero_off_fsdp2_root_units_and_below_zero3() -> None:
    """torchtitan for every model, AutoModel for dense models only (its MoE models shard the
    embedding and output layer apart); FSDP1, DeepSpeed, Megatron and XLA never."""
    expected = {"torchtitan": "all", "automodel": "dense"}
    moe = ModelArch(**SHAPE, num_experts=8, top_k=2)
    for name in STACK_NAMES:
        stack = stack_named(name)
        assert stack.fsdp2_root_unit == expected.get(name, "none"), name
        dense = fsdp2_root_bytes(LLAMA3_8B, _plan(), stack, LAYER, True)
        experts = fsdp2_root_bytes(moe, _plan(), stack, LAYER, True)
        assert (dense > 0.0) == (name in expected), name
        assert (experts > 0.0) == (name == "torchtitan"), name
    assert _extra_bytes(_plan(zero_stage=2)) == 0.0


def test_the_copy_in_block_replaces_the_unit_the_model_counts() -> None:
    """A stack whose gathered unit is larger than a layer (``fsdp_unit_params``): the model's
    prefetched block is that unit, so the unit is what the root's copy-in block replaces."""
    unit = 5e8
    wide = dataclasses.replace(TITAN, fsdp_unit_params=unit)
    wide_off = dataclasses.replace(wide, fsdp2_root_unit="none")
    on = memory_per_gpu(LLAMA3_8B, _plan(), STAGES, wide)
    off = memory_per_gpu(LLAMA3_8B, _plan(), STAGES, wide_off)
    expected = 2 * ROOT + (2 * ROOT - 2 * unit)
    assert (on.total_gib - off.total_gib) * 2**30 == pytest.approx(expected, rel=1e-9)
