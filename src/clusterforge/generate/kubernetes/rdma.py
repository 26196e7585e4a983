"""The RDMA path of the Kubernetes files: GPU Operator values, the Network Operator's policy,
what a training pod needs to use the HCAs, and the scale limit Kubernetes documents.

Without these NCCL in a pod finds no RDMA device and falls back to TCP sockets:

* **RDMA devices in the pod.**  NVIDIA Network Operator (``NicClusterPolicy``,
  ``mellanox.com/v1alpha1``) runs the RDMA shared device plugin
  (``k8s-rdma-shared-dev-plugin``), which advertises the node's HCAs as the extended resource
  ``rdma/<resourceName>``; a pod that requests one gets ``/dev/infiniband`` (Network Operator
  documentation, "RDMA shared device plugin").  Selecting vendor 15b3 (NVIDIA/Mellanox PCI
  vendor id) shares every HCA of the node; ``NCCL_IB_HCA`` then keeps NCCL on the compute
  ports.
* **Pinned memory.**  RDMA registers (pins) buffers, which needs ``CAP_IPC_LOCK`` in the
  container (NCCL and Network Operator documentation).
* **GPUDirect RDMA.**  The GPU Operator's driver either exports GPU memory to the HCA as
  DMA-BUF (open kernel modules, Linux >= 5.12: ``driver.kernelModuleType: open``) or loads
  the legacy ``nvidia-peermem`` module (``driver.rdma.enabled: true``); GPU Operator
  documentation, "GPUDirect RDMA and GPUDirect Storage".  DMA-BUF is NVIDIA's recommended
  path and needs no extra module, so it is the default here.
* **RoCE** needs an IP address on the RDMA port inside the pod's network namespace; the
  training pods therefore use the host network on RoCE fabrics (InfiniBand needs none).
* **Scale.**  Kubernetes documents clusters of at most 5,000 nodes ("Considerations for large
  clusters", kubernetes.io); a larger design is split into several clusters, and the
  generator says so (:func:`scale_warnings`) instead of writing one silently.
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.generate.monitoring.metrics import DCGM_COUNTERS_FILE

__all__ = [
    "GPU_OPERATOR_NAMESPACE",
    "K8S_MAX_NODES",
    "NETWORK_OPERATOR_API",
    "RDMA_RESOURCE",
    "gpu_operator_values",
    "nic_cluster_policy",
    "rdma_container_settings",
    "scale_warnings",
    "uses_host_network",
]

GPU_OPERATOR_NAMESPACE = "gpu-operator"
NETWORK_OPERATOR_API = "mellanox.com/v1alpha1"
RDMA_RESOURCE_NAME = "rdma_shared_device_a"
RDMA_RESOURCE = f"rdma/{RDMA_RESOURCE_NAME}"
RDMA_PLUGIN_VERSION = "v1.5.3"  # ghcr.io/mellanox/k8s-rdma-shared-dev-plugin release
MELLANOX_PCI_VENDOR = "15b3"
RDMA_HCA_MAX = 63  # pods that may share one node's HCAs (the plugin's documented example)
K8S_MAX_NODES = 5000  # kubernetes.io "Considerations for large clusters"


def gpu_operator_values() -> dict[str, Any]:
    """Helm values for NVIDIA's gpu-operator chart, GPUDirect RDMA over DMA-BUF."""
    return {
        "driver": {
            "enabled": True,
            # Open kernel modules export GPU memory as DMA-BUF to the HCA (GPUDirect RDMA
            # without nvidia-peermem); set rdma.enabled instead on kernels older than 5.12.
            "kernelModuleType": "open",
            "rdma": {"enabled": False, "useHostMofed": True},
        },
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


def _rdma_plugin_config() -> str:
    """The device plugin's JSON config (a string field of the NicClusterPolicy)."""
    return (
        '{"configList": [{"resourceName": "'
        + RDMA_RESOURCE_NAME
        + f'", "rdmaHcaMax": {RDMA_HCA_MAX}, "selectors": {{"vendors": ["'
        + MELLANOX_PCI_VENDOR
        + '"]}}]}'
    )


def nic_cluster_policy() -> dict[str, Any]:
    """NicClusterPolicy: the RDMA shared device plugin on every node; the host's DOCA-OFED
    driver is used (``ofedDriver`` left out), as the GPU Operator's ``useHostMofed``."""
    return {
        "apiVersion": NETWORK_OPERATOR_API,
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy"},
        "spec": {
            "rdmaSharedDevicePlugin": {
                "image": "k8s-rdma-shared-dev-plugin",
                "repository": "ghcr.io/mellanox",
                "version": RDMA_PLUGIN_VERSION,
                "config": _rdma_plugin_config(),
            }
        },
    }


def uses_host_network(design: Design) -> bool:
    """RoCE needs the RDMA port's IP address in the pod's network namespace."""
    return design.fabric.fabric == "roce"


def rdma_container_settings() -> dict[str, Any]:
    """What a training container adds for RDMA: one shared HCA resource and IPC_LOCK."""
    return {
        "limits": {RDMA_RESOURCE: 1},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
    }


def scale_warnings(design: Design) -> list[str]:
    """Warnings for a design Kubernetes cannot run as one cluster (empty when it can)."""
    nodes = design.compute.num_nodes
    if nodes <= K8S_MAX_NODES:
        return []
    clusters = -(-nodes // K8S_MAX_NODES)
    return [
        f"{nodes:,} nodes exceed the {K8S_MAX_NODES:,} nodes Kubernetes documents for one "
        f"cluster (kubernetes.io, 'Considerations for large clusters'): run at least "
        f"{clusters} clusters (for example one per fabric pod) and split these files"
    ]
