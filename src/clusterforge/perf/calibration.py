"""Calibration of the performance model from a cluster's own measurements.

The model's rates come from the catalog and ``data/efficiency.toml``: the best-shape matmul
throughput (MAMF) of the GPU, the HBM datasheet bandwidth times ``hbm_efficiency``, and
collective times simulated on the designed fabric. A cluster that was measured (``clusterforge
accept``: a large square BF16 GEMM per GPU, a device-to-device copy, and an nccl-tests-style
sweep across nodes) replaces them with what it delivers:

* GEMM rate: the BF16 ceiling (MAMF) becomes the one at which the model's own GEMM of the
  measured shape (accept: square, ``gemm_size`` 8,192, alone on the GPU as MAMF is
  measured) runs at the measured TFLOP/s: ``measured / gemm_shape_efficiency(n, n, n)``. The
  FP8 ceiling and the cuDNN attention rates move by the same ratio (same clocks, same SMs);
  the shape model and the sustained share stay. On GPUs whose share is derived from GEMM
  microbenchmarks (``microbench_share`` of ``[[sustained_gemm]]``) the model expects a lone
  GEMM at that share of MAMF, so the measured rate is divided by it too (the share already
  holds what the GEMM library loses at training shapes; counting it twice would slow a
  healthy cluster).
* HBM bandwidth: the measured copy bandwidth (read + write bytes over time) becomes the
  streaming bandwidth of every memory-bound kernel.
* Collectives: for each measured collective, the ratio of measured to simulated bus
  bandwidth on the same ranks at the same size scales the time of every inter-node
  collective of that kind (log-interpolated between measured sizes, held at the ends);
  reduce-scatter and all-gather take the all-reduce's ratio when only it was measured.
  Collectives inside one node and other kinds that were not measured keep the simulated
  time.

The input is a plain mapping (:func:`calibration_from_dict`); reading ``accept``'s report
lives in :mod:`clusterforge.accept.calibration`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, cast, get_args

import numpy as np

from clusterforge.busbw import bus_factor
from clusterforge.errors import SpecError
from clusterforge.perf.comm import Collective, CommModel
from clusterforge.perf.roofline import GpuPerf, gemm_shape_efficiency, load_constants

__all__ = [
    "CalibratedComm",
    "Calibration",
    "CalibrationChange",
    "CollectivePoint",
    "calibrated_perf",
    "calibration_from_dict",
    "perf_changes",
]


# The square BF16 GEMM ``clusterforge accept`` times on a GPU (worker ``--gemm-n`` default).
ACCEPT_GEMM_SIZE = 8192


@dataclass(frozen=True)
class CollectivePoint:
    """One measured collective: ``ranks`` ranks over ``num_nodes`` nodes, nccl-tests sizes."""

    op: Collective
    size_bytes: float
    busbw_gbyte_per_s: float
    ranks: int
    num_nodes: int


@dataclass(frozen=True)
class Calibration:
    """Measured rates of one cluster (None: not measured, the model's figure stays)."""

    gemm_tflops: float | None = None
    hbm_gbyte_per_s: float | None = None
    gemm_size: int = ACCEPT_GEMM_SIZE
    collectives: tuple[CollectivePoint, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class CalibrationChange:
    """One figure of the model replaced by a measurement."""

    figure: str
    model: float
    measured: float
    unit: str

    @property
    def change(self) -> float:
        """Relative change, measured / model - 1."""
        return self.measured / self.model - 1.0


def _positive(raw: Mapping[str, Any], key: str, where: str) -> float | None:
    if raw.get(key) is None:
        return None
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise SpecError(
            f"calibration {where}{key} = {value!r}: use a positive number (or leave it out "
            "to keep the model's figure)"
        )
    return float(value)


def _point(raw: Any, index: int) -> CollectivePoint:
    where = f"collectives[{index}]."
    if not isinstance(raw, Mapping):
        raise SpecError(
            f"calibration collectives[{index}] is {type(raw).__name__}: use a table with op, "
            "size_bytes, busbw_gbyte_per_s, ranks, num_nodes"
        )
    op = raw.get("op")
    if not isinstance(op, str) or op not in get_args(Collective):
        raise SpecError(
            f"calibration {where}op = {op!r}: use one of {', '.join(get_args(Collective))}"
        )
    values = {}
    for key in ("size_bytes", "busbw_gbyte_per_s", "ranks", "num_nodes"):
        value = _positive(raw, key, where)
        if value is None:
            raise SpecError(f"calibration {where}{key} is missing: give the measured value")
        values[key] = value
    if values["ranks"] < 2 or values["ranks"] < values["num_nodes"]:
        raise SpecError(
            f"calibration {where}ranks = {values['ranks']:g} with num_nodes = "
            f"{values['num_nodes']:g}: a collective needs at least 2 ranks, one per node or more"
        )
    return CollectivePoint(
        op=cast(Collective, op),
        size_bytes=values["size_bytes"],
        busbw_gbyte_per_s=values["busbw_gbyte_per_s"],
        ranks=int(values["ranks"]),
        num_nodes=int(values["num_nodes"]),
    )


def calibration_from_dict(raw: Mapping[str, Any], source: str = "") -> Calibration:
    """A :class:`Calibration` from ``{"gemm_tflops": .., "hbm_gbyte_per_s": .., "collectives":
    [{"op", "size_bytes", "busbw_gbyte_per_s", "ranks", "num_nodes"}, ..]}``.

    Raises :class:`SpecError` naming the field and the fix.
    """
    fields = {"gemm_tflops", "gemm_size", "hbm_gbyte_per_s", "collectives", "source"}
    unknown = set(raw) - fields
    if unknown:
        raise SpecError(
            f"calibration has unknown field(s) {', '.join(sorted(unknown))}: use gemm_tflops "
            "(with gemm_size, the square GEMM's n), hbm_gbyte_per_s and collectives"
        )
    points = raw.get("collectives") or []
    if not isinstance(points, list):
        raise SpecError("calibration collectives: use a list of measured collectives")
    calibration = Calibration(
        gemm_tflops=_positive(raw, "gemm_tflops", ""),
        gemm_size=int(_positive(raw, "gemm_size", "") or ACCEPT_GEMM_SIZE),
        hbm_gbyte_per_s=_positive(raw, "hbm_gbyte_per_s", ""),
        collectives=tuple(_point(p, i) for i, p in enumerate(points)),
        source=str(raw.get("source", source)),
    )
    if calibration == Calibration(source=calibration.source, gemm_size=calibration.gemm_size):
        raise SpecError(
            "calibration has no measurement: give gemm_tflops, hbm_gbyte_per_s or collectives"
        )
    return calibration


def calibrated_perf(perf: GpuPerf, calibration: Calibration | None) -> GpuPerf:
    """``perf`` with the measured GEMM rate and HBM bandwidth in place of the model's."""
    if calibration is None:
        return perf
    if calibration.gemm_tflops is not None:
        bf16 = perf.bf16_matmul_tflops or perf.matmul_tflops
        ceiling = _calibrated_ceiling(perf, calibration.gemm_tflops, calibration.gemm_size)
        ratio = ceiling / bf16
        perf = replace(
            perf,
            matmul_tflops=perf.matmul_tflops * ratio,
            bf16_matmul_tflops=ceiling,
            attention_scale=perf.attention_scale * ratio,
        )
    if calibration.hbm_gbyte_per_s is not None:
        # memory_time_s streams at hbm_gbyte_per_s x hbm_efficiency: store the datasheet
        # figure that gives the measured rate.
        hbm = calibration.hbm_gbyte_per_s / load_constants().hbm_efficiency
        perf = replace(perf, hbm_gbyte_per_s=hbm)
    return perf


def _calibrated_ceiling(perf: GpuPerf, measured_tflops: float, size: int) -> float:
    """The BF16 ceiling at which the model's lone square ``size`` GEMM runs at
    ``measured_tflops``: at the ceiling times its shape efficiency times, on GPUs whose share
    is derived from GEMM microbenchmarks, the share of MAMF a lone GEMM keeps there."""
    lone = load_constants().gemm_microbench_share.get(perf.gpu_id, 1.0)
    return measured_tflops / (gemm_shape_efficiency(size, size, size, perf) * lone)


def perf_changes(perf: GpuPerf, calibration: Calibration) -> list[CalibrationChange]:
    """The GPU figures ``calibration`` changes, model value against measured value."""
    c = load_constants()
    out = []
    if calibration.gemm_tflops is not None:
        model = perf.bf16_matmul_tflops or perf.matmul_tflops
        ceiling = _calibrated_ceiling(perf, calibration.gemm_tflops, calibration.gemm_size)
        out.append(CalibrationChange("BF16 GEMM ceiling (MAMF)", model, ceiling, "TFLOP/s per GPU"))
    if calibration.hbm_gbyte_per_s is not None:
        out.append(
            CalibrationChange(
                "HBM streaming bandwidth",
                perf.hbm_gbyte_per_s * c.hbm_efficiency,
                calibration.hbm_gbyte_per_s,
                "GB/s per GPU",
            )
        )
    return out


class CalibratedComm:
    """A :class:`CommModel` whose inter-node collectives run at the measured efficiency.

    For each measured kind, ``ratio(size) = measured busbw / simulated busbw`` on the measured
    ranks (the first ``ranks`` GPUs, ``ranks / num_nodes`` per node); an inter-node collective
    of that kind takes ``simulated time / ratio(size)``.
    """

    def __init__(
        self, comm: CommModel, calibration: Calibration, gpus_per_node: int, num_gpus: int
    ) -> None:
        self._comm = comm
        self._gpus_per_node = gpus_per_node
        for i, point in enumerate(calibration.collectives):
            per_node = point.ranks // point.num_nodes
            if per_node > gpus_per_node or point.num_nodes * gpus_per_node > num_gpus:
                raise SpecError(
                    f"calibration collectives[{i}]: {point.ranks} ranks on {point.num_nodes} "
                    f"nodes do not fit the design ({num_gpus} GPUs, {gpus_per_node} per node); "
                    "calibrate with a measurement of this cluster's nodes"
                )
        self._ratios: dict[str, tuple[list[float], list[float]]] = {}
        self.changes: list[CalibrationChange] = []
        by_op: dict[str, list[CollectivePoint]] = {}
        for point in calibration.collectives:
            by_op.setdefault(point.op, []).append(point)
        for op, points in sorted(by_op.items()):
            sizes, ratios = [], []
            for point in sorted(points, key=lambda p: p.size_bytes):
                simulated = self._simulated_busbw(point)
                if simulated <= 0:
                    continue
                sizes.append(math.log(point.size_bytes))
                ratios.append(point.busbw_gbyte_per_s / simulated)
                self.changes.append(
                    CalibrationChange(
                        f"{op} busbw, {_size_text(point.size_bytes)}, {point.num_nodes} nodes",
                        simulated,
                        point.busbw_gbyte_per_s,
                        "GB/s",
                    )
                )
            if sizes:
                self._ratios[op] = (sizes, ratios)

    def _simulated_busbw(self, point: CollectivePoint) -> float:
        per_node = point.ranks // point.num_nodes
        ranks = [
            node * self._gpus_per_node + local
            for node in range(point.num_nodes)
            for local in range(per_node)
        ]
        groups = np.array([ranks], dtype=np.int64)
        time_s = self._comm.collective_time_s(point.op, point.size_bytes, groups)
        if time_s <= 0:
            return 0.0
        return point.size_bytes / time_s / 1e9 * bus_factor(point.op, point.ranks)

    def ratio(self, collective: Collective, size_bytes: float) -> float:
        """Measured / simulated busbw for ``collective`` at ``size_bytes`` (1: not measured).

        A reduce-scatter or all-gather that was not measured takes the all-reduce's ratio:
        NCCL's ring all-reduce is a reduce-scatter then an all-gather over the same rings
        (NCCL ``src/device/all_reduce.h``, ``runRing``), so it measures the same paths.
        """
        if collective not in self._ratios and collective in ("reduce_scatter", "all_gather"):
            collective = "all_reduce"
        if collective not in self._ratios:
            return 1.0
        sizes, ratios = self._ratios[collective]
        x = math.log(max(size_bytes, 1.0))
        i = bisect.bisect_left(sizes, x)
        if i == 0:
            return ratios[0]
        if i == len(sizes):
            return ratios[-1]
        w = (x - sizes[i - 1]) / (sizes[i] - sizes[i - 1])
        return ratios[i - 1] + w * (ratios[i] - ratios[i - 1])

    def spans_nodes(self, groups: np.ndarray) -> bool:
        """True when some group of ``groups`` (GPU indices, node by node) leaves its node."""
        nodes = np.asarray(groups) // self._gpus_per_node
        return bool(np.any(nodes.min(axis=-1) != nodes.max(axis=-1)))

    def collective_time_s(
        self, collective: Collective, size_bytes: float, groups: np.ndarray
    ) -> float:
        time_s = self._comm.collective_time_s(collective, size_bytes, groups)
        if time_s <= 0 or groups.size == 0 or not self.spans_nodes(groups):
            return time_s  # inside one node: the cross-node sweep says nothing about it
        return time_s / self.ratio(collective, size_bytes)


def _size_text(num_bytes: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:g} {unit}"
    return f"{num_bytes:g} B"
