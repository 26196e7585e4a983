"""Every numeric spec field has a physical range; absurd values and cross-field mistakes are
refused at the boundary, in one line naming the field, for every command."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from clusterforge.errors import SpecError
from clusterforge.spec import MAX_GPUS, ClusterSpec, NetworkSpec, parse_spec

BASE: dict[str, Any] = {"num_gpus": 64, "node": "dgx-h100"}


def _sections() -> list[tuple[str, type[BaseModel]]]:
    found: list[tuple[str, type[BaseModel]]] = [("", ClusterSpec)]
    for name, field in ClusterSpec.model_fields.items():
        for arg in (field.annotation, *typing.get_args(field.annotation)):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                found.append((name, arg))
    return found


def _numeric_fields() -> list[tuple[str, str, type]]:
    """(section, field, number type) for every int or float field of the spec."""
    out = []
    for section, model in _sections():
        for name, field in model.model_fields.items():
            ann = field.annotation
            args = typing.get_args(ann) if isinstance(ann, types.UnionType) else (ann,)
            kinds = [a for a in args if a in (int, float)]
            if kinds:
                out.append((section, name, kinds[0]))
    return out


def _with(section: str, name: str, value: object) -> dict[str, Any]:
    if not section:
        return {**BASE, name: value}
    return {**BASE, section: {name: value}}


def _refused(data: dict[str, Any], *expected: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(data, source="t")
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message
    for text in expected:
        assert text in message, message
    return message


@pytest.mark.parametrize(("section", "name", "kind"), _numeric_fields())
def test_every_numeric_field_has_both_bounds(section, name, kind):
    model = dict(_sections())[section]
    kinds = {type(m).__name__ for m in model.model_fields[name].metadata}
    assert kinds & {"Ge", "Gt"} and kinds & {"Le", "Lt"}, f"{section}.{name}: give a range"


@pytest.mark.parametrize(("section", "name", "kind"), _numeric_fields())
@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 1e300])
def test_infinite_nan_and_huge_are_refused(section, name, kind, bad):
    path = f"{section}.{name}" if section else name
    _refused(_with(section, name, bad), path)


@pytest.mark.parametrize(
    ("section", "name", "value"),
    [
        ("storage", "num_blocks", 100_000_000),
        ("storage", "checkpoints_kept", 1_000_000_000),
        ("storage", "dataset_tbyte", 1e30),
        ("storage", "capacity_tbyte", 1e9),
        ("storage", "read_gbyte_per_s", 1e12),
        ("workload", "tokens_b", 1e15),
        ("network", "nics_per_node", 100_000),
        ("facility", "breaker_a", 0.01),
        ("facility", "voltage_v", 1),
        ("", "num_gpus", 1_000_000_000),
    ],
)
def test_absurd_values_from_the_field_report_are_refused(section, name, value):
    _refused(_with(section, name, value), name, repr(value)[:10])


def test_a_billion_gpus_with_a_matching_batch_is_refused():
    data = {**BASE, "num_gpus": 10**9, "workload": {"global_batch": 10**9 // 8}}
    _refused(data, "num_gpus", f"{MAX_GPUS:,}")


def test_a_million_layer_custom_model_is_refused():
    model = {"num_layers": 10**6, "hidden_size": 10**6, "num_heads": 8, "vocab_size": 1000}
    _refused({**BASE, "workload": {"model": model}}, "workload.model", "num_layers = 1000000")


def test_name_pattern_is_quoted_whole():
    _refused({**BASE, "name": "Bad Name"}, "^[a-z0-9][a-z0-9-]{0,40}$")


def test_bad_values_are_cut_short():
    message = _refused({**BASE, "name": "x" * 10_000})
    assert "..." in message and len(message) < 300


def test_many_problems_are_counted_not_listed():
    data = {**BASE, **{f"unknown_{i}": i for i in range(50)}}
    _refused(data, "and 45 more problems")


def test_a_commented_out_section_takes_its_defaults():
    spec = parse_spec({**BASE, "network": None, "facility": None}, source="t")
    assert spec.network == NetworkSpec()


def test_a_section_that_is_not_a_mapping_says_so():
    _refused({**BASE, "network": 5}, "network", "must be a section")


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        ({"tensor_parallel": 8, "pipeline_parallel": 2, "pipeline_layers": [40, 41]}, "80"),
        ({"tensor_parallel": 8, "pipeline_parallel": 2, "pipeline_layers": [80]}, "pp = 2"),
        ({"tensor_parallel": 128}, "tp = 128 does not divide the 64 attention heads"),
        ({"model": "llama3-8b", "pipeline_parallel": 64, "tensor_parallel": 1}, "layers"),
        (
            {
                "model": {
                    "num_layers": 4,
                    "hidden_size": 512,
                    "num_heads": 8,
                    "vocab_size": 1000,
                    "num_experts": 2,
                    "top_k": 4,
                },
                "global_batch": 64,
            },
            "top_k = 4",
        ),
        (
            {
                "model": {
                    "num_layers": 4,
                    "hidden_size": 768,
                    "num_heads": 12,
                    "num_kv_heads": 8,
                    "vocab_size": 1000,
                },
                "tensor_parallel": 1,
                "global_batch": 128,
            },
            "num_kv_heads = 8",
        ),
    ],
)
def test_cross_field_checks_run_at_validation(workload, expected):
    data = {**BASE, "num_gpus": 128, "workload": {"global_batch": 1024, **workload}}
    _refused(data, "workload", expected)


def test_more_nics_than_the_node_has_is_refused():
    _refused({**BASE, "network": {"nics_per_node": 16}}, "nics_per_node", "at most 8")


def test_an_out_of_range_value_names_the_range():
    _refused(_with("storage", "num_blocks", 10**8), "out of range (1 to 10,000)")
    _refused(_with("facility", "voltage_v", 1), "out of range (100 to 1000)")
