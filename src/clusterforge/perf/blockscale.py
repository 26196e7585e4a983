"""Blackwell's block-scaled training precisions, MXFP8 and NVFP4 (Transformer Engine).

Formats (NVIDIA/TransformerEngine v2.9, 70f5366, ``transformer_engine/common/recipe/
__init__.py``):

* ``MXFP8BlockScaling``: every 32 consecutive values share one E8M0 scale (1 B), the values
  are E4M3 (1 B): 1 + 1/32 B per element and orientation;
* ``NVFP4BlockScaling``: every 16 consecutive values share one E4M3 scale (1 B), the values
  are E2M1 (0.5 B), plus one FP32 scale per tensor: 0.5 + 1/16 B per element and
  orientation. Weights take one scale per 16 x 16 block (``fp4_2d_quantization``), inputs
  and gradients a random Hadamard transform on their column-wise (weight-gradient) copy,
  gradients stochastic rounding.

Both recipes scale along one direction, the GEMM's contraction dimension, so a tensor that a
GEMM consumes row-wise (forward: input and weight; backward: the output gradient for the
input gradient) and another column-wise (weight gradient: input and output gradient; input
gradient: weight) is quantized twice, "both versions computed from the high precision
input" (the recipes' docstrings), never transposed from one another. A GEMM input saved for
the backward keeps only its column-wise copy ("Discard row-wise data since it is not needed
in backward pass", ``transformer_engine/pytorch/module/linear.py`` at v2.9).

Quantization passes, bytes per element of a BF16 tensor (2 B read per pass):

* MXFP8: one ``nvte_quantize`` kernel writes both copies: 2 + 2 x (1 + 1/32) = 4.0625 B;
  the norm before QKV and FC1 does not emit MXFP8 itself unless ``NVTE_NORM_FWD_USE_CUDNN``
  is set (``Impl::UNFUSED`` for MXFP8 quantizers, ``transformer_engine/pytorch/csrc/
  extensions/normalization.cpp`` at v2.9), so every GEMM input pays the whole cast;
* NVFP4 with the Hadamard transform (inputs, gradients): ``NVFP4Quantizer::quantize_impl``
  (``transformer_engine/pytorch/csrc/quantizer.cpp`` at v2.9) first reads the tensor for the
  amax (``nvte_hadamard_transform_amax``, 2 B), then quantizes the row-wise copy
  (``nvte_quantize_v2``: 2 + 0.5625 B) and the column-wise copy through the fused Hadamard
  cast (``nvte_hadamard_transform_cast_fusion_columnwise``: 2 + 0.5625 B): 7.125 B in three
  kernels; the norm takes the same unfused path when the quantizer applies the transform;
* NVFP4 weights (no transform): an amax read (``nvte_compute_amax_with_config``, 2 B) and
  one quantize writing both copies (2 + 2 x 0.5625 B): 5.125 B in two kernels.

Transformer Engine runs both recipes only from compute capability 10.0: ``check_mxfp8_support``
("Device compute capability 10.0 or higher required for MXFP8 execution.", and not on 12.0+
yet) and ``check_nvfp4_support`` (10.0 or higher), ``transformer_engine/pytorch/
quantization.py`` at v2.9. The block-scaled tensor-core MMAs are Blackwell's
``tcgen05.mma ... .block_scale`` with ``.kind::mxf8f6f4`` (MXFP8 on the FP8/FP6 operand
types) and ``.kind::mxf4nvf4`` (NVFP4), PTX ISA 8.6, ``sm_100a`` / ``sm_103a`` (NVIDIA PTX
ISA, "tcgen05.mma"; NVIDIA CCCL ``cuda::ptx`` tcgen05_mma reference). NVIDIA's datasheets
state one FP8/FP6 tensor rate and no separate MX rate, so MXFP8 is priced at the FP8 peak.

The recipes are Transformer Engine's, so only the stacks that run Megatron-Core with
Transformer Engine price them (:data:`BLOCK_SCALED_STACKS`).
"""

from __future__ import annotations

from typing import Literal

from clusterforge.catalog import Gpu, gpu_architecture, load_catalog
from clusterforge.errors import PlanError

__all__ = [
    "BLOCK_SCALED",
    "BLOCK_SCALED_STACKS",
    "check_block_scaled",
    "check_block_scaled_stack",
    "copy_bytes",
    "is_block_scaled",
    "operand_cast",
    "param_weight_bytes",
    "saved_input_bytes",
    "weight_cast",
    "weight_copy_bytes",
]

BlockScaled = Literal["mxfp8", "nvfp4"]
BLOCK_SCALED: tuple[BlockScaled, ...] = ("mxfp8", "nvfp4")
# Values per shared scale and bytes per value (recipe docstrings, TE v2.9).
BLOCK_ELEMENTS = {"mxfp8": 32, "nvfp4": 16}
VALUE_BYTES = {"mxfp8": 1.0, "nvfp4": 0.5}  # E4M3; E2M1
SCALE_BYTES = 1.0  # E8M0 (MXFP8), E4M3 (NVFP4)
BF16_READ_BYTES = 2.0
# Compute capabilities (major, minor) Transformer Engine runs each recipe on, [low, high).
CAPABILITIES = {"mxfp8": ((10, 0), (12, 0)), "nvfp4": ((10, 0), (99, 99))}
BLOCK_SCALED_STACKS = ("megatron-core", "nemo", "megatron-bridge")


def is_block_scaled(precision: str) -> bool:
    """True for the block-scaled precisions ``mxfp8`` and ``nvfp4``."""
    return precision in BLOCK_SCALED


def copy_bytes(precision: str) -> float:
    """Bytes per element of one quantized orientation: values plus their block scales."""
    return VALUE_BYTES[precision] + SCALE_BYTES / BLOCK_ELEMENTS[precision]


def operand_cast(precision: str) -> tuple[float, int]:
    """(HBM bytes per element, kernels) to quantize one activation or gradient both ways."""
    both = 2 * copy_bytes(precision)
    if precision == "mxfp8":
        return BF16_READ_BYTES + both, 1
    # NVFP4: amax pass, row-wise quantize, fused Hadamard column-wise quantize.
    return 3 * BF16_READ_BYTES + both, 3


def weight_cast(precision: str) -> tuple[float, int]:
    """(HBM bytes per parameter, kernels) to quantize one weight both ways."""
    both = 2 * copy_bytes(precision)
    if precision == "mxfp8":
        return BF16_READ_BYTES + both, 1
    return 2 * BF16_READ_BYTES + both, 2  # NVFP4: amax pass, one 2D-scaled quantize


def weight_copy_bytes(precision: str) -> float:
    """Bytes per parameter of the cached quantized weight (row-wise and column-wise)."""
    return 2 * copy_bytes(precision)


def param_weight_bytes(precision: str, bf16_bytes: float, quantized_only: bool) -> float:
    """Resident bytes per parameter of a block-scaled run's weights.

    ``quantized_only`` (Megatron-Core ``fp8_param_gather``): the parameters are Transformer
    Engine MXFP8 / NVFP4 tensors with both orientations (``reset_parameters`` sets the
    primary weights' quantizer ``rowwise=True, columnwise=torch.is_grad_enabled()``,
    ``transformer_engine/pytorch/module/base.py`` at v2.9), and the distributed optimizer's
    BF16 parameter buffer is a view of the gradient buffer ("Create a shared buffer for param
    AG and grad RS", ``megatron/core/distributed/param_and_grad_buffer.py`` at NVIDIA/
    Megatron-LM@0d8e0714, Megatron-Bridge v0.2.0's pin): the quantized copy alone. Else the
    BF16 weights (``bf16_bytes``) and their cached row- and column-wise quantized copies.
    """
    if quantized_only:
        return weight_copy_bytes(precision)
    return bf16_bytes + weight_copy_bytes(precision)


def saved_input_bytes(precision: str) -> float:
    """Bytes per element of a GEMM input kept for the weight gradient (column-wise copy)."""
    return copy_bytes(precision)


def _capability(gpu_id: str) -> tuple[int, int] | None:
    """The GPU's compute capability from its catalog architecture's ISA (None: unknown)."""
    catalog = load_catalog()
    if not any(gpu_id in a.gpus for a in catalog.architectures):
        return None
    isa = gpu_architecture(catalog, gpu_id).isa
    if not isa.startswith("sm_") or not isa[3:].isdigit():
        return None
    number = int(isa[3:])
    return number // 10, number % 10


def check_block_scaled(gpu: Gpu, precision: str) -> None:
    """Refuse MXFP8 / NVFP4 on a GPU whose compute capability Transformer Engine refuses
    (``check_mxfp8_support`` / ``check_nvfp4_support``), or NVFP4 without an FP4 peak."""
    if not is_block_scaled(precision):
        return
    low, high = CAPABILITIES[precision]
    capability = _capability(gpu.id) if gpu.vendor == "nvidia" else None
    fp4_missing = precision == "nvfp4" and gpu.fp4_dense_tflops <= 0
    if capability is None or not low <= capability < high or fp4_missing:
        raise PlanError(
            f"precision {precision} on {gpu.id}: Transformer Engine runs {precision.upper()} "
            "only on compute capability 10.x (Blackwell: B200, GB200, B300, GB300); use bf16 "
            "or fp8, or a Blackwell GPU"
        )


def check_block_scaled_stack(stack_name: str, precision: str) -> None:
    """Refuse MXFP8 / NVFP4 on a stack that does not run Transformer Engine's recipes."""
    if is_block_scaled(precision) and stack_name not in BLOCK_SCALED_STACKS:
        raise PlanError(
            f"precision {precision} with stack {stack_name}: the block-scaled recipes are "
            f"modelled for Transformer Engine stacks only ({', '.join(BLOCK_SCALED_STACKS)})"
        )
