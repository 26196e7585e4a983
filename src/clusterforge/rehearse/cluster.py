"""The rehearsal lab: the design at N nodes, its generated files, and the emulated cluster.

Each emulated node's hooks (HealthCheckProgram, Prolog, Epilog) run the real
``clusterforge check`` against the design, reading that node's replayed NVML readings
(``nvml/<node>.json``) and an empty sysfs tree (no NICs to expect: ``--num-nics 0``); a drill
breaks a node by rewriting its readings file.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterforge.catalog import load_catalog
from clusterforge.design import Design, plan
from clusterforge.errors import AdapterError
from clusterforge.generate.slurm.files import slurm_files
from clusterforge.generate.spec_copy import spec_yaml
from clusterforge.rehearse.emulated import EmulatedSlurm, slurm_release_of
from clusterforge.rehearse.fixtures import healthy_readings, write_readings
from clusterforge.rehearse.model import RehearseOptions
from clusterforge.spec import SLURM_VERSIONS, load_spec, parse_spec, resolve_node_id

__all__ = ["Lab", "close_lab", "missing_requirements", "open_lab", "rehearsal_design"]

Progress = Callable[[str], None]
_PROGRAMS = ("slurmctld", "slurmd", "sinfo", "scontrol", "sbatch", "srun", "munged", "munge")
# Circuit breaker of the hooks' check: a rehearsal breaks one node of N >= 2 at a time.
_MAX_DRAIN_FRACTION = 0.5


# Drills whose acceptance run does the all_reduce of the ``nccl`` test: its worker runs
# torch.distributed (gloo on CPUs) in this interpreter on every emulated node.
_TORCH_DRILLS = ("accept", "slow-node")


def missing_requirements(drills: Sequence[str] = ()) -> list[str]:
    """What this machine lacks to run the emulated cluster and ``drills`` (empty when nothing),
    each with the command that installs it."""
    missing = [f"{p} (apt-get install slurm-wlm munge)" for p in _PROGRAMS if not shutil.which(p)]
    if os.geteuid() != 0:
        missing.append("root (slurmctld and slurmd run as root here)")
    needs_torch = [d for d in _TORCH_DRILLS if d in drills]
    if needs_torch and importlib.util.find_spec("torch") is None:
        missing.append(
            f"torch for the {' and '.join(needs_torch)} drill's all_reduce (pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu), or leave "
            f"{' and '.join(needs_torch)} out of --drills"
        )
    return missing


def rehearsal_design(spec_path: Path, num_nodes: int, slurm_version: str | None = None) -> Design:
    """The spec's design resized to ``num_nodes`` compute nodes and no spares; its files
    target ``slurm_version`` (the Slurm that runs the rehearsal) when given."""
    spec = load_spec(spec_path)
    catalog = load_catalog()
    gpus_per_node = catalog.nodes[resolve_node_id(spec, catalog)].num_gpus
    data = spec.model_dump(mode="json", exclude_none=True)
    data |= {"num_gpus": num_nodes * gpus_per_node, "spare_fraction": 0}
    if slurm_version is not None:
        data["slurm"] = {"version": slurm_version}
    return plan(parse_spec(data, source=str(spec_path)))


def _local_slurm_version() -> str | None:
    """The release of the slurmctld on PATH when the spec can target it, else None."""
    version = slurm_release_of(None)
    return version if version in SLURM_VERSIONS else None


@dataclass
class Lab:
    design: Design
    work: Path
    slurm: EmulatedSlurm
    started_munge: bool = False
    own_work: bool = False  # the work folder is a temporary one this rehearsal made

    @property
    def nodes(self) -> list[str]:
        return self.slurm.nodes

    def readings(self, node: str) -> Path:
        return self.work / "nvml" / f"{node}.json"

    def run_hook(self, node: str) -> subprocess.CompletedProcess[str]:
        """Run the generated HealthCheckProgram for ``node``, as its slurmd would."""
        env = {**self.slurm.env, "SLURMD_NODENAME": node}
        hook = self.slurm.work / "clusterforge-healthcheck.sh"
        return subprocess.run([str(hook)], env=env, capture_output=True, text=True, timeout=120)


def _munge_works() -> bool:
    try:
        token = subprocess.run(["munge", "-n"], capture_output=True, timeout=10, check=False)
        out = subprocess.run(["unmunge"], input=token.stdout, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


def _ensure_munge() -> bool:
    """munged running; True when this call started it."""
    if _munge_works():
        return False
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    for path in ("/run/munge", "/var/log/munge", "/var/lib/munge", "/etc/munge"):
        if Path(path).exists():
            subprocess.run(["chown", "-R", "munge:munge", path], check=False, timeout=30)
    subprocess.run(["runuser", "-u", "munge", "--", "munged"], check=False, timeout=30)
    deadline = time.monotonic() + 15
    while not _munge_works():
        if time.monotonic() > deadline:
            raise AdapterError("munged did not start: see /var/log/munge/munged.log")
        time.sleep(0.2)
    return True


def _stop_munge() -> None:
    pid_file = Path("/run/munge/munged.pid")
    if pid_file.exists():
        subprocess.run(["kill", pid_file.read_text().strip()], check=False, timeout=10)


def _write_generated(design: Design, folder: Path) -> None:
    folder.mkdir(parents=True)
    for f in slurm_files(design):
        target = folder / Path(f.path).name
        target.write_text(f.content)
        target.chmod(f.mode)


def _write_node_program(work: Path) -> Path:
    """What the hooks run as CLUSTERFORGE: this clusterforge, with the node's readings."""
    program = work / "bin" / "clusterforge"
    program.parent.mkdir(parents=True)
    (work / "sysfs").mkdir()
    program.write_text(
        "#!/bin/sh\n"
        "# clusterforge on an emulated node: replayed NVML readings, no NICs to expect.\n"
        'node="${SLURMD_NODENAME:?}"\n'
        f'exec {sys.executable} -m clusterforge.cli.main "$@" '
        f'--nvml-fixture {work}/nvml/"$node".json --sysfs-root {work}/sysfs --num-nics 0 '
        f'--state-file {work}/nvml/"$node".state.json '
        f"--max-drain-fraction {_MAX_DRAIN_FRACTION} --timeout-s 30\n"
    )
    program.chmod(0o755)
    return program


def open_lab(options: RehearseOptions, progress: Progress) -> Lab:
    """Plan, generate and start the emulated cluster (munged too, when none runs)."""
    progress(f"planning {options.spec} at {options.num_nodes} nodes")
    design = rehearsal_design(options.spec, options.num_nodes, _local_slurm_version())
    work = options.work or Path(tempfile.mkdtemp(prefix="clusterforge-rehearse-"))
    work.mkdir(parents=True, exist_ok=True)
    _write_generated(design, work / "generated")
    (work / "spec.yaml").write_text(spec_yaml(design))
    slurm = EmulatedSlurm(
        work / "generated", work / "slurm", cluster=options.cluster, ports=options.ports,
        hook_program=_write_node_program(work), spec_copy=work / "spec.yaml",
    )  # fmt: skip
    (work / "nvml").mkdir()
    for node in design.compute.node_names:
        write_readings(work / "nvml" / f"{node}.json", healthy_readings(design))
    lab = Lab(design, work, slurm, own_work=options.work is None)
    lab.started_munge = _ensure_munge()
    progress(f"starting slurmctld and {len(design.compute.node_names)} slurmd in {work}")
    slurm.prepare()
    slurm.start()
    return lab


def close_lab(lab: Lab, *, keep: bool) -> None:
    """Stop every daemon this rehearsal started and remove its temporary folder, unless
    ``keep``."""
    if keep:
        return
    lab.slurm.stop()
    if lab.started_munge:
        _stop_munge()
    if lab.own_work:
        shutil.rmtree(lab.work, ignore_errors=True)
