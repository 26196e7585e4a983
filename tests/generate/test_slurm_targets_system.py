"""Every example's Slurm files in the slurmctld of the release they target.

For each spec in examples/ and each tested target release (:data:`TARGETS`: Debian 12's
slurm-wlm 22.05 from PATH, Slurm 25.11 installed under /opt/clusterforge-slurm by
tests/generate/slurm_install.sh) the files are generated for that release, loaded by its
slurmctld with one ``slurmd -N`` per node (emulated_slurm.py lists the lines rewritten for
one machine), and checked: every node comes up idle, ``scontrol show topology`` shows one block
per rack-scale NVLink domain where the files use topology/block (the leaf-switch tree
elsewhere), and ``sbatch train.sbatch`` reaches the training command on every training node
(``torchrun`` is train_standin.py, which records what it was given).

Examples too large to emulate on one machine are planned with fewer GPUs (:data:`REDUCED`),
keeping their node model, fabric, facility and workload: racks, blocks and leaf groups are
the same kind, only fewer.  The GPU devices, the NVIDIA driver and the IMEX daemon are absent
here: switch/nvidia_imex loads and logs that it found no ``nvidia-caps-imex-channels`` major
number (so it hands out no channel), which only a GB200 machine can exercise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from clusterforge.design import Design, plan
from clusterforge.generate.layout import node_placements, nodes_per_nvlink_block
from clusterforge.generate.slurm.files import slurm_files
from clusterforge.generate.slurm.releases import slurm_release
from clusterforge.generate.training.megatron import megatron_args
from clusterforge.spec import SlurmVersion, load_spec, parse_spec
from tests.conftest import REPO
from tests.generate import test_slurm_system
from tests.generate.emulated_slurm import EmulatedSlurm, Ports, expand_hostlist, slurm_release_of

pytestmark = pytest.mark.system
munge = test_slurm_system.munge  # the session fixture that starts munged

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
CURRENT_SLURM = Path("/opt/clusterforge-slurm")
# Where each tested release runs: None = Debian's slurm-wlm on PATH.
TARGETS: dict[SlurmVersion, Path | None] = {"22.05": None, "25.11": CURRENT_SLURM}
MAX_NODES = 40
# GPUs each too-large example is emulated with: a whole number of nodes (racks for NVL72)
# that keeps the workload's TP x PP and global batch dividing.
REDUCED = {
    "colo-512-h100": 128,  # 16 of 64 nodes (+ spares)
    "colossus-100k-h100": 160,  # 20 of 12,500 nodes (+ spares): TP 8 x PP 5, DP 4
    "gb200-nvl72-pod": 144,  # 2 of 8 NVL72 racks: 36 trays, two blocks
    "hall-4096-b200": 128,  # 16 of 512 nodes (+ spares)
    "seed-design-a": 128,  # 16 of 64 nodes
    "seed-design-b": 128,  # 16 of 64 nodes
}
# Variants of an example (name: example stem, spec fields), emulated like the examples.
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    # 2 racks of 16 training trays and 2 in-rack spares: BlockSizes below the block size
    "gb200-nvl72-in-rack-spares": (
        "gb200-nvl72-pod",
        {"num_gpus": 128, "spare_fraction": 0, "spare_nodes_per_nvlink_domain": 2},
    ),
}
WAIT_IDLE_S = 180
WAIT_JOB_S = 180


def _missing(prefix: Path | None) -> str | None:
    if not all(shutil.which(p) for p in ("munged", "munge")):
        return "needs munge (apt-get install munge)"
    if prefix is None:
        if not all(shutil.which(p) for p in ("slurmctld", "slurmd", "sinfo")):
            return "needs Debian's slurm-wlm (apt-get install slurm-wlm)"
        return None
    if not (prefix / "sbin" / "slurmctld").exists():
        return f"no Slurm under {prefix}: run tests/generate/slurm_install.sh"
    return None


@dataclass(frozen=True)
class Case:
    example: Path
    version: SlurmVersion
    index: int
    variant: str | None = None

    @property
    def id(self) -> str:
        return f"{self.variant or self.example.stem}-slurm{self.version}"


_RUNS = [(e, v, None) for e in EXAMPLES for v in TARGETS] + [
    (REPO / "examples" / f"{stem}.yaml", v, name)
    for name, (stem, _) in VARIANTS.items()
    for v in TARGETS
]
CASES = [Case(example, version, i, name) for i, (example, version, name) in enumerate(_RUNS)]


def _design(case: Case) -> Design:
    """The example as written, with its target release and (when listed) fewer GPUs, or a
    variant's fields."""
    data = yaml.safe_load(case.example.read_text())
    data["slurm"] = {"version": case.version}
    data["num_gpus"] = REDUCED.get(case.example.stem, data["num_gpus"])
    if case.variant:
        data.update(VARIANTS[case.variant][1])
    return plan(parse_spec(data, str(case.example)))


def test_every_example_is_emulated_at_a_size_one_machine_runs() -> None:
    assert set(REDUCED) <= {e.stem for e in EXAMPLES}
    for example in EXAMPLES:
        if example.stem not in REDUCED:
            assert plan(load_spec(example)).compute.num_nodes <= MAX_NODES, example.stem


@dataclass
class Cluster:
    case: Case
    design: Design
    slurm: EmulatedSlurm


@pytest.fixture(scope="module", params=CASES, ids=lambda c: c.id)
def cluster(request: pytest.FixtureRequest, munge: None) -> Iterator[Cluster]:
    case: Case = request.param
    prefix = TARGETS[case.version]
    if reason := _missing(prefix):
        pytest.skip(reason)
    if (found := slurm_release_of(prefix)) != case.version:
        pytest.skip(f"the slurmctld for {case.version} is {found}")
    design = _design(case)
    assert design.compute.num_nodes <= MAX_NODES, case.id
    # A short path: slurmstepd's Unix sockets live in the spool folder (at most 108 bytes).
    base = Path(tempfile.mkdtemp(prefix="cfs-"))
    generated = base / "generated"
    generated.mkdir()
    for f in slurm_files(design):
        target = generated / Path(f.path).name
        target.write_text(f.content)
        target.chmod(f.mode)
    # A range of its own per case, apart from test_slurm_system.py's (16817, 17001-).
    ports = Ports(26800 + case.index, 27000 + 100 * case.index, 26800000 + 1000 * case.index)
    emulated = EmulatedSlurm(generated, base / "work", ports=ports, slurm_prefix=prefix)
    emulated.prepare()
    try:
        emulated.start()
        yield Cluster(case, design, emulated)
    finally:
        emulated.stop()
        shutil.rmtree(base, ignore_errors=True)


def _fields(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def test_nodes_come_up_idle(cluster: Cluster) -> None:
    states = cluster.slurm.wait_idle(WAIT_IDLE_S)
    assert sorted(states) == cluster.design.compute.node_names
    assert set(states.values()) == {"idle"}, states


def test_topology_shows_blocks_for_rack_scale_nvlink(cluster: Cluster) -> None:
    """One block per NVLink domain (the racks) where the files use topology/block; the
    leaf-switch tree (every node under one top switch) everywhere else."""
    cluster.slurm.wait_idle(WAIT_IDLE_S)
    rack_scale = nodes_per_nvlink_block(cluster.design) > 1
    block = rack_scale and slurm_release(cluster.case.version).block_topology
    conf = (cluster.slurm.generated / "slurm.conf").read_text().splitlines()
    assert f"TopologyPlugin=topology/{'block' if block else 'tree'}" in conf
    out = cluster.slurm.run("scontrol", "show", "topology")
    rows = [_fields(line) for line in out.splitlines() if line.strip()]
    if block:
        domains: dict[str, set[str]] = {}
        for p in node_placements(cluster.design):
            assert p.nvlink_block is not None
            domains.setdefault(p.nvlink_block, set()).add(p.name)
        shown = {r["BlockName"]: set(expand_hostlist(r["Nodes"])) for r in rows}
        assert shown == domains
        assert len(domains) >= 2
        return
    assert all("SwitchName" in r for r in rows), out
    covered = {n for r in rows if r["Level"] == "0" for n in expand_hostlist(r["Nodes"])}
    assert covered == set(cluster.design.compute.node_names)


def _wait_job(slurm: EmulatedSlurm, job_id: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    state = ""
    while time.monotonic() < deadline:
        job = _fields(slurm.run("scontrol", "show", "job", job_id, check=False))
        state = job.get("JobState", state)
        if state in {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}:
            return state
        if job.get("Reason", "").startswith("launch_failed"):
            return f"{state} ({job['Reason']})"
        time.sleep(1)
    reason = _fields(slurm.run("scontrol", "show", "job", job_id, check=False)).get("Reason")
    raise AssertionError(f"job {job_id} still {state} ({reason}) after {timeout_s} s")


def test_job_script_reaches_the_training_command(cluster: Cluster) -> None:
    slurm, design = cluster.slurm, cluster.design
    assert design.job is not None
    slurm.wait_idle(WAIT_IDLE_S)
    shims = slurm.work / "trainbin"
    shims.mkdir(exist_ok=True)
    torchrun = shims / "torchrun"
    torchrun.unlink(missing_ok=True)
    torchrun.symlink_to(Path(__file__).parent / "train_standin.py")
    record = slurm.work / "train-record.jsonl"
    env = {**slurm.env, "PATH": f"{shims}:{slurm.env['PATH']}", "TRAIN_RECORD": str(record)}
    out = subprocess.run(
        ["sbatch", "--parsable", str(slurm.generated / "train.sbatch")],
        cwd=slurm.work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    job_id = out.stdout.strip().split(";")[0]
    assert _wait_job(slurm, job_id, WAIT_JOB_S) == "COMPLETED"
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    training = design.compute.num_training_nodes
    assert sorted(r["node"] for r in rows) == design.compute.node_names[:training]
    for row in rows:
        assert f"--nnodes={training}" in row["torchrun"]
        assert f"--nproc-per-node={design.compute.gpus_per_node}" in row["torchrun"]
        assert row["script"] == "pretrain_gpt.py"
        # exactly the flags Megatron-LM's own parser accepts (tests/generate/test_megatron.py)
        assert row["train_args"] == list(megatron_args(design))


def test_rack_scale_designs_load_the_imex_switch_plugin_where_the_release_has_it(
    cluster: Cluster,
) -> None:
    """slurmctld runs with switch/nvidia_imex for rack-scale NVLink on Slurm >= 24.05."""
    cluster.slurm.wait_idle(WAIT_IDLE_S)
    rack_scale = nodes_per_nvlink_block(cluster.design) > 1
    imex = rack_scale and slurm_release(cluster.case.version).nvidia_imex
    config = cluster.slurm.run("scontrol", "show", "config")
    switch = next(line for line in config.splitlines() if line.startswith("SwitchType"))
    assert ("switch/nvidia_imex" in switch) is imex, switch
