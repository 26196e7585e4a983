"""One network namespace per emulated node holding its first compute HCA's netdev: the node
end of a veth pair whose far end (the switch port) stays outside, where a drill flaps it.

Names: namespace ``cf-<tag>-<node>``; inside it the netdev is named after the HCA the rules
select (``mlx5_0``), the far end ``cf<tag>s<i>`` (15 characters at most, IFNAMSIZ).  Deleting
a namespace deletes the veth pair with it (ip-netns(8)), so cleanup is one command per node.

:func:`open_fabric` joins the far ends in a Linux bridge (``cf<tag>br``, the emulated leaf)
and gives each node's netdev an address, so the nodes' rails can carry traffic to each other;
:func:`lossy` drops a share of one port's outgoing packets (see there).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.errors import AdapterError

__all__ = ["LinkPort", "Links", "lossy", "netns_missing", "open_fabric", "open_links"]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and out.returncode:
        raise AdapterError(f"ip {' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
    return out


def netns_missing() -> str | None:
    """Why network namespaces cannot be made here (None when they can)."""
    if shutil.which("ip") is None:
        return "no ip command (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "not root: creating a network namespace needs CAP_SYS_ADMIN and CAP_NET_ADMIN"
    probe = f"cf-probe-{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode:
        return f"ip netns add failed: {made.stderr.strip()}"
    try:
        veth = _ip(
            "-n",
            probe,
            "link",
            "add",
            "name",
            "cfa",
            "type",
            "veth",
            "peer",
            "name",
            "cfb",
            check=False,
        )
    finally:
        _ip("netns", "del", probe, check=False)
    return f"cannot make a veth pair: {veth.stderr.strip()}" if veth.returncode else None


@dataclass(frozen=True)
class LinkPort:
    node: str
    netns: str
    netdev: str  # inside the namespace, named after the HCA
    far_end: str  # outside: the switch port a drill flaps
    address: str  # where Prometheus scrapes the port's stand-in exporter


@dataclass
class Links:
    ports: dict[str, LinkPort] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    bridge: str = ""  # the emulated leaf joining the far ends (open_fabric)
    tag: str = ""  # namespaces are cf-<tag>-<node>
    addresses: dict[str, str] = field(default_factory=dict)  # node -> its rail's address

    def set_far_end(self, node: str, *, up: bool) -> None:
        _ip("link", "set", self.ports[node].far_end, "up" if up else "down")

    def close(self) -> None:
        for proc in self.processes:
            proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for port in self.ports.values():
            _ip("netns", "del", port.netns, check=False)
        if self.bridge:
            _ip("link", "del", self.bridge, check=False)


def _clear_leftovers(port: LinkPort) -> None:
    """Remove what a killed rehearsal left under the port's names. A namespace lives on while
    a process runs in it, after ``ip netns del`` has removed only its name (ip-netns(8)), and
    its veth pair with it; so the processes are killed first and the far end is deleted on its
    own (deleting one end of a veth pair deletes both, veth(4))."""
    pids = _ip("netns", "pids", port.netns, check=False)
    for pid in pids.stdout.split() if pids.returncode == 0 else []:
        with suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    _ip("netns", "del", port.netns, check=False)
    _ip("link", "del", port.far_end, check=False)


def _add_port(node: str, index: int, *, tag: str, hca: str) -> LinkPort:
    port = LinkPort(node, f"cf-{tag}-{node}", hca, f"cf{tag}s{index}", "")
    _clear_leftovers(port)
    _ip("netns", "add", port.netns)
    _ip("link", "add", port.far_end, "type", "veth", "peer", "name", hca, "netns", port.netns)
    _ip("-n", port.netns, "link", "set", hca, "up")
    _ip("link", "set", port.far_end, "up")
    return port


def _stand_in(port: LinkPort, hca: str, log: Path) -> tuple[LinkPort, subprocess.Popen[bytes]]:
    """The port's exporter inside its namespace, on a socket listening outside it."""
    listener = socket.create_server(("127.0.0.1", 0))
    host, number = listener.getsockname()[:2]
    argv = [
        "ip", "netns", "exec", port.netns, sys.executable, "-m",
        "clusterforge.rehearse.standins", "link", "--fd", str(listener.fileno()),
        "--netdev", port.netdev, "--device", hca,
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, pass_fds=(listener.fileno(),)
        )
    listener.close()  # the child holds its own copy
    return LinkPort(port.node, port.netns, port.netdev, port.far_end, f"{host}:{number}"), proc


def open_links(nodes: list[str], *, tag: str, hca: str, logs: Path) -> Links:
    """A namespace, veth pair and port exporter per node; all of it removed on failure."""
    links = Links()
    try:
        for i, node in enumerate(nodes):
            made = _add_port(node, i, tag=tag, hca=hca)
            links.ports[node] = made
            links.ports[node], proc = _stand_in(made, hca, logs / f"link-{node}.log")
            links.processes.append(proc)
    except BaseException:
        links.close()
        raise
    return links


SUBNET = "10.251.0"  # inside the namespaces and one bridge: never routed, never seen outside


def open_fabric(nodes: list[str], *, tag: str, hca: str) -> Links:
    """A namespace per node whose netdev (named ``hca``) has address ``SUBNET.<i+1>/24``, the
    far ends joined by the bridge ``cf<tag>br``; all of it removed on failure."""
    links = Links(bridge=f"cf{tag}br", tag=tag)
    try:
        _ip("link", "del", links.bridge, check=False)  # left by a killed rehearsal
        _ip("link", "add", links.bridge, "type", "bridge")
        _ip("link", "set", links.bridge, "up")
        for i, node in enumerate(nodes):
            port = _add_port(node, i, tag=tag, hca=hca)
            links.ports[node] = port
            _ip("link", "set", port.far_end, "master", links.bridge)
            address = f"{SUBNET}.{i + 1}"
            _ip("-n", port.netns, "addr", "add", f"{address}/24", "dev", hca)
            _ip("-n", port.netns, "link", "set", "lo", "up")
            links.addresses[node] = address
    except BaseException:
        links.close()
        raise
    return links


def _tc(netns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(["tc", "-n", netns, *args], capture_output=True, text=True, timeout=30)
    if check and out.returncode:
        raise AdapterError(f"tc {' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
    return out


def _nft(netns: str, script: str) -> None:
    argv = ["ip", "netns", "exec", netns, "nft", "-f", "-"]
    out = subprocess.run(argv, input=script, capture_output=True, text=True, timeout=30)
    if out.returncode:
        raise AdapterError(f"nft exited {out.returncode}: {out.stderr.strip()}")


_LOSS_TABLE = "cflossy"
_PER = 100_000  # loss in parts per hundred thousand: 0.5 % = 500


@contextmanager
def lossy(port: LinkPort, percent: float) -> Iterator[str]:
    """Drop ``percent`` % of the packets ``port`` sends, at random, in its egress queue;
    yields how.

    ``tc qdisc ... netem loss P%`` (tc-netem(8)) where the kernel has netem.  Where it has not
    (``CONFIG_NET_SCH_NETEM`` off, as on some CI kernels), an nftables rule on the netdev's
    egress hook (nft(8), ``numgen random``) picks the same share of packets and steers them
    (``meta priority``) into an HTB class whose FIFO holds nothing (tc-htb(8), ``pfifo
    limit 0``), so they too are dropped by the egress queue and counted in its drops, where
    the counters of :mod:`clusterforge.accept.fabric.counters` read them.
    """
    made = _tc(port.netns, "qdisc", "add", "dev", port.netdev, "root", "netem", "loss",
               f"{percent:g}%", check=False)  # fmt: skip
    how = f"tc netem loss {percent:g}% on {port.netdev} in {port.netns}"
    try:
        if made.returncode:
            if shutil.which("nft") is None:
                raise AdapterError(
                    f"no netem in this kernel ({made.stderr.strip()}) and no nft for the "
                    "fallback (apt-get install nftables)"
                )
            how = _htb_nft_loss(port, percent)
        yield how
    finally:
        _tc(port.netns, "qdisc", "del", "dev", port.netdev, "root", check=False)
        subprocess.run(["ip", "netns", "exec", port.netns, "nft", "delete", "table", "netdev",
                        _LOSS_TABLE], capture_output=True, timeout=30, check=False)  # fmt: skip


def _htb_nft_loss(port: LinkPort, percent: float) -> str:
    dev = port.netdev
    _tc(port.netns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1")
    for cls in ("1:1", "1:2"):
        _tc(port.netns, "class", "add", "dev", dev, "parent", "1:", "classid", cls, "htb",
            "rate", "100gbit")  # fmt: skip
    _tc(port.netns, "qdisc", "add", "dev", dev, "parent", "1:2", "handle", "2:", "pfifo",
        "limit", "0")  # fmt: skip
    share = round(percent / 100 * _PER)
    _nft(port.netns, (
        f"table netdev {_LOSS_TABLE} {{\n"
        f"  chain egress {{\n"
        f'    type filter hook egress device "{dev}" priority 0; policy accept;\n'
        f"    numgen random mod {_PER} < {share} meta priority set 1:2\n"
        "  }\n}\n"
    ))  # fmt: skip
    return (
        f"nftables numgen random {share}/{_PER} of {dev}'s packets into an empty HTB FIFO in "
        f"{port.netns} (this kernel has no netem)"
    )
