"""Name checks, host lists and YAML output: the guards every generator relies on."""

from __future__ import annotations

import pytest
import yaml

from clusterforge.errors import GenerateError
from clusterforge.generate.common import checked_label_value, checked_name, hostlist, yaml_text
from tests.generate.emulated_slurm import expand_hostlist


@pytest.mark.parametrize(
    "names",
    [
        ["gpu-0001"],
        ["gpu-0001", "gpu-0002", "gpu-0003"],
        ["gpu-0001", "gpu-0003", "gpu-0004", "gpu-0010"],
        ["leaf-0001", "leaf-0002", "spine-0001"],
        ["mgmt", "gpu-0009", "gpu-0010"],
    ],
)
def test_hostlist_round_trips(names: list[str]) -> None:
    assert sorted(expand_hostlist(hostlist(names))) == sorted(names)


def test_hostlist_compresses_runs() -> None:
    assert hostlist(["gpu-0001", "gpu-0002", "gpu-0003", "gpu-0007"]) == "gpu-[0001-0003,0007]"
    assert hostlist(["su-0002"]) == "su-0002"


def test_empty_hostlist_is_an_error() -> None:
    with pytest.raises(GenerateError):
        hostlist([])


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "Gpu-1",
        "gpu 1",
        "gpu;reboot",
        "$(reboot)",
        "`id`",
        "a,b",
        "node#1",
        "-lead",
        "trail-",
        "x" * 64,
        "gpu\n1",
        "a=b",
    ],
)
def test_unsafe_names_are_refused(bad: str) -> None:
    with pytest.raises(GenerateError, match="not a valid name"):
        checked_name(bad, "node name")
    with pytest.raises(GenerateError):
        hostlist([bad])


def test_label_values_follow_kubernetes_rules() -> None:
    assert checked_label_value("leaf-0001", "x") == "leaf-0001"
    with pytest.raises(GenerateError):
        checked_label_value("a b", "x")


def test_yaml_text_never_writes_aliases() -> None:
    shared = {"a": 1}
    text = yaml_text({"x": shared, "y": shared})
    assert "&" not in text and "*" not in text
    assert yaml.safe_load(text) == {"x": {"a": 1}, "y": {"a": 1}}
