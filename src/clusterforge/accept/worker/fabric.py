"""The worker's fabric round: every rail of this node against the same rail of its partner,
both directions at once, with the ports' counters read before and after.

Traffic: perftest's ``ib_write_bw`` where the node has the RDMA devices and the tool (one
server and one client per rail and direction, each on its own TCP port for the handshake;
each direction's rate is the one its client reports), then ``ib_write_lat`` (and any other
``ib_*_lat`` asked for) per rail, one direction.  Where the node has no RDMA device (the
emulated cluster), iperf3 over TCP stands in, inside the node's network namespace when the
run names one (``--netns cf-x-{node}``), towards the partner's rail address
(``--rail-addrs``); latency is then not measured.

Counters: the RDMA ports' sysfs and ``ethtool -S`` counters (:class:`SysfsReader`, under
``--sysfs-root``), or for a plain interface ``ip -s -j link`` and ``tc -s -j qdisc``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clusterforge.accept.fabric.counters import CounterKind, port_window
from clusterforge.accept.fabric.pairs import Pair
from clusterforge.accept.parsers import parse_iperf3, parse_perftest_bw, parse_perftest_lat
from clusterforge.accept.worker.env import node_name
from clusterforge.accept.worker.records import emit
from clusterforge.errors import AcceptError

__all__ = ["add_arguments", "parse_pairs", "read_netdev_counters", "run_fabric"]

PERFTEST_BW = "ib_write_bw"
MESSAGE_BYTES = 1 << 20  # large messages: the link, not the per-message cost, sets the rate
QUEUE_PAIRS = 4  # several QPs fill a 400G link where one QP may not (perftest issue #252)
LAT_ITERATIONS = 10_000
SERVER_START_S = 0.5  # then clients retry while the partner starts
CONNECT_TRIES = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--round", type=int, default=0)
    parser.add_argument("--pairs", required=True, help="a:b,c:d (a serves first)")
    parser.add_argument("--hcas", required=True, help="compute HCAs, rail order")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--tool", choices=("auto", "perftest", "iperf3"), default="auto")
    parser.add_argument("--lat-tools", default="ib_write_lat,ib_send_lat")
    parser.add_argument("--gid-index", type=int, default=-1, help="RoCE GID index (-x)")
    parser.add_argument("--base-port", type=int, default=18515)
    parser.add_argument("--netns", default="", help="namespace of each node, {node} in it")
    parser.add_argument("--rail-addrs", default="", help="node=address,... (stand-in)")
    parser.add_argument("--sysfs-root", default="/", help="{node} in it: one tree per node")


def parse_pairs(text: str) -> list[Pair]:
    pairs = []
    for item in text.split(","):
        a, sep, b = item.partition(":")
        if not sep or not a or not b:
            raise AcceptError(f"fabric: pair {item!r} is not 'node:node'")
        pairs.append(Pair(a, b))
    return pairs


@dataclass(frozen=True)
class _Plan:
    """This node's part in the round."""

    node: str
    peer: str
    serves_first: bool
    peer_addr: str
    hcas: tuple[str, ...]
    netns: str  # "" outside the emulation

    def ports(self, rail: int, base: int) -> tuple[int, int]:
        """(port my server listens on, port of the partner's server) for ``rail``."""
        mine, theirs = base + 2 * rail, base + 2 * rail + 1
        return (mine, theirs) if self.serves_first else (theirs, mine)

    def wrap(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv] if self.netns else argv


def _peer_addr(args: argparse.Namespace, pairs: Sequence[Pair], peer: str) -> str:
    if args.rail_addrs:
        addrs = dict(item.split("=", 1) for item in args.rail_addrs.split(","))
        return addrs[peer]
    order = [n for p in pairs for n in (p.a, p.b)]
    peers = os.environ.get("CF_PEER_ADDRS", "").split(",")
    return peers[order.index(peer)] if len(peers) == len(order) else peer


def _plan(args: argparse.Namespace) -> _Plan | None:
    me = node_name()
    pairs = parse_pairs(args.pairs)
    pair = next((p for p in pairs if me in (p.a, p.b)), None)
    if pair is None:
        return None
    peer = pair.partner(me)
    netns = args.netns.format(node=me) if args.netns else ""
    hcas = tuple(h for h in args.hcas.split(",") if h)
    return _Plan(me, peer, me == pair.a, _peer_addr(args, pairs, peer), hcas, netns)


# --- counters ---------------------------------------------------------------------------


def read_netdev_counters(netns: str, netdev: str) -> dict[str, int]:
    """A plain interface's counters: ``ip -s -j link`` (rtnl_link_stats64) and the drops of
    its egress queueing discipline (``tc -s -j qdisc``)."""
    ns = ["-n", netns] if netns else []
    link = json.loads(_run(["ip", *ns, "-s", "-j", "link", "show", "dev", netdev]))[0]
    stats = link.get("stats64", {})
    out = {
        f"{direction}_{name}": int(value)
        for direction in ("rx", "tx")
        for name, value in stats.get(direction, {}).items()
        if isinstance(value, int)
    }
    out["carrier_changes"] = int(link.get("carrier_changes", 0))
    qdiscs = json.loads(_run(["tc", *ns, "-s", "-j", "qdisc", "show", "dev", netdev]) or "[]")
    # Drops are counted where a packet was dropped: the root's count includes its children's.
    out["qdisc_drops"] = sum(int(q.get("drops", 0)) for q in qdiscs if q.get("root"))
    return out


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode:
        raise AcceptError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def _read_counters(
    plan: _Plan, root: str
) -> tuple[dict[str, tuple[CounterKind, dict[str, int]]], str]:
    """hca -> (kind, counters), and why some could not be read ("" when all were)."""
    if plan.netns:
        return {h: ("netdev", read_netdev_counters(plan.netns, h)) for h in plan.hcas}, ""
    from clusterforge.ops.sysfs import SysfsReader

    found: dict[str, tuple[CounterKind, dict[str, int]]] = {}
    for nic in SysfsReader(root).nics():
        if nic.name in plan.hcas and nic.port == 1:
            kind: CounterKind = "infiniband" if nic.link_layer == "InfiniBand" else "roce"
            found[nic.name] = (kind, dict(nic.counters))
    missing = [h for h in plan.hcas if h not in found]
    return found, (f"no RDMA port counters for {', '.join(missing)}" if missing else "")


# --- traffic ----------------------------------------------------------------------------


def _tool(args: argparse.Namespace, plan: _Plan) -> str | None:
    if args.tool in ("auto", "perftest") and not plan.netns and shutil.which(PERFTEST_BW):
        return PERFTEST_BW
    # iperf3 stands in only where the run names the rails' own addresses: over the nodes'
    # management addresses it would measure another network.
    if args.tool in ("auto", "iperf3") and args.rail_addrs and shutil.which("iperf3"):
        return "iperf3"
    return None


def _bw_argv(tool: str, args: argparse.Namespace, hca: str, port: int) -> list[str]:
    if tool == "iperf3":
        return ["iperf3", "-p", str(port)]
    argv = [tool, "-d", hca, "-p", str(port), "-D", f"{args.seconds:g}", "-F", "--report_gbits",
            "-q", str(QUEUE_PAIRS), "-s", str(MESSAGE_BYTES)]  # fmt: skip
    return argv + (["-x", str(args.gid_index)] if args.gid_index >= 0 else [])


def _server(tool: str, argv: list[str]) -> list[str]:
    return [*argv, "-s", "-1"] if tool == "iperf3" else argv


def _client(tool: str, argv: list[str], addr: str, seconds: float) -> list[str]:
    if tool == "iperf3":
        return [*argv, "-c", addr, "-t", f"{seconds:g}", "-J"]
    return [*argv, addr]


def _client_run(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run a client, retrying while its partner's server is not listening yet."""
    for attempt in range(CONNECT_TRIES):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode == 0 or attempt == CONNECT_TRIES - 1:
            return done
        time.sleep(SERVER_START_S)
    return done


def _rate(tool: str, done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    if done.returncode:
        text = (done.stderr or done.stdout).strip().splitlines()
        return {"error": f"{tool} exited {done.returncode}: {(text or [''])[-1][:200]}"}
    if tool == "iperf3":
        data = json.loads(done.stdout)
        return {"tx_gbit_per_s": parse_iperf3(done.stdout),
                "retransmits": int(data["end"]["sum_sent"].get("retransmits", 0))}  # fmt: skip
    return {"tx_gbit_per_s": parse_perftest_bw(done.stdout)["average_gbit_per_s"]}


def _bandwidth(tool: str, args: argparse.Namespace, plan: _Plan) -> dict[str, dict[str, Any]]:
    """Both directions of every rail at once: hca -> this node's transmit result."""
    servers = []
    for rail, hca in enumerate(plan.hcas):
        mine, _ = plan.ports(rail, args.base_port)
        argv = plan.wrap(_server(tool, _bw_argv(tool, args, hca, mine)))
        servers.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    time.sleep(SERVER_START_S)
    from concurrent.futures import ThreadPoolExecutor

    def client(rail: int) -> dict[str, Any]:
        hca = plan.hcas[rail]
        _, theirs = plan.ports(rail, args.base_port)
        argv = _client(tool, _bw_argv(tool, args, hca, theirs), plan.peer_addr, args.seconds)
        return _rate(tool, _client_run(plan.wrap(argv), args.seconds + 60))

    try:
        with ThreadPoolExecutor(max_workers=len(plan.hcas)) as pool:
            results = list(pool.map(client, range(len(plan.hcas))))
    finally:
        for proc in servers:
            try:
                proc.communicate(timeout=args.seconds + 30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
    return dict(zip(plan.hcas, results, strict=True))


def _latency(args: argparse.Namespace, plan: _Plan) -> None:
    """``ib_*_lat`` per rail, one tool after the other; the client reports."""
    for tool in (t for t in args.lat_tools.split(",") if t):
        if shutil.which(tool) is None:
            emit({"test": "fabric-latency", "round": args.round, "skipped": f"{tool} not found"})
            continue
        for rail, hca in enumerate(plan.hcas):
            mine, theirs = plan.ports(rail, args.base_port + 2 * len(plan.hcas))
            base = [tool, "-d", hca, "-n", str(LAT_ITERATIONS), "-F"]
            base += ["-x", str(args.gid_index)] if args.gid_index >= 0 else []
            record = {"test": "fabric-latency", "round": args.round, "rail": rail, "hca": hca,
                      "peer": plan.peer, "tool": tool}  # fmt: skip
            if plan.serves_first:
                subprocess.run([*base, "-p", str(mine)], capture_output=True, text=True,
                               timeout=120, check=False)  # fmt: skip
                continue
            time.sleep(SERVER_START_S)
            done = _client_run([*base, "-p", str(theirs), plan.peer_addr], 120)
            if done.returncode:
                emit(record | {"error": f"{tool} exited {done.returncode}"})
                continue
            emit(record | parse_perftest_lat(done.stdout))


def run_fabric(args: argparse.Namespace) -> None:
    plan = _plan(args)
    if plan is None:
        emit({"test": "fabric", "round": args.round, "skipped": "not paired in this round"})
        return
    tool = _tool(args, plan)
    if tool is None:
        emit({"test": "fabric", "round": args.round,
              "skipped": "perftest (ib_write_bw) is not installed on this node"})  # fmt: skip
        return
    root = args.sysfs_root.format(node=plan.node)
    before, why = _read_counters(plan, root)
    start = time.monotonic()
    rates = _bandwidth(tool, args, plan)
    after, _ = _read_counters(plan, root)
    window_s = time.monotonic() - start
    for rail, hca in enumerate(plan.hcas):
        record: dict[str, Any] = {"test": "fabric", "round": args.round, "rail": rail, "hca": hca,
                                  "peer": plan.peer, "tool": tool, **rates[hca]}  # fmt: skip
        if hca in before and hca in after:
            kind, counters = after[hca]
            record["counters"] = port_window(kind, before[hca][1], counters, window_s).as_dict()
        else:
            record["counters_skipped"] = why
        emit(record)
    if tool == PERFTEST_BW:
        _latency(args, plan)
    else:
        emit({"test": "fabric-latency", "round": args.round,
              "skipped": "no RDMA device: latency needs perftest (stand-in traffic only)"})  # fmt: skip
