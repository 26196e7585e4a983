"""Shared fixtures: example designs and the generated files of the golden design."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.design import Design, plan
from clusterforge.spec import load_spec

SPECS = Path(__file__).parent / "specs"
GOLDEN_SPEC = SPECS / "lab-leaf-spine.yaml"
# dual-plane leaf-spine, small enough for the emulated Slurm cluster
MULTI_PLANE_SPEC = SPECS / "multi-plane-lab.yaml"


@pytest.fixture(scope="session")
def lab_design() -> Design:
    """7 H100 nodes (6 training + 1 spare) on 2 leaves: the golden and emulation design."""
    return plan(load_spec(GOLDEN_SPEC))


def spec_paths() -> list[Path]:
    return sorted(SPECS.glob("*.yaml"))
