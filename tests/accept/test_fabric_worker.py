"""The worker's perftest path end to end on this machine: two labelled nodes started by the
local launcher, ``ib_write_bw`` / ``ib_*_lat`` replaced by programs that print published
perftest outputs, each node's ports a sysfs tree in the kernel's layout whose counters the
stand-in HCA advances while it 'sends'."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clusterforge.accept.launch import LocalLauncher
from clusterforge.accept.suite import AcceptOptions, FabricOptions, run_acceptance
from clusterforge.design import plan
from clusterforge.spec import load_spec

FIXTURES = Path(__file__).parent / "fixtures" / "fabric"
NODES = ("gpu-0001", "gpu-0033")  # two scalable units of examples/colo-512-h100.yaml
HCAS = ("mlx5_0", "mlx5_3")
PACKETS = 1_000_000
LOSSY = ("gpu-0033", "mlx5_3", 2_000)  # 0.2 % of its packets discarded

# A stand-in for perftest: a client (last argument an address) advances its port's
# counters as an HCA would and prints the published output; a server prints nothing.
FAKE_TOOL = """#!{python}
import os, sys
from pathlib import Path
args = sys.argv[1:]
if args and not args[-1].startswith("-") and args[-2] not in ("-p", "-d", "-D", "-s", "-q", "-n", "-x"):
    hca = args[args.index("-d") + 1]
    counters = Path(os.environ["FAKE_SYSFS"]) / os.environ["CF_NODE"] / "sys/class/infiniband" / hca / "ports/1/counters"
    lossy_node, lossy_hca, dropped = {lossy!r}
    for name, step in (("port_xmit_packets", {packets}), ("port_rcv_packets", {packets}),
                       ("port_xmit_discards", dropped if (os.environ["CF_NODE"], hca) == (lossy_node, lossy_hca) else 0)):
        path = counters / name
        if "bw" in sys.argv[0]:
            path.write_text(str(int(path.read_text()) + step) + "\\n")
    print(Path({output!r}).read_text())
"""


def _tool(bin_dir: Path, name: str, output: Path) -> None:
    path = bin_dir / name
    path.write_text(
        FAKE_TOOL.format(python=sys.executable, lossy=LOSSY, packets=PACKETS, output=str(output))
    )
    path.chmod(0o755)


def _trees(root: Path) -> None:
    for node in NODES:
        for hca in HCAS:
            port = root / node / "sys/class/infiniband" / hca / "ports/1"
            (port / "counters").mkdir(parents=True)
            (port / "link_layer").write_text("InfiniBand\n")
            for name in ("port_xmit_packets", "port_rcv_packets", "port_xmit_discards",
                         "port_rcv_errors", "symbol_error", "link_downed"):  # fmt: skip
                (port / "counters" / name).write_text("0\n")


def test_perftest_rounds_read_counters_and_fail_only_the_lossy_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "ib_write_bw", FIXTURES / "ib_write_bw-gbits.txt")
    for lat in ("ib_write_lat", "ib_send_lat"):
        _tool(bin_dir, lat, FIXTURES / "ib_read_lat-roce.txt")
    _trees(tmp_path / "sysfs")
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_SYSFS", str(tmp_path / "sysfs"))
    design = plan(load_spec("examples/colo-512-h100.yaml"))
    fabric = FabricOptions(seconds=1, hcas=HCAS, tool="perftest",
                           sysfs_root=str(tmp_path / "sysfs" / "{node}"))  # fmt: skip
    options = AcceptOptions(nodes=NODES, tests=("fabric",), fabric=fabric)
    report = run_acceptance(design, options, LocalLauncher(port=29641))
    by = {(r.test, r.node, r.port.split()[0]): r for r in report.results}
    loss = {k: r for k, r in by.items() if k[0] == "fabric loss"}
    assert len(loss) == 4, report.as_dict()  # every port, counted before and after
    assert loss[("fabric loss", "gpu-0033", "mlx5_3")].verdict == "fail"
    assert loss[("fabric loss", "gpu-0033", "mlx5_3")].measured == pytest.approx(0.2)
    assert {k for k, r in loss.items() if r.verdict == "fail"} == {
        ("fabric loss", "gpu-0033", "mlx5_3")
    }
    # the published outputs, parsed: 0.48 Gb/s (far under 90 % of 400G) and 6.74 us
    bandwidth = [r for r in report.results if r.test == "fabric bandwidth"]
    assert {r.measured for r in bandwidth} == {0.48} and {r.verdict for r in bandwidth} == {"fail"}
    latency = [r for r in report.results if r.test == "fabric latency"]
    assert latency and {r.measured for r in latency} == {6.74}
    assert report.failed_nodes == ["gpu-0001", "gpu-0033"]
