"""The target Slurm release: a current one by default, 22.05 selectable, others refused."""

from __future__ import annotations

import pytest

from clusterforge.errors import SpecError
from clusterforge.spec import DEFAULT_SLURM_VERSION, SLURM_VERSIONS, parse_spec

BASE = {"num_gpus": 8, "gpu": "h100-sxm"}


def test_default_is_the_current_release() -> None:
    assert parse_spec(BASE).slurm.version == DEFAULT_SLURM_VERSION == "25.11"


@pytest.mark.parametrize(
    ("written", "version"),
    [(22.05, "22.05"), (25.11, "25.11"), ("24.05", "24.05"), ("25.11.7", "25.11")],
    ids=["yaml-number-22.05", "yaml-number-25.11", "string", "with-patch-level"],
)
def test_version_as_yaml_writes_it(written: object, version: str) -> None:
    assert parse_spec({**BASE, "slurm": {"version": written}}).slurm.version == version


@pytest.mark.parametrize("written", ["21.08", 24.1, "latest", "26.05"])
def test_unsupported_release_names_the_field_and_the_choices(written: object) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec({**BASE, "slurm": {"version": written}})
    message = str(info.value)
    assert "slurm.version" in message
    assert all(v in message for v in SLURM_VERSIONS)
