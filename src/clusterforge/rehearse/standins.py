"""Stand-ins for the exporters an emulated node has no hardware for, serving the series names
the generated rules and ``diagnose`` read, from something this machine really measures.

* ``link``: node_exporter's ``infiniband`` collector for one compute HCA port whose netdev is
  a veth in the node's network namespace.  A RoCE HCA port takes its state from its netdev:
  ACTIVE (4) with phys_state LinkUp (5) when the netdev is up with carrier, else DOWN (1)
  with phys_state Disabled (3) (Linux ``drivers/infiniband/hw/mlx5/main.c``,
  ``mlx5_query_port_roce``; IBTA port states).  ``link_downed_total`` counts the netdev's
  carrier losses (``/sys/class/net/<dev>/carrier_down_count``, Linux
  Documentation/ABI/testing/sysfs-class-net), the event the HCA's LinkDownedCounter counts.
  Run inside the namespace (``ip netns exec``, which mounts that namespace's ``/sys``) on a
  listening socket made outside it and inherited, as systemd socket activation hands one
  over (sd_listen_fds(3)), so Prometheus reaches it whatever the flapped link does.
* ``clock``: dcgm-exporter's ``DCGM_FI_DEV_SM_CLOCK`` (MHz) and
  ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (share) for the node's one GPU stand-in: every interval
  it spins a fixed burst and measures the share of the burst's wall time it was on a CPU
  (``time.thread_time`` over ``time.perf_counter``); the clock is the core's nominal clock
  times that share (the clock the node's work effectively ran at), the engine activity that
  share itself (busy for that share of the time it had work).  A node capped by the CFS
  bandwidth controller runs at its quota's share (Linux Documentation/scheduler/
  sched-bwc.rst); the probe runs at a raised priority (nice -10) so that, uncapped, it
  measures the core rather than its neighbours on this shared machine.

    python -m clusterforge.rehearse.standins link --fd 3 --netdev mlx5_0 --device mlx5_0
    python -m clusterforge.rehearse.standins clock --port 18971
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

__all__ = ["link_metrics", "main", "nominal_clock_mhz", "port_state"]

IB_ACTIVE, IB_DOWN = 4, 1  # IBTA port states (node_infiniband_state_id)
PHYS_LINK_UP, PHYS_DISABLED = 5, 3  # IBTA physical port states
IFF_UP = 0x1  # <linux/if.h>
BURST_S = 0.25  # longer than a CFS period (100 ms), so a capped node is throttled inside it
_FALLBACK_MHZ = 1000.0
_PROBE_NICE = -10


def port_state(sys_net: Path) -> tuple[int, int]:
    """(state_id, phys_state_id) of the RoCE port on the netdev at ``sys_net``."""
    flags = int((sys_net / "flags").read_text(), 16)
    try:
        carrier = (sys_net / "carrier").read_text().strip() == "1"
    except OSError:  # reading carrier of an administratively down netdev gives EINVAL
        carrier = False
    if flags & IFF_UP and carrier:
        return IB_ACTIVE, PHYS_LINK_UP
    return IB_DOWN, PHYS_DISABLED


def link_metrics(sys_net: Path, device: str, port: int = 1) -> str:
    """node_exporter's infiniband series for the port, in the Prometheus text format."""
    state, phys = port_state(sys_net)
    downed = int((sys_net / "carrier_down_count").read_text())
    labels = f'device="{device}",port="{port}"'
    lines = [
        "# TYPE node_infiniband_state_id gauge",
        f"node_infiniband_state_id{{{labels}}} {state}",
        "# TYPE node_infiniband_physical_state_id gauge",
        f"node_infiniband_physical_state_id{{{labels}}} {phys}",
        "# TYPE node_infiniband_link_downed_total counter",
        f"node_infiniband_link_downed_total{{{labels}}} {downed}",
    ]
    try:  # a netdev without carrier may not know its speed (EINVAL, or -1)
        speed_mbit = int((sys_net / "speed").read_text())
    except (OSError, ValueError):
        speed_mbit = -1
    if speed_mbit > 0:
        lines += [
            "# TYPE node_infiniband_rate_bytes_per_second gauge",
            f"node_infiniband_rate_bytes_per_second{{{labels}}} {speed_mbit * 1e6 / 8:g}",
        ]
    return "\n".join(lines) + "\n"


def nominal_clock_mhz(cpuinfo: Path = Path("/proc/cpuinfo")) -> float:
    """The first core's clock from /proc/cpuinfo ("cpu MHz"), or 1000 when it has none."""
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "cpu MHz":
                return float(value)
    except (OSError, ValueError):
        pass
    return _FALLBACK_MHZ


class _Clock:
    """Measures the effective clock every ``interval_s`` in a daemon thread."""

    def __init__(self, interval_s: float) -> None:
        self.nominal_mhz = nominal_clock_mhz()
        self.on_cpu_share: float | None = None
        self.interval_s = interval_s

    @staticmethod
    def burst() -> float:
        """The share of a fixed burst's wall time this thread was on a CPU."""
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        while time.thread_time() - cpu0 < BURST_S:
            pass
        return min(1.0, (time.thread_time() - cpu0) / (time.perf_counter() - wall0))

    def loop(self) -> None:
        while True:
            self.on_cpu_share = self.burst()
            time.sleep(self.interval_s)

    def metrics(self) -> str:
        share = self.on_cpu_share
        if share is None:
            return ""
        return (
            "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
            f'DCGM_FI_DEV_SM_CLOCK{{gpu="0"}} {self.nominal_mhz * share:.1f}\n'
            "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n"
            f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0"}} {share:.4f}\n'
        )


def _serve(server_socket: socket.socket, render: Callable[[], str]) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = render().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # one line per scrape would fill the log

    server = HTTPServer(server_socket.getsockname()[:2], Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = server_socket
    server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m clusterforge.rehearse.standins")
    sub = parser.add_subparsers(dest="kind", required=True)
    link = sub.add_parser("link")
    link.add_argument("--fd", type=int, required=True, help="inherited listening socket")
    link.add_argument("--netdev", required=True)
    link.add_argument("--device", required=True, help="the HCA name the rules select")
    clock = sub.add_parser("clock")
    clock.add_argument("--port", type=int, required=True)
    clock.add_argument("--interval-s", type=float, default=2.0)
    args = parser.parse_args(argv)
    if args.kind == "link":
        sys_net = Path("/sys/class/net") / args.netdev
        _serve(socket.socket(fileno=args.fd), lambda: link_metrics(sys_net, args.device))
        return
    with contextlib.suppress(OSError):  # not root: the probe shares the core with its neighbours
        os.nice(_PROBE_NICE)
    meter = _Clock(args.interval_s)
    threading.Thread(target=meter.loop, name="clock", daemon=True).start()
    listener = socket.create_server(("127.0.0.1", args.port))
    _serve(listener, meter.metrics)


if __name__ == "__main__":
    main()
