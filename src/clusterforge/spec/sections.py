"""The hardware sections of a spec: compute fabric, facility and storage."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    model_validator,
)

from clusterforge.spec.base import (
    Cooling,
    Section,
    SpareAttach,
    Topology,
)

__all__ = [
    "EfaInstance",
    "FacilitySpec",
    "NcclProtocol",
    "NcclTuner",
    "NetworkSpec",
    "StorageSpec",
    "Transport",
]

# How NCCL moves data between nodes: RDMA verbs (InfiniBand, RoCE), or Google's
# GPUDirect-TCPX NCCL net plugin over TCP on A3 High VMs (four 200 Gb/s data NICs per VM;
# cloud.google.com/compute/docs/gpus/gpu-network-bandwidth).
Transport = Literal["rdma", "gpudirect-tcpx"]
# NCCL's protocols (NCCL_PROTO) and tuners: its own, or AWS's OFI tuner plugin with its
# P6-B200 table (aws/aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp, v1.17.0 to v1.21.1)
NcclProtocol = Literal["ll", "ll128", "simple"]
NcclTuner = Literal["nccl", "aws-ofi-p6-b200"]
# EC2 instance types whose network latency aws-ofi-nccl reports to NCCL (src/platform-aws.cpp,
# platform_data_map; clusterforge.netsim.ofi_tuner.net_latency_s)
EfaInstance = Literal[
    "p4d.24xlarge",
    "p4de.24xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
]


class NetworkSpec(Section):
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
    congestion_control: Literal["dcqcn", "none"] | None = Field(
        None,
        description="End-to-end congestion control of the RDMA NICs: 'dcqcn' (ECN-marked "
        "queues make the senders cut their rate, as ConnectX NICs do on RoCE; Spectrum-X's own "
        "control acts alike) or 'none'. None = dcqcn for RoCE, none for InfiniBand (credit "
        "flow control already keeps it lossless)",
    )
    transport: Transport = Field(
        "rdma",
        description="How NCCL crosses nodes: 'rdma' (InfiniBand or RoCE verbs) or "
        "'gpudirect-tcpx' (Google A3 High: NCCL's GPUDirect-TCPX plugin over TCP on an "
        "Ethernet fabric, fabric: roce; collectives across nodes run at its measured share "
        "of the NIC line rate)",
    )
    nccl_protocols: tuple[NcclProtocol, ...] | None = Field(
        None,
        description="Protocols NCCL may run (NCCL_PROTO), e.g. [simple]; None = every protocol "
        "NCCL enables. On AWS EFA the aws-ofi-nccl plugin sets NCCL_PROTO=simple for the whole "
        "process, one-node communicators included, when the EFA device does not report in-order "
        "128-byte aligned RDMA writes (src/platform-aws.cpp; P5en is exempted by name)",
    )
    nccl_tuner: NcclTuner = Field(
        "nccl",
        description="Who picks NCCL's algorithm and protocol: 'nccl' (NCCL's own tuner) or "
        "'aws-ofi-p6-b200' (AWS's OFI tuner plugin, NCCL_TUNER_PLUGIN=ofi, on p6-b200.48xlarge: "
        "above 2 nodes with 8 ranks a node, an all-reduce runs the pair of its region table)",
    )
    efa_instance: EfaInstance | None = Field(
        None,
        description="AWS EC2 instance type whose EFA devices NCCL uses through the aws-ofi-nccl "
        "net plugin, e.g. p5.48xlarge; None = NCCL's own InfiniBand / RoCE transport. The "
        "plugin reports a network latency to NCCL (75 us on p4d, p4de, p5 and p5e; 35 us on "
        "p5en and p6-b200), which NCCL's latency model adds to every network step of a call, "
        "twice for Simple. The node's GPU must be the instance's (p4d A100 40GB, p4de A100 "
        "80GB, p5 H100, p5e and p5en H200, p6-b200 B200)",
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

    @model_validator(mode="after")
    def _transport_on_ethernet(self) -> NetworkSpec:
        if self.transport == "gpudirect-tcpx" and self.fabric != "roce":
            raise ValueError(
                f"transport 'gpudirect-tcpx' runs TCP over an Ethernet fabric, but fabric is "
                f"{self.fabric!r}; set fabric: roce (the Ethernet fabric) or transport: rdma"
            )
        return self

    @model_validator(mode="after")
    def _protocols_once(self) -> NetworkSpec:
        protocols = self.nccl_protocols
        if protocols is None:
            return self
        if not protocols:
            raise ValueError(
                "nccl_protocols is empty: NCCL needs at least one protocol; name some of "
                "ll, ll128, simple, or leave the field out for NCCL's default"
            )
        if len(set(protocols)) != len(protocols):
            raise ValueError(
                f"nccl_protocols {list(protocols)} names a protocol twice; list each of "
                "ll, ll128, simple at most once"
            )
        return self


class FacilitySpec(Section):
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
    rack_depth_m: float = Field(
        1.2, ge=0.5, le=2.0, description="Rack depth, m (the catalog's rack is 600 x 1200 mm)"
    )
    floor_rating_kn_per_m2: float = Field(
        12.0,
        ge=1,
        le=100,
        description="Distributed live load the floor carries, kN/m2 (= kPa), compared with each "
        "rack's mass over its footprint. Default: the 12 kPa (250 lbf/ft2) ANSI/TIA-942-B "
        "(2017) gives for Rated-3 and -4 data centres; its minimum is 7.2 kPa (150 lbf/ft2)",
    )

    allow_power_capping: bool = Field(
        False,
        description="Cap GPU power so a node fits when one node exceeds the rack limit "
        "(off: such a spec is refused, with the cap it would need in the message)",
    )


class StorageSpec(Section):
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
