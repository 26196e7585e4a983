"""Where slurmctld places jobs: the topology and switch plugins, ``topology.conf``.

NVLink domains larger than a node (GB200/GB300 NVL72) are placed with ``topology/block``,
one block per rack-scale domain as the racks hold them (topology.conf(5)), with
``switch/nvidia_imex`` where the target Slurm release has them
(:mod:`clusterforge.generate.slurm.releases`); every other design, and a rack-scale one on
an older Slurm, uses ``topology/tree`` from :func:`clusterforge.generate.layout.switch_tree`
(the block file then ships as ``topology-block.conf`` for the upgrade).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clusterforge.design import Design
from clusterforge.generate.common import hostlist, render_template
from clusterforge.generate.layout import (
    SPARE_GROUP,
    NodePlacement,
    TreeSwitch,
    nodes_per_nvlink_block,
    switch_tree,
)
from clusterforge.generate.slurm.releases import SlurmRelease

__all__ = [
    "Placement",
    "SwitchType",
    "TopologyPlugin",
    "block_conf",
    "choose_placement",
    "topology_conf",
]

TopologyPlugin = Literal["topology/tree", "topology/block"]
SwitchType = Literal["switch/none", "switch/nvidia_imex"]


@dataclass(frozen=True)
class Placement:
    """How slurmctld places jobs: the topology plugin and the switch plugin."""

    topology_plugin: TopologyPlugin
    switch_type: SwitchType
    comments: tuple[str, ...]

    @property
    def block(self) -> bool:
        return self.topology_plugin == "topology/block"


def choose_placement(design: Design, release: SlurmRelease) -> Placement:
    """Blocks and per-job IMEX channels for rack-scale NVLink where the release has them."""
    if nodes_per_nvlink_block(design) == 1:
        return Placement("topology/tree", "switch/none", ())
    switch: SwitchType = "switch/nvidia_imex" if release.nvidia_imex else "switch/none"
    if release.block_topology:
        block_comments = ("Each block of topology.conf is one rack-scale NVLink domain.",)
        return Placement("topology/block", switch, block_comments)
    comments = (
        "NVLink domains span several nodes: topology-block.conf holds them for",
        f"TopologyPlugin=topology/block (Slurm >= 23.11); Slurm {release.version} uses tree.",
    )
    return Placement("topology/tree", switch, comments)


def _switch_comments(s: TreeSwitch) -> list[str]:
    if s.name == SPARE_GROUP:
        return [f"{s.name}: spare nodes outside the training fabric (no job spans both)"]
    if s.members == (s.name,) or not s.members:
        return []
    return [f"{s.name} stands for {hostlist(s.members)}"]


def topology_conf(design: Design) -> str:
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


def block_conf(
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
