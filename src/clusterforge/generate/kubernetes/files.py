"""Kubernetes files from the design: GPU and Network Operator settings, node labels, Kueue and
Volcano queues, a training job, the health-check agent with least-privilege RBAC, and
network policies.

Objects are built as Python dicts and dumped as YAML, so no value can break the syntax.
Sources: the GPU Operator chart's values (NVIDIA GPU Operator documentation), the queues in
:mod:`clusterforge.generate.kubernetes.queues`, the RDMA path in
:mod:`clusterforge.generate.kubernetes.rdma`, the training job from the Kubeflow Training
Operator's ``PyTorchJob`` (``kubeflow.org/v1``), and IMEX channels for multi-node NVLink from
:mod:`clusterforge.generate.nvlink.imex`.
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.generate.common import (
    GeneratedFile,
    checked_name,
    render_template,
    yaml_text,
)
from clusterforge.generate.kubernetes.agent import (
    AGENT_IMAGE,
    LABEL_PREFIX,
    TRAINING_NAMESPACE,
    agent_objects,
    namespaces,
    network_policies,
)
from clusterforge.generate.kubernetes.queues import (
    kueue_objects,
    node_labels,
    topology_annotations,
    topology_levels,
    volcano_objects,
)
from clusterforge.generate.kubernetes.rdma import (
    GPU_OPERATOR_NAMESPACE,
    gpu_operator_values,
    nic_cluster_policy,
    rdma_container_settings,
    scale_warnings,
    uses_host_network,
)
from clusterforge.generate.layout import NodePlacement, node_placements
from clusterforge.generate.monitoring.metrics import DCGM_COUNTERS_FILE, dcgm_counters_csv
from clusterforge.generate.nvlink.imex import compute_domain, imex_pod_claim, needs_imex
from clusterforge.generate.spec_copy import SPEC_PATH, spec_yaml
from clusterforge.generate.training.launch import launch_plan

__all__ = [
    "AGENT_IMAGE",
    "LABEL_PREFIX",
    "TRAINING_IMAGE",
    "kubernetes_files",
    "node_labels",
    "topology_levels",
]

TRAINING_IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"  # an NGC PyTorch image; pick your own


def _dump(*objects: dict[str, Any], header: str, warnings: list[str]) -> str:
    body = yaml_text(list(objects), many=True)
    lines = [f"# {header}", "# Written by `clusterforge generate`."]
    lines += [f"# WARNING: {w}" for w in warnings]
    return "\n".join(lines) + "\n" + body


def _label_script(design: Design, placements: list[NodePlacement]) -> str:
    lines = []
    for p in placements:
        pairs = " ".join(f"{k}={v}" for k, v in node_labels(design, p).items())
        lines.append(f"{checked_name(p.name, 'node name')} {pairs}")
    cluster = checked_name(design.spec.name, "cluster name")
    return render_template("kubernetes/node-labels.sh.j2", cluster=cluster, lines=lines)


def _counters_configmap(design: Design) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "clusterforge-dcgm-counters", "namespace": GPU_OPERATOR_NAMESPACE},
        "data": {DCGM_COUNTERS_FILE: dcgm_counters_csv(design)},
    }


def _container(design: Design) -> dict[str, Any]:
    """The training container: GPUs, one shared RDMA resource, IPC_LOCK, the NCCL env."""
    launch = launch_plan(design, 1)
    rdma = rdma_container_settings()
    container: dict[str, Any] = {
        "name": "pytorch",  # the name the training operator looks for
        "image": TRAINING_IMAGE,
        "command": [
            "torchrun",
            f"--nproc-per-node={launch.gpus_per_node}",
            "pretrain_gpt.py",
            *launch.train_args,
        ],
        "env": [{"name": k, "value": v} for k, v in launch.nccl_env],
        "resources": {"limits": {"nvidia.com/gpu": launch.gpus_per_node, **rdma["limits"]}},
        "securityContext": rdma["securityContext"],
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    return container


def _pod_template(
    design: Design, placements: list[NodePlacement], group: str | None, domain: str | None
) -> dict[str, Any]:
    container = _container(design)
    spec: dict[str, Any] = {
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }
    if uses_host_network(design):
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if domain is not None:
        claim = imex_pod_claim(domain)
        spec["resourceClaims"] = [claim]
        container["resources"]["claims"] = [{"name": claim["name"]}]
    return {
        "metadata": {"annotations": topology_annotations(design, placements, group)},
        "spec": spec,
    }


def _training_objects(design: Design, placements: list[NodePlacement]) -> list[dict[str, Any]]:
    """The PyTorchJob, preceded by its ComputeDomain when NVLink spans nodes."""
    nodes = design.compute.num_training_nodes
    name = f"{design.spec.name}-train"
    domain = f"{name}-domain" if needs_imex(design) else None
    template = _pod_template(design, placements, name if nodes > 1 else None, domain)
    replicas: dict[str, Any] = {
        "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}
    }
    if nodes > 1:
        replicas["Worker"] = {
            "replicas": nodes - 1,
            "restartPolicy": "OnFailure",
            "template": template,
        }
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": checked_name(name, "object name"),
            "namespace": TRAINING_NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "train"},
        },
        "spec": {"pytorchReplicaSpecs": replicas},
    }
    if domain is None:
        return [job]
    return [compute_domain(design, name=domain, namespace=TRAINING_NAMESPACE), job]


def kubernetes_files(design: Design) -> list[GeneratedFile]:
    """Every Kubernetes file for ``design``, paths under ``kubernetes/``."""
    placements = node_placements(design)
    name = design.spec.name
    warnings = scale_warnings(design)
    nodes = design.compute.num_training_nodes

    def file(path: str, header: str, *objects: dict[str, Any]) -> GeneratedFile:
        return GeneratedFile(
            f"kubernetes/{path}", _dump(*objects, header=header, warnings=warnings)
        )

    values = yaml_text(gpu_operator_values())
    return [
        file("namespaces.yaml", f"Namespaces of cluster {name}", *namespaces()),
        GeneratedFile(
            "kubernetes/gpu-operator-values.yaml",
            f"# helm install gpu-operator nvidia/gpu-operator -n {GPU_OPERATOR_NAMESPACE} "
            f"-f gpu-operator-values.yaml\n# Written by `clusterforge generate`.\n{values}",
        ),
        file(
            "network-operator.yaml",
            "NVIDIA Network Operator policy: RDMA shared device plugin (install the "
            "network-operator chart first)",
            nic_cluster_policy(),
        ),
        file(
            "dcgm-counters-configmap.yaml",
            "dcgm-exporter counters for the alert rules",
            _counters_configmap(design),
        ),
        GeneratedFile("kubernetes/node-labels.sh", _label_script(design, placements), 0o755),
        file(
            "kueue.yaml",
            f"Kueue queues and fabric topology of {name}",
            *kueue_objects(design, placements),
        ),
        file("volcano.yaml", f"Volcano queue and HyperNodes of {name}", *volcano_objects(design)),
        # A spec without a workload gets the cluster's files but no training job.
        *(
            [
                file(
                    "training-job.yaml",
                    f"Training job: {nodes} nodes, queued through Kueue",
                    *_training_objects(design, placements),
                )
            ]
            if design.job
            else []
        ),
        file(
            "health-agent.yaml",
            "clusterforge check agent and exporter, least-privilege RBAC",
            *agent_objects(design, spec_yaml(design), SPEC_PATH),
        ),
        file("network-policies.yaml", "Network policies", *network_policies()),
    ]
