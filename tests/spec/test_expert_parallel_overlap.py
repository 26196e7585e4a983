"""``workload.expert_parallel_overlap``: Megatron-Core's EP all-to-all overlap as a spec field,
off by default, refused on a stack that does not run it, carried to the stack the model
prices (``Stack.moe_a2a_overlap``)."""

from __future__ import annotations

import pytest

from clusterforge.errors import PlanError, SpecError
from clusterforge.perf import workload_stack
from clusterforge.spec import WorkloadSpec, parse_spec
from clusterforge.spec.workload import MEGATRON_CORE_STACKS

BASE = {"num_gpus": 64, "node": "dgx-h100"}


def _workload(**fields: object) -> WorkloadSpec:
    spec = parse_spec({**BASE, "workload": {"model": "mixtral-8x7b", **fields}})
    assert spec.workload is not None
    return spec.workload


def test_the_overlap_is_off_by_default_and_read_from_yaml() -> None:
    assert _workload().expert_parallel_overlap is False
    assert workload_stack(_workload()).moe_a2a_overlap is False
    on = _workload(expert_parallel=8, expert_parallel_overlap=True)
    assert on.expert_parallel_overlap is True
    assert workload_stack(on).moe_a2a_overlap is True


@pytest.mark.parametrize("stack", MEGATRON_CORE_STACKS)
def test_every_megatron_core_stack_takes_it(stack: str) -> None:
    workload = _workload(stack=stack, expert_parallel_overlap=True)
    priced = workload_stack(workload)
    assert priced.moe_a2a_overlap and priced.name == stack


@pytest.mark.parametrize("stack", ["deepspeed", "fsdp", "torchtitan", "megatron-2021"])
def test_a_stack_without_it_is_refused_with_the_field_and_the_fix(stack: str) -> None:
    with pytest.raises(SpecError) as refused:
        _workload(stack=stack, expert_parallel_overlap=True)
    message = str(refused.value)
    assert "workload: expert_parallel_overlap = true" in message
    assert f"stack = {stack!r}" in message and "expert_parallel_overlap to false" in message


def test_a_stack_chosen_apart_from_the_spec_is_refused_too() -> None:
    # ``clusterforge predict --stack fsdp`` on a spec with the overlap
    with pytest.raises(PlanError, match="expert_parallel_overlap with stack 'fsdp'") as refused:
        workload_stack(_workload(expert_parallel_overlap=True), "fsdp")
    assert refused.value.fix == {"workload.expert_parallel_overlap": False}
    assert not workload_stack(_workload(), "fsdp").moe_a2a_overlap


def test_only_a_boolean_is_taken() -> None:
    with pytest.raises(SpecError, match="expert_parallel_overlap"):
        _workload(expert_parallel_overlap="sometimes")
