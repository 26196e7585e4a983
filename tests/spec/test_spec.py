"""Spec validation: bad input gives one clear message naming the field, the value and the fix."""

from __future__ import annotations

import pytest

from clusterforge.errors import SpecError
from clusterforge.spec import default_spec, load_spec, parse_spec
from tests.conftest import EXAMPLES


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"num_gpus": 512, "gpu": "h100"}, ["gpu", "'h100'", "did you mean 'h100-sxm'"]),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "gpus_per_node": 7},
            ["gpus_per_node", "7", "gpus_per_node: 8"],
        ),
        (
            {"num_gpus": -8, "gpu": "h100-sxm"},
            ["num_gpus", "-8", "out of range (> 0 to 1,048,576)"],
        ),
        ({"num_gpus": 100, "gpu": "h100-sxm"}, ["num_gpus", "100", "use 104"]),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "netwrok": {}},
            ["netwrok", "did you mean 'network'"],
        ),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "network": {"topology": "torus"}},
            ["network.topology", "torus"],
        ),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "workload": {"tensor_parallel": 3}},
            ["tensor_parallel", "3", "does not divide num_gpus 512"],
        ),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "workload": {"global_batch": 100}},
            ["global_batch", "100", "use 128"],
        ),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "workload": {"data_parallel": 7}},
            ["data_parallel", "7", "64"],
        ),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "network": {"switch": "qm970"}},
            ["network.switch", "did you mean 'qm9700'"],
        ),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "network": {"transport": "tcp"}},
            ["network.transport", "'tcp'", "'rdma' or 'gpudirect-tcpx'"],
        ),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "network": {"transport": "gpudirect-tcpx"}},
            ["network", "Ethernet fabric", "'infiniband'", "set fabric: roce"],
        ),
        ({"num_gpus": 512}, ["give 'gpu'"]),
        ({"num_gpus": 512, "gpu": "b200", "node": "dgx-h100"}, ["dgx-h100", "b200"]),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "facility": {"max_rack_kw": 0}},
            ["facility.max_rack_kw"],
        ),
        (
            {"num_gpus": 512, "gpu": "h100-sxm", "workload": {"model": "llama-70b"}},
            ["workload.model", "did you mean"],
        ),
    ],
)
def test_bad_input_names_field_value_and_fix(data, expected):
    with pytest.raises(SpecError) as info:
        parse_spec(data, source="s.yaml")
    message = str(info.value)
    assert "\n" not in message
    for part in expected:
        assert part in message


def test_malformed_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("num_gpus: 8\nnetwork: [unclosed\n")
    with pytest.raises(SpecError, match=r"malformed YAML at line \d+"):
        load_spec(path)


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "nope.yaml")
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(SpecError, match="YAML mapping"):
        load_spec(path)


def test_defaults_for_everything_but_the_gpu_count():
    spec = parse_spec({"num_gpus": 16, "gpu": "h100-sxm"})
    assert spec.node is None and spec.network.topology == "rail-optimized"
    assert spec.spare_fraction == 0.05 and spec.facility.continuous_load_factor == 0.8


def test_spec_is_frozen():
    spec = default_spec()
    with pytest.raises(Exception, match="frozen"):
        spec.num_gpus = 8  # type: ignore[misc]


def test_examples_parse():
    for path in EXAMPLES.glob("*.yaml"):
        load_spec(path)


@pytest.mark.parametrize("precision", ["mxfp8", "nvfp4"])
def test_block_scaled_precisions_parse(precision: str) -> None:
    spec = parse_spec({"num_gpus": 64, "gpu": "b200", "workload": {"precision": precision}})
    assert spec.workload is not None and spec.workload.precision == precision


def test_an_unknown_precision_names_the_choices() -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({"num_gpus": 64, "gpu": "b200", "workload": {"precision": "fp4"}})
    assert "workload.precision" in str(info.value) and "'nvfp4'" in str(info.value)
