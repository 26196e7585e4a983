"""Slurm files from the design: slurm.conf, gres.conf, topology.conf, cgroup.conf, hooks, job.

Sources (slurm.conf(5), gres.conf(5), topology.conf(5), Slurm "Prolog and Epilog Guide"):

* ``NodeName ... Gres=gpu:<type>:<count>`` with ``GresTypes=gpu`` and ``select/cons_tres``;
* ``gres.conf`` with ``AutoDetect=nvml`` (``rsmi`` for AMD) plus explicit ``Type``/``File``,
  which Slurm then uses as a sanity check (a mismatch drains the node);
* the target Slurm release (the spec's ``slurm.version``) decides what the files name
  (:mod:`clusterforge.generate.slurm.releases`): NVLink domains larger than a node (GB200/
  GB300 NVL72) are placed with ``topology/block``, one block per rack-scale domain as the
  racks hold them, and get ``switch/nvidia_imex`` where the release has them; every other
  design, and a rack-scale one on an older Slurm, uses ``topology/tree`` from
  :func:`clusterforge.generate.layout.switch_tree` (the block file then ships as
  ``topology-block.conf`` for the upgrade);
* a failing Prolog drains the node and requeues the job, a failing Epilog drains the node;
  HealthCheckProgram is killed after 60 s (slurm.conf(5), HealthCheckProgram);
* spare nodes sit in their own ``spare`` partition, never in the default one, so no job lands
  on them unless it asks;
* controllers, accounting and fair share: :mod:`clusterforge.generate.slurm.accounting`;
  node logins, private data, munge key and accounting firewall:
  :mod:`clusterforge.generate.slurm.access`;
  IMEX for multi-node NVLink domains: :mod:`clusterforge.generate.nvlink.imex`.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from itertools import groupby
from typing import Literal

from clusterforge.catalog import Gpu
from clusterforge.design import Design
from clusterforge.errors import GenerateError
from clusterforge.generate.common import GeneratedFile, checked_name, hostlist, render_template
from clusterforge.generate.layout import (
    SPARE_GROUP,
    NodePlacement,
    TreeSwitch,
    node_placements,
    nodes_per_nvlink_block,
    switch_tree,
)
from clusterforge.generate.nvlink.imex import (
    IMEX_SWITCH_TYPE,
    imex_slurm_files,
    imex_switch_comments,
)
from clusterforge.generate.slurm.access import PRIVATE_DATA, PROLOG_FLAGS, access_files
from clusterforge.generate.slurm.accounting import (
    accounting_settings,
    controllers,
    slurmdbd_conf,
)
from clusterforge.generate.slurm.releases import SlurmRelease, slurm_release
from clusterforge.generate.spec_copy import SPEC_PATH, spec_yaml
from clusterforge.generate.training.launch import RENDEZVOUS_PORT, launch_plan

__all__ = [
    "CLUSTERFORGE_PATH",
    "HEALTHCHECK_INTERVAL_S",
    "REAL_MEMORY_FRACTION",
    "gres_type",
    "slurm_files",
]

CLUSTERFORGE_PATH = "/usr/local/bin/clusterforge"
CONF_DIR = "/etc/slurm"
# LBNL Node Health Check's documented Slurm setting (NHC README, "Slurm integration"): 300 s.
HEALTHCHECK_INTERVAL_S = 300
# The kernel keeps part of the installed memory; slurmd drains a node reporting less than
# RealMemory, so configure 97 % of the installed GiB.
REAL_MEMORY_FRACTION = 0.97
# Slurm counts cores, not hyperthreads: the catalog has no SMT figure per CPU, and a node
# whose hardware offers more threads than configured is accepted.
THREADS_PER_CORE = 1
AUTODETECT = {"nvidia": "nvml", "amd": "rsmi"}
_DEVICE_FILES = {"nvidia": ("/dev/nvidia", 0), "amd": ("/dev/dri/renderD", 128)}
_TYPE_RE = re.compile(r"^[a-z0-9]+$")
SPARE_MAX_TIME = "02:00:00"


@dataclass(frozen=True)
class _NodeLine:
    names: str
    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    real_memory_mib: int
    gres: str
    features: str


def gres_type(gpu: Gpu) -> str:
    """Slurm GRES type for a GPU: the id token with a digit that NVML's name contains.

    With AutoDetect, Slurm matches the configured Type against the device name reported by
    NVML, so ``h100`` (from ``h100-sxm``) matches "NVIDIA H100 80GB HBM3".
    """
    tokens = [t for t in gpu.id.split("-") if any(ch.isdigit() for ch in t)] or [gpu.id]
    names = [n.lower() for n in gpu.nvml_names]
    matching = [t for t in tokens if names and all(t in n for n in names)]
    chosen = (matching or tokens)[0].replace(".", "")
    if not _TYPE_RE.fullmatch(chosen):
        raise GenerateError(f"GPU id {gpu.id!r} gives no usable Slurm GRES type ({chosen!r})")
    return chosen


def _feature_tag(value: str) -> str:
    return value.replace("-", "_")


def _features(p: NodePlacement, many_pods: bool) -> str:
    tags = [p.rack and f"rack_{p.rack}", _feature_tag(p.group)]
    if many_pods and p.pod:
        tags.append(p.pod)
    if p.nvlink_block:
        tags.append(p.nvlink_block)
    return ",".join(_feature_tag(t) for t in tags if t)


def _node_lines(design: Design, placements: list[NodePlacement]) -> list[_NodeLine]:
    compute = design.compute
    gres = f"gpu:{gres_type(compute.gpu)}:{compute.gpus_per_node}"
    threads = THREADS_PER_CORE
    memory = math.floor(compute.node.memory_gib * 1024 * REAL_MEMORY_FRACTION)
    many_pods = len({p.pod for p in placements}) > 1
    lines = []
    for features, group in groupby(placements, key=lambda p: _features(p, many_pods)):
        lines.append(
            _NodeLine(
                names=hostlist(p.name for p in group),
                cpus=compute.node.num_cpus * compute.cpu.num_cores * threads,
                sockets=compute.node.num_cpus,
                cores_per_socket=compute.cpu.num_cores,
                threads_per_core=threads,
                real_memory_mib=memory,
                gres=gres,
                features=features,
            )
        )
    return lines


def _partitions(placements: list[NodePlacement]) -> list[dict[str, str]]:
    """``gpu`` (default) holds the training nodes only; spares get their own partition."""
    training = [p.name for p in placements if not p.spare]
    parts = [
        dict(
            name="gpu",
            nodes=hostlist(training),
            default="YES",
            max_time="INFINITE",
            oversubscribe="EXCLUSIVE",
        )
    ]
    spares = [p.name for p in placements if p.spare]
    if spares:
        parts.append(
            dict(
                name="spare",
                nodes=hostlist(spares),
                default="NO",
                max_time=SPARE_MAX_TIME,
                oversubscribe="EXCLUSIVE",
            )
        )
    return parts


TopologyPlugin = Literal["topology/tree", "topology/block"]
SwitchType = Literal["switch/none", "switch/nvidia_imex"]


@dataclass(frozen=True)
class _Placement:
    """How slurmctld places jobs: the topology plugin and the switch plugin."""

    topology_plugin: TopologyPlugin
    switch_type: SwitchType
    comments: tuple[str, ...]

    @property
    def block(self) -> bool:
        return self.topology_plugin == "topology/block"


def _placement(design: Design, release: SlurmRelease) -> _Placement:
    """Blocks and per-job IMEX channels for rack-scale NVLink where the release has them."""
    if nodes_per_nvlink_block(design) == 1:
        return _Placement("topology/tree", "switch/none", ())
    switch: SwitchType = "switch/nvidia_imex" if release.nvidia_imex else "switch/none"
    if release.block_topology:
        block_comments = ("Each block of topology.conf is one rack-scale NVLink domain.",)
        return _Placement("topology/block", switch, block_comments)
    comments = (
        "NVLink domains span several nodes: topology-block.conf holds them for",
        f"TopologyPlugin=topology/block (Slurm >= 23.11); Slurm {release.version} uses tree.",
    )
    return _Placement("topology/tree", switch, comments)


def _slurm_conf(design: Design, placements: list[NodePlacement], how: _Placement) -> str:
    compute = design.compute
    ctl = controllers(design)
    return render_template(
        "slurm/slurm.conf.j2",
        cluster=checked_name(design.spec.name, "cluster name"),
        controllers=list(ctl.hosts),
        controller_comments=list(ctl.comments),
        state_save_location=ctl.state_save_location,
        real_memory_pct=round(REAL_MEMORY_FRACTION * 100),
        slurm_version=design.spec.slurm.version,
        topology_plugin=how.topology_plugin,
        topology_comments=list(how.comments),
        switch_type=how.switch_type,
        switch_comments=imex_switch_comments(design, plugin=how.switch_type == IMEX_SWITCH_TYPE),
        healthcheck_path=f"{CONF_DIR}/clusterforge-healthcheck.sh",
        healthcheck_interval_s=HEALTHCHECK_INTERVAL_S,
        prolog_path=f"{CONF_DIR}/clusterforge-prolog.sh",
        epilog_path=f"{CONF_DIR}/clusterforge-epilog.sh",
        prolog_flags=PROLOG_FLAGS,
        private_data=PRIVATE_DATA,
        num_training_nodes=compute.num_training_nodes,
        num_spare_nodes=compute.num_spare_nodes,
        node_lines=_node_lines(design, placements),
        partitions=_partitions(placements),
        **accounting_settings(design),
    )


def _gres_conf(design: Design) -> str:
    compute = design.compute
    prefix, first = _DEVICE_FILES[compute.gpu.vendor]
    count = compute.gpus_per_node
    files = f"{prefix}{first}" if count == 1 else f"{prefix}[{first}-{first + count - 1}]"
    line = dict(names=hostlist(compute.node_names), gres_type=gres_type(compute.gpu), files=files)
    return render_template(
        "slurm/gres.conf.j2",
        cluster=design.spec.name,
        autodetect=AUTODETECT[compute.gpu.vendor],
        gres_lines=[line],
    )


def _switch_comments(s: TreeSwitch) -> list[str]:
    if s.name == SPARE_GROUP:
        return [f"{s.name}: spare nodes outside the training fabric (no job spans both)"]
    if s.members == (s.name,) or not s.members:
        return []
    return [f"{s.name} stands for {hostlist(s.members)}"]


def _topology_conf(design: Design) -> str:
    switches = []
    for s in switch_tree(design):
        key, targets = ("Nodes", s.nodes) if s.level == 0 else ("Switches", s.children)
        comments = _switch_comments(s)
        switches.append(dict(name=s.name, key=key, targets=hostlist(targets), comments=comments))
    return render_template(
        "slurm/topology.conf.j2",
        cluster=design.spec.name,
        topology=design.fabric.topology,
        switches=switches,
    )


def _block_conf(
    design: Design, placements: list[NodePlacement], release: SlurmRelease, *, in_use: bool
) -> str:
    """One block per NVLink domain, as the racks hold them (not consecutive node numbers).

    ``BlockSizes`` is the planning base size, which every block must reach
    (topology.conf(5)): the domain's node count, or the smallest block when a partly filled
    rack holds fewer trays.  With in-rack spares it is the trays a job uses in each domain
    (16 of a GB200 NVL72's 18): Slurm plans jobs in base blocks of that many nodes, and the
    domain's spare trays sit in the ``spare`` partition until one replaces a failed tray."""
    members: dict[str, list[str]] = {}
    for p in placements:
        if p.nvlink_block:
            members.setdefault(p.nvlink_block, []).append(p.name)
    blocks = [dict(name=block, nodes=hostlist(names)) for block, names in members.items()]
    base_size = min(len(names) for names in members.values())
    spares = design.compute.num_spares_per_nvlink_domain
    if spares:
        base_size = min(base_size, nodes_per_nvlink_block(design) - spares)
    return render_template(
        "slurm/topology-block.conf.j2",
        cluster=design.spec.name,
        nodes_per_block=nodes_per_nvlink_block(design),
        domain_gpus=design.compute.nvlink_domain_gpus,
        slurm_version=release.version,
        in_use=in_use,
        blocks=blocks,
        block_sizes=str(base_size) if release.block_sizes or not in_use else "",
        spare_comments=_spare_comments(spares, base_size),
    )


def _spare_comments(spares: int, base_size: int) -> list[str]:
    """What the block file says of in-rack spares (none without them)."""
    if not spares:
        return []
    return [
        f"{spares} trays of each block are in-rack hot spares (partition spare); jobs plan on",
        f"base blocks of {base_size} nodes. When a tray fails, drain it and move one of its",
        "block's spares into partition gpu (scontrol update PartitionName=gpu Nodes=...).",
    ]


def _parallelism(design: Design) -> str:
    _, job = design.require_workload("the training job script")
    return f"TP={job.tp} PP={job.pp} CP={job.cp} EP={job.ep} DP={job.dp}"


def _job_script(design: Design, how: _Placement) -> str:
    tree = switch_tree(design)
    biggest_group = max(len(s.nodes) for s in tree if s.level == 0)
    launch = launch_plan(design, biggest_group)
    # --switches counts leaf switches of topology/tree (sbatch(1)); blocks place by themselves.
    switches = None if how.block else launch.num_leaf_groups
    return render_template(
        "slurm/train.sbatch.j2",
        cluster=checked_name(design.spec.name, "cluster name"),
        script_name="train.sbatch",
        job_name=checked_name(launch.job_name, "job name"),
        partition="gpu",
        num_nodes=launch.num_nodes,
        gpus_per_node=launch.gpus_per_node,
        num_gpus=launch.num_gpus,
        parallelism=_parallelism(design),
        gres_type=gres_type(design.compute.gpu),
        num_leaf_groups=switches,
        fabric=checked_name(design.fabric.fabric, "fabric"),
        nccl_env=[(k, shlex.quote(v)) for k, v in launch.nccl_env],
        notes=list(launch.notes),
        rendezvous_port=RENDEZVOUS_PORT,
        train_args=[shlex.quote(a) for a in launch.train_args],
    )


def _scripts(design: Design, how: _Placement) -> list[GeneratedFile]:
    common = dict(
        cluster=checked_name(design.spec.name, "cluster name"),
        clusterforge_path=shlex.quote(CLUSTERFORGE_PATH),
        spec_path=shlex.quote(SPEC_PATH),
    )
    return [
        GeneratedFile(
            "slurm/clusterforge-healthcheck.sh",
            render_template("slurm/healthcheck.sh.j2", **common),
            0o755,
        ),
        GeneratedFile(
            "slurm/clusterforge-prolog.sh",
            render_template(
                "slurm/hook.sh.j2",
                hook="Prolog",
                consequence="drain the node and requeue the job",
                **common,
            ),
            0o755,
        ),
        GeneratedFile(
            "slurm/clusterforge-epilog.sh",
            render_template(
                "slurm/hook.sh.j2", hook="Epilog", consequence="drain the node", **common
            ),
            0o755,
        ),
        # A spec without a workload gets the cluster's files but no training job script.
        *(
            [GeneratedFile("slurm/train.sbatch", _job_script(design, how), 0o755)]
            if design.job
            else []
        ),
    ]


def slurm_files(design: Design) -> list[GeneratedFile]:
    """Every Slurm file for ``design``, paths under ``slurm/``, for the spec's Slurm release."""
    placements = node_placements(design)
    release = slurm_release(design.spec.slurm.version)
    how = _placement(design, release)
    topology = (
        _block_conf(design, placements, release, in_use=True)
        if how.block
        else _topology_conf(design)
    )
    files = [
        GeneratedFile("slurm/slurm.conf", _slurm_conf(design, placements, how)),
        GeneratedFile("slurm/gres.conf", _gres_conf(design)),
        GeneratedFile("slurm/topology.conf", topology),
        GeneratedFile(
            "slurm/cgroup.conf", render_template("slurm/cgroup.conf.j2", cluster=design.spec.name)
        ),
        *_scripts(design, how),
        GeneratedFile("slurm/clusterforge-spec.yaml", spec_yaml(design)),
        GeneratedFile("slurm/slurmdbd.conf", slurmdbd_conf(design), 0o600),
        *access_files(design),
        *imex_slurm_files(design, placements),
    ]
    if nodes_per_nvlink_block(design) > 1 and not how.block:
        block = _block_conf(design, placements, release, in_use=False)
        files.append(GeneratedFile("slurm/topology-block.conf", block))
    return files
