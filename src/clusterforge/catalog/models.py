"""Typed rows of the hardware catalog. Units are in the field names; every row has a source."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "FORM_FACTORS",
    "HOST_LINKS",
    "SCALEUPS",
    "Cage",
    "Container",
    "Cpu",
    "FacilityItem",
    "FormFactor",
    "Gpu",
    "GpuArchitecture",
    "HostLink",
    "LrSchedule",
    "Medium",
    "ModelArch",
    "Nic",
    "Node",
    "Part",
    "PartMode",
    "PortMode",
    "PowerEntry",
    "PowerPath",
    "Scaleup",
    "StorageBlock",
    "Switch",
    "Toolkit",
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

Toolkit = Literal["cuda", "rocm"]
"""The GPU compiler toolkit a container is built with: NVIDIA CUDA or AMD ROCm."""

Cage = Literal["osfp-finned", "osfp-flat", "qsfp", "rj45"]
"""The socket a transceiver or cable end plugs into: an OSFP cage with a finned-top (IHS) plug
(air-cooled Quantum-2 / Spectrum-4 switches), an OSFP cage with a riding heat sink that takes
flat-top (RHS) plugs (ConnectX-7/8 adapters, DGX H100 twin-port cages), the QSFP family
(QSFP28 / QSFP56 / QSFP112, one plug shape), or an RJ45 copper jack (NVIDIA LinkX 100G-PAM4
user guide, "connector types")."""

FORM_FACTORS: tuple[FormFactor, ...] = get_args(FormFactor)
SCALEUPS: tuple[Scaleup, ...] = get_args(Scaleup)
HOST_LINKS: tuple[HostLink, ...] = get_args(HostLink)


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    name: str
    source: str = Field(description="Where the figures come from, with a confidence tag")


class Gpu(_Row):
    vendor: Literal["nvidia", "amd"]
    nvml_names: list[str] = Field(description="Names NVML reports for this GPU")
    hbm_gib: float
    hbm_gbyte: float
    hbm_tbyte_per_s: float
    tdp_w: float
    bf16_dense_tflops: float
    fp8_dense_tflops: float
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


class Cpu(_Row):
    num_cores: int
    tdp_w: float


class Nic(_Row):
    port_gbit_per_s: float
    num_ports: int
    cage: Cage | None = Field(
        None, description="Cage of each port (None: unknown, optics cannot be ordered)"
    )
    fabrics: list[Literal["infiniband", "ethernet"]]
    power_w: float
    price_usd: float


class Node(_Row):
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


class PortMode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    port_gbit_per_s: float
    num_ports: int
    ports_per_cage: int


class Switch(_Row):
    manufacturer: str = Field(description="Vendor name as NetBox should show it")
    fabric: Literal["infiniband", "ethernet"]
    cage: Cage | None = Field(
        None, description="Cage of the front ports (None: unknown, optics cannot be ordered)"
    )
    u_height: int
    typical_w: float
    max_w: float
    weight_kg: float
    price_usd: float
    price_date: str
    port_modes: list[PortMode]
    uplink_ports: int = 0
    uplink_gbit_per_s: float = 0.0
    in_network_reduction: bool = Field(
        False, description="Reduces in the switch (InfiniBand SHARP), so NCCL CollNet can run"
    )
    default_roles: list[
        Literal["compute-infiniband", "compute-roce", "in-band", "storage-inband", "out-of-band"]
    ] = Field(
        default_factory=list,
        description="Fabrics this switch is planned for when a spec names none (a role is "
        "held by exactly one switch)",
    )

    def radix_at(self, port_gbit_per_s: float) -> int | None:
        """Number of ports at the given speed, or None when the switch cannot run it."""
        mode = self.mode_at(port_gbit_per_s)
        return mode.num_ports if mode else None

    def mode_at(self, port_gbit_per_s: float) -> PortMode | None:
        for mode in self.port_modes:
            if mode.port_gbit_per_s == port_gbit_per_s:
                return mode
        return None


class Medium(_Row):
    netbox_type: str
    max_reach_m: float
    min_gbit_per_s: float = Field(description="Slowest lane rate the medium is sold for, Gb/s")
    max_gbit_per_s: float = Field(
        description="Fastest port speed the medium is specified (or recommended) for, Gb/s"
    )
    pluggable_optics: bool = Field(description="A transceiver is bought per end")


class PartMode(BaseModel):
    """How many links one module or cable serves at one port speed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    gbit_per_s: float = Field(description="Port speed of each link, Gb/s")
    num_links: int = Field(gt=0, description="Links one module (or cable) serves at that speed")


class Part(_Row):
    """An orderable cable or transceiver: ``id`` is the vendor's ordering part number."""

    media: list[str] = Field(description="The media (media.toml ids) this part realizes")
    kind: Literal["transceiver", "cable"]
    cages: list[Cage] = Field(
        description="Transceiver: the one cage it plugs into; cable with its own plugs (DAC, "
        "ACC, AOC, Cat6): the cages of its two ends; fibre: empty (it plugs into transceivers)"
    )
    modes: list[PartMode]
    power_w: float = Field(description="Power of one module, or of both ends of one cable, W")
    price_usd: float
    price_date: str = Field(description="Month the price holds for, YYYY-MM")
    price_source: str = Field(description="Where the price comes from, with a confidence tag")

    @model_validator(mode="after")
    def _cages_fit_kind(self) -> Part:
        if self.kind == "transceiver" and len(self.cages) != 1:
            raise ValueError(f"{self.id}: a transceiver plugs into exactly one cage")
        if self.kind == "cable" and len(self.cages) not in (0, 2):
            raise ValueError(f"{self.id}: a cable has two plugged ends, or none (a fibre)")
        return self

    def links_at(self, gbit_per_s: float) -> int | None:
        """Links one unit serves at ``gbit_per_s``, or None when it cannot run that speed."""
        return next((m.num_links for m in self.modes if m.gbit_per_s == gbit_per_s), None)


class StorageBlock(_Row):
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


class FacilityItem(_Row):
    manufacturer: str = Field(description="Vendor name as NetBox should show it")
    price_usd: float
    u_height: int
    power_kw: float = 0.0
    weight_kg: float = Field(description="Mass of one item, kg (0 for items off the rack)")


class PowerPath(_Row):
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


class LrSchedule(BaseModel):
    """A pre-training learning-rate schedule: linear warm-up from 0, then decay to a floor.

    The warm-up is counted in optimizer steps, the unit papers give it in (or convert to);
    the decay spans the rest of the run.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    peak_lr: float = Field(gt=0, le=1, description="Learning rate at the end of warm-up")
    min_lr: float = Field(ge=0, le=1, description="Learning rate the decay ends at")
    warmup_steps: int = Field(ge=0, le=10**7, description="Optimizer steps of linear warm-up")
    decay_style: Literal["cosine", "linear", "constant"] = Field(
        "cosine", description="Shape of the decay from peak_lr to min_lr"
    )
    source: str = "user-provided"


DEFAULT_LR_SCHEDULE = LrSchedule(
    peak_lr=3e-4,
    min_lr=3e-5,
    warmup_steps=2000,
    decay_style="cosine",
    source="[U] none published for this model: the Llama 2 recipe for its 7B model "
    "(Touvron et al. 2023, 'Llama 2', §2.2 and Table 1: 3e-4 peak, 2000 warm-up steps, "
    "cosine to 10 % of the peak)",
)


class ModelArch(BaseModel):
    """A transformer architecture (dense or MoE). Published presets live in data/models.toml.

    The defaults describe a Llama-style decoder (RMSNorm, no linear biases, RoPE with the
    RoFormer base of 10,000): what the performance model's parameter count assumes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str = "custom"
    name: str = "custom model"
    num_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int | None = Field(None, description="GQA key/value heads; None = num_heads")
    head_dim: int | None = Field(
        None,
        gt=0,
        description="Width of one attention head; None = hidden_size / num_heads (models "
        "such as Qwen3 and gpt-oss set it apart, so Q is num_heads x head_dim wide)",
    )
    ffn_hidden_size: int | None = Field(None, description="None = 4 x hidden (non-gated)")
    gated_mlp: bool = Field(
        False,
        description="SwiGLU MLP (SiLU-gated, three matrices); False = GeLU MLP (two matrices)",
    )
    vocab_size: int = Field(gt=0)
    seq_length: int = Field(2048, gt=0)
    num_experts: int = Field(1, ge=1, description="MoE experts per MoE layer (1 = dense)")
    top_k: int = Field(1, ge=1, description="Experts each token is routed to")
    sliding_window: int | None = Field(
        None,
        gt=0,
        description="Keys each query attends to in the sliding-window layers (None = none)",
    )
    sliding_window_layers: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of the layers that attend over sliding_window keys (gpt-oss: 0.5, "
        "every other layer); the others attend over the whole causal prefix",
    )
    tied_embeddings: bool = Field(
        False, description="The output layer reuses the input embedding matrix"
    )
    parallel_block: bool = Field(
        False,
        description="Attention and MLP read one norm's output in parallel (GPT-J, PaLM)",
    )
    position_embedding: Literal["rope", "learned", "alibi"] = Field(
        "rope", description="Rotary (RoPE), learned absolute, or ALiBi attention biases"
    )
    rotary_base: int = Field(
        10_000, gt=0, description="RoPE base frequency theta (RoFormer's 10,000; Llama 3 500,000)"
    )
    normalization: Literal["rmsnorm", "layernorm"] = Field(
        "rmsnorm", description="Norm before attention, before the MLP and after the last layer"
    )
    linear_bias: bool = Field(
        False, description="The attention and MLP linear layers have bias vectors (GPT-2/3)"
    )
    tokenizer: str | None = Field(
        None,
        description="Hugging Face Hub id of the model's tokenizer (None = none published: "
        "the training job gets a placeholder tokenizer of vocab_size tokens)",
    )
    lr_schedule: LrSchedule = Field(
        DEFAULT_LR_SCHEDULE, description="Pre-training learning-rate schedule"
    )
    source: str = "user-provided"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


class GpuArchitecture(_Row):
    """GPUs that share an instruction set, and the oldest toolkit that compiles for it."""

    toolkit: Toolkit
    isa: str = Field(description="Instruction set the toolkit targets: sm_90, gfx942, ...")
    min_toolkit_version: str = Field(
        pattern=r"^\d+\.\d+$", description="Oldest toolkit release (major.minor) with this ISA"
    )
    gpus: list[str] = Field(min_length=1, description="Catalog GPU ids of this architecture")


class Container(_Row):
    """A training container image: its toolkit, the architectures it runs on, its date."""

    image: str = Field(description="Registry reference with its tag")
    framework: Literal["megatron"] = Field(
        description="Training code the image carries; megatron = Megatron-LM with pretrain_gpt.py"
    )
    toolkit: Toolkit
    toolkit_version: str = Field(
        pattern=r"^\d+\.\d+$", description="Toolkit (major.minor) the image is built with"
    )
    architectures: list[str] = Field(min_length=1, description="GpuArchitecture ids it runs on")
    release_date: str = Field(pattern=r"^\d{4}-\d{2}$", description="Month of release, YYYY-MM")
    pretrain_gpt_path: str = Field(description="Absolute path of pretrain_gpt.py in the image")

    def compiles_for(self, arch: GpuArchitecture) -> bool:
        """True when the image's toolkit is the architecture's and new enough for its ISA."""
        return self.toolkit == arch.toolkit and _version_key(self.toolkit_version) >= _version_key(
            arch.min_toolkit_version
        )
