"""Published GEMM microbenchmarks (``gemm_microbench.toml``) and the sustained share of MAMF
derived from them for GPUs without calibration runs.

A row is one GPU's measured throughput on one GEMM shape with nothing else running. Against the
model's own rate for that shape at a share of 1, the GPU's MAMF for the precision
(:func:`~clusterforge.perf.roofline.gpu_perf`) times the tile and wave quantisation of the shape
(:func:`~clusterforge.perf.roofline.gemm_shape_efficiency`), a row gives the share of MAMF the
GPU's GEMM library keeps at that shape::

    microbenchmark share = measured TFLOP/s / (MAMF x eta_shape)

and a GPU's microbenchmark share is the median over its rows of one precision.

A training step keeps less than a lone GEMM does (clocks under minutes of mixed load, GEMMs
between other kernels). Where a GPU has training runs in the calibration set its share is
fitted on them (``[[sustained_gemm]]``, tag ``fitted``: the H100's 0.78). The H100's fitted
share over its microbenchmark share is the *step factor*, what the training step costs a GEMM
beyond the microbenchmark; a GPU with microbenchmark rows but no calibration runs takes::

    sustained share = microbenchmark share(GPU) x step factor

i.e. the microbenchmarks carry what differs between the GPUs' GEMM libraries at training
shapes, the H100 calibration runs what a training step adds, assumed the same on every GPU.
"""

from __future__ import annotations

import statistics
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Literal

from clusterforge.catalog import load_catalog
from clusterforge.perf.roofline import gemm_shape_efficiency, gpu_perf, load_constants
from validation.sets import Subset, data_files, file_rows, kind_of

__all__ = [
    "STEP_FACTOR_GPU",
    "GemmRow",
    "derived_share",
    "load_gemm_rows",
    "microbenchmark_share",
    "row_share",
    "step_factor",
]

Precision = Literal["bf16", "fp8"]
# The GPU whose fitted share (calibration runs) and microbenchmark share give the step factor.
STEP_FACTOR_GPU = "h100-sxm"


@dataclass(frozen=True)
class GemmRow:
    """One measured GEMM: ``batch`` products ``(m x k) @ (k x n)`` on one ``gpu``."""

    id: str
    subset: Subset
    source: str
    gpu: str
    precision: Precision
    m: int
    n: int
    k: int
    batch: int
    gemm_tflops: float


@cache
def load_gemm_rows() -> tuple[GemmRow, ...]:
    """Every GEMM microbenchmark row of the data files of ``validation/``."""
    rows = []
    for path in data_files():
        for row in file_rows(tomllib.loads(path.read_text())):
            if kind_of(row) == "gemm":
                rows.append(
                    GemmRow(
                        id=row["id"],
                        subset=row["set"],
                        source=row["source"],
                        gpu=row["gpu"],
                        precision=row["precision"],
                        m=int(row["m"]),
                        n=int(row["n"]),
                        k=int(row["k"]),
                        batch=int(row.get("batch", 1)),
                        gemm_tflops=float(row["gemm_tflops"]),
                    )
                )
    return tuple(rows)


def row_share(row: GemmRow) -> float:
    """The share of MAMF the row's GEMM kept: measured / (MAMF x eta_shape)."""
    perf = gpu_perf(load_catalog().gpus[row.gpu], row.precision)
    shape = gemm_shape_efficiency(row.m, row.n, row.k, perf, row.batch)
    return row.gemm_tflops / (perf.matmul_tflops * shape)


def microbenchmark_share(gpu_id: str, precision: Precision = "bf16") -> float:
    """Median :func:`row_share` over the calibration rows of ``gpu_id`` at ``precision``."""
    shares = [
        row_share(r)
        for r in load_gemm_rows()
        if r.gpu == gpu_id and r.precision == precision and r.subset == "calibration"
    ]
    if not shares:
        raise ValueError(f"no {precision} GEMM microbenchmark rows for {gpu_id!r}")
    return statistics.median(shares)


def step_factor() -> float:
    """The H100's share fitted on its calibration runs over its microbenchmark share."""
    fitted = load_constants().sustained_gemm_of_mamf[STEP_FACTOR_GPU]
    return fitted / microbenchmark_share(STEP_FACTOR_GPU)


def derived_share(gpu_id: str) -> float:
    """Sustained share of MAMF for ``gpu_id`` from its BF16 microbenchmark rows."""
    return microbenchmark_share(gpu_id) * step_factor()
