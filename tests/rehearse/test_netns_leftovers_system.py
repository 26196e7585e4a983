"""A rehearsal killed mid-way leaves a node's namespace alive without its name (a process still
runs in it) and the far end of its veth pair in the root namespace; the next rehearsal with the
same tag must still make its ports.  Needs root and iproute2; skipped otherwise.  Marked
``system``.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from clusterforge.rehearse.netns import netns_missing, open_fabric

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(bool(netns_missing()), reason=f"needs {netns_missing()}"),
]

TAG = "29" + "733"  # its own names: cf-29733-<node>, cf29733s<i>, cf29733br


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=False)


def _kill_rehearsal_midway(node: str) -> subprocess.Popen[bytes]:
    """What a SIGKILLed rehearsal leaves for ``node``: a veth pair into its namespace, a process
    inside that namespace, and the namespace's name removed by a partial cleanup."""
    name, far_end = f"cf-{TAG}-{node}", f"cf{TAG}s0"
    assert _ip("netns", "add", name).returncode == 0
    made = _ip("link", "add", far_end, "type", "veth", "peer", "name", "mlx5_0", "netns", name)
    assert made.returncode == 0, made.stderr
    inside = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "60"])
    time.sleep(0.2)  # entered the namespace
    assert _ip("netns", "del", name).returncode == 0
    assert _ip("link", "show", far_end).returncode == 0  # the pair outlives the name
    return inside


def test_ports_are_made_again_over_what_a_killed_rehearsal_left():
    inside = _kill_rehearsal_midway("n1")
    try:
        links = open_fabric(["n1", "n2"], tag=TAG, hca="mlx5_0")
        try:
            assert set(links.ports) == {"n1", "n2"}
            shown = _ip("-n", f"cf-{TAG}-n1", "addr", "show", "mlx5_0")
            assert shown.returncode == 0 and links.addresses["n1"] in shown.stdout
        finally:
            links.close()
    finally:
        inside.kill()
        inside.wait()
    names = _ip("netns", "list").stdout
    assert f"cf-{TAG}-" not in names
    assert _gone(f"cf{TAG}s0") and _gone(f"cf{TAG}br")


def _gone(link: str, within_s: float = 10.0) -> bool:
    """The kernel frees a namespace, and the veth pair in it, after its last user has gone,
    in a work queue: a far end may outlive ``ip netns del`` for a moment."""
    deadline = time.monotonic() + within_s
    while _ip("link", "show", link).returncode == 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
