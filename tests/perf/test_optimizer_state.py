"""How the optimizer stores Adam's state (``clusterforge.perf.optimizer_state``): the bytes
per parameter of each kind, the memory they take, the spec's and the rows' checks, and the
prediction's JSON."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

import validation.runs as runs
from clusterforge.catalog import load_catalog
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf.memory import memory_per_gpu
from clusterforge.perf.optimizer_state import optimizer_state_bytes, optimizer_state_error
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.stack import stack_named
from clusterforge.perf.step import predict_step
from clusterforge.spec import WorkloadSpec
from validation.runs import load_runs

CATALOG = load_catalog()
NEMO = stack_named("nemo")
MCORE = stack_named("megatron-core")


def _plan(state: str = "fp32", precision: str = "bf16") -> ParallelPlan:
    return ParallelPlan(
        JobLayout.for_gpus(64, tp=8, pp=1),
        global_batch=64,
        seq_length=4096,
        precision=precision,  # type: ignore[arg-type]
        optimizer_state=state,  # type: ignore[arg-type]
    )


# --- bytes per parameter -----------------------------------------------------------------


def test_fp32_is_the_stacks_own_layout() -> None:
    assert optimizer_state_bytes("fp32", "bf16", MCORE) == 12.0  # 4 master + 4 + 4 moments
    assert optimizer_state_bytes("fp32", "bf16", stack_named("fsdp")) == 8.0  # masters are weights


def test_remainders_keep_two_of_the_four_master_bytes() -> None:
    # Apex param_remainders_shard / TE FusedAdam master: torch.int16 beside FP32 moments
    assert optimizer_state_bytes("fp32-remainders", "bf16", NEMO) == 10.0
    assert optimizer_state_bytes("fp32-remainders", "bf16", MCORE) == 10.0
    assert optimizer_state_bytes("fp32-remainders", "fp8", MCORE) == 10.0  # BF16 weights


def test_bf16_state_is_two_bf16_moments_plus_a_bf16_master_with_fp8_parameters() -> None:
    assert optimizer_state_bytes("bf16", "bf16", NEMO) == 4.0  # store_params False
    assert optimizer_state_bytes("bf16", "fp8", NEMO) == 6.0  # fp8_params: store_params True


def test_the_optimizer_memory_scales_with_the_bytes_per_parameter() -> None:
    arch = CATALOG.models["llama3.1-70b"]
    stages = (arch.num_layers,)
    full = memory_per_gpu(arch, _plan("fp32"), stages, NEMO)
    rem = memory_per_gpu(arch, _plan("fp32-remainders"), stages, NEMO)
    bf16 = memory_per_gpu(arch, _plan("bf16"), stages, NEMO)
    assert rem.optimizer_gib == pytest.approx(full.optimizer_gib * 10 / 12)
    assert bf16.optimizer_gib == pytest.approx(full.optimizer_gib * 4 / 12)
    assert rem.weights_gib == full.weights_gib and rem.gradients_gib == full.gradients_gib


# --- checks --------------------------------------------------------------------------------


def test_the_spec_defaults_to_fp32_and_takes_each_kind_where_it_is_priced() -> None:
    assert WorkloadSpec().optimizer_state == "fp32"
    assert WorkloadSpec(stack="megatron-bridge", optimizer_state="fp32-remainders")
    assert WorkloadSpec(stack="nemo", precision="fp8", optimizer_state="bf16")


def test_the_spec_refuses_an_unknown_kind() -> None:
    with pytest.raises(ValidationError, match="optimizer_state"):
        WorkloadSpec(optimizer_state="fp16")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"stack": "fsdp", "zero_stage": 3}, "remainders are priced for megatron-core"),
        ({"precision": "fp16"}, "remainders need BF16 weights"),
        ({"stack": "nemo", "precision": "fp8"}, "not FP16 ones or NeMo's FP8 parameters"),
    ],
)
def test_the_spec_refuses_remainders_without_bf16_weights_or_the_optimizer(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        WorkloadSpec(optimizer_state="fp32-remainders", **changes)  # type: ignore[arg-type]


def test_the_spec_refuses_bf16_state_outside_nemo_or_with_fp16() -> None:
    with pytest.raises(ValidationError, match="use optimizer_state 'fp32'"):
        WorkloadSpec(stack="megatron-core", optimizer_state="bf16")
    with pytest.raises(ValidationError, match="only for a BF16 model"):
        WorkloadSpec(stack="nemo", precision="fp16", optimizer_state="bf16")


def test_a_bad_value_names_the_choices() -> None:
    error = optimizer_state_error("fp16", "bf16", "nemo")
    assert error is not None and "use one of fp32, fp32-remainders, bf16" in error


def test_a_row_with_a_bad_value_is_refused_naming_the_row() -> None:
    path = Path(runs.__file__).parent / "pub_dgxc_nemo_h100_scale.toml"
    bad = path.read_text().replace('optimizer_state = "bf16"', 'optimizer_state = "fp8"', 1)
    row = next(r for r in runs.run_rows(tomllib.loads(bad)) if r.get("optimizer_state") == "fp8")
    with pytest.raises(PlanError, match=r"row pub-dgxc2411-.*optimizer_state = 'fp8': use one"):
        runs._run(path.name, row)


def test_the_340b_bf16_rows_state_the_recipes_bf16_state() -> None:
    # NeMo 24.09's nemotron4-340b-synth.yaml (dgxc-benchmarking 35a9aec): optim.dtype bf16
    rows = [
        r
        for r in load_runs()
        if r.file == "pub_dgxc_nemo_h100_scale.toml"
        and "nemotron4-340b-bf16" in r.name
        and r.subset == "development"
    ]
    assert rows and {r.base.optimizer_state for r in rows} == {"bf16"}


# --- the prediction ------------------------------------------------------------------------


def test_the_prediction_states_the_kind_and_its_bytes(h100_comm) -> None:
    arch = CATALOG.models["llama3.1-70b"]
    gpu = CATALOG.gpus["h100-sxm"]
    p = predict_step(arch, _plan("fp32-remainders"), gpu, h100_comm, 8, NEMO)
    row = p.as_dict()
    assert row["optimizer_bytes_per_param"] == 10.0
    assert row["plan"]["optimizer_state"] == "fp32-remainders"
