"""The RDMA path of the Kubernetes files: GPU Operator values, the Network Operator's policy,
what a training pod needs to use the HCAs, and the scale limit Kubernetes documents.

Without these NCCL in a pod finds no RDMA device and falls back to TCP sockets:

* **RDMA devices in the pod.**  NVIDIA Network Operator (``NicClusterPolicy``,
  ``mellanox.com/v1alpha1``) runs the RDMA shared device plugin
  (``k8s-rdma-shared-dev-plugin``), which advertises the HCAs its selectors match as the
  extended resource ``rdma/<resourceName>``; a pod that requests one gets their
  ``/dev/infiniband`` devices (the plugin's README, "Devices Selectors").  The selector
  names the compute port of each rail by its interface name (``ifNames``, from the node
  model in the catalog), so storage and in-band ports of the same vendor stay out of the pool.
  One training pod per node holds the rails (``rdmaHcaMax`` 1), as Kueue's quota counts them.
* **A secondary network per rail.**  Each rail gets a Network Operator network that Multus
  attaches to the training pods (annotation ``k8s.v1.cni.cncf.io/networks``): on InfiniBand
  an ``IPoIBNetwork`` (an IPoIB child of the rail's port, so RDMA CM and IP-based tools
  work inside the pod); on RoCE a ``MacvlanNetwork`` on the rail's port, whose address
  gives the pod its own RoCE v2 GID.  Pod addresses come from NVIDIA's IPAM (nv-ipam
  ``IPPool``), one /16 of ``RAIL_SUPERNET`` per rail.  The NicClusterPolicy deploys Multus,
  the CNI plugins, the IPoIB CNI and nv-ipam for them, all of the Network Operator release's
  own images (its ``hack/release.yaml``).
* **Pinned memory.**  RDMA registers (pins) buffers, which needs ``CAP_IPC_LOCK`` in the
  container (NCCL and Network Operator documentation).
* **GPUDirect RDMA.**  The GPU Operator's driver either exports GPU memory to the HCA as
  DMA-BUF (open kernel modules, Linux >= 5.12: ``driver.kernelModuleType: open``) or loads
  the legacy ``nvidia-peermem`` module (``driver.rdma.enabled: true``); GPU Operator
  documentation, "GPUDirect RDMA and GPUDirect Storage".  DMA-BUF is NVIDIA's recommended
  path and needs no extra module, so it is the default here.
* **RoCE** needs an IP address on the RDMA port inside the pod's network namespace: the
  rail's macvlan address.  NCCL then picks the GID of that address itself (NCCL >= 2.21
  selects the GID by ``NCCL_IB_ADDR_FAMILY``/``NCCL_IB_ADDR_RANGE`` when
  ``NCCL_IB_GID_INDEX`` is unset, NCCL environment variables documentation), so the pods'
  environment sets the range to the rail supernet instead of the host's GID index.
* **Scale.**  Kubernetes documents clusters of at most 5,000 nodes ("Considerations for large
  clusters", kubernetes.io); a larger design is split into several clusters, and the
  generator says so (:func:`scale_warnings`) instead of writing one silently.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any

from clusterforge.design import Design
from clusterforge.errors import GenerateError
from clusterforge.generate.common import checked_name
from clusterforge.generate.kubernetes.versions import (
    GPU_OPERATOR,
    NETWORK_OPERATOR,
    NETWORK_OPERATOR_IMAGE_TAG,
)
from clusterforge.generate.monitoring.metrics import DCGM_COUNTERS_FILE

__all__ = [
    "GPU_OPERATOR_NAMESPACE",
    "GPU_OPERATOR_VALUES_FILE",
    "K8S_MAX_NODES",
    "NETWORKS_ANNOTATION",
    "NETWORK_OPERATOR_API",
    "NETWORK_OPERATOR_NAMESPACE",
    "RAIL_SUPERNET",
    "RDMA_RESOURCE",
    "PodRdma",
    "compute_netdevs",
    "gpu_operator_install",
    "gpu_operator_values",
    "network_operator_install",
    "nic_cluster_policy",
    "pod_rdma",
    "rail_networks",
    "rail_subnet",
    "rdma_warnings",
    "scale_warnings",
]

GPU_OPERATOR_NAMESPACE = "gpu-operator"
GPU_OPERATOR_VALUES_FILE = "gpu-operator-values.yaml"
NETWORK_OPERATOR_API = "mellanox.com/v1alpha1"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"  # Multus: the pod's extra networks
RDMA_RESOURCE_NAME = "compute_rails"
RDMA_RESOURCE = f"rdma/{RDMA_RESOURCE_NAME}"
RDMA_HCA_MAX = 1  # one training pod per node holds the compute rails (the Kueue quota's unit)
ASSUMED_NETDEV_PREFIX = {"infiniband": "ib", "roce": "eth"}
NETWORK_OPERATOR_NAMESPACE = "nvidia-network-operator"
NETWORK_OPERATOR_REGISTRY = "nvcr.io/nvidia/mellanox"
NV_IPAM_API = "nv-ipam.nvidia.com/v1alpha1"
# Pod addresses on the rail networks: rail i uses the i-th /16 of this RFC 1918 block, and
# nv-ipam hands each node a block of IP_BLOCK_PER_NODE (a training pod and its restarts).
RAIL_SUPERNET = ipaddress.IPv4Network("172.16.0.0/12")
RAIL_PREFIX_LEN = 16
IP_BLOCK_PER_NODE = 8
K8S_MAX_NODES = 5000  # kubernetes.io "Considerations for large clusters"


def netdevs_assumed(design: Design) -> bool:
    """True when the catalog has no interface name for each rail on this fabric."""
    names = design.compute.node.compute_ib_netdev_names
    return design.fabric.fabric != "infiniband" or len(names) != design.fabric.nics_per_node


def compute_netdevs(design: Design) -> list[str]:
    """Interface name of each rail's compute port, index = rail.

    The node model's published InfiniBand names when there is one per rail; otherwise
    ``ib<rail>`` / ``eth<rail>``, which :func:`rdma_warnings` reports.
    """
    if not netdevs_assumed(design):
        names = design.compute.node.compute_ib_netdev_names
    else:
        prefix = ASSUMED_NETDEV_PREFIX[design.fabric.fabric]
        names = [f"{prefix}{rail}" for rail in range(design.fabric.nics_per_node)]
    return [checked_name(n, "compute interface name") for n in names]


def rdma_warnings(design: Design) -> list[str]:
    """What the operator must check before the RDMA files select the right ports."""
    if not netdevs_assumed(design):
        return []
    names = ", ".join(compute_netdevs(design))
    return [
        f"node {design.compute.node.id!r} publishes no {design.fabric.fabric} interface names "
        f"for its {design.fabric.nics_per_node} rails: the RDMA device plugin and the rail "
        f"networks assume {names}; check them with ibdev2netdev and correct both"
    ]


def gpu_operator_install() -> str:
    """The Helm command that installs the GPU Operator with :data:`GPU_OPERATOR_VALUES_FILE`."""
    return (
        f"helm install gpu-operator nvidia/gpu-operator --version {GPU_OPERATOR.version} "
        f"-n {GPU_OPERATOR_NAMESPACE} --create-namespace -f {GPU_OPERATOR_VALUES_FILE}"
    )


def network_operator_install() -> str:
    """The Helm command that installs the Network Operator (its CRDs and controller); the
    NicClusterPolicy in network-operator.yaml then says what it deploys on the nodes.  Its
    Node Feature Discovery stays off: the GPU Operator runs one, and the Network Operator's
    platform-support notes ask for a single NFD per cluster."""
    return (
        f"helm install network-operator nvidia/network-operator "
        f"--version {NETWORK_OPERATOR.version} -n {NETWORK_OPERATOR_NAMESPACE} "
        "--create-namespace --set nfd.enabled=false"
    )


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


def _rdma_plugin_config(design: Design) -> str:
    """The device plugin's JSON config (a string field of the NicClusterPolicy): one resource
    holding the compute port of every rail, selected by interface name."""
    config = {
        "configList": [
            {
                "resourceName": RDMA_RESOURCE_NAME,
                "rdmaHcaMax": RDMA_HCA_MAX,
                "selectors": {"ifNames": compute_netdevs(design)},
            }
        ]
    }
    return json.dumps(config)


def _image(name: str) -> dict[str, str]:
    return {
        "image": name,
        "repository": NETWORK_OPERATOR_REGISTRY,
        "version": NETWORK_OPERATOR_IMAGE_TAG,
    }


def nic_cluster_policy(design: Design) -> dict[str, Any]:
    """NicClusterPolicy: the RDMA shared device plugin on the compute rails, Multus with the
    CNI plugins (macvlan) and IPoIB CNI for the rail networks, and nv-ipam for their
    addresses.  The host's DOCA-OFED driver is used (``ofedDriver`` left out), as the GPU
    Operator's ``useHostMofed``."""
    return {
        "apiVersion": NETWORK_OPERATOR_API,
        "kind": "NicClusterPolicy",
        "metadata": {"name": "nic-cluster-policy"},
        "spec": {
            "rdmaSharedDevicePlugin": {
                **_image("k8s-rdma-shared-dev-plugin"),
                "config": _rdma_plugin_config(design),
            },
            "secondaryNetwork": {
                "multus": _image("multus-cni"),
                "cniPlugins": _image("plugins"),
                "ipoib": _image("ipoib-cni"),
            },
            "nvIpam": {**_image("nvidia-k8s-ipam"), "enableWebhook": False},
        },
    }


def rail_subnet(rail: int) -> ipaddress.IPv4Network:
    """The pods' /16 on rail ``rail``."""
    subnets = list(RAIL_SUPERNET.subnets(new_prefix=RAIL_PREFIX_LEN))
    if rail >= len(subnets):
        raise GenerateError(
            f"{rail + 1} rails: the rail networks have /{RAIL_PREFIX_LEN}s of {RAIL_SUPERNET} "
            f"for at most {len(subnets)} rails"
        )
    return subnets[rail]


def _block_per_node(design: Design, subnet: ipaddress.IPv4Network) -> int:
    """Addresses nv-ipam gives each node: IP_BLOCK_PER_NODE, fewer when the nodes would not
    fit the rail's subnet (a design past Kubernetes' node limit, which scale_warnings names)."""
    nodes = design.compute.num_nodes
    block = min(IP_BLOCK_PER_NODE, (subnet.num_addresses - 2) // nodes)
    if block < 1:
        raise GenerateError(f"{nodes:,} nodes do not fit the rail network {subnet}")
    return block


def _ip_pool(design: Design, rail: int) -> dict[str, Any]:
    """nv-ipam pool of one rail, split into a block of addresses per node."""
    subnet = rail_subnet(rail)
    return {
        "apiVersion": NV_IPAM_API,
        "kind": "IPPool",
        "metadata": {"name": f"rail{rail}", "namespace": NETWORK_OPERATOR_NAMESPACE},
        "spec": {"subnet": str(subnet), "perNodeBlockSize": _block_per_node(design, subnet)},
    }


def _rail_network(design: Design, rail: int, master: str, namespace: str) -> dict[str, Any]:
    ipam = json.dumps({"type": "nv-ipam", "poolName": f"rail{rail}"})
    kind = "IPoIBNetwork" if design.fabric.fabric == "infiniband" else "MacvlanNetwork"
    spec: dict[str, Any] = {"networkNamespace": namespace, "master": master, "ipam": ipam}
    if kind == "MacvlanNetwork":
        spec["mode"] = "bridge"
    return {
        "apiVersion": NETWORK_OPERATOR_API,
        "kind": kind,
        "metadata": {"name": f"rail{rail}"},
        "spec": spec,
    }


def rail_networks(design: Design, namespace: str) -> list[dict[str, Any]]:
    """Per rail: an nv-ipam pool and a secondary network on that rail's compute port, whose
    NetworkAttachmentDefinition lands in ``namespace``."""
    masters = compute_netdevs(design)
    pools = [_ip_pool(design, rail) for rail in range(len(masters))]
    networks = [_rail_network(design, rail, m, namespace) for rail, m in enumerate(masters)]
    return pools + networks


@dataclass(frozen=True)
class PodRdma:
    """What a training pod adds for RDMA."""

    limits: dict[str, int]  # the rails' shared resource
    capabilities: tuple[str, ...]  # IPC_LOCK: RDMA pins its buffers
    annotations: dict[str, str]  # the rail networks
    env: tuple[tuple[str, str], ...]  # NCCL settings the pod adds
    unset_env: tuple[str, ...]  # NCCL settings of the host launch that do not hold in a pod


def pod_rdma(design: Design) -> PodRdma:
    """On RoCE the pod's GID is its rail address's, not the host's GID index 3: NCCL picks it
    from the address family and range."""
    networks = ", ".join(f"rail{rail}" for rail in range(design.fabric.nics_per_node))
    roce = design.fabric.fabric == "roce"
    env = (("NCCL_IB_ADDR_FAMILY", "AF_INET"), ("NCCL_IB_ADDR_RANGE", str(RAIL_SUPERNET)))
    return PodRdma(
        limits={RDMA_RESOURCE: 1},
        capabilities=("IPC_LOCK",),
        annotations={NETWORKS_ANNOTATION: networks},
        env=env if roce else (),
        unset_env=("NCCL_IB_GID_INDEX",) if roce else (),
    )


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
