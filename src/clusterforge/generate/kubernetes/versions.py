"""The versions the Kubernetes files target, each with its source and release month.

One table, read by the files that pin a version (Helm commands, image tags), by the output
README's install order and by the docs' version table, so the three never disagree.  The
training container is not here: it depends on the GPU and comes from the catalog
(``containers.toml``, :func:`clusterforge.catalog.training_container`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DRA_DRIVER",
    "GPU_OPERATOR",
    "KUBERNETES",
    "KUBERNETES_MIN_FOR_DRA",
    "NETWORK_OPERATOR",
    "NETWORK_OPERATOR_IMAGE_TAG",
    "Component",
    "components",
]


@dataclass(frozen=True)
class Component:
    """One piece of software the files are written for."""

    name: str
    version: str
    released: str  # YYYY-MM
    source: str


KUBERNETES = Component(
    "Kubernetes",
    "1.34",
    "2025-08",
    "kubernetes.io release blog 'Kubernetes v1.34': Dynamic Resource Allocation GA, "
    "resource.k8s.io/v1 served and enabled by default",
)
# The DRA driver's chart accepts older clusters (Chart.yaml kubeVersion >= 1.32) only with the
# DynamicResourceAllocation feature gate and the resource.k8s.io beta API turned on by hand.
KUBERNETES_MIN_FOR_DRA = "1.32"
GPU_OPERATOR = Component(
    "NVIDIA GPU Operator",
    "v25.10.1",
    "2025-10",
    "NVIDIA GPU Operator documentation, 'Installing the NVIDIA GPU Operator' (current patch "
    "release v25.10.1; its 'NVIDIA DRA Driver for GPUs' page pairs it with the DRA driver)",
)
NETWORK_OPERATOR = Component(
    "NVIDIA Network Operator",
    "25.10.0",
    "2025-11",
    "github.com/Mellanox/network-operator release v25.10.0 (chart 25.10.0): hack/release.yaml (every component "
    "image nvcr.io/nvidia/mellanox/<name>:network-operator-v25.10.0), api/v1alpha1 "
    "(NicClusterPolicy, IPoIBNetwork, MacvlanNetwork); nv-ipam IPPool nv-ipam.nvidia.com/v1alpha1",
)
DRA_DRIVER = Component(
    "NVIDIA DRA Driver for GPUs",
    "25.12.0",
    "2026-02",
    "github.com/NVIDIA/k8s-dra-driver-gpu release v25.12.0: Helm chart nvidia-dra-driver-gpu "
    "(kubeVersion >= 1.32), ComputeDomain resource.nvidia.com/v1beta1",
)


# The operator's release builds every image it deploys (RDMA shared device plugin, Multus, CNI
# plugins, IPoIB CNI, nv-ipam) under one tag.
NETWORK_OPERATOR_IMAGE_TAG = f"network-operator-v{NETWORK_OPERATOR.version}"


def components() -> list[Component]:
    """Every pinned component, in install order."""
    return [KUBERNETES, GPU_OPERATOR, NETWORK_OPERATOR, DRA_DRIVER]
