"""How the Kubernetes files are applied: the kustomization of the manifests and the README
that says in which order to install what, on which versions.

The order follows what each file needs to exist first: the Helm charts bring the custom
resource definitions (NicClusterPolicy, IPoIBNetwork, MacvlanNetwork: Network Operator;
ComputeDomain: DRA driver; Kueue and PyTorchJob: their own releases), so they come before
``kubectl apply -k``; nv-ipam's IPPool and Multus' NetworkAttachmentDefinition are installed
by the Network Operator only once the NicClusterPolicy is reconciled, so the rail networks
wait for it; the GPU Operator's values name the dcgm-exporter ConfigMap, so that comes before
the GPU Operator; the training job comes last, once its queue, networks and (rack-scale) DRA
driver are there.  ``kubectl kustomize`` (kubectl's built-in Kustomize) reads the kustomization.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clusterforge.catalog import Container
from clusterforge.design import Design
from clusterforge.generate.common import render_template, yaml_text
from clusterforge.generate.kubernetes.dra import DRA_VALUES_FILE, dra_install
from clusterforge.generate.kubernetes.isolation import security_notes
from clusterforge.generate.kubernetes.rdma import (
    GPU_OPERATOR_NAMESPACE,
    gpu_operator_install,
    network_operator_install,
)
from clusterforge.generate.kubernetes.versions import (
    KUBERNETES,
    KUBERNETES_MIN_FOR_DRA,
    Component,
    components,
)

__all__ = [
    "COUNTERS_FILE",
    "KUEUE_MIN_VERSION",
    "RAIL_NETWORKS_FILE",
    "TRAINING_JOB_FILE",
    "Manifest",
    "Step",
    "install_steps",
    "kustomization",
    "kustomization_text",
    "readme_text",
]

TRAINING_JOB_FILE = "training-job.yaml"
COUNTERS_FILE = "dcgm-counters-configmap.yaml"
RAIL_NETWORKS_FILE = "rail-networks.yaml"
# The NicClusterPolicy's status.state once every component it deploys runs (Network Operator
# api/v1alpha1: ignore, notReady, ready, error).
WAIT_FOR_NETWORK_OPERATOR = (
    "kubectl wait nicclusterpolicy/nic-cluster-policy --for=jsonpath='{.status.state}'=ready "
    "--timeout=30m"
)
HELM_REPO = "helm repo add nvidia https://helm.ngc.nvidia.com/nvidia && helm repo update"
KUEUE_MIN_VERSION = "v0.14"  # Topology served at kueue.x-k8s.io/v1beta1 (TAS beta)


@dataclass(frozen=True)
class Manifest:
    """One YAML file of objects for ``kubectl apply``."""

    path: str
    header: str
    objects: list[dict[str, Any]]
    in_kustomization: bool = True  # False: applied on its own (an alternative, or the job)


@dataclass(frozen=True)
class Step:
    """One install step of the README."""

    title: str
    commands: tuple[str, ...]
    note: str = ""


def kustomization(manifests: list[Manifest]) -> dict[str, Any]:
    """Kustomize's ``Kustomization`` listing the cluster's manifests (not the job)."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [m.path for m in manifests if m.in_kustomization],
    }


def kustomization_text(manifests: list[Manifest]) -> str:
    header = "# kubectl apply -k .  (after the Helm charts of README.md)\n"
    return header + "# Written by `clusterforge generate`.\n" + yaml_text(kustomization(manifests))


def _cluster_steps(rack_scale: bool) -> list[Step]:
    dra_note = (
        f"The DRA driver needs DRA: Kubernetes {KUBERNETES_MIN_FOR_DRA} with the "
        f"DynamicResourceAllocation feature gate and resource.k8s.io beta API on, or "
        f"{KUBERNETES.version} and later where it is GA and on by default."
    )
    steps = [
        Step(
            f"Kubernetes {KUBERNETES.version} or later",
            (),
            dra_note if rack_scale else "",
        ),
        Step("Label the nodes", ("sh node-labels.sh",)),
        Step(
            "GPU Operator (its dcgm-exporter reads the counters ConfigMap)",
            (
                HELM_REPO,
                f"kubectl create namespace {GPU_OPERATOR_NAMESPACE}",
                f"kubectl apply -f {COUNTERS_FILE}",
                gpu_operator_install(),
            ),
        ),
        Step("Network Operator", (network_operator_install(),)),
    ]
    if rack_scale:
        steps.append(
            Step(
                "NVIDIA DRA driver for GPUs (ComputeDomain, IMEX daemons)",
                (dra_install(),),
                f"{DRA_VALUES_FILE} keeps GPUs with the GPU Operator's device plugin.",
            )
        )
    return steps


def install_steps(
    manifests: list[Manifest], image: Container | None, *, rack_scale: bool
) -> list[Step]:
    """Every step, in order, from an empty cluster to a running training job."""
    listed = ", ".join(m.path for m in manifests if m.in_kustomization)
    steps = _cluster_steps(rack_scale)
    steps.append(
        Step(
            f"Kueue {KUEUE_MIN_VERSION} or later and the Kubeflow Training Operator (PyTorchJob)",
            (),
            "Install both from their releases; volcano.yaml replaces kueue.yaml for Volcano.",
        )
    )
    steps.append(Step("The cluster's objects", ("kubectl apply -k .",), f"Applies {listed}."))
    steps.append(
        Step(
            "The rail networks, once the Network Operator has deployed Multus and nv-ipam",
            (WAIT_FOR_NETWORK_OPERATOR, f"kubectl apply -f {RAIL_NETWORKS_FILE}"),
            "nv-ipam's IPPool and Multus' NetworkAttachmentDefinition types exist only then.",
        )
    )
    if image is not None:
        steps.append(
            Step(
                "The training job",
                (f"kubectl apply -f {TRAINING_JOB_FILE}",),
                f"Image {image.image} ({image.toolkit.upper()} {image.toolkit_version}, "
                f"released {image.release_date}).",
            )
        )
    return steps


def readme_text(
    design: Design,
    manifests: list[Manifest],
    warnings: list[str],
    *,
    image: Container | None,
    rack_scale: bool,
) -> str:
    """The output folder's README.md: versions, warnings and the install order."""
    versions: list[Component] = components()
    if not rack_scale:
        versions = [c for c in versions if "DRA" not in c.name]
    return render_template(
        "kubernetes/README.md.j2",
        security=security_notes(design),
        cluster=design.spec.name,
        versions=versions,
        image=image,
        warnings=warnings,
        steps=install_steps(manifests, image, rack_scale=rack_scale),
    )
