"""How the training job is launched: node count, training arguments, environment.

Shared by the Slurm job script and the Kubernetes training job so that both run the same
workload with the same fabric settings.

NCCL variables (NCCL user guide, "Environment Variables"):

* ``NCCL_IB_HCA`` lists the compute HCAs, one per rail, as ``=mlx5_0:1,...``; the leading ``=``
  makes NCCL take exactly these devices (not a prefix match).  The names come from the node
  model in the catalog (``compute_hca_names``, from the vendor's user guide): on a DGX H100
  the compute ports are ``mlx5_0,3,4,5,6,9,10,11`` and the others are storage and in-band
  ports.  A node whose vendor publishes no names gets ``mlx5_<rail>``, which assumes that the
  HCAs enumerate in rail order; :func:`hca_names_assumed` says so and the files carry a
  comment telling the operator to check ``ibdev2netdev`` (docs/generate.md).
* ``NCCL_SOCKET_IFNAME`` picks the bootstrap (TCP) interface; ``^lo,docker`` excludes loopback
  and container bridges, which works on hosts whose in-band interface name is not known.
* RoCE needs ``NCCL_IB_GID_INDEX``: index 3 is the RoCE v2 / IPv4 GID on a default NVIDIA
  (Mellanox) OFED setup [unverified: site-specific, check ``show_gids``].
* RoCE also needs the host's traffic class to match the switches' lossless queue:
  ``NCCL_IB_TC`` is the IP ToS byte of NCCL's RDMA traffic, ``DSCP << 2``.  NVIDIA's lossless
  RoCE default (Cumulus Linux / NVIDIA Onyx "RoCE lossless mode") carries RoCE data on DSCP
  26 in switch priority 3 with PFC, and congestion notification packets (CNPs) on DSCP 48 in
  priority 6; the hosts then need ``mlnx_qos --trust dscp --pfc 0,0,0,1,0,0,0,0`` on each
  compute port (comment in the job script).

Megatron-LM refuses to start tensor or context parallelism on Hopper and older GPUs unless
``CUDA_DEVICE_MAX_CONNECTIONS=1`` (one hardware queue: kernels reach the GPU in the order they
are issued, which its communication overlap relies on; ``validate_args`` in
``megatron/training/arguments.py``), and refuses FSDP2 with it; Blackwell takes either, so the
job sets it whenever TP or CP > 1 without FSDP2.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.design import Design
from clusterforge.generate.common import checked_name
from clusterforge.generate.training.megatron import megatron_args, workload_model

__all__ = [
    "ASSUMED_HCA_PREFIX",
    "RENDEZVOUS_PORT",
    "ROCE_CNP_DSCP",
    "ROCE_DSCP",
    "ROCE_GID_INDEX",
    "ROCE_PRIORITY",
    "ROCE_TRAFFIC_CLASS",
    "Launch",
    "hca_names",
    "hca_names_assumed",
    "launch_plan",
]

ASSUMED_HCA_PREFIX = "mlx5_"
ROCE_GID_INDEX = 3
ROCE_DSCP = 26  # RoCE data, lossless (PFC) switch priority ROCE_PRIORITY
ROCE_PRIORITY = 3
ROCE_CNP_DSCP = 48  # congestion notification packets, priority 6
ROCE_TRAFFIC_CLASS = ROCE_DSCP << 2  # IP ToS byte: DSCP in bits 7..2, ECN bits left to the NIC
RENDEZVOUS_PORT = 29500
SOCKET_IFNAME = "^lo,docker"


@dataclass(frozen=True)
class Launch:
    """Everything a job script needs, already computed and validated."""

    job_name: str
    num_nodes: int
    gpus_per_node: int
    num_gpus: int
    train_args: tuple[str, ...]  # Megatron-LM flags with their values
    nccl_env: tuple[tuple[str, str], ...]  # NCCL's variables and the one Megatron-LM needs
    notes: tuple[str, ...]  # what the operator must check or set on the hosts
    num_leaf_groups: int  # level-0 groups the job needs at least (Slurm --switches)


def hca_names_assumed(design: Design) -> bool:
    """True when the node model publishes no HCA names for the design's rails."""
    names = design.compute.node.compute_hca_names
    return len(names) != design.fabric.nics_per_node


def hca_names(design: Design) -> list[str]:
    """The compute HCA device names, index = rail (the node model's, else ``mlx5_<rail>``).

    The catalog's names are used when it lists one per rail of the design; a spec that uses
    fewer or more NICs than the node model has cannot be mapped to them and falls back too.
    """
    if not hca_names_assumed(design):
        return list(design.compute.node.compute_hca_names)
    return [f"{ASSUMED_HCA_PREFIX}{rail}" for rail in range(design.fabric.nics_per_node)]


def _nccl_env(design: Design) -> tuple[tuple[str, str], ...]:
    hcas = ",".join(f"{name}:1" for name in hca_names(design))
    env = [("NCCL_IB_HCA", f"={hcas}"), ("NCCL_SOCKET_IFNAME", SOCKET_IFNAME)]
    if design.fabric.fabric == "roce":
        env.append(("NCCL_IB_GID_INDEX", str(ROCE_GID_INDEX)))
        env.append(("NCCL_IB_TC", str(ROCE_TRAFFIC_CLASS)))
    env.append(("NCCL_DEBUG", "WARN"))
    return tuple(env)


def _megatron_env(design: Design) -> tuple[tuple[str, str], ...]:
    w, job = design.require_workload("the training job script")
    if (job.tp > 1 or job.cp > 1) and w.zero_stage != 3:
        return (("CUDA_DEVICE_MAX_CONNECTIONS", "1"),)
    return ()


def _notes(design: Design) -> tuple[str, ...]:
    notes = []
    if hca_names_assumed(design):
        notes += [
            f"{checked_name(design.compute.node.id, 'node model')} publishes no HCA names for its "
            f"{design.fabric.nics_per_node} rails: NCCL_IB_HCA assumes mlx5_<rail>;",
            "check the compute ports with ibdev2netdev and correct it.",
        ]
    if design.fabric.fabric == "roce":
        notes += [
            f"RoCE: NCCL_IB_TC={ROCE_TRAFFIC_CLASS} marks DSCP {ROCE_DSCP}, which the switches "
            f"carry lossless (PFC) in priority {ROCE_PRIORITY};",
            "each compute port needs the same on the host: "
            f"mlnx_qos -i <port> --trust dscp --pfc {_pfc_vector()}",
        ]
    w, _ = design.require_workload("the training job script")
    if workload_model(design, w).tokenizer is None:
        notes += [
            "The model names no tokenizer: the job runs Megatron's NullTokenizer (--mock-data",
            "only); pass --tokenizer-type and --tokenizer-model for a real run.",
        ]
    return tuple(notes)


def _pfc_vector() -> str:
    """mlnx_qos ``--pfc`` list: PFC on for :data:`ROCE_PRIORITY` only, of priorities 0-7."""
    return ",".join("1" if p == ROCE_PRIORITY else "0" for p in range(8))


def launch_plan(design: Design, nodes_per_group: int) -> Launch:
    """The job for the design's training GPUs (spares stay out of the job)."""
    compute = design.compute
    return Launch(
        job_name=f"{design.spec.name}-train",
        num_nodes=compute.num_training_nodes,
        gpus_per_node=compute.gpus_per_node,
        num_gpus=compute.num_training_gpus,
        train_args=megatron_args(design),
        nccl_env=_nccl_env(design) + _megatron_env(design),
        notes=_notes(design),
        num_leaf_groups=-(-compute.num_training_nodes // max(1, nodes_per_group)),
    )
