"""Kueue and Volcano objects: queues with the design's quota and the fabric's topology.

Kueue (kueue.sigs.k8s.io, "Topology Aware Scheduling", beta since v0.14): a ``Topology`` lists
node labels coarse to fine, a ``ResourceFlavor`` names it and selects the training nodes, a
``ClusterQueue`` holds the quota and a ``LocalQueue`` lets the training namespace use it;
pods ask for a level with the ``podset-required-topology`` / ``podset-preferred-topology``
annotations.  Volcano (volcano.sh, "Network Topology Aware Scheduling"): a ``Queue`` with the
capability and ``HyperNode`` tiers built from the same scheduling tree.

In-rack spares of a rack-scale NVLink domain (``spare_nodes_per_nvlink_domain``) carry
``role=spare`` like every spare, and the ResourceFlavor selects ``role=training`` nodes, so
each ``nvlink-block`` domain offers Kueue exactly the trays a job uses (16 of a GB200 NVL72's
18); relabelling a spare ``role=training`` after draining a failed tray swaps it in.  The
PyTorchJob's Master and Worker PodSets share a ``podset-group-name``, which Kueue refuses
alongside the ``podset-slice-*`` annotations (jobframework/tas_validation.go), so the slice
size is held by the flavor's node set rather than by a slice annotation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusterforge.design import Design
from clusterforge.generate.common import checked_label_value, checked_name
from clusterforge.generate.kubernetes.agent import LABEL_PREFIX, TRAINING_NAMESPACE
from clusterforge.generate.kubernetes.rdma import RDMA_RESOURCE
from clusterforge.generate.layout import NodePlacement, switch_tree
from clusterforge.generate.slurm.gres import gres_type

__all__ = [
    "HOSTNAME_LABEL",
    "KUEUE_API",
    "kueue_objects",
    "node_labels",
    "topology_annotations",
    "topology_levels",
    "volcano_objects",
]

HOSTNAME_LABEL = "kubernetes.io/hostname"
KUEUE_API = "kueue.x-k8s.io/v1beta1"
# Pod-template annotations of Kueue topology-aware scheduling.
TAS_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
TAS_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TAS_GROUP = "kueue.x-k8s.io/podset-group-name"


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": checked_name(name, "object name")}
    if namespace:
        meta["namespace"] = namespace
    return meta


def node_labels(design: Design, p: NodePlacement) -> dict[str, str]:
    """The labels one node carries (rack, leaf group, spine block, NVLink block, role)."""
    labels = {
        "cluster": design.spec.name,
        "gpu": gres_type(design.compute.gpu),
        "role": "spare" if p.spare else "training",
        "leaf-group": p.group,
        "rails": str(design.fabric.nics_per_node),
    }
    optional = {"rack": p.rack, "spine-block": p.pod, "nvlink-block": p.nvlink_block}
    labels.update({k: v for k, v in optional.items() if v})
    return {LABEL_PREFIX + k: checked_label_value(v, f"label {k}") for k, v in labels.items()}


def _nests(
    placements: list[NodePlacement],
    fine: Callable[[NodePlacement], str | None],
    coarse: Callable[[NodePlacement], str | None],
) -> bool:
    """True when every domain of ``fine`` lies inside one domain of ``coarse``."""
    parents: dict[str | None, set[str | None]] = {}
    for p in placements:
        parents.setdefault(fine(p), set()).add(coarse(p))
    return all(domain is not None and len(up) == 1 for domain, up in parents.items())


def _pod(p: NodePlacement) -> str | None:
    return p.pod


def _group(p: NodePlacement) -> str | None:
    return p.group


def _block(p: NodePlacement) -> str | None:
    return p.nvlink_block


def topology_levels(design: Design, placements: list[NodePlacement]) -> list[str]:
    """Kueue Topology levels of the training nodes, coarse to fine, each nested in the one
    above: spine block (when there are several), leaf group, NVLink block, host.

    Kueue needs a strict hierarchy.  When NVLink domains (racks) straddle leaf groups, the
    NVLink block is kept and the leaf-group level dropped: for a rack-scale system the
    NVLink domain is the stronger locality (tensor and expert parallel traffic).
    """
    training = [p for p in placements if not p.spare]
    kept: list[tuple[str, Callable[[NodePlacement], str | None]]] = []
    if len({p.pod for p in training if p.pod}) > 1:
        kept.append(("spine-block", _pod))
    has_blocks = any(p.nvlink_block for p in training)
    if has_blocks and not _nests(training, _block, _group):
        for name, key in (("nvlink-block", _block), ("leaf-group", _group)):
            if not kept or _nests(training, key, kept[-1][1]):
                kept.append((name, key))
                break
    else:
        kept.append(("leaf-group", _group))  # pods hold whole leaf groups
        if has_blocks:
            kept.append(("nvlink-block", _block))
    return [LABEL_PREFIX + name for name, _ in kept] + [HOSTNAME_LABEL]


def _resources(design: Design) -> dict[str, str | int]:
    """Quota of the training nodes.  Kueue admits a workload only when the ClusterQueue
    covers every resource its pods request, so the RDMA device (one per training pod) is
    part of the quota too."""
    compute = design.compute
    nodes = compute.num_training_nodes
    return {
        "cpu": nodes * compute.cpu_cores_per_node,
        "memory": f"{nodes * compute.node.memory_gib}Gi",
        "nvidia.com/gpu": compute.num_training_gpus,
        RDMA_RESOURCE: nodes,
    }


def kueue_objects(design: Design, placements: list[NodePlacement]) -> list[dict[str, Any]]:
    name = design.spec.name
    flavor = f"{name}-{gres_type(design.compute.gpu)}"
    quota = _resources(design)
    return [
        {
            # Kueue serves Topology at v1beta1 like the queue objects since TAS went beta
            # (v0.14); v1alpha1 was the pre-beta version.
            "apiVersion": KUEUE_API,
            "kind": "Topology",
            "metadata": _meta(f"{name}-fabric"),
            "spec": {"levels": [{"nodeLabel": lv} for lv in topology_levels(design, placements)]},
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": _meta(flavor),
            "spec": {
                # Training nodes only: spares join the queue when a person relabels them.
                "nodeLabels": {LABEL_PREFIX + "cluster": name, LABEL_PREFIX + "role": "training"},
                "topologyName": f"{name}-fabric",
            },
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "ClusterQueue",
            "metadata": _meta(name),
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": list(quota),
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": [
                                    {"name": k, "nominalQuota": v} for k, v in quota.items()
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": _meta("train", TRAINING_NAMESPACE),
            "spec": {"clusterQueue": name},
        },
    ]


def _hypernodes(design: Design) -> list[dict[str, Any]]:
    """Volcano HyperNodes: tier 1 = leaf groups (by label), tier 2/3 = the switches above."""
    objects = []
    for s in switch_tree(design):
        if s.level == 0:
            members = [
                {
                    "type": "Node",
                    "selector": {
                        "labelMatch": {"matchLabels": {LABEL_PREFIX + "leaf-group": s.name}}
                    },
                }
            ]
        else:
            members = [
                {"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in s.children
            ]
        objects.append(
            {
                "apiVersion": "topology.volcano.sh/v1alpha1",
                "kind": "HyperNode",
                "metadata": _meta(s.name),
                "spec": {"tier": s.level + 1, "members": members},
            }
        )
    return objects


def volcano_objects(design: Design) -> list[dict[str, Any]]:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": _meta(design.spec.name),
        "spec": {"weight": 1, "reclaimable": False, "capability": _resources(design)},
    }
    return [queue, *_hypernodes(design)]


def topology_annotations(
    design: Design, placements: list[NodePlacement], group: str | None
) -> dict[str, str]:
    """Kueue TAS annotations for the training pods.

    Require the finest level (NVLink block, leaf group, spine block) whose largest domain
    holds every training node; when none does, prefer the coarsest level, so Kueue packs the
    job as tightly as it can.  Master and Worker are two PodSets of one PyTorchJob: the same
    ``podset-group-name`` on both makes Kueue place them in one domain together.
    """
    nodes = design.compute.num_training_nodes
    levels = [lv for lv in topology_levels(design, placements) if lv != HOSTNAME_LABEL]
    labelled = [node_labels(design, p) for p in placements if not p.spare]
    annotations: dict[str, str] = {TAS_PREFERRED: levels[0]}
    for level in levels:  # coarse to fine: the last that fits wins
        domain_sizes: dict[str, int] = {}
        for labels in labelled:
            domain_sizes[labels[level]] = domain_sizes.get(labels[level], 0) + 1
        if max(domain_sizes.values()) >= nodes:
            annotations = {TAS_REQUIRED: level}
    if group is not None:
        annotations[TAS_GROUP] = group
    return annotations
