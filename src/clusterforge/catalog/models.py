"""Typed rows of the hardware catalog: the common row, GPUs, CPUs, nodes, storage, facility.

Units are in the field names; every row has a source. The network's rows (NICs, switches,
link media, cables and transceivers) are in :mod:`clusterforge.catalog.network`, the
training models in :mod:`clusterforge.catalog.model_arch`, the training containers in
:mod:`clusterforge.catalog.containers`.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "DDR_CHANNEL_BYTES",
    "FORM_FACTORS",
    "HOST_LINKS",
    "SCALEUPS",
    "CatalogRow",
    "Cpu",
    "FacilityItem",
    "FormFactor",
    "Gpu",
    "HostLink",
    "Node",
    "PowerEntry",
    "PowerPath",
    "Scaleup",
    "StorageBlock",
]


FormFactor = Literal["sxm", "oam", "pcie", "superchip"]
"""How a GPU is packaged: an SXM or OAM module on a baseboard, a PCIe card, or a superchip
(GPU and Grace CPU on one board, NVLink-C2C between them)."""

Scaleup = Literal["nvlink2", "nvlink3", "nvlink4", "nvlink5", "infinity-fabric", "pcie4"]
"""The scale-up link technology between the GPUs of a domain (NVLink generation, AMD
Infinity Fabric, or PCIe when the GPUs have no peer link)."""

HostLink = Literal["pcie4", "pcie5", "nvlink-c2c"]
"""The link between a GPU and its host CPU: PCIe Gen4/Gen5 x16, or NVLink-C2C on superchips."""

PowerEntry = Literal["psu", "power-shelf"]
"""What a rack's devices take power from: their own PSUs, or the rack's power shelves on a DC
busbar (rack-scale systems whose trays have no PSU)."""

FORM_FACTORS: tuple[FormFactor, ...] = get_args(FormFactor)
SCALEUPS: tuple[Scaleup, ...] = get_args(Scaleup)
HOST_LINKS: tuple[HostLink, ...] = get_args(HostLink)


class CatalogRow(BaseModel):
    """The fields every catalog row has: an id, a display name and the source of its figures."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    name: str
    source: str = Field(description="Where the figures come from, with a confidence tag")


class Gpu(CatalogRow):
    vendor: Literal["nvidia", "amd"]
    nvml_names: list[str] = Field(description="Names NVML reports for this GPU")
    hbm_gib: float
    hbm_gbyte: float
    hbm_tbyte_per_s: float
    tdp_w: float
    power_limit_w: float | None = Field(
        None,
        gt=0,
        description="Board power limit set below the TDP (nvidia-smi -pl), W; None = the TDP. "
        "Not a catalog column: a spec's gpu_power_limit_w sets it on the design's GPU",
    )
    bf16_dense_tflops: float
    fp8_dense_tflops: float
    fp4_dense_tflops: float = Field(
        0.0,
        ge=0,
        description="Dense FP4 (NVFP4) tensor-core peak, TFLOP/s; 0 = no FP4 tensor cores",
    )
    num_sms: int = Field(
        0,
        ge=0,
        description="Streaming multiprocessors (AMD: compute units) that run GEMM tiles in "
        "parallel; 0 = unknown (no wave quantisation modelled)",
    )
    scaleup: Scaleup
    scaleup_gbyte_per_s: float = Field(description="Bidirectional scale-up bandwidth per GPU")
    scaleup_fabric: Literal["switch", "mesh", "pcie"] = Field(
        "switch",
        description="How the GPUs of a scale-up domain meet: an NVSwitch, a switchless full "
        "mesh of peer links (AMD Infinity Fabric), or the host's PCIe complex",
    )
    nvlink_sharp: bool = Field(
        False, description="The NVSwitch reduces in the switch (NVLink SHARP, NCCL's NVLS)"
    )
    nvlink_domain_max: int
    form_factor: FormFactor
    host_link: HostLink = Field(description="Link between the GPU and its host CPU")
    host_link_gbyte_per_s: float = Field(
        gt=0, description="Host-link bandwidth in each direction, GB/s (offload copies)"
    )
    host_link_source: str = Field(description="Where the host-link figures come from")
    datacenter: bool
    ecc: bool
    price_usd: float
    price_date: str
    default_node: str = Field(description="Node model planned when a spec names only the GPU")
    rent_reserved_usd_per_gpu_hour: float = Field(
        gt=0, description="1-year contract rent, billed for every hour of the term, $/GPU-h"
    )
    rent_on_demand_usd_per_gpu_hour: float = Field(
        gt=0, description="On-demand list rent, billed per used hour, $/GPU-h"
    )
    rent_price_date: str = Field(description="Month of the rent anchors, YYYY-MM")


# Bytes per transfer of one DDR channel (64 data bits; JEDEC DDR4 and DDR5 DIMMs, the two
# 32-bit subchannels of a DDR5 DIMM together).
DDR_CHANNEL_BYTES = 8


class Cpu(CatalogRow):
    """A host CPU. Memory: peak DRAM bandwidth of one socket, GB/s, with the channels and
    their transfer rate where the vendor publishes them (then ``memory_gbyte_per_s`` =
    channels x MT/s x 8 B); None where the catalog has no figure."""

    num_cores: int
    tdp_w: float
    memory_channels: int | None = Field(None, ge=1, description="DRAM channels per socket")
    memory_mt_per_s: float | None = Field(
        None, gt=0, description="DRAM transfer rate, MT/s (one DIMM per channel)"
    )
    memory_gbyte_per_s: float | None = Field(
        None, gt=0, description="Peak DRAM bandwidth per socket, GB/s (None = no figure)"
    )
    memory_source: str = Field("", description="Where the memory figures come from")

    @model_validator(mode="after")
    def _memory_consistent(self) -> Cpu:
        """Channels and rate, when given, make the bandwidth; a bandwidth has a source."""
        bandwidth = self.memory_gbyte_per_s
        if bandwidth is not None and not self.memory_source:
            raise ValueError(f"{self.id}: memory_gbyte_per_s needs a memory_source")
        if self.memory_channels is not None and self.memory_mt_per_s is not None:
            derived = self.memory_channels * self.memory_mt_per_s * DDR_CHANNEL_BYTES / 1e3
            if bandwidth is None or abs(bandwidth - derived) > 1e-6 * derived:
                raise ValueError(
                    f"{self.id}: memory_gbyte_per_s = {bandwidth} is not memory_channels x "
                    f"memory_mt_per_s x {DDR_CHANNEL_BYTES} B = {derived:g} GB/s"
                )
        return self


class Node(CatalogRow):
    manufacturer: str = Field(description="Vendor name as NetBox should show it")
    gpu: str
    num_gpus: int
    u_height: int
    max_kw: float
    typical_kw: float
    num_psus: int
    psu_kw: float
    psus_required: int = Field(description="PSUs needed to carry max load (N of N+M)")
    cpu: str
    num_cpus: int
    memory_gib: int
    compute_nic: str
    num_compute_nics: int
    compute_hca_names: list[str] = Field(
        default_factory=list,
        description="RDMA device names of the compute NIC ports in rail order (rail i serves "
        "GPU i); empty when the vendor publishes no fixed names",
    )
    compute_hca_source: str = Field("", description="Where compute_hca_names come from")
    compute_ib_netdev_names: list[str] = Field(
        default_factory=list,
        description="Network interface names of the compute ports in rail order when they run "
        "InfiniBand (IPoIB netdevs); empty when the vendor publishes none",
    )
    compute_ib_netdev_source: str = Field("", description="Where compute_ib_netdev_names come from")
    compute_nic_twin_cages: int = Field(
        description="Twin-port OSFP cages carrying the compute NIC ports (0 = one module per NIC)"
    )
    num_storage_ports: int
    storage_port_gbit_per_s: float
    num_inband_ports: int
    inband_port_gbit_per_s: float
    storage_inband: Literal["separate", "converged"] = Field(
        "separate",
        description="Reference design of the storage and in-band networks: 'separate' = a "
        "storage fabric of the compute fabric's kind plus a 100 GbE in-band fabric (DGX "
        "SuperPOD H100/B200); 'converged' = one Ethernet fabric for both, reached through the "
        "storage ports (DGX SuperPOD GB200: the compute trays' BlueField-3 ports)",
    )
    storage_leaf_oversubscription: float = Field(
        1.0,
        ge=1.0,
        description="Converged fabric: endpoint to up-link bandwidth of its leaves (5:3 in the "
        "DGX SuperPOD GB200); 1 = non-blocking",
    )
    nvlink_domain_gpus: int
    rack_scale_nodes: int = Field(0, description="Nodes in a fixed rack-scale system (NVL72: 18)")
    rack_overhead_kw: float = Field(0.0, description="Rack-scale overhead: switch trays, shelves")
    rack_overhead_u: int = 0
    rack_switch_trays: int = Field(
        0,
        ge=0,
        description="Rack-scale systems: 1U NVLink switch trays (NVL72: 9), drawn "
        "between the compute trays",
    )
    rack_nodes_above_switches: int = Field(
        0,
        ge=0,
        description="Rack-scale systems: compute trays above the switch trays "
        "(NVL72: 10 above, the rest below)",
    )
    rack_overhead_kg: float = Field(
        0.0,
        description="Rack-scale systems: mass of the rack's own parts besides the trays, the "
        "rack frame and the power shelves (NVLink switch trays, busbar, manifolds, cable "
        "cartridges), kg",
    )
    cooling: Literal["air", "liquid"]
    weight_kg: float
    price_usd: float
    price_date: str

    @model_validator(mode="after")
    def _converged_ports(self) -> Node:
        """A converged node reaches storage and in-band through its storage ports alone."""
        if self.storage_inband == "converged" and (
            self.num_storage_ports < 1 or self.num_inband_ports
        ):
            raise ValueError(
                f"{self.id}: storage_inband = 'converged' carries in-band traffic on the storage "
                "ports; set num_storage_ports >= 1 and num_inband_ports = 0"
            )
        return self


class StorageBlock(CatalogRow):
    manufacturer: str = Field(description="Vendor name as NetBox should show it")
    u_height: int
    usable_tbyte: float
    read_gbyte_per_s: float
    write_gbyte_per_s: float
    power_kw: float
    num_ports: int
    port_gbit_per_s: float
    parallel: bool = Field(
        description="A parallel file system that scales out by adding blocks under one "
        "namespace; false for a single NFS server"
    )
    weight_kg: float
    price_usd: float
    price_date: str


class FacilityItem(CatalogRow):
    manufacturer: str = Field(description="Vendor name as NetBox should show it")
    price_usd: float
    u_height: int
    power_kw: float = 0.0
    weight_kg: float = Field(description="Mass of one item, kg (0 for items off the rack)")


class PowerPath(CatalogRow):
    """How a rack's feed circuits reach its devices: one catalog row per way of building it.

    Each circuit of each feed ends on one rack-end device (``circuit_device``: a zero-U PDU
    the devices' PSUs plug into, or a power shelf on the rack's DC busbar) reached through
    ``circuit_items`` bought per circuit (a busway tap-off box, or nothing beyond the whip).
    """

    feeds: PowerEntry = Field(
        description="What the rack's devices take power from: their own PSUs (psu), or the "
        "rack's power shelves (power-shelf: rack-scale systems with no PSU in the trays)"
    )
    circuit_device: str = Field(description="Facility item at the rack end of each circuit")
    circuit_device_included: bool = Field(
        description="The rack-end device comes with the system and is priced in its node price"
    )
    circuit_items: list[str] = Field(
        default_factory=list, description="Facility items bought for each circuit upstream"
    )
    max_breaker_a: float = Field(description="Largest breaker the rack-end device takes, A")
    circuit_max_kw: float | None = Field(
        None,
        description="Rated output of the rack-end device (a power shelf), kW: the most one "
        "circuit carries; None when only the breaker limits it (a PDU)",
    )
    max_circuits_per_feed: int = Field(description="Rack-end devices a rack holds per feed")
