"""Shared fixtures: example designs and the generated files of the golden design."""

from __future__ import annotations

import subprocess
import time
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


def _munge_works() -> bool:
    probe = subprocess.run("munge -n | unmunge", shell=True, capture_output=True, text=True)
    return probe.returncode == 0 and "Success" in probe.stdout


@pytest.fixture(scope="session")
def munge() -> None:
    """Start munged as the munge user unless one already runs (another test may own it)."""
    if _munge_works():
        return
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    for path in ("/run/munge", "/var/log/munge", "/var/lib/munge", "/etc/munge"):
        subprocess.run(["chown", "-R", "munge:munge", path], check=False)
    subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=False)
    for _ in range(50):
        if _munge_works():
            return
        time.sleep(0.1)
    pytest.skip("munged could not be started (run as root with the munge package installed)")
