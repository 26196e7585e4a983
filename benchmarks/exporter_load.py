"""Scrape load on ``clusterforge exporter``: errors, latency percentiles and scrapes per second.

Run by hand: ``python benchmarks/exporter_load.py [--seconds 20] [--scrapers 100]
[--interval-s 1] [--keepalive] [--processes 2]``.  Target: 0 errors and p99 under 100 ms with
100 concurrent scrapers.  By default each scraper scrapes once a second and all fire at the
same instant (a burst of 100 concurrent scrapes every second); ``--interval-s 0`` scrapes
back to back, which measures the saturation throughput (then the latency is the queue:
scrapers / throughput, Little's law).

The exporter runs as the real command in its own process, on the recorded NVML readings and
the fake sysfs tree the ops tests use, with its checks every second (the shortest interval it
accepts), so check runs overlap the scrapes.  The scrapers are asyncio tasks spread over
``--processes`` client processes; each scrape is one HTTP GET of /metrics, on a new TCP
connection by default (the harder case: every scrape goes through the listen queue) or on
one kept-alive connection per scraper with ``--keepalive`` (as Prometheus scrapes).  A scrape
that takes longer than 10 s (Prometheus' default scrape_timeout), fails to connect, or does
not answer 200 with the announced body counts as an error.  Latency runs from the connect to
the last byte of the body.  The client shares the machine's cores with the exporter, so the
latencies include the client's own scheduling delays; the exporter's CPU time per scrape
(from /proc) does not depend on them.  On a machine busy with other work, the latencies
mostly measure the wait for a core: ``chrt -f 10 python benchmarks/exporter_load.py`` (root)
runs exporter and scrapers ahead of the other work, as a node's own agent would be.  The
exporter's CPU time includes its check runs (about 20 ms a second here with checks every
second); the idle cost is what is left with ``--scrapers 0``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ops"))

from ops_fixtures import NVML_FIXTURES, build_fake_root, load_sysfs_fixture  # noqa: E402

SCRAPE_TIMEOUT_S = 10.0  # Prometheus' default scrape_timeout
# What Prometheus sends (it asks for gzip); --identity drops the Accept-Encoding line.
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: exporter\r\nAccept: text/plain\r\n"
GZIP = b"Accept-Encoding: gzip\r\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _read_response(reader: asyncio.StreamReader) -> bool:
    """Read one response; True when it is a 200 with its whole body.  A response without
    Content-Length (an HTTP/1.0 server) ends when the server closes the connection."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_ok = head.split(b" ", 2)[1:2] == [b"200"]
    lengths = [
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    ]
    if not lengths:
        await reader.read()
        return status_ok
    body = await reader.readexactly(lengths[0])
    return status_ok and len(body) == lengths[0]


async def _scrape_new_connection(port: int, request: bytes) -> bool:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        return await _read_response(reader)
    finally:
        writer.close()


@dataclass(frozen=True)
class Load:
    port: int
    num_scrapers: int
    seconds: float
    interval_s: float  # 0: scrape again as soon as a scrape ends (saturation)
    keepalive: bool
    gzip: bool

    @property
    def request(self) -> bytes:
        return REQUEST + (GZIP if self.gzip else b"") + b"\r\n"


async def _scraper(load: Load, start_s: float, out: list[float | None]) -> None:
    """Scrape until the end of the run; append each latency in seconds, None for an error.

    With an interval every scraper fires at the same ticks (start + k * interval): each tick
    is a burst of ``num_scrapers`` simultaneous scrapes, the worst case for the accept queue.
    """
    port, keepalive = load.port, load.keepalive
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    tick = 0
    while time.monotonic() < start_s + load.seconds:
        if load.interval_s > 0:
            await asyncio.sleep(max(0.0, start_s + tick * load.interval_s - time.monotonic()))
            tick += 1
        started_s = time.monotonic()
        try:
            if keepalive:
                if connection is None:
                    connection = await asyncio.open_connection("127.0.0.1", port)
                connection[1].write(load.request)
                ok = await asyncio.wait_for(_read_response(connection[0]), SCRAPE_TIMEOUT_S)
            else:
                ok = await asyncio.wait_for(
                    _scrape_new_connection(port, load.request), SCRAPE_TIMEOUT_S
                )
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
            ok, connection = False, None
        out.append(time.monotonic() - started_s if ok else None)


def _client(load: Load, start_s: float) -> tuple[list[float | None], float]:
    """This process's scrape latencies, and the CPU seconds it spent on them."""

    async def run() -> list[float | None]:
        out: list[float | None] = []
        await asyncio.gather(*(_scraper(load, start_s, out) for _ in range(load.num_scrapers)))
        await asyncio.sleep(max(0.0, start_s + load.seconds - time.monotonic()))  # --scrapers 0
        return out

    cpu_before_s = time.process_time()
    results = asyncio.run(run())
    return results, time.process_time() - cpu_before_s


def _start_exporter(root: Path, port: int) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "clusterforge.cli.main", "exporter",
        "--address", "127.0.0.1", "--port", str(port), "--interval-s", "1",
        "--node", "gpu-0001", "--nvml-fixture", str(NVML_FIXTURES / "h100-xid48.json"),
        "--sysfs-root", str(root), "--timeout-s", "4",
        "--gpu", "h100-sxm", "--num-gpus", "8", "--num-nics", "8", "--fabric", "infiniband",
    ]  # fmt: skip
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                if b"clusterforge_check_status" in r.read():
                    return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(
        f"exporter did not start: {process.stderr.read().decode() if process.stderr else ''}"
    )


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (proc(5), /proc/PID/stat fields 14-15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks_per_s


def _percentile(sorted_s: list[float], fraction: float) -> float:
    return sorted_s[min(len(sorted_s) - 1, int(fraction * len(sorted_s)))]


def _report(
    results: list[float | None], seconds: float, body_bytes: int, cpu_s: tuple[float, float]
) -> None:
    latencies = sorted(r for r in results if r is not None)
    errors = len(results) - len(latencies)
    print(f"scrapes     {len(results):>9,}   ({len(results) / seconds:,.0f} scrapes/s)")
    print(f"errors      {errors:>9,}   ({100 * errors / max(1, len(results)):.2f} %)")
    if latencies:
        print(f"p50         {1000 * statistics.median(latencies):>9.1f} ms")
        print(f"p99         {1000 * _percentile(latencies, 0.99):>9.1f} ms")
        print(f"max         {1000 * latencies[-1]:>9.1f} ms")
    print(f"body        {body_bytes:>9,} bytes")
    for name, spent_s in zip(("exporter", "scrapers"), cpu_s, strict=True):
        per_scrape = f" ({1e6 * spent_s / len(results):,.0f} us per scrape)" if results else ""
        print(f"{name:<11} {spent_s:>9.2f} CPU s{per_scrape}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--scrapers", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    parser.add_argument("--keepalive", action="store_true", help="one connection per scraper")
    parser.add_argument("--identity", action="store_true", help="do not ask for gzip")
    parser.add_argument(
        "--interval-s", type=float, default=1.0,
        help="each scraper scrapes every this many seconds, all at once; 0: back to back",
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = build_fake_root(Path(tmp) / "root", load_sysfs_fixture("ib-error-counters.json"))
        port = _free_port()
        exporter = _start_exporter(root, port)
        try:
            headers = {} if args.identity else {"Accept-Encoding": "gzip"}
            probe = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
            with urllib.request.urlopen(probe, timeout=5) as r:
                body_bytes = len(r.read())
            shares = [args.scrapers // args.processes] * args.processes
            shares[0] += args.scrapers - sum(shares)
            start_s = time.monotonic() + 1.0  # CLOCK_MONOTONIC is shared by the processes
            jobs = [
                (
                    Load(port, n, args.seconds, args.interval_s, args.keepalive, not args.identity),
                    start_s,
                )
                for n in shares
            ]
            cpu_before_s = _cpu_s(exporter.pid)
            with multiprocessing.Pool(args.processes) as pool:
                parts = pool.starmap(_client, jobs)
            cpu_s = _cpu_s(exporter.pid) - cpu_before_s
            results = [x for part, _cpu in parts for x in part]
            client_cpu_s = sum(cpu for _part, cpu in parts)
        finally:
            exporter.terminate()
            exporter.wait(timeout=10)
    mode = "keep-alive" if args.keepalive else "new connection per scrape"
    mode += ", identity" if args.identity else ", gzip"
    pace = f"every {args.interval_s:g} s" if args.interval_s > 0 else "back to back"
    print(f"{args.scrapers} concurrent scrapers for {args.seconds:g} s, {pace}, {mode}")
    _report(results, args.seconds, body_bytes, (cpu_s, client_cpu_s))


if __name__ == "__main__":
    main()
