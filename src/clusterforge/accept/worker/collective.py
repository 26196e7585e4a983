"""The worker's cross-node tests: collectives over torch.distributed and the in-band ring.

Collectives are timed like nccl-tests (github.com/NVIDIA/nccl-tests, ``doc/PERFORMANCE.md``):
the slowest rank's time per call after a warm-up, algbw = size / time, busbw = algbw x the
collective's factor; the reduced values are checked.  NCCL on GPUs, gloo on CPU stand-ins.

Unlike nccl-tests' fixed iteration count, a timing lasts at least :data:`MIN_TIMED_S`: a
handful of fast calls measure a burst, not a rate. A node held back by a CPU quota (Linux's
CFS bandwidth control throttles only once a 100 ms period's quota is spent) or a link that
stalls now and then looks healthy over 20 ms and slow over 200. The count for the long
timing comes from the first one's slowest rank, so every rank makes the same calls.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import time
from typing import Any

from clusterforge.accept.worker.env import load_torch, node_name
from clusterforge.accept.worker.records import emit
from clusterforge.busbw import bus_factor

__all__ = ["run_collective", "run_net"]


def _rank_env() -> tuple[int, int, int]:
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("SLURM_LOCALID", "0")))
    return rank, world, local


MIN_TIMED_S = 0.25  # two and a half CFS periods (the kernel's default cfs_period_us)
_MAX_CALLS = 100_000  # a timing of the smallest message never runs away


def _time_op(
    torch: Any, dist: Any, op: str, inp: Any, out: Any, iters: int, min_s: float = MIN_TIMED_S
) -> float:
    """Seconds per call on the slowest rank (max-reduced), after a warm-up, over at least
    ``iters`` calls and ``min_s`` seconds."""

    def call() -> None:
        match op:
            case "all_reduce":
                dist.all_reduce(inp)
            case "all_gather":
                dist.all_gather_into_tensor(out, inp)
            case "reduce_scatter":
                dist.reduce_scatter_tensor(out, inp)
            case "all_to_all":
                dist.all_to_all_single(out, inp)

    def timed(calls: int) -> float:
        """Seconds for ``calls`` calls on the slowest rank (the same value on every rank)."""
        dist.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        if inp.is_cuda:
            torch.cuda.synchronize()
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        return float(elapsed.item())

    call()
    total_s = timed(iters)
    if total_s >= min_s:
        return total_s / iters
    calls = min(_MAX_CALLS, math.ceil(iters * min_s / max(total_s, 1e-9)))
    return timed(calls) / calls


def _wrong(torch: Any, dist: Any, world: int, rank: int, device: Any, count: int) -> int:
    """All-reduce rank+1 everywhere; every element must equal world(world+1)/2."""
    buf = torch.full((count,), float(rank + 1), dtype=torch.float32, device=device)
    dist.all_reduce(buf)
    return int((buf != world * (world + 1) / 2).sum().item())


def _collective_rows(torch: Any, dist: Any, args: argparse.Namespace, device: Any) -> None:
    rank, world, _ = _rank_env()
    size = args.min_bytes
    while size <= args.max_bytes:
        count = max(world, size // 4 // world * world)  # float32 elements, divisible by ranks
        buf = torch.ones(count, dtype=torch.float32, device=device)
        for op in args.ops.split(","):
            # nccl-tests sizes: the output buffer for all_gather, the input for reduce_scatter.
            part = buf[: count // world]
            inp, out = {
                "all_reduce": (buf, buf),
                "all_gather": (part, torch.empty_like(buf)),
                "reduce_scatter": (buf, torch.empty_like(part)),
                "all_to_all": (buf, torch.empty_like(buf)),
            }[op]
            try:
                t = _time_op(torch, dist, op, inp, out, args.iters)
            except (RuntimeError, NotImplementedError) as exc:
                if rank == 0:
                    emit({"test": "collective", "op": op, "skipped": str(exc).splitlines()[0]})
                continue
            nbytes = count * 4
            algbw = nbytes / t / 1e9
            if rank == 0:
                emit(
                    {
                        "test": "collective",
                        "op": op,
                        "size_bytes": nbytes,
                        "count": count,
                        "type": "float",
                        "time_us": t * 1e6,
                        "algbw_gbyte_per_s": algbw,
                        "busbw_gbyte_per_s": algbw * bus_factor(op, world),
                        "ranks": world,
                    }
                )
        size *= 2
    wrong = _wrong(torch, dist, world, rank, device, 1 << 16)
    if rank == 0:
        emit({"test": "collective-check", "wrong": wrong, "ranks": world})


def run_collective(args: argparse.Namespace) -> None:
    torch = load_torch()
    if torch is None:
        emit(
            {
                "test": "collective",
                "skipped": "torch is not installed (pip install 'clusterforge[accept]')",
            }
        )
        return
    import torch.distributed as dist

    rank, world, local = _rank_env()
    gpu = torch.cuda.is_available() and args.backend != "gloo"
    device = torch.device("cuda", local) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group("nccl" if gpu else "gloo", rank=rank, world_size=world)
    try:
        _collective_rows(torch, dist, args, device)
    finally:
        dist.destroy_process_group()


def run_net(args: argparse.Namespace) -> None:
    """iperf3 from this node to the next in ``--peers`` (a ring), server on our own port."""
    if shutil.which("iperf3") is None:
        emit({"test": "inband", "skipped": "iperf3 is not installed on this node"})
        return
    from clusterforge.accept.parsers import parse_iperf3

    peers = args.peers.split(",")
    me = (
        peers.index(node_name())
        if node_name() in peers
        else int(os.environ.get("SLURM_PROCID", "0"))
    )
    nxt = (me + 1) % len(peers)
    # Addresses aligned with --peers: the launcher resolves them (Slurm NodeAddr).
    addresses = os.environ.get("CF_PEER_ADDRS", "").split(",")
    addr = addresses[nxt] if len(addresses) == len(peers) else peers[nxt]
    server = subprocess.Popen(
        ["iperf3", "-s", "-1", "-p", str(args.port + me)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            out = subprocess.run(
                ["iperf3", "-c", addr, "-p", str(args.port + nxt), "-t", f"{args.seconds:g}", "-J"],
                capture_output=True,
                text=True,
                check=False,
                timeout=args.seconds + 30,
            )
            # iperf3 3.12 exits 0 with -J even when it cannot connect: read the JSON.
            failed = out.returncode != 0 or '"error"' in out.stdout
            if not failed or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        emit({"test": "inband", "peer": peers[nxt], "gbit_per_s": parse_iperf3(out.stdout)})
        server.wait(timeout=args.seconds + 30)
    finally:
        if server.poll() is None:
            server.kill()
