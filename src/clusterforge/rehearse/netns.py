"""One network namespace per emulated node holding its first compute HCA's netdev: the node
end of a veth pair whose far end (the switch port) stays outside, where a drill flaps it.

Names: namespace ``cf-<tag>-<node>``; inside it the netdev is named after the HCA the rules
select (``mlx5_0``), the far end ``cf<tag>s<i>`` (15 characters at most, IFNAMSIZ).  Deleting
a namespace deletes the veth pair with it (ip-netns(8)), so cleanup is one command per node.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.errors import AdapterError

__all__ = ["LinkPort", "Links", "netns_missing", "open_links"]


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


def _add_port(node: str, index: int, *, tag: str, hca: str) -> LinkPort:
    port = LinkPort(node, f"cf-{tag}-{node}", hca, f"cf{tag}s{index}", "")
    _ip("netns", "del", port.netns, check=False)  # a namespace left by a killed rehearsal
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
