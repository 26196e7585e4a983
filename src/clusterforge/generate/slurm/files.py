"""Slurm files from the design: slurm.conf and the list of every file the Slurm bundle holds.

Sources (slurm.conf(5), Slurm "Prolog and Epilog Guide"):

* ``NodeName ... Gres=gpu:<type>:<count>`` with ``GresTypes=gpu`` and ``select/cons_tres``;
  the GRES type and ``gres.conf``: :mod:`clusterforge.generate.slurm.gres`;
* the target Slurm release (the spec's ``slurm.version``) decides what the files name
  (:mod:`clusterforge.generate.slurm.releases`); the topology and switch plugins and
  ``topology.conf``: :mod:`clusterforge.generate.slurm.topology`;
* a failing Prolog drains the node and requeues the job, a failing Epilog drains the node;
  HealthCheckProgram is killed after 60 s (slurm.conf(5), HealthCheckProgram); the hook
  scripts and the training job script: :mod:`clusterforge.generate.slurm.scripts`;
* spare nodes sit in their own ``spare`` partition, never in the default one, so no job lands
  on them unless it asks;
* controllers, accounting and fair share: :mod:`clusterforge.generate.slurm.accounting`;
  node logins, private data, munge key and accounting firewall:
  :mod:`clusterforge.generate.slurm.access`;
  IMEX for multi-node NVLink domains: :mod:`clusterforge.generate.nvlink.imex`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import groupby

from clusterforge.design import Design
from clusterforge.generate.common import GeneratedFile, checked_name, hostlist, render_template
from clusterforge.generate.layout import NodePlacement, node_placements, nodes_per_nvlink_block
from clusterforge.generate.nvlink.imex import (
    IMEX_SWITCH_TYPE,
    imex_slurm_files,
    imex_switch_comments,
)
from clusterforge.generate.slurm.access import PRIVATE_DATA, PROLOG_FLAGS, access_files
from clusterforge.generate.slurm.accounting import accounting_settings, controllers, slurmdbd_conf
from clusterforge.generate.slurm.gres import gres_conf, gres_type
from clusterforge.generate.slurm.releases import slurm_release
from clusterforge.generate.slurm.scripts import slurm_scripts
from clusterforge.generate.slurm.topology import (
    Placement,
    block_conf,
    choose_placement,
    topology_conf,
)
from clusterforge.generate.spec_copy import spec_yaml

__all__ = [
    "HEALTHCHECK_INTERVAL_S",
    "REAL_MEMORY_FRACTION",
    "slurm_files",
]

CONF_DIR = "/etc/slurm"
# LBNL Node Health Check's documented Slurm setting (NHC README, "Slurm integration"): 300 s.
HEALTHCHECK_INTERVAL_S = 300
# The kernel keeps part of the installed memory; slurmd drains a node reporting less than
# RealMemory, so configure 97 % of the installed GiB.
REAL_MEMORY_FRACTION = 0.97
# Slurm counts cores, not hyperthreads: the catalog has no SMT figure per CPU, and a node
# whose hardware offers more threads than configured is accepted.
THREADS_PER_CORE = 1
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


def _slurm_conf(design: Design, placements: list[NodePlacement], how: Placement) -> str:
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


def slurm_files(design: Design) -> list[GeneratedFile]:
    """Every Slurm file for ``design``, paths under ``slurm/``, for the spec's Slurm release."""
    placements = node_placements(design)
    release = slurm_release(design.spec.slurm.version)
    how = choose_placement(design, release)
    topology = (
        block_conf(design, placements, release, in_use=True) if how.block else topology_conf(design)
    )
    files = [
        GeneratedFile("slurm/slurm.conf", _slurm_conf(design, placements, how)),
        GeneratedFile("slurm/gres.conf", gres_conf(design)),
        GeneratedFile("slurm/topology.conf", topology),
        GeneratedFile(
            "slurm/cgroup.conf", render_template("slurm/cgroup.conf.j2", cluster=design.spec.name)
        ),
        *slurm_scripts(design, how),
        GeneratedFile("slurm/clusterforge-spec.yaml", spec_yaml(design)),
        GeneratedFile("slurm/slurmdbd.conf", slurmdbd_conf(design), 0o600),
        *access_files(design),
        *imex_slurm_files(design, placements),
    ]
    if nodes_per_nvlink_block(design) > 1 and not how.block:
        block = block_conf(design, placements, release, in_use=False)
        files.append(GeneratedFile("slurm/topology-block.conf", block))
    return files
