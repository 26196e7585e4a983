"""Kubernetes files from the design: GPU Operator values, node labels, Kueue and Volcano queues,
a training job, the health-check agent with least-privilege RBAC, and network policies.

Objects are built as Python dicts and dumped as YAML, so no value can break the syntax.
Sources: operations.md §11 (GPU Operator keys), §13 (Kueue ResourceFlavor / ClusterQueue /
LocalQueue / Topology, TAS pod annotations), §14 (Volcano Queue and HyperNode), §2
(dcgm-exporter counters file).
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.generate.common import (
    GeneratedFile,
    checked_label_value,
    checked_name,
    render_template,
    yaml_text,
)
from clusterforge.generate.kubernetes_agent import (
    AGENT_IMAGE,
    LABEL_PREFIX,
    TRAINING_NAMESPACE,
    agent_objects,
    namespaces,
    network_policies,
)
from clusterforge.generate.launch import launch_plan
from clusterforge.generate.layout import NodePlacement, node_placements, switch_tree
from clusterforge.generate.monitoring_data import DCGM_COUNTERS_FILE, dcgm_counters_csv
from clusterforge.generate.slurm import gres_type
from clusterforge.generate.spec_copy import SPEC_PATH, spec_yaml

__all__ = ["AGENT_IMAGE", "LABEL_PREFIX", "TRAINING_IMAGE", "kubernetes_files", "node_labels"]

GPU_OPERATOR_NAMESPACE = "gpu-operator"
TRAINING_IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"  # an NGC PyTorch image; pick your own
HOSTNAME_LABEL = "kubernetes.io/hostname"
KUEUE_API = "kueue.x-k8s.io/v1beta1"  # operations.md §13
# Pod-template annotations of Kueue topology-aware scheduling (operations.md §13).
TAS_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
TAS_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
TAS_GROUP = "kueue.x-k8s.io/podset-group-name"


def _dump(*objects: dict[str, Any], header: str) -> str:
    body = yaml_text(list(objects), many=True)
    return f"# {header}\n# Written by `clusterforge generate`.\n{body}"


def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": checked_name(name, "object name")}
    if namespace:
        meta["namespace"] = namespace
    meta.update(extra)
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


def _label_script(design: Design, placements: list[NodePlacement]) -> str:
    lines = []
    for p in placements:
        pairs = " ".join(f"{k}={v}" for k, v in node_labels(design, p).items())
        lines.append(f"{checked_name(p.name, 'node name')} {pairs}")
    cluster = checked_name(design.spec.name, "cluster name")
    return render_template("kubernetes/node-labels.sh.j2", cluster=cluster, lines=lines)


def _gpu_operator_values() -> dict[str, Any]:
    """Helm values for NVIDIA's gpu-operator chart (top-level keys: operations.md §11)."""
    return {
        "driver": {"enabled": True},
        "toolkit": {"enabled": True},
        "devicePlugin": {"enabled": True},
        "dcgm": {"enabled": True},
        "dcgmExporter": {
            "enabled": True,
            # ConfigMap with the counters the alert rules need (gpu-operator chart key).
            "config": {"name": "clusterforge-dcgm-counters"},
            "env": [
                {
                    "name": "DCGM_EXPORTER_COLLECTORS",
                    "value": f"/etc/dcgm-exporter/{DCGM_COUNTERS_FILE}",
                }
            ],
        },
        "gfd": {"enabled": True},
        "migManager": {"enabled": False},
        "nodeStatusExporter": {"enabled": True},
    }


def _counters_configmap(design: Design) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta("clusterforge-dcgm-counters", GPU_OPERATOR_NAMESPACE),
        "data": {DCGM_COUNTERS_FILE: dcgm_counters_csv(design)},
    }


def topology_levels(design: Design, placements: list[NodePlacement]) -> list[str]:
    """Kueue Topology levels, coarse to fine; a level is kept only if it nests in the one above."""
    levels = []
    if len({p.pod for p in placements if p.pod}) > 1:
        levels.append(LABEL_PREFIX + "spine-block")
    levels.append(LABEL_PREFIX + "leaf-group")
    blocks: dict[str | None, set[str]] = {}
    for p in placements:
        blocks.setdefault(p.nvlink_block, set()).add(p.group)
    if all(b and len(groups) == 1 for b, groups in blocks.items()):
        levels.append(LABEL_PREFIX + "nvlink-block")
    levels.append(HOSTNAME_LABEL)
    return levels


def _resources(design: Design) -> dict[str, str | int]:
    compute = design.compute
    nodes = compute.num_training_nodes
    return {
        "cpu": nodes * compute.cpu_cores_per_node,
        "memory": f"{nodes * compute.node.memory_gib}Gi",
        "nvidia.com/gpu": compute.num_training_gpus,
    }


def _kueue(design: Design, placements: list[NodePlacement]) -> list[dict[str, Any]]:
    name = design.spec.name
    flavor = f"{name}-{gres_type(design.compute.gpu)}"
    quota = _resources(design)
    return [
        {
            # operations.md §13: TAS is beta since Kueue v0.14, which serves Topology at
            # v1beta1 like the queue objects (v1alpha1 was the pre-beta version; v1beta2,
            # Kueue HEAD, still serves v1beta1).
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


def _volcano(design: Design) -> list[dict[str, Any]]:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": _meta(design.spec.name),
        "spec": {"weight": 1, "reclaimable": False, "capability": _resources(design)},
    }
    return [queue, *_hypernodes(design)]


def _topology_annotations(
    design: Design, placements: list[NodePlacement], group: str | None
) -> dict[str, str]:
    """Kueue TAS annotations (operations.md §13) for the training pods.

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


def _pod_template(
    design: Design, placements: list[NodePlacement], group: str | None
) -> dict[str, Any]:
    launch = launch_plan(design, 1)
    command = [
        "torchrun",
        f"--nproc-per-node={launch.gpus_per_node}",
        "pretrain_gpt.py",
        *launch.train_args,
    ]
    return {
        "metadata": {"annotations": _topology_annotations(design, placements, group)},
        "spec": {
            "containers": [
                {
                    "name": "pytorch",  # the name the training operator looks for
                    "image": TRAINING_IMAGE,
                    "command": command,
                    "env": [{"name": k, "value": v} for k, v in launch.nccl_env],
                    "resources": {"limits": {"nvidia.com/gpu": launch.gpus_per_node}},
                    "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                }
            ],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        },
    }


def _training_job(design: Design, placements: list[NodePlacement]) -> dict[str, Any]:
    nodes = design.compute.num_training_nodes
    name = f"{design.spec.name}-train"
    template = _pod_template(design, placements, name if nodes > 1 else None)
    replicas: dict[str, Any] = {
        "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}
    }
    if nodes > 1:
        replicas["Worker"] = {
            "replicas": nodes - 1,
            "restartPolicy": "OnFailure",
            "template": template,
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": _meta(
            name,
            TRAINING_NAMESPACE,
            labels={"kueue.x-k8s.io/queue-name": "train"},
        ),
        "spec": {"pytorchReplicaSpecs": replicas},
    }


def _kubernetes_file(path: str, header: str, *objects: dict[str, Any]) -> GeneratedFile:
    return GeneratedFile(f"kubernetes/{path}", _dump(*objects, header=header))


def kubernetes_files(design: Design) -> list[GeneratedFile]:
    """Every Kubernetes file for ``design``, paths under ``kubernetes/``."""
    placements = node_placements(design)
    name = design.spec.name
    values = yaml_text(_gpu_operator_values())
    nodes = design.compute.num_training_nodes
    return [
        _kubernetes_file("namespaces.yaml", f"Namespaces of cluster {name}", *namespaces()),
        GeneratedFile(
            "kubernetes/gpu-operator-values.yaml",
            f"# helm install gpu-operator nvidia/gpu-operator -n {GPU_OPERATOR_NAMESPACE} "
            f"-f gpu-operator-values.yaml\n# Written by `clusterforge generate`.\n{values}",
        ),
        _kubernetes_file(
            "dcgm-counters-configmap.yaml",
            "dcgm-exporter counters for the alert rules",
            _counters_configmap(design),
        ),
        GeneratedFile("kubernetes/node-labels.sh", _label_script(design, placements), 0o755),
        _kubernetes_file(
            "kueue.yaml", f"Kueue queues and fabric topology of {name}", *_kueue(design, placements)
        ),
        _kubernetes_file(
            "volcano.yaml", f"Volcano queue and HyperNodes of {name}", *_volcano(design)
        ),
        _kubernetes_file(
            "training-job.yaml",
            f"Training job: {nodes} nodes, queued through Kueue",
            _training_job(design, placements),
        ),
        _kubernetes_file(
            "health-agent.yaml",
            "clusterforge check agent and exporter, least-privilege RBAC",
            *agent_objects(design, spec_yaml(design), SPEC_PATH),
        ),
        _kubernetes_file("network-policies.yaml", "Network policies", *network_policies()),
    ]
