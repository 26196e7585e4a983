"""The user's cluster spec: parsed from YAML and validated once, here, into frozen models.

Every field carries a description and its unit.  Only ``num_gpus`` is required; everything
else has a default a practitioner would pick.  :func:`load_spec` turns any problem (malformed
YAML, an unknown id, a count that does not divide) into a :class:`SpecError` whose message
names the field, the bad value and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from clusterforge.catalog import Catalog, ModelArch, load_catalog
from clusterforge.errors import CatalogError, PlanError, SpecError, did_you_mean
from clusterforge.job import JobLayout

__all__ = [
    "DEFAULT_SPEC_YAML",
    "ClusterSpec",
    "EconomicsSpec",
    "FacilitySpec",
    "NetworkSpec",
    "StorageSpec",
    "WorkloadSpec",
    "default_spec",
    "job_layout",
    "load_spec",
    "parse_spec",
]

Topology = Literal[
    "rail-optimized", "leaf-spine", "fat-tree", "dragonfly", "rail-only", "single-switch"
]
Cooling = Literal["air", "rear-door", "direct-to-chip", "immersion"]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NetworkSpec(_Section):
    """The compute (back-end) fabric."""

    fabric: Literal["infiniband", "roce"] = Field(
        "infiniband", description="InfiniBand or RDMA over Converged Ethernet"
    )
    topology: Topology = Field("rail-optimized", description="Fabric topology")
    tiers: int | None = Field(
        None, ge=1, le=3, description="Switch tiers (leaf-spine: 2 or 3; None = smallest that fits)"
    )
    oversubscription: float = Field(
        1.0,
        ge=1.0,
        le=16.0,
        description="Leaf downlink:uplink bandwidth ratio (1.0 = non-blocking)",
    )
    core_oversubscription: float = Field(
        1.0,
        ge=1.0,
        le=16.0,
        description="3-tier fabrics: spine down:up ratio toward the core (Meta's AI zones join "
        "through an ~7:1 aggregation layer); 1.0 = non-blocking",
    )
    nics_per_node: int | None = Field(
        None, ge=1, description="Compute NICs per node (None = the node model's count)"
    )
    nic_gbit_per_s: float | None = Field(
        None, gt=0, description="Speed of each compute NIC port in Gb/s (None = the NIC's speed)"
    )
    switch: str | None = Field(
        None, description="Catalog switch id (None = qm9700 for InfiniBand, sn5600 for RoCE)"
    )
    link_aggregation: bool = Field(
        False,
        description="single-switch only: bond each node's NICs into one aggregated link "
        "(the seed's 'design A'); traffic then hashes per flow onto one member link",
    )
    planes: int = Field(
        1,
        ge=1,
        le=8,
        description="Independent fabric planes (Clos only): NIC i joins plane i mod planes; "
        "planes share no switch, cross-plane traffic hops over NVLink",
    )
    dragonfly_routers_per_group: int | None = Field(
        None, ge=2, description="Dragonfly a (None = balanced a = 2p)"
    )
    lossless: bool | None = Field(
        None,
        description="Lossless fabric: InfiniBand credit flow control, or RoCE with PFC. "
        "None = true for InfiniBand, false for RoCE (a lossy fabric drops on congestion)",
    )
    storage_fabric: bool = Field(True, description="Separate storage fabric (SuperPOD style)")
    reserve_ufm_port: bool = Field(
        False,
        description="Reserve one leaf port per rail for the UFM appliance (NVIDIA SuperPOD: 31 "
        "nodes per SU instead of 32)",
    )


class FacilitySpec(_Section):
    """Where the cluster lives: rack power cap, circuits, cooling, energy and colo prices."""

    max_rack_kw: float = Field(40.0, gt=0, description="Contracted power per rack, kW")
    rack_u: int = Field(48, ge=10, le=60, description="Usable rack units per rack")
    voltage_v: float = Field(415.0, gt=0, description="Line-to-line feed voltage, V")
    phases: Literal[1, 3] = Field(3, description="Feed phases")
    breaker_a: float | None = Field(
        None,
        gt=0,
        description="Breaker rating per feed, A (None = smallest standard size that fits)",
    )
    continuous_load_factor: float = Field(
        0.8, gt=0, le=1.0, description="Usable share of the breaker for continuous load (NEC 80 %)"
    )
    power_factor: float = Field(0.95, gt=0, le=1.0, description="PSU power factor")
    feeds_per_rack: Literal[1, 2] = Field(2, description="1 = single feed, 2 = A+B feeds")
    cooling_available: list[Cooling] = Field(
        default_factory=lambda: list[Cooling](["air", "rear-door", "direct-to-chip"]),
        description="Cooling methods the facility can provide",
    )
    pue: float = Field(1.4, ge=1.0, le=3.0, description="Power usage effectiveness")
    usd_per_kwh: float = Field(0.09, ge=0, description="Energy price, $/kWh")
    colo_usd_per_kw_month: float = Field(
        184.0, ge=0, description="Colocation rent per contracted kW per month (CBRE H2 2024)"
    )
    racks_per_row: int = Field(16, ge=1, description="Racks in one row")
    rack_width_m: float = Field(0.6, gt=0, description="Rack width, m")
    row_pitch_m: float = Field(3.0, gt=0, description="Distance between row centres, m")
    allow_power_capping: bool = Field(
        False,
        description="Cap GPU power so a node fits when one node exceeds the rack limit "
        "(off: such a spec is refused, with the cap it would need in the message)",
    )


class StorageSpec(_Section):
    """Shared storage; None fields are derived from the workload."""

    block: str = Field("nvme-pfs-2u", description="Catalog storage building block id")
    num_blocks: int | None = Field(
        None, ge=1, description="Fixed number of blocks (existing storage); None = sized here"
    )
    capacity_tbyte: float | None = Field(None, gt=0, description="Usable capacity, TB")
    read_gbyte_per_s: float | None = Field(None, gt=0, description="Aggregate read, GB/s")
    write_gbyte_per_s: float | None = Field(None, gt=0, description="Aggregate write, GB/s")
    checkpoint_write_s: float = Field(
        60.0, gt=0, description="Target time to write one full checkpoint, s"
    )
    checkpoints_kept: int = Field(10, ge=1, description="Checkpoints kept on the fast tier")
    read_mbyte_per_s_per_gpu: float = Field(
        125.0, gt=0, description="Training read per GPU, MB/s (Meta Llama 3: 2 TB/s for 16K GPUs)"
    )
    dataset_tbyte: float | None = Field(None, gt=0, description="Tokenised dataset size, TB")


class WorkloadSpec(_Section):
    """The training job the cluster is for, and the parallelism the user intends."""

    model: str | ModelArch = Field(
        "llama3-70b", description="Catalog model preset id, or explicit dimensions"
    )
    params_b: float | None = Field(
        None, gt=0, description="Parameters, billions (None = from the model)"
    )
    tokens_b: float = Field(2000.0, gt=0, description="Training tokens, billions")
    tensor_parallel: int = Field(8, ge=1, description="TP degree")
    pipeline_parallel: int = Field(1, ge=1, description="PP degree")
    context_parallel: int = Field(1, ge=1, description="CP (sequence/context) degree")
    expert_parallel: int = Field(1, ge=1, description="EP degree (MoE)")
    data_parallel: int | None = Field(
        None, ge=1, description="DP degree (None = GPUs / (TP x PP x CP))"
    )
    sequence_parallel: bool = Field(True, description="Megatron sequence parallelism with TP")
    virtual_pipeline_stages: int = Field(1, ge=1, description="Interleaved 1F1B chunks per stage")
    global_batch: int = Field(1024, ge=1, description="Sequences per optimizer step")
    micro_batch: int = Field(1, ge=1, description="Sequences per micro-batch")
    seq_length: int | None = Field(None, gt=0, description="Tokens per sequence (None = model's)")
    precision: Literal["bf16", "fp16", "fp8"] = Field("bf16", description="Matmul precision")
    recompute: Literal["none", "selective", "full"] = Field(
        "selective", description="Activation recomputation"
    )
    zero_stage: Literal[0, 1, 2, 3] = Field(1, description="ZeRO stage / FSDP (3 = full shard)")
    pipeline_layers: list[int] | None = Field(
        None, description="Explicit layers per pipeline stage (None = automatic split)"
    )
    stack: Literal["megatron-2021", "megatron-core", "nemo", "deepspeed", "fsdp", "torchtitan"] = (
        Field(
            "megatron-core",
            description="Training software stack: its documented kernels, overlaps, memory "
            "layout and FP8 recipe (see clusterforge.perf.stack)",
        )
    )
    fsdp_shard_size: int | None = Field(
        None,
        ge=1,
        description="ZeRO-3/FSDP: GPUs per shard group for hybrid sharding (HSDP); None = "
        "shard over all of DP x CP",
    )


class EconomicsSpec(_Section):
    """Build-versus-rent inputs."""

    years: float = Field(4.0, gt=0, le=15, description="Ownership period, years")
    cloud_usd_per_gpu_hour: float = Field(
        2.35, gt=0, description="Rental price to compare against, $/GPU-h (1-year market, Mar 2026)"
    )
    utilization: float = Field(0.9, gt=0, le=1.0, description="Expected busy share of GPU-hours")
    num_staff: float = Field(
        2.0, ge=0, description="Operations engineers (the brief: 2 SREs minimum)"
    )
    staff_usd_per_year: float = Field(250000.0, ge=0, description="Loaded cost per engineer, $/yr")
    maintenance_fraction_per_year: float = Field(
        0.03, ge=0, le=0.5, description="Hardware support contracts, share of capex per year"
    )
    residual_fraction: float = Field(
        0.1, ge=0, le=1.0, description="Resale value at the end, share of hardware capex"
    )
    install_fraction: float = Field(
        0.03, ge=0, le=0.5, description="Integration, installation and burn-in, share of capex"
    )
    rent_discount: float = Field(0.0, ge=0, lt=1.0, description="Negotiated discount on rent")


class ClusterSpec(_Section):
    """A whole requirement: what to build, where, for which workload, at which price."""

    name: str = Field("cluster", pattern=r"^[a-z0-9][a-z0-9-]{0,40}$", description="Cluster name")
    num_gpus: int = Field(gt=0, description="Training GPUs wanted (spares are added on top)")
    gpu: str | None = Field(None, description="Catalog GPU id (None = the node model's GPU)")
    node: str | None = Field(None, description="Catalog node id (None = a default for the GPU)")
    gpus_per_node: int | None = Field(None, ge=1, description="GPUs per node (None = the node's)")
    spare_fraction: float = Field(0.05, ge=0, le=0.5, description="Spare nodes, share of nodes")
    min_cpu_cores_per_gpu: float = Field(
        24.0, ge=0, description="Flag fewer host CPU cores per GPU (2x96 cores per 8 GPUs)"
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

    @model_validator(mode="after")
    def _gpu_or_node(self) -> ClusterSpec:
        if self.gpu is None and self.node is None:
            raise ValueError("give 'gpu' (e.g. h100-sxm) or 'node' (e.g. dgx-h100)")
        return self


# GPU id -> the node model used when the spec names only the GPU.
DEFAULT_NODE_FOR_GPU = {
    "a100-80gb": "dgx-a100",
    "h100-sxm": "dgx-h100",
    "h200-sxm": "dgx-h200",
    "b200": "dgx-b200",
    "gb200": "gb200-nvl72-tray",
    "mi300x": "mi300x-8gpu",
    "rtx-4090": "rtx4090-8gpu",
}

DEFAULT_SPEC_YAML = """\
# The built-in default: 512 x H100 in a colo with a 15 kW rack cap, training a 70B model
# with TP inside the node (shared/reference/design.md §6).
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


def _format_validation_error(exc: ValidationError, source: str) -> str:
    """One line per problem: 'field.path: value: message'."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        value = err.get("input")
        shown = "" if isinstance(value, dict) else f" (got {value!r})"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            section_fields = _known_fields(err["loc"][:-1])
            msg = f"unknown field{did_you_mean(str(err['loc'][-1]), section_fields)}"
            shown = ""
        parts.append(f"{loc}{shown}: {msg}")
    return f"{source}: " + "; ".join(parts)


def _known_fields(loc: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = ClusterSpec
    for part in loc:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def parse_spec(data: Any, source: str = "spec", catalog: Catalog | None = None) -> ClusterSpec:
    """Validate a parsed YAML mapping into a :class:`ClusterSpec` (ids and divisibility too)."""
    if not isinstance(data, dict):
        raise SpecError(
            f"{source}: the spec must be a YAML mapping of fields, got {type(data).__name__}"
        )
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_format_validation_error(exc, source)) from None
    _check_against_catalog(spec, catalog or load_catalog(), source)
    return spec


def load_spec(path: str | Path | None, catalog: Catalog | None = None) -> ClusterSpec:
    """Read a YAML spec file (None = the built-in default) and validate it."""
    if path is None:
        return default_spec()
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"spec file {str(path)!r} does not exist") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read spec file {str(path)!r}: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{path}: malformed YAML{where}: {problem}") from None
    return parse_spec(data, source=str(path), catalog=catalog)


def default_spec() -> ClusterSpec:
    """The built-in default spec (512 x H100 colo, 15 kW racks)."""
    return parse_spec(yaml.safe_load(DEFAULT_SPEC_YAML), source="built-in default")


def _lookup(kind: str, table_ids: list[str], value: str, field: str, source: str) -> None:
    if value not in table_ids:
        raise SpecError(
            f"{source}: {field}: unknown {kind} {value!r}{did_you_mean(value, table_ids)}; "
            f"choose one of: {', '.join(table_ids)}"
        )


def _check_against_catalog(spec: ClusterSpec, catalog: Catalog, source: str) -> None:
    """Cross-field checks that need the catalog: ids exist, counts divide."""
    if spec.gpu is not None:
        _lookup("GPU", catalog.gpus.ids(), spec.gpu, "gpu", source)
    if spec.node is not None:
        _lookup("node", catalog.nodes.ids(), spec.node, "node", source)
    node_id = resolve_node_id(spec)
    node = catalog.nodes[node_id]
    if spec.gpu is not None and node.gpu != spec.gpu:
        raise SpecError(
            f"{source}: node {node_id!r} carries {node.gpu!r}, not gpu {spec.gpu!r}; "
            "drop one of the two fields or pick a matching node"
        )
    if spec.gpus_per_node is not None and spec.gpus_per_node != node.num_gpus:
        raise SpecError(
            f"{source}: gpus_per_node: {spec.gpus_per_node} does not fit node {node_id!r}, "
            f"which has a {node.num_gpus}-GPU board; set gpus_per_node: {node.num_gpus} "
            "(idle GPU slots are still bought and powered)"
        )
    if spec.num_gpus % node.num_gpus:
        raise SpecError(
            f"{source}: num_gpus: {spec.num_gpus} is not a multiple of {node.num_gpus} GPUs per "
            f"node; use {(spec.num_gpus // node.num_gpus + 1) * node.num_gpus}"
        )
    if spec.network.switch is not None:
        _lookup("switch", catalog.switches.ids(), spec.network.switch, "network.switch", source)
    _lookup("storage block", catalog.storage.ids(), spec.storage.block, "storage.block", source)
    if spec.workload is not None and isinstance(spec.workload.model, str):
        _lookup("model", catalog.models.ids(), spec.workload.model, "workload.model", source)
    job_layout(spec, catalog, source)


def resolve_node_id(spec: ClusterSpec) -> str:
    """The node model: the spec's, or the default for its GPU."""
    if spec.node is not None:
        return spec.node
    assert spec.gpu is not None  # guaranteed by ClusterSpec._gpu_or_node
    try:
        return DEFAULT_NODE_FOR_GPU[spec.gpu]
    except KeyError:
        raise CatalogError(f"no default node for GPU {spec.gpu!r}; set 'node'") from None


def job_layout(spec: ClusterSpec, catalog: Catalog, source: str = "spec") -> JobLayout | None:
    """The job layout of the spec's workload, every structural check applied (None when the
    spec has no workload section: a fabric-only spec plans the hardware alone)."""
    w = spec.workload
    if w is None:
        return None
    try:
        layout = JobLayout.for_gpus(
            spec.num_gpus,
            tp=w.tensor_parallel,
            pp=w.pipeline_parallel,
            cp=w.context_parallel,
            ep=w.expert_parallel,
            dp=w.data_parallel,
        )
        layout.check_batch(w.global_batch, w.micro_batch, w.virtual_pipeline_stages)
    except PlanError as exc:
        raise SpecError(f"{source}: workload.{exc}") from None
    return layout
