"""The access-control settings in the real slurmctld of the default target (Slurm 25.11).

The lab design's files, generated for 25.11, run in the Slurm under /opt/clusterforge-slurm
(tests/generate/slurm_install.sh) with one slurmd per node: the controller shows the
generated PrologFlags and PrivateData, every job gets the extern step pam_slurm_adopt adopts
ssh logins into, and another user cannot see root's job.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterforge.design import Design
from clusterforge.generate.slurm.files import slurm_files
from clusterforge.spec import SlurmSpec
from tests.generate import test_slurm_system
from tests.generate.emulated_slurm import EmulatedSlurm, Ports, slurm_release_of
from tests.generate.test_slurm_targets_system import CURRENT_SLURM, _missing

pytestmark = pytest.mark.system
munge = test_slurm_system.munge  # the session fixture that starts munged
OTHER_USER = "nobody"


@pytest.fixture(scope="module")
def slurm(munge: None, lab_design: Design) -> Iterator[EmulatedSlurm]:
    if reason := _missing(CURRENT_SLURM):
        pytest.skip(reason)
    if slurm_release_of(CURRENT_SLURM) != "25.11":
        pytest.skip(f"{CURRENT_SLURM} does not hold Slurm 25.11")
    design = lab_design.model_copy(
        update={"spec": lab_design.spec.model_copy(update={"slurm": SlurmSpec(version="25.11")})}
    )
    # Readable by the other user, who runs squeue with this slurm.conf.
    base = Path(tempfile.mkdtemp(prefix="cfsec-"))
    base.chmod(0o755)
    generated = base / "generated"
    generated.mkdir()
    for f in slurm_files(design):
        (generated / Path(f.path).name).write_text(f.content)
    ports = Ports(25800, 25900, 25800000)
    emulated = EmulatedSlurm(generated, base / "work", ports=ports, slurm_prefix=CURRENT_SLURM)
    emulated.prepare()
    (base / "work").chmod(0o755)
    emulated.conf.chmod(0o644)
    try:
        emulated.start()
        yield emulated
    finally:
        emulated.stop()
        shutil.rmtree(base, ignore_errors=True)


def _config(slurm: EmulatedSlurm) -> dict[str, str]:
    out = slurm.run("scontrol", "show", "config")
    pairs = (line.split("=", 1) for line in out.splitlines() if " = " in line)
    return {k.strip(): v.strip() for k, v in pairs}


def test_controller_loads_the_access_settings(slurm: EmulatedSlurm) -> None:
    states = slurm.wait_idle()
    assert set(states.values()) == {"idle"}, states
    config = _config(slurm)
    assert set(config["PrivateData"].split(",")) == {"accounts", "jobs", "usage", "users"}
    assert "Contain" in config["PrologFlags"].split(","), config["PrologFlags"]


def test_jobs_get_an_extern_step_and_stay_private(slurm: EmulatedSlurm) -> None:
    slurm.wait_idle()
    job_id = slurm.run(
        "sbatch", "--parsable", "-N", "1", "-o", "/dev/null", "--wrap", "sleep 60"
    ).strip()
    try:
        steps = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and f"{job_id}.extern" not in steps:
            steps = slurm.run("squeue", "-h", "-s", "-j", job_id, "-o", "%i")
            time.sleep(0.5)
        assert f"{job_id}.extern" in steps.split(), steps
        assert job_id in slurm.run("squeue", "-h", "-o", "%i").split()
        as_other = slurm.run(
            "runuser", "-u", OTHER_USER, "--", "env", f"SLURM_CONF={slurm.conf}",
            f"PATH={slurm.env['PATH']}", f"LD_LIBRARY_PATH={slurm.env.get('LD_LIBRARY_PATH', '')}",
            "squeue", "-h", "-o", "%i",
        )  # fmt: skip
        assert job_id not in as_other.split(), as_other
    finally:
        slurm.run("scancel", job_id, check=False)
