"""The worker's node tests: dense GEMM throughput (torch on the GPU, bf16; numpy on the CPU when
there is no GPU), memory copy bandwidth, a burn-in that checks every result against the first
(a burn tool's exit code is not evidence), fio on the storage path, ``dcgmi diag``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusterforge.accept.worker.env import load_torch
from clusterforge.accept.worker.records import emit

__all__ = ["run_node"]


WINDOW_S = 0.25  # a rate sample spans several 100 ms CFS periods, so a CPU quota shows


@dataclass
class _Windows:
    """Products per time window: the rate is judged per window, not over the whole run."""

    flops_per_product: float
    rates: list[float] = field(default_factory=list)
    count: int = 0
    bad: int = 0
    _in_window: int = 0
    _window_start: float = field(default_factory=time.perf_counter)

    def add(self, products: int, mismatched: bool) -> None:
        self.count += products
        self._in_window += products
        self.bad += int(mismatched)
        now = time.perf_counter()
        if now - self._window_start >= WINDOW_S:
            self.rates.append(self.flops_per_product * self._in_window / (now - self._window_start))
            self._in_window, self._window_start = 0, now

    def tflops(self, statistic: str) -> float:
        """Best window on a shared CPU (interference only slows a window down); median on a
        GPU (a GPU that throttles as it heats must show it)."""
        if not self.rates:
            return 0.0
        value = max(self.rates) if statistic == "best" else float(np.median(self.rates))
        return value / 1e12


def _gemm_numpy(n: int, seconds: float) -> tuple[float, int, int]:
    """fp32 matmul on the CPU: (TFLOP/s, products checked, mismatching products)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    reference = a @ b
    windows, start = _Windows(2.0 * n**3), time.perf_counter()
    while time.perf_counter() - start < seconds or len(windows.rates) < 3:
        windows.add(1, not np.array_equal(a @ b, reference))
    return windows.tflops("best"), windows.count, windows.bad


def _gemm_torch(torch: Any, n: int, seconds: float) -> tuple[float, int, int]:
    """bf16 matmul on GPU 0: (TFLOP/s, products checked, mismatching products)."""
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=gen)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16, generator=gen)
    reference = a @ b
    torch.cuda.synchronize(device)
    windows, start = _Windows(2.0 * n**3), time.perf_counter()
    while time.perf_counter() - start < seconds or len(windows.rates) < 3:
        for _ in range(9):
            a @ b
        out = a @ b
        mismatched = not torch.equal(out, reference)  # synchronizes: the window's work is done
        windows.add(10, mismatched)
    return windows.tflops("median"), windows.count, windows.bad


def _copy_gbyte_per_s(torch: Any | None, gpu: bool, mib: int) -> float:
    """Device memory copy (read + write) bandwidth, or host memory on a CPU-only node."""
    if gpu and torch is not None:
        src = torch.empty(mib * 2**20, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        dst.copy_(src)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(20):
            dst.copy_(src)
        torch.cuda.synchronize()
        return float(2 * 20 * src.numel() / (time.perf_counter() - start) / 1e9)
    host = np.ones(mib * 2**20, dtype=np.uint8)
    out = np.empty_like(host)
    best = 0.0
    for _ in range(5):  # best of five copies, each long enough to span CFS periods
        start = time.perf_counter()
        np.copyto(out, host)
        best = max(best, 2 * host.size / (time.perf_counter() - start) / 1e9)
    return best


def _fio(path: str, seconds: float) -> dict[str, Any]:
    if shutil.which("fio") is None:
        return {"test": "storage", "skipped": "fio is not installed on this node"}
    from clusterforge.accept.parsers import parse_fio

    results: dict[str, Any] = {"test": "storage"}
    with tempfile.TemporaryDirectory(dir=path, prefix="cf-accept-fio-") as tmp:
        target = os.path.join(tmp, "fio.dat")
        for name, rw, bs, depth in (
            ("randread", "randread", "4k", 16),
            ("seqwrite", "write", "1M", 4),
        ):
            out = subprocess.run(
                [
                    "fio",
                    f"--name={name}",
                    f"--filename={target}",
                    "--size=128M",
                    f"--rw={rw}",
                    f"--bs={bs}",
                    f"--iodepth={depth}",
                    "--ioengine=libaio",
                    "--direct=1",
                    f"--runtime={seconds:g}",
                    "--time_based",
                    "--output-format=json",
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=seconds + 120,
            )
            if out.returncode:  # O_DIRECT is refused by some file systems (tmpfs)
                out = subprocess.run(
                    [a for a in out.args if a != "--direct=1"],
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=seconds + 120,
                )
            results |= parse_fio(out.stdout)
    return results


def _dcgm(level: int) -> dict[str, Any]:
    if shutil.which("dcgmi") is None:
        return {"test": "dcgm", "skipped": "DCGM (dcgmi) is not installed on this node"}
    from clusterforge.accept.parsers import parse_dcgmi_diag

    out = subprocess.run(
        ["dcgmi", "diag", "-r", str(level)],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    rows = parse_dcgmi_diag(out.stdout)
    return {"test": "dcgm", "rows": [r.__dict__ for r in rows]}


def run_node(args: argparse.Namespace) -> None:
    torch = load_torch()
    gpu = bool(torch is not None and torch.cuda.is_available())
    if gpu:
        tflops, count, bad = _gemm_torch(torch, args.gemm_n or 8192, args.burn_s)
    else:
        tflops, count, bad = _gemm_numpy(args.gemm_n or 512, args.burn_s)
    kind = "bf16 GEMM (GPU)" if gpu else "fp32 GEMM (CPU, numpy)"
    emit({"test": "gemm", "tflops": tflops, "device": "gpu" if gpu else "cpu", "kind": kind})
    emit({"test": "burn-in", "products": count, "mismatches": bad, "seconds": args.burn_s})
    emit(
        {
            "test": "memory",
            "gbyte_per_s": _copy_gbyte_per_s(torch, gpu, 1024 if gpu else 256),
            "device": "gpu" if gpu else "cpu",
        }
    )
    if args.storage_path:
        emit(_fio(args.storage_path, args.fio_s))
    if args.dcgm_level:
        emit(_dcgm(args.dcgm_level))
