"""The whole spec (:class:`ClusterSpec`) and the built-in default."""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    Field,
    model_validator,
)

from clusterforge.spec.base import (
    MAX_GPUS,
    Section,
)
from clusterforge.spec.economics import EconomicsSpec, ReliabilitySpec
from clusterforge.spec.management import ManagementSpec
from clusterforge.spec.scheduler import SlurmSpec
from clusterforge.spec.sections import FacilitySpec, NetworkSpec, StorageSpec
from clusterforge.spec.workload import WorkloadSpec

__all__ = ["DEFAULT_SPEC_YAML", "ClusterSpec"]


class ClusterSpec(Section):
    """A whole requirement: what to build, where, for which workload, at which price."""

    name: str = Field("cluster", pattern=r"^[a-z0-9][a-z0-9-]{0,40}$", description="Cluster name")
    num_gpus: int = Field(
        gt=0,
        le=MAX_GPUS,
        description="Training GPUs wanted (spares are added on top); at most 2^20, about "
        "five times the largest training cluster in service in 2025",
    )
    gpu: str | None = Field(
        None, max_length=64, description="Catalog GPU id (None = the node model's GPU)"
    )
    node: str | None = Field(
        None, max_length=64, description="Catalog node id (None = a default for the GPU)"
    )
    gpus_per_node: int | None = Field(
        None, ge=1, le=128, description="GPUs per node (None = the node's)"
    )
    gpu_power_limit_w: float | None = Field(
        None,
        gt=0,
        le=10_000,
        description="Board power limit of every GPU, W (nvidia-smi -pl); None = the GPU's "
        "TDP. Lowers the sustained matmul rate (clusterforge.perf.power_limit), not HBM",
    )
    spare_fraction: float = Field(0.05, ge=0, le=0.5, description="Spare nodes, share of nodes")
    spare_nodes_per_nvlink_domain: int = Field(
        0,
        ge=0,
        le=64,
        description="Rack-scale systems (GB200/GB300 NVL72): compute trays of each NVLink "
        "domain held as in-rack hot spares, the job using the others (2 = jobs on 16 of 18 "
        "trays). Replaces spare_fraction; 0 = none",
    )
    min_cpu_cores_per_gpu: float = Field(
        5.0,
        ge=0,
        le=1024,
        description="Flag fewer physical host CPU cores per GPU: the training process, two "
        "data-loader workers (Megatron-LM --num-workers default), the pin-memory thread and "
        "NCCL's proxy thread each want a core",
    )

    network: NetworkSpec = NetworkSpec()
    facility: FacilitySpec = FacilitySpec()
    storage: StorageSpec = StorageSpec()
    workload: WorkloadSpec | None = Field(
        None,
        description="The training job (None: plan the hardware only; predict and the "
        "job scripts need it)",
    )
    economics: EconomicsSpec = EconomicsSpec()
    reliability: ReliabilitySpec = ReliabilitySpec()
    slurm: SlurmSpec = SlurmSpec()
    management: ManagementSpec = ManagementSpec()

    @model_validator(mode="before")
    @classmethod
    def _empty_sections_take_defaults(cls, data: Any) -> Any:
        """A section whose every line is commented out reads as null: take its defaults
        (``workload`` excepted: no workload section means hardware only)."""
        if not isinstance(data, dict):
            return data
        sections = [n for n, f in cls.model_fields.items() if isinstance(f.default, BaseModel)]
        return {k: ({} if v is None and k in sections else v) for k, v in data.items()}

    @model_validator(mode="after")
    def _gpu_or_node(self) -> ClusterSpec:
        if self.gpu is None and self.node is None:
            raise ValueError("give 'gpu' (e.g. h100-sxm) or 'node' (e.g. dgx-h100)")
        return self

    @model_validator(mode="after")
    def _one_spare_policy(self) -> ClusterSpec:
        """In-rack spares replace whole spare nodes: a spec gives one or the other."""
        explicit = "spare_fraction" in self.model_fields_set and self.spare_fraction > 0
        if self.spare_nodes_per_nvlink_domain and explicit:
            raise ValueError(
                f"spare_fraction: {self.spare_fraction:g} with spare_nodes_per_nvlink_domain: "
                f"{self.spare_nodes_per_nvlink_domain}: in-rack spares replace the spare "
                "fraction; set spare_fraction: 0 or drop spare_nodes_per_nvlink_domain"
            )
        return self


DEFAULT_SPEC_YAML = """\
# The built-in default: 512 x H100 in a colo with a 15 kW rack cap, training a 70B model
# with TP inside the node: the 8 GPUs of a DGX H100 share NVLink 4 at 900 GB/s per GPU
# (NVIDIA DGX H100 User Guide), so tensor parallelism stays inside one node.

name: colo-512-h100
num_gpus: 512
node: dgx-h100
network:
  fabric: infiniband
  topology: rail-optimized
  switch: qm9700
facility:
  max_rack_kw: 15
  voltage_v: 415
  breaker_a: 20
  cooling_available: [air]
  pue: 1.4
  usd_per_kwh: 0.09
  colo_usd_per_kw_month: 184
workload:
  model: llama3-70b
  tokens_b: 2000
  tensor_parallel: 8
  pipeline_parallel: 4
  global_batch: 1024
economics:
  years: 4
  cloud_usd_per_gpu_hour: 2.35
  utilization: 0.9
"""
