"""How the training job is launched: node count, parallelism arguments, NCCL environment.

Shared by the Slurm job script and the Kubernetes training job so that both run the same
workload with the same fabric settings.

NCCL variables (NCCL documentation via operations.md §17, stas00 ml-engineering debug chapter):

* ``NCCL_IB_HCA`` lists the compute HCAs, one per rail, as ``=mlx5_0:1,...``; the leading ``=``
  makes NCCL take exactly these devices (not a prefix match).  The ``mlx5_<rail>`` names assume
  the HCAs enumerate in rail order; a site whose names differ edits :data:`HCA_PREFIX` or the
  generated line (docs/generate.md).
* ``NCCL_SOCKET_IFNAME`` picks the bootstrap (TCP) interface; ``^lo,docker`` excludes loopback
  and container bridges, which works on hosts whose in-band interface name is not known.
* RoCE needs ``NCCL_IB_GID_INDEX``: index 3 is the RoCE v2 / IPv4 GID on a default Mellanox
  OFED setup [unverified: site-specific, check ``show_gids``].
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.design import Design

__all__ = [
    "HCA_PREFIX",
    "RENDEZVOUS_PORT",
    "ROCE_GID_INDEX",
    "Launch",
    "hca_names",
    "launch_plan",
]

HCA_PREFIX = "mlx5_"
ROCE_GID_INDEX = 3
RENDEZVOUS_PORT = 29500
SOCKET_IFNAME = "^lo,docker"


@dataclass(frozen=True)
class Launch:
    """Everything a job script needs, already computed and validated."""

    job_name: str
    num_nodes: int
    gpus_per_node: int
    num_gpus: int
    train_args: tuple[str, ...]  # Megatron-LM style flags with their values
    nccl_env: tuple[tuple[str, str], ...]
    num_leaf_groups: int  # level-0 groups the job needs at least (Slurm --switches)


def hca_names(design: Design) -> list[str]:
    """The compute HCA device names, index = rail."""
    return [f"{HCA_PREFIX}{rail}" for rail in range(design.fabric.nics_per_node)]


def _nccl_env(design: Design) -> tuple[tuple[str, str], ...]:
    hcas = ",".join(f"{name}:1" for name in hca_names(design))
    env = [("NCCL_IB_HCA", f"={hcas}"), ("NCCL_SOCKET_IFNAME", SOCKET_IFNAME)]
    if design.fabric.fabric == "roce":
        env.append(("NCCL_IB_GID_INDEX", str(ROCE_GID_INDEX)))
    env.append(("NCCL_DEBUG", "WARN"))
    return tuple(env)


def _train_args(design: Design) -> tuple[str, ...]:
    """Megatron-LM ``pretrain_gpt.py`` flags for the workload's parallelism."""
    w, job = design.require_workload("the training job script")
    args = [
        f"--tensor-model-parallel-size={job.tp}",
        f"--pipeline-model-parallel-size={job.pp}",
        f"--context-parallel-size={job.cp}",
        f"--expert-model-parallel-size={job.ep}",
        f"--micro-batch-size={w.micro_batch}",
        f"--global-batch-size={w.global_batch}",
    ]
    if w.virtual_pipeline_stages > 1:
        args.append(f"--num-virtual-stages-per-pipeline-rank={w.virtual_pipeline_stages}")
    if w.sequence_parallel and job.tp > 1:
        args.append("--sequence-parallel")
    if w.seq_length is not None:
        args.append(f"--seq-length={w.seq_length}")
    return tuple(args)


def launch_plan(design: Design, nodes_per_group: int) -> Launch:
    """The job for the design's training GPUs (spares stay out of the job)."""
    compute = design.compute
    return Launch(
        job_name=f"{design.spec.name}-train",
        num_nodes=compute.num_training_nodes,
        gpus_per_node=compute.gpus_per_node,
        num_gpus=compute.num_training_gpus,
        train_args=_train_args(design),
        nccl_env=_nccl_env(design),
        num_leaf_groups=-(-compute.num_training_nodes // max(1, nodes_per_group)),
    )
