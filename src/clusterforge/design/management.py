"""Management servers: head nodes, Slurm controllers, login, monitoring and UFM, by role."""

from __future__ import annotations

import math

from clusterforge.design.compute import ComputeDesign
from clusterforge.spec import ClusterSpec

__all__ = ["management_servers"]

# Management servers by role, after the NVIDIA DGX SuperPOD H100 reference architecture (a
# 4-SU, 127-node build carries 5 management servers and 4 UFM appliances) and the tools' own
# scale guidance. Below SMALL_CLUSTER_NODES one head node runs provisioning, the scheduler
# and monitoring (DGX BasePOD: 2-16 nodes).
SMALL_CLUSTER_NODES = 16
HA_HEAD_NODES = 2  # NVIDIA Base Command Manager high availability: active + passive head
SLURM_CONTROLLERS = 2  # slurmctld primary + backup (Slurm slurm.conf: SlurmctldHost)
NODES_PER_LOGIN_NODE = 512  # planning figure [U]: one login node per 512 compute nodes
NODES_PER_MONITORING_PAIR = 2000  # [U] ~1,500 series per node: ~3M series per Prometheus
UFM_NODES_PER_PAIR = 2000  # [U] one UFM Enterprise HA pair per 2,000 fabric endpoints' nodes


def management_servers(spec: ClusterSpec, compute: ComputeDesign) -> dict[str, int]:
    """Management servers by role for a cluster of ``compute.num_nodes`` nodes.

    * head: Base Command Manager (provisioning, images, monitoring of small clusters); one
      below SMALL_CLUSTER_NODES, an HA pair above.
    * slurm: dedicated controllers (primary + backup) above SMALL_CLUSTER_NODES; smaller
      clusters run slurmctld on the head node.
    * login: one per NODES_PER_LOGIN_NODE nodes above SMALL_CLUSTER_NODES.
    * monitoring: the head nodes monitor up to NODES_PER_MONITORING_PAIR nodes; an HA pair
      of Prometheus servers for each further NODES_PER_MONITORING_PAIR.
    * ufm: InfiniBand only, above SMALL_CLUSTER_NODES (below it the switch's embedded subnet
      manager serves): an HA pair per UFM_NODES_PER_PAIR nodes for the compute fabric and
      another for an InfiniBand storage fabric, as the SuperPOD's 4 UFM appliances; a node
      whose storage rides a converged Ethernet fabric (DGX SuperPOD GB200) has no second one.
    """
    nodes = compute.num_nodes
    if nodes <= SMALL_CLUSTER_NODES:
        return {"head": 1}
    ufm_pairs = math.ceil(nodes / UFM_NODES_PER_PAIR) if spec.network.fabric == "infiniband" else 0
    separate_storage = compute.node.storage_inband == "separate" and spec.network.storage_fabric
    ufm_fabrics = 2 if separate_storage else 1
    return {
        "head": HA_HEAD_NODES,
        "slurm": SLURM_CONTROLLERS,
        "login": math.ceil(nodes / NODES_PER_LOGIN_NODE),
        # The head nodes monitor the first NODES_PER_MONITORING_PAIR nodes.
        "monitoring": 2 * (nodes // NODES_PER_MONITORING_PAIR),
        "ufm": 2 * ufm_pairs * ufm_fabrics,
    }
