"""Kubernetes files from the design: GPU and Network Operator settings, the DRA driver's values
(multi-node NVLink), node labels, the rail networks, Kueue and Volcano queues, a training job,
the health-check agent with least-privilege RBAC, network policies, and the kustomization and
README that apply them in order.

Objects are built as Python dicts and dumped as YAML, so no value can break the syntax.
Sources: the GPU Operator chart's values (NVIDIA GPU Operator documentation), the queues in
:mod:`clusterforge.generate.kubernetes.queues`, the RDMA path in
:mod:`clusterforge.generate.kubernetes.rdma`, the DRA driver in
:mod:`clusterforge.generate.kubernetes.dra`, the training job from the Kubeflow Training
Operator's ``PyTorchJob`` (``kubeflow.org/v1``) running the catalog's container for the GPU
(``containers.toml``), IMEX channels for multi-node NVLink from
:mod:`clusterforge.generate.nvlink.imex`, and the install order in
:mod:`clusterforge.generate.kubernetes.install`.
"""

from __future__ import annotations

from typing import Any

from clusterforge.catalog import Container, load_catalog, training_container
from clusterforge.design import Design
from clusterforge.errors import CatalogError, GenerateError
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
)
from clusterforge.generate.kubernetes.dra import DRA_VALUES_FILE, dra_driver_values, dra_install
from clusterforge.generate.kubernetes.install import (
    COUNTERS_FILE,
    RAIL_NETWORKS_FILE,
    TRAINING_JOB_FILE,
    Manifest,
    kustomization_text,
    readme_text,
)
from clusterforge.generate.kubernetes.isolation import (
    namespaces,
    network_policies,
    training_admission,
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
    GPU_OPERATOR_VALUES_FILE,
    PodRdma,
    gpu_operator_install,
    gpu_operator_values,
    nic_cluster_policy,
    pod_rdma,
    rail_networks,
    rdma_warnings,
    scale_warnings,
)
from clusterforge.generate.layout import NodePlacement, node_placements
from clusterforge.generate.monitoring.metrics import DCGM_COUNTERS_FILE, dcgm_counters_csv
from clusterforge.generate.nvlink.imex import compute_domain, imex_pod_claim, needs_imex
from clusterforge.generate.spec_copy import SPEC_PATH, spec_yaml
from clusterforge.generate.training.launch import Launch, launch_plan

__all__ = [
    "AGENT_IMAGE",
    "LABEL_PREFIX",
    "kubernetes_files",
    "node_labels",
    "topology_levels",
    "training_image",
]


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


def training_image(design: Design) -> Container:
    """The Megatron-LM container for the design's GPU (catalog ``containers.toml``)."""
    try:
        return training_container(load_catalog(), design.compute.gpu.id)
    except CatalogError as exc:
        raise GenerateError(f"kubernetes training job: {exc}") from None


def _env(design: Design, launch: Launch, rdma: PodRdma) -> list[dict[str, str]]:
    pairs = [(k, v) for k, v in launch.nccl_env if k not in rdma.unset_env] + list(rdma.env)
    return [{"name": k, "value": v} for k, v in pairs]


def _container(design: Design, rdma: PodRdma) -> dict[str, Any]:
    """The training container: GPUs, the rails' RDMA resource, IPC_LOCK, the NCCL env."""
    launch = launch_plan(design, 1)
    image = training_image(design)
    container: dict[str, Any] = {
        "name": "pytorch",  # the name the training operator looks for
        "image": image.image,
        "command": [
            "torchrun",
            f"--nproc-per-node={launch.gpus_per_node}",
            image.pretrain_gpt_path,
            *launch.train_args,
        ],
        "env": _env(design, launch, rdma),
        "resources": {"limits": {"nvidia.com/gpu": launch.gpus_per_node, **rdma.limits}},
        "securityContext": {"capabilities": {"add": list(rdma.capabilities)}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    return container


def _pod_template(
    design: Design, placements: list[NodePlacement], group: str | None, domain: str | None
) -> dict[str, Any]:
    rdma = pod_rdma(design)
    container = _container(design, rdma)
    spec: dict[str, Any] = {
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }
    if domain is not None:
        claim = imex_pod_claim(domain)
        spec["resourceClaims"] = [claim]
        container["resources"]["claims"] = [{"name": claim["name"]}]
    annotations = {**topology_annotations(design, placements, group), **rdma.annotations}
    return {"metadata": {"annotations": annotations}, "spec": spec}


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


def _helm_values(path: str, command: str, values: dict[str, Any]) -> GeneratedFile:
    header = f"# {command}\n# Written by `clusterforge generate`.\n"
    return GeneratedFile(f"kubernetes/{path}", header + yaml_text(values))


def _manifests(design: Design, placements: list[NodePlacement]) -> list[Manifest]:
    """The YAML files ``kubectl apply`` takes, in the order the README applies them: the
    cluster's own, then the training job (a spec without a workload gets none)."""
    manifests = _cluster_manifests(design, placements)
    if design.job:
        nodes = design.compute.num_training_nodes
        manifests.append(
            Manifest(
                TRAINING_JOB_FILE,
                f"Training job: {nodes} nodes, queued through Kueue",
                _training_objects(design, placements),
                in_kustomization=False,
            )
        )
    return manifests


def _cluster_manifests(design: Design, placements: list[NodePlacement]) -> list[Manifest]:
    """The cluster's manifests, whatever runs on it: namespaces, counters, the network
    operator and rail networks, queues, the health agent, policies and admission."""
    name = design.spec.name
    return [
        Manifest(
            "namespaces.yaml",
            f"Namespaces of cluster {name} and their Pod Security levels",
            namespaces(design),
        ),
        Manifest(
            COUNTERS_FILE,
            "dcgm-exporter counters for the alert rules",
            [_counters_configmap(design)],
        ),
        Manifest(
            "network-operator.yaml",
            "NVIDIA Network Operator policy: RDMA shared device plugin on the compute rails",
            [nic_cluster_policy(design)],
        ),
        Manifest(
            RAIL_NETWORKS_FILE,
            "Secondary network per rail for the training pods (Multus, NVIDIA Network Operator)",
            rail_networks(design, TRAINING_NAMESPACE),
            in_kustomization=False,
        ),
        Manifest(
            "kueue.yaml",
            f"Kueue queues and fabric topology of {name}",
            kueue_objects(design, placements),
        ),
        Manifest(
            "health-agent.yaml",
            "clusterforge check agent and exporter, least-privilege RBAC",
            agent_objects(design, spec_yaml(design), SPEC_PATH),
        ),
        Manifest(
            "network-policies.yaml",
            "Network policies: the training namespace denies all but itself and DNS",
            network_policies(),
        ),
        Manifest(
            "pod-admission.yaml",
            "Training pods: baseline Pod Security plus RDMA's IPC_LOCK, GPUs only allocated",
            training_admission(design),
        ),
        Manifest(
            "volcano.yaml",
            f"Volcano queue and HyperNodes of {name} (instead of Kueue)",
            volcano_objects(design),
            in_kustomization=False,
        ),
    ]


def kubernetes_files(design: Design) -> list[GeneratedFile]:
    """Every Kubernetes file for ``design``, paths under ``kubernetes/``."""
    placements = node_placements(design)
    warnings = scale_warnings(design) + rdma_warnings(design)
    manifests = _manifests(design, placements)
    files = [
        GeneratedFile(f"kubernetes/{m.path}", _dump(*m.objects, header=m.header, warnings=warnings))
        for m in manifests
    ]
    files.append(
        _helm_values(GPU_OPERATOR_VALUES_FILE, gpu_operator_install(), gpu_operator_values())
    )
    if needs_imex(design):
        files.append(_helm_values(DRA_VALUES_FILE, dra_install(), dra_driver_values()))
    files.append(
        GeneratedFile("kubernetes/node-labels.sh", _label_script(design, placements), 0o755)
    )
    files.append(GeneratedFile("kubernetes/kustomization.yaml", kustomization_text(manifests)))
    image = training_image(design) if design.job else None
    readme = readme_text(design, manifests, warnings, image=image, rack_scale=needs_imex(design))
    files.append(GeneratedFile("kubernetes/README.md", readme))
    return files
