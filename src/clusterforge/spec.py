"""The user's cluster spec: parsed from YAML and validated once, here, into frozen models.

Every field carries a description and its unit.  Only ``num_gpus`` is required; everything
else has a default a practitioner would pick.  :func:`load_spec` turns any problem (malformed
YAML, an unknown id, a count that does not divide) into a :class:`SpecError` whose message
names the field, the bad value and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from clusterforge.catalog import Catalog, ModelArch, Node, load_catalog
from clusterforge.errors import PlanError, SpecError, did_you_mean
from clusterforge.job import JobLayout
from clusterforge.spec_errors import format_validation_error
from clusterforge.spec_yaml import excerpt, load_yaml_text, read_spec_text

__all__ = [
    "DEFAULT_SPEC_YAML",
    "ClusterSpec",
    "EconomicsSpec",
    "FacilitySpec",
    "NetworkSpec",
    "ReliabilitySpec",
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
SpareAttach = Literal["spare-ports", "spare-pool", "counted"]

# Upper bounds of the spec's ranges.  Every numeric field has a physical range so that an
# absurd value is refused at the boundary instead of costing minutes downstream.  GPUs: 2^20
# (1,048,576), five times the largest training cluster announced (xAI Colossus: 100,000 H100
# being doubled to 200,000, NVIDIA press release 2024-10-28).

MAX_GPUS = 2**20
MAX_LAYERS = 1000

# A custom model's dimensions: each admits the largest published models several times over
# (Llama 3.1 405B: 126 layers, hidden 16,384, 128 heads, vocab 128,256, Llama Team 2024
# Table 3; DeepSeek-V3: 256 routed experts with top-8, DeepSeek-AI 2024 §2.1).
MODEL_LIMITS: dict[str, int] = {
    "num_layers": MAX_LAYERS,
    "hidden_size": 131_072,
    "num_heads": 4096,
    "num_kv_heads": 4096,
    "ffn_hidden_size": 1_048_576,
    "vocab_size": 4_194_304,
    "seq_length": 2**24,
    "num_experts": 4096,
    "top_k": 256,
}


class _Section(BaseModel):
    # Infinity and NaN are refused: no physical quantity here is unbounded, and JSON (the
    # design.json output) cannot carry them (RFC 8259 §6).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


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
        None,
        ge=1,
        le=32,
        description="Compute NICs per node, at most the node model's ports (None = all of them)",
    )
    nic_gbit_per_s: float | None = Field(
        None,
        ge=1,
        le=3200,
        description="Speed of each compute NIC port in Gb/s (None = the NIC's speed)",
    )
    switch: str | None = Field(
        None, description="Catalog switch id (None = qm9700 for InfiniBand, sn5600 for RoCE)"
    )
    link_aggregation: bool = Field(
        False,
        description="single-switch only: bond each node's NICs into one aggregated link "
        "(a LAG, IEEE 802.1AX); traffic then hashes per flow onto one member link",
    )
    planes: int = Field(
        1,
        ge=1,
        le=8,
        description="Independent fabric planes (Clos only): NIC i joins plane i mod planes; "
        "planes share no switch, cross-plane traffic hops over NVLink",
    )
    dragonfly_routers_per_group: int | None = Field(
        None, ge=2, le=1024, description="Dragonfly a (None = balanced a = 2p)"
    )
    lossless: bool | None = Field(
        None,
        description="Lossless fabric: InfiniBand credit flow control, or RoCE with PFC. "
        "None = true for InfiniBand, false for RoCE (a lossy fabric drops on congestion)",
    )
    storage_fabric: bool = Field(True, description="Separate storage fabric (SuperPOD style)")
    spares: SpareAttach = Field(
        "spare-ports",
        description="How spare nodes join the compute fabric: 'spare-ports' = on the free "
        "leaf ports of the scalable units the training nodes fill, the rest kept cold and "
        "cabled on swap (the fabric is the reference design's); 'spare-pool' = on their own "
        "leaves, outside the training fabric; 'counted' = cabled like training nodes (the "
        "fabric grows for them)",
    )
    reserve_ufm_port: bool = Field(
        False,
        description="Reserve one leaf port per rail for the UFM appliance (NVIDIA SuperPOD: 31 "
        "nodes per SU instead of 32)",
    )


class FacilitySpec(_Section):
    """Where the cluster lives: rack power cap, circuits, cooling, energy and colo prices."""

    max_rack_kw: float = Field(40.0, ge=1, le=1000, description="Contracted power per rack, kW")
    rack_u: int = Field(48, ge=10, le=60, description="Usable rack units per rack")
    voltage_v: float = Field(
        415.0,
        ge=100,
        le=1000,
        description="Line-to-line feed voltage, V (IEC 60038 low voltage: up to 1,000 V AC)",
    )
    phases: Literal[1, 3] = Field(3, description="Feed phases")
    breaker_a: float | None = Field(
        None,
        ge=6,
        le=800,
        description="Breaker rating per feed, A (None = smallest standard size that fits)",
    )
    continuous_load_factor: float = Field(
        0.8,
        ge=0.5,
        le=1.0,
        description="Usable share of the breaker for continuous load (NEC 80 %)",
    )
    power_factor: float = Field(0.95, ge=0.5, le=1.0, description="PSU power factor")
    feeds_per_rack: Literal[1, 2] = Field(2, description="1 = single feed, 2 = A+B feeds")
    cooling_available: list[Cooling] = Field(
        default_factory=lambda: list[Cooling](["air", "rear-door", "direct-to-chip"]),
        description="Cooling methods the facility can provide",
    )
    pue: float = Field(1.4, ge=1.0, le=3.0, description="Power usage effectiveness")
    usd_per_kwh: float = Field(0.09, ge=0, le=5, description="Energy price, $/kWh")
    colo_usd_per_kw_month: float = Field(
        184.0,
        ge=0,
        le=5000,
        description="Colocation rent per contracted kW per month (CBRE H2 2024)",
    )
    racks_per_row: int = Field(16, ge=1, le=200, description="Racks in one row")
    rack_width_m: float = Field(0.6, ge=0.3, le=2.0, description="Rack width, m")
    row_pitch_m: float = Field(3.0, ge=0.5, le=20.0, description="Distance between row centres, m")

    allow_power_capping: bool = Field(
        False,
        description="Cap GPU power so a node fits when one node exceeds the rack limit "
        "(off: such a spec is refused, with the cap it would need in the message)",
    )


class StorageSpec(_Section):
    """Shared storage; None fields are derived from the workload."""

    block: str = Field("nvme-pfs-2u", description="Catalog storage building block id")
    num_blocks: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description="Fixed number of blocks (existing storage); None = sized here",
    )
    capacity_tbyte: float | None = Field(
        None, gt=0, le=1e6, description="Usable capacity, TB (at most 1 EB)"
    )
    read_gbyte_per_s: float | None = Field(
        None, gt=0, le=1e5, description="Aggregate read, GB/s (at most 100 TB/s)"
    )
    write_gbyte_per_s: float | None = Field(
        None, gt=0, le=1e5, description="Aggregate write, GB/s (at most 100 TB/s)"
    )
    checkpoint_write_s: float = Field(
        60.0, ge=1, le=86400, description="Target time to write one full checkpoint, s"
    )
    checkpoints_kept: int = Field(
        10, ge=1, le=1000, description="Checkpoints kept on the fast tier"
    )
    read_mbyte_per_s_per_gpu: float = Field(
        125.0,
        gt=0,
        le=100_000,
        description="Training read per GPU, MB/s (Meta Llama 3: 2 TB/s for 16K GPUs)",
    )
    dataset_tbyte: float | None = Field(
        None, gt=0, le=1e6, description="Tokenised dataset size, TB (at most 1 EB)"
    )


class WorkloadSpec(_Section):
    """The training job the cluster is for, and the parallelism the user intends."""

    model: str | ModelArch = Field(
        "llama3-70b", description="Catalog model preset id, or explicit dimensions"
    )
    params_b: float | None = Field(
        None, gt=0, le=100_000, description="Parameters, billions (None = from the model)"
    )
    tokens_b: float = Field(
        2000.0, gt=0, le=1e6, description="Training tokens, billions (at most 10^15 tokens)"
    )
    tensor_parallel: int = Field(8, ge=1, le=1024, description="TP degree")
    pipeline_parallel: int = Field(1, ge=1, le=1024, description="PP degree")
    context_parallel: int = Field(1, ge=1, le=1024, description="CP (sequence/context) degree")
    expert_parallel: int = Field(1, ge=1, le=1024, description="EP degree (MoE)")
    data_parallel: int | None = Field(
        None, ge=1, le=MAX_GPUS, description="DP degree (None = GPUs / (TP x PP x CP))"
    )
    sequence_parallel: bool = Field(True, description="Megatron sequence parallelism with TP")
    virtual_pipeline_stages: int = Field(
        1, ge=1, le=128, description="Interleaved 1F1B chunks per stage"
    )
    global_batch: int = Field(1024, ge=1, le=2**24, description="Sequences per optimizer step")
    micro_batch: int = Field(1, ge=1, le=65536, description="Sequences per micro-batch")
    seq_length: int | None = Field(
        None, gt=0, le=2**24, description="Tokens per sequence (None = model's)"
    )
    precision: Literal["bf16", "fp16", "fp8"] = Field("bf16", description="Matmul precision")
    recompute: Literal["none", "selective", "full"] = Field(
        "selective", description="Activation recomputation"
    )
    zero_stage: Literal[0, 1, 2, 3] = Field(1, description="ZeRO stage / FSDP (3 = full shard)")
    pipeline_layers: list[Annotated[int, Field(ge=1, le=MAX_LAYERS)]] | None = Field(
        None,
        max_length=1024,
        description="Explicit layers per pipeline stage (None = automatic split)",
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
        le=MAX_GPUS,
        description="ZeRO-3/FSDP: GPUs per shard group for hybrid sharding (HSDP); None = "
        "shard over all of DP x CP",
    )

    @field_validator("model")
    @classmethod
    def _model_in_range(cls, model: str | ModelArch) -> str | ModelArch:
        """A custom model's dimensions stay within :data:`MODEL_LIMITS`."""
        if isinstance(model, str):
            return model
        for name, limit in MODEL_LIMITS.items():
            value = getattr(model, name)
            if value is not None and value > limit:
                raise ValueError(f"{name} = {value} is more than {limit:,}; use 1 to {limit:,}")
        return model


RentBasis = Literal["cheaper", "reserved", "on-demand"]


class EconomicsSpec(_Section):
    """Build-versus-rent inputs. Rent prices left unset come from the GPU's catalog row."""

    years: float = Field(4.0, gt=0, le=15, description="Ownership period, years")
    rent_basis: RentBasis = Field(
        "cheaper",
        description="Rental offer the verdict compares against: reserved (a contract that "
        "bills every hour of each term), on-demand (bills only the hours used) or whichever "
        "of the two costs less at this utilization",
    )
    cloud_usd_per_gpu_hour: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="Reserved-contract rent, $/GPU-h, billed for every hour (None = the "
        "catalog's dated 1-year contract price for the GPU)",
    )
    reserved_term_years: float = Field(
        1.0,
        gt=0,
        le=5,
        description="Length of one reserved contract, years; the ownership period is covered "
        "by whole terms",
    )
    on_demand_usd_per_gpu_hour: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="On-demand rent, $/GPU-h, billed per used hour (None = the catalog's "
        "dated list price for the GPU)",
    )
    utilization: float = Field(0.9, gt=0, le=1.0, description="Expected busy share of GPU-hours")
    num_staff: float = Field(
        2.0, ge=0, le=100_000, description="Operations engineers (at least 2 for on-call cover)"
    )
    staff_usd_per_year: float = Field(
        250000.0, ge=0, le=1e7, description="Loaded cost per engineer, $/yr"
    )
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
    datacenter_usd_per_mw: float = Field(
        11.7e6,
        ge=0,
        le=100e6,
        description="Self-build only (facility.colo_usd_per_kw_month: 0): construction cost "
        "per MW of critical IT load, $ (Cushman & Wakefield Data Center Development Cost "
        "Guide 2025: average of 19 US markets, Oct 2024, land and fit-out excluded)",
    )
    datacenter_life_years: float = Field(
        20.0,
        gt=0,
        le=60,
        description="Self-build only: straight-line life of the building, years; the share "
        "not yet depreciated at the end of the period counts as residual value",
    )


class ReliabilitySpec(_Section):
    """Failures, checkpoints and restarts: the inputs of the goodput model."""

    checkpoint: Literal["sync", "async"] = Field(
        "sync",
        description="sync: training waits while the checkpoint is written to storage; async: "
        "training waits only for the copy of each GPU's shard to host memory",
    )
    checkpoint_interval_s: float | None = Field(
        None,
        gt=0,
        le=30 * 86400.0,
        description="Seconds of training between checkpoints (None = Young/Daly optimum)",
    )
    detection_s: float = Field(
        600.0,
        ge=0,
        le=86400.0,
        description="Seconds from a failure to the job noticing it (PyTorch's default NCCL "
        "collective timeout is 10 minutes)",
    )
    restart_s: float = Field(
        300.0,
        ge=0,
        le=86400.0,
        description="Seconds to requeue, start containers and initialise NCCL (stated "
        "assumption; measure yours), on top of reading the checkpoint back",
    )
    repair_days: float = Field(
        5.0,
        gt=0,
        le=365.0,
        description="Days until a failed node returns to the spare pool (repair or RMA; "
        "stated assumption)",
    )
    failure_rate_scale: float = Field(
        1.0,
        ge=0,
        le=100.0,
        description="Multiplier on every catalog failure rate (1 = the Llama 3 H100 fleet)",
    )
    async_copy_gbyte_per_s: float = Field(
        50.0,
        gt=0,
        le=10000.0,
        description="async checkpoints: device-to-host copy per GPU, GB/s (PCIe Gen5 x16 "
        "carries 64 GB/s per direction before protocol overhead)",
    )


class ClusterSpec(_Section):
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
    spare_fraction: float = Field(0.05, ge=0, le=0.5, description="Spare nodes, share of nodes")
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


def parse_spec(data: Any, source: str = "spec", catalog: Catalog | None = None) -> ClusterSpec:
    """Validate a parsed YAML mapping into a :class:`ClusterSpec` (ids and divisibility too)."""
    if not isinstance(data, dict):
        raise SpecError(
            f"{source}: the spec must be a YAML mapping of fields, got {type(data).__name__}"
        )
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, source, ClusterSpec)) from None
    _check_against_catalog(spec, catalog or load_catalog(), source)
    return spec


def load_spec(path: str | Path | None, catalog: Catalog | None = None) -> ClusterSpec:
    """Read a YAML spec file (None = the built-in default) and validate it.

    The file is read and parsed within the limits of :mod:`clusterforge.spec_yaml` (size,
    nesting, alias expansion, unique keys)."""
    if path is None:
        return default_spec()
    path = Path(path)
    source = excerpt(str(path), 120).strip("'\"")
    data = load_yaml_text(read_spec_text(path), source)
    return parse_spec(data, source=source, catalog=catalog)


def default_spec() -> ClusterSpec:
    """The built-in default spec (512 x H100 colo, 15 kW racks)."""
    data = load_yaml_text(DEFAULT_SPEC_YAML, "built-in default")
    return parse_spec(data, source="built-in default")


def _lookup(kind: str, table_ids: list[str], value: str, field: str, source: str) -> None:
    if value not in table_ids:
        raise SpecError(
            f"{source}: {field}: unknown {kind} {excerpt(value)}"
            f"{did_you_mean(value[:64], table_ids)}; choose one of: {', '.join(table_ids)}"
        )


def _check_against_catalog(spec: ClusterSpec, catalog: Catalog, source: str) -> None:
    """Cross-field checks that need the catalog: ids exist, counts divide."""
    if spec.gpu is not None:
        _lookup("GPU", catalog.gpus.ids(), spec.gpu, "gpu", source)
    if spec.node is not None:
        _lookup("node", catalog.nodes.ids(), spec.node, "node", source)
    if spec.gpu is not None and spec.node is None:
        _lookup("node", catalog.nodes.ids(), catalog.gpus[spec.gpu].default_node, "gpu", source)
    node_id = resolve_node_id(spec, catalog)
    node = catalog.nodes[node_id]
    _check_compute_nic(spec, node, catalog, source)
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
    nics = spec.network.nics_per_node
    if nics is not None and nics > node.num_compute_nics:
        raise SpecError(
            f"{source}: network.nics_per_node: {nics} is more than the "
            f"{node.num_compute_nics} compute NIC ports of node {node_id!r}; use at most "
            f"{node.num_compute_nics} (fewer plans a partly cabled fabric)"
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


def resolve_node_id(spec: ClusterSpec, catalog: Catalog) -> str:
    """The node model: the spec's, or the catalog's default node for its GPU."""
    if spec.node is not None:
        return spec.node
    assert spec.gpu is not None  # guaranteed by ClusterSpec._gpu_or_node
    return catalog.gpus[spec.gpu].default_node


def _check_compute_nic(spec: ClusterSpec, node: Node, catalog: Catalog, source: str) -> None:
    """network.* against the node's compute NIC: speed, count and fabric must be ones the
    NIC can run (a ConnectX-7 runs 400, 200 or 100 Gb/s, never 800)."""
    nic, net = catalog.nics[node.compute_nic], spec.network
    if net.nic_gbit_per_s is not None and net.nic_gbit_per_s > nic.port_gbit_per_s:
        raise SpecError(
            f"{source}: network.nic_gbit_per_s: {net.nic_gbit_per_s:g} is faster than node "
            f"{node.id!r}'s compute NIC {nic.id!r} ({nic.port_gbit_per_s:g} Gb/s); use at most "
            f"{nic.port_gbit_per_s:g} or pick a node with faster NICs"
        )
    ports = node.num_compute_nics * nic.num_ports
    if net.nics_per_node is not None and net.nics_per_node > ports:
        raise SpecError(
            f"{source}: network.nics_per_node: {net.nics_per_node} is more than node "
            f"{node.id!r}'s {ports} compute NIC ports; use at most {ports}"
        )
    fabric = "infiniband" if net.fabric == "infiniband" else "ethernet"
    if fabric not in nic.fabrics:
        raise SpecError(
            f"{source}: network.fabric: {net.fabric} needs {fabric} NICs, but node "
            f"{node.id!r}'s compute NIC {nic.id!r} runs {', '.join(nic.fabrics)} only"
        )


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
        arch = w.model if isinstance(w.model, ModelArch) else catalog.models[w.model]
        layout.check_model(arch, w.seq_length or arch.seq_length)
        layout.check_pipeline_layers(arch.num_layers, w.pipeline_layers, w.virtual_pipeline_stages)
    except PlanError as exc:
        raise SpecError(f"{source}: workload: {exc}") from None
    return layout
