"""A GPU's ceilings and the roofline time of one kernel on it.

The model is Calculon's (Isaev et al. SC'23, §III: per-operation time from FLOPs and bytes
with size-dependent efficiency), simplified to a roofline per operation:

    t_op = max(FLOPs / (eta_shape x eta_gemm x MAMF), bytes / (eta_hbm x HBM)) + t_kernel

where MAMF is the measured achievable matmul throughput of the GPU (maximum achievable matmul
FLOPS, measured with the best GEMM shape; Bekman, "Machine Learning Engineering",
``compute/accelerator/README.md``), not the datasheet peak. ``eta_gemm`` is the large-shape
efficiency a training step sustains (per GPU where its calibration runs fit one, see
``[[sustained_gemm]]``); ``eta_shape`` (:func:`gemm_shape_efficiency`) is what a GEMM of a
given shape keeps of it once its output is cut into tiles and the tiles run in waves over the SMs. An
FP8 GEMM on Hopper adds the part of its BF16 output write that the FP8 ceiling would have
shrunk (:func:`fp8_epilogue_s`). All constants live in ``data/efficiency.toml`` with their
sources.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from clusterforge.catalog import Gpu, gpu_architecture, load_catalog
from clusterforge.constants import read_constants
from clusterforge.errors import PlanError
from clusterforge.perf.blockscale import check_block_scaled
from clusterforge.perf.power_limit import limit_share

__all__ = [
    "BF16_BYTES",
    "GpuPerf",
    "PerfConstants",
    "check_precision",
    "fp8_epilogue_s",
    "gemm_shape_efficiency",
    "gemm_time_s",
    "gemm_waves",
    "gpu_perf",
    "load_constants",
    "memory_time_s",
]

BF16_BYTES = 2


@dataclass(frozen=True)
class PerfConstants:
    """The model's global constants (see ``data/efficiency.toml`` for sources)."""

    default_mamf_fraction: float
    gemm_efficiency_of_mamf: float
    flash_attention_efficiency_of_mamf: float
    flash_attention_backward_ratio: float
    hbm_efficiency: float
    kernel_overhead_s: float
    overlap_interference: float
    optimizer_bytes_per_param: float
    gemm_tile_m: float
    gemm_tile_n: float
    gemm_split_k_min: float
    mamf_tflops: dict[tuple[str, str], float]
    cudnn_attention_tflops: dict[str, tuple[float, float]]
    flash_attention_tflops: dict[str, tuple[float, float]]
    sustained_gemm_of_mamf: dict[str, float]
    # Share of MAMF a lone GEMM keeps at training shapes, for GPUs whose sustained share is
    # derived from GEMM microbenchmarks (``microbench_share`` of ``[[sustained_gemm]]``).
    gemm_microbench_share: dict[str, float]
    sdpa_flash_tflops: dict[str, float]


@cache
def load_constants() -> PerfConstants:
    """Read ``data/efficiency.toml`` once."""
    text = resources.files("clusterforge.perf").joinpath("data", "efficiency.toml").read_text()
    raw = tomllib.loads(text)
    mamf: dict[tuple[str, str], float] = {}
    for row in raw["mamf"]:
        mamf[(row["gpu"], "bf16")] = float(row["bf16_tflops"])
        if row["fp8_tflops"] > 0:
            mamf[(row["gpu"], "fp8")] = float(row["fp8_tflops"])
    cudnn = _kernel_rates(raw, "cudnn_attention")
    flash = _kernel_rates(raw, "flash_attention")
    sdpa = {row["gpu"]: float(row["forward_tflops"]) for row in raw.get("sdpa_flash_attention", [])}
    sustained = {row["gpu"]: float(row["efficiency_of_mamf"]) for row in raw["sustained_gemm"]}
    lone = {
        row["gpu"]: float(row["microbench_share"])
        for row in raw["sustained_gemm"]
        if "microbench_share" in row
    }
    tagged = read_constants("clusterforge.perf", "efficiency.toml", section="constants")
    scalars = {name: tagged.number(name) for name in tagged}
    return PerfConstants(
        mamf_tflops=mamf,
        cudnn_attention_tflops=cudnn,
        flash_attention_tflops=flash,
        sdpa_flash_tflops=sdpa,
        sustained_gemm_of_mamf=sustained,
        gemm_microbench_share=lone,
        **scalars,
    )


def _kernel_rates(raw: dict[str, Any], table: str) -> dict[str, tuple[float, float]]:
    """Measured (forward, backward) TFLOP/s of one attention kernel, per GPU id."""
    return {
        row["gpu"]: (float(row["forward_tflops"]), float(row["backward_tflops"]))
        for row in raw.get(table, [])
    }


@dataclass(frozen=True)
class GpuPerf:
    """What the compute model needs of one GPU at one matmul precision."""

    gpu_id: str
    peak_bf16_tflops: float
    matmul_tflops: float
    hbm_gbyte_per_s: float
    hbm_gib: float
    # Share of the ceiling the large GEMMs of a training step sustain (``[[sustained_gemm]]``
    # row of the GPU, else ``gemm_efficiency_of_mamf``).
    gemm_efficiency: float
    bf16_matmul_tflops: float = 0.0
    num_sms: int = 0
    # Measured / catalog GEMM rate of a calibrated cluster: fixed attention-kernel rates
    # (cuDNN rows of efficiency.toml) move with it.
    attention_scale: float = 1.0

    def at_bf16(self) -> GpuPerf:
        """The same GPU with the BF16 matmul ceiling (attention, logits in FP8 runs)."""
        return replace(self, matmul_tflops=self.bf16_matmul_tflops or self.matmul_tflops)


def _peak_ratio(gpu: Gpu) -> float:
    """The GPU's BF16 datasheet peak over its catalog part's (1.0 for the catalog part).

    The measured ceilings of ``data/efficiency.toml`` (MAMF, attention kernels) were taken on
    the catalog part at its datasheet power. A part that states a lower peak, for instance
    the same chip run under a lower power limit, runs its tensor cores at a lower sustained
    clock, and every compute-bound kernel's rate scales with that clock, so the measured
    ceilings keep their share of the peak.
    """
    parts = load_catalog().gpus
    if gpu.id not in parts or parts[gpu.id].bf16_dense_tflops <= 0:
        return 1.0
    return gpu.bf16_dense_tflops / parts[gpu.id].bf16_dense_tflops


def check_precision(gpu: Gpu, precision: str) -> None:
    """Refuse FP8 on a GPU without FP8 tensor cores (catalog ``fp8_dense_tflops`` = 0).

    Transformer Engine enables FP8 only from compute capability 8.9 (Ada, Hopper and later):
    ``check_fp8_support`` returns "Device compute capability 8.9 or higher required for FP8
    execution." and ``fp8_autocast`` asserts on it (NVIDIA/TransformerEngine@62a84b3,
    transformer_engine/pytorch/fp8.py; its JAX ``_check_delayed_scaling_fp8_support`` says
    the same). Pricing such a plan with the BF16 GEMM rate and the FP8 casts, weights and
    scaling would predict a run that cannot start. MXFP8 and NVFP4 need compute capability
    10.x (:func:`~clusterforge.perf.blockscale.check_block_scaled`).
    """
    check_block_scaled(gpu, precision)
    if precision == "fp8" and gpu.fp8_dense_tflops <= 0:
        raise PlanError(
            f"precision fp8 on {gpu.id}: the GPU has no FP8 tensor cores (FP8 training needs "
            "compute capability 8.9 or higher); use bf16 or an FP8-capable GPU"
        )


def gpu_perf(gpu: Gpu, precision: str, constants: PerfConstants | None = None) -> GpuPerf:
    """MAMF ceiling for ``precision`` (fp16 = bf16; missing FP8 rows use the BF16 fraction),
    scaled by :func:`_peak_ratio` when the GPU states another peak than its catalog part, and
    by :func:`clusterforge.perf.power_limit.limit_share` under a board power limit.

    The FP8 ceiling was measured without fast accumulation (``torch._scaled_mm`` default), the
    mode every FP8 recipe (Transformer Engine, torchao, XLA) uses for its two backward GEMMs;
    one rate serves all three GEMMs, the forward's fast accumulation being left out.

    MXFP8 runs at the FP8 ceiling (Blackwell's block-scaled ``tcgen05.mma .kind::mxf8f6f4``
    takes the FP8 operands; the datasheets state one FP8/FP6 rate, :mod:`.blockscale`). NVFP4 has no measured ceiling: it keeps the FP8 ceiling's share of the FP8
    peak at the GPU's FP4 peak (every GEMM of Transformer Engine's NVFP4 recipe, forward and
    both backward, runs in FP4)."""
    c = constants or load_constants()
    ratio = _peak_ratio(gpu)
    default_bf16 = gpu.bf16_dense_tflops * c.default_mamf_fraction / ratio
    bf16 = c.mamf_tflops.get((gpu.id, "bf16"), default_bf16) * ratio
    matmul = bf16
    if precision in ("fp8", "mxfp8", "nvfp4") and gpu.fp8_dense_tflops > 0:
        fraction = bf16 / gpu.bf16_dense_tflops
        default_fp8 = gpu.fp8_dense_tflops * fraction / ratio
        matmul = c.mamf_tflops.get((gpu.id, "fp8"), default_fp8) * ratio
        if precision == "nvfp4" and gpu.fp4_dense_tflops > 0:
            matmul *= gpu.fp4_dense_tflops / gpu.fp8_dense_tflops
    share = limit_share(gpu)  # a board power limit below TDP (perf/power_limit.py)
    bf16, matmul = bf16 * share, matmul * share
    return GpuPerf(
        gpu_id=gpu.id,
        peak_bf16_tflops=gpu.bf16_dense_tflops,
        matmul_tflops=matmul,
        hbm_gbyte_per_s=gpu.hbm_tbyte_per_s * 1000.0,
        hbm_gib=gpu.hbm_gib,
        bf16_matmul_tflops=bf16,
        num_sms=gpu.num_sms,
        gemm_efficiency=c.sustained_gemm_of_mamf.get(gpu.id, c.gemm_efficiency_of_mamf),
        attention_scale=ratio * share,
    )


def memory_time_s(num_bytes: float, perf: GpuPerf, num_kernels: int = 1) -> float:
    """Streaming time of ``num_bytes`` through HBM at ``hbm_efficiency`` of the datasheet."""
    c = load_constants()
    bandwidth = perf.hbm_gbyte_per_s * 1e9 * c.hbm_efficiency
    return num_bytes / bandwidth + num_kernels * c.kernel_overhead_s


def _split_k(tiles: int, k: float, perf: GpuPerf) -> int:
    """Slices of the K loop when the output tiles cannot fill the SMs (split-K).

    Fewer tiles than SMs leave SMs idle, so GEMM libraries cut the K loop into slices run by
    different SMs and sum the partial tiles afterwards (CUTLASS ``GemmSplitKParallel``,
    cuBLAS's split-K heuristics; Osama et al. 2023, "Stream-K", arXiv 2301.03598, §2). A
    slice keeps at least ``gemm_split_k_min`` of K so its pipeline still fills.
    """
    c = load_constants()
    if tiles >= perf.num_sms:
        return 1
    return max(1, min(perf.num_sms // tiles, int(k // c.gemm_split_k_min)))


def _tiling(m: float, n: float, k: float, perf: GpuPerf, batch: float) -> tuple[float, int, int]:
    """(shape efficiency, split-K slices, waves) of the better tile orientation."""
    c = load_constants()
    best = (0.0, 1, 0)
    for tile_m, tile_n in ((c.gemm_tile_m, c.gemm_tile_n), (c.gemm_tile_n, c.gemm_tile_m)):
        tiles = math.ceil(m / tile_m) * math.ceil(n / tile_n) * math.ceil(batch)
        split = _split_k(tiles, k, perf)
        waves = math.ceil(tiles * split / perf.num_sms)
        efficiency = m * n * batch * split / (waves * perf.num_sms * tile_m * tile_n)
        best = max(best, (efficiency, split, -waves))
    return best[0], best[1], -best[2]


def gemm_shape_efficiency(m: float, n: float, k: float, perf: GpuPerf, batch: float = 1.0) -> float:
    """Share of the large-shape GEMM rate kept by ``batch`` GEMMs ``(m x k) @ (k x n)``.

    A GEMM kernel (CUTLASS, cuBLAS) cuts the output into ``tile_m x tile_n`` tiles, one
    thread block per tile, and runs them in waves of one tile per SM (Nvidia, "Matrix
    Multiplication Background User's Guide", sections "Tile Quantization" and "Wave
    Quantization"); when the tiles cannot fill the SMs the K loop is split
    (:func:`_split_k`, ``s`` slices). Every tile slice costs a whole slice's time, so:

        eta_shape = m n batch s / (ceil(tiles s / num_sms) x num_sms x tile_m x tile_n),
        tiles = ceil(m / tile_m) x ceil(n / tile_n) x batch

    with tile-edge waste (``m``, ``n`` not multiples of the tile) and a last wave that leaves
    SMs idle. The better of the two tile orientations is taken (libraries ship both). It
    tends to 1 for large shapes, so the large-shape rate stays ``GpuPerf.gemm_efficiency``;
    GPUs without an SM count keep it for every shape.
    """
    if perf.num_sms == 0 or m <= 0 or n <= 0:
        return 1.0
    return _tiling(m, n, k, perf, batch)[0]


def gemm_waves(m: float, n: float, k: float, perf: GpuPerf, batch: float = 1.0) -> int:
    """Waves of output tiles, split-K slices counted, in the orientation
    :func:`gemm_shape_efficiency` takes (0 on GPUs without an SM count)."""
    if perf.num_sms == 0 or m <= 0 or n <= 0:
        return 0
    return _tiling(m, n, k, perf, batch)[2]


@cache
def _register_accumulators(gpu_id: str) -> bool:
    """True when ``gpu_id``'s tensor cores accumulate in the registers of the warps that also
    run the epilogue (CUDA ISA below sm_100: Ada, Hopper). Blackwell (sm_100 on) accumulates
    in Tensor Memory, and its GEMM kernels double-buffer that accumulator so that one tile's
    epilogue drains while the next tile's MMAs run. Unknown GPUs: False (no term)."""
    catalog = load_catalog()
    if not any(gpu_id in a.gpus for a in catalog.architectures):
        return False
    isa = gpu_architecture(catalog, gpu_id).isa
    return isa.startswith("sm_") and isa[3:].isdigit() and int(isa[3:]) < 100


def fp8_epilogue_s(
    m: float, n: float, perf: GpuPerf, batch: float = 1.0, output_bytes: float = BF16_BYTES
) -> float:
    """Output-write time an FP8 GEMM on Hopper keeps that its FP8 ceiling would have shrunk.

    A GEMM kernel runs each output tile's main loop (operand loads, tensor-core MMAs) and
    then its epilogue (scale, convert, store the tile). On Hopper a tile's epilogue overlaps
    the math of another tile only in the ping-pong kernel schedule; in the cooperative one
    both consumer warp groups work on the same tile (CUTLASS
    ``media/docs/cpp/efficient_gemm.md``, "Hopper Warp Specialization", at 21779de), so the
    store is taken as exposed. The large-shape share is calibrated on BF16 training runs, so
    a BF16 GEMM's exposed store is inside it; an FP8 GEMM runs at that share of the FP8
    ceiling, which divides the store's time by the FP8 over BF16 ceiling ratio ``r`` as
    well, although its output is still written in BF16 (torchao ``_scaled_mm`` with
    ``out_dtype=bfloat16``, Transformer Engine's FP8 GEMMs). What the ratio took away is added
    back, with nothing fitted:

        t = output bytes / (eta_hbm x HBM) x (1 - 1 / r),  r = MAMF_fp8 / MAMF_bf16

    It is zero for BF16 GEMMs (``r = 1``) and on GPUs without register accumulators
    (:func:`_register_accumulators`), and its share grows as K shrinks relative to the output
    (Llama 3 8B at TP 8: K = 512 for the row-parallel attention output).
    """
    if perf.bf16_matmul_tflops <= 0 or perf.matmul_tflops <= perf.bf16_matmul_tflops:
        return 0.0
    if not _register_accumulators(perf.gpu_id):
        return 0.0
    c = load_constants()
    write_s = output_bytes * m * n * batch / (perf.hbm_gbyte_per_s * 1e9 * c.hbm_efficiency)
    return write_s * (1.0 - perf.bf16_matmul_tflops / perf.matmul_tflops)


def gemm_time_s(
    m: float,
    n: float,
    k: float,
    perf: GpuPerf,
    batch: float = 1.0,
    *,
    output_bytes: float = BF16_BYTES,
) -> float:
    """Roofline time of ``batch`` GEMMs ``(m x k) @ (k x n)`` in BF16 storage (one kernel).

    Compute runs at the large-shape rate times :func:`gemm_shape_efficiency`; a GEMM with
    few FLOPs per byte (small ``m`` or ``k``) is bound by HBM instead. ``output_bytes`` is
    the HBM traffic per output element: a BF16 write by default, more for a weight gradient
    accumulated into an FP32 buffer (read and write, 8 bytes).
    """
    c = load_constants()
    flops = 2.0 * m * n * k * batch
    num_bytes = (BF16_BYTES * (m * k + k * n) + output_bytes * m * n) * batch
    efficiency, split = 1.0, 1
    if perf.num_sms > 0 and m > 0 and n > 0:
        efficiency, split, _ = _tiling(m, n, k, perf, batch)
    # Split-K partial tiles are written and read back in FP32 before the final sum.
    num_bytes += 2 * 4 * m * n * batch * (split - 1)
    rate = perf.matmul_tflops * 1e12 * perf.gemm_efficiency
    compute_s = flops / (rate * efficiency) + fp8_epilogue_s(m, n, perf, batch, output_bytes)
    memory_s = num_bytes / (perf.hbm_gbyte_per_s * 1e9 * c.hbm_efficiency)
    return max(compute_s, memory_s) + c.kernel_overhead_s
