"""The fabric rounds: pairing, perftest parsers and port counters on published outputs,
per-port verdicts, and the suite's rounds through a launcher."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from clusterforge.accept.fabric.counters import (
    congestion_of,
    loss_of,
    port_window,
    unmeasurable,
)
from clusterforge.accept.fabric.pairs import fabric_rounds
from clusterforge.accept.fabric.verdicts import FabricRules, fabric_results
from clusterforge.accept.launch import Step, StepRun
from clusterforge.accept.parsers import parse_perftest_bw, parse_perftest_lat
from clusterforge.accept.suite import AcceptOptions, FabricOptions, run_acceptance
from clusterforge.design import plan
from clusterforge.errors import AcceptError
from clusterforge.ops.sysfs import SysfsReader
from clusterforge.spec import load_spec

FIXTURES = Path(__file__).parent / "fixtures" / "fabric"


# --- pairing ------------------------------------------------------------------------------


def _partners(rounds: list[Any]) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for pairs in rounds:
        in_round = [n for p in pairs for n in (p.a, p.b)]
        assert len(in_round) == len(set(in_round)), "a node in two pairs of one round"
        for p in pairs:
            seen.setdefault(p.a, set()).add(p.b)
            seen.setdefault(p.b, set()).add(p.a)
    return seen


def test_small_cluster_meets_every_node_under_another_leaf() -> None:
    groups = {"n1": 0, "n2": 0, "n3": 1, "n4": 1}
    rounds = fabric_rounds(list(groups), groups)
    assert len(rounds) == 2
    assert _partners(rounds) == {"n1": {"n3", "n4"}, "n2": {"n3", "n4"},
                                 "n3": {"n1", "n2"}, "n4": {"n1", "n2"}}  # fmt: skip


def test_one_leaf_pairs_everyone_since_nothing_crosses_a_spine() -> None:
    groups = {f"n{i}": 0 for i in range(5)}
    rounds = fabric_rounds(list(groups), groups)
    partners = _partners(rounds)
    assert all(partners[n] == set(groups) - {n} for n in groups)


def test_large_cluster_runs_two_bisection_rounds_across_the_spine() -> None:
    groups = {f"n{i:02d}": i // 20 for i in range(40)}  # two scalable units of 20
    rounds = fabric_rounds(list(groups), groups)
    assert len(rounds) == 2
    for pairs in rounds:
        assert all(groups[p.a] != groups[p.b] for p in pairs)
    partners = _partners(rounds)
    assert all(len(partners[n]) == 2 for n in groups)  # two partners: a bad port is told apart


# --- parsers on published outputs ----------------------------------------------------------


def test_perftest_bandwidth_rows_from_published_runs() -> None:
    # linux-rdma/perftest issue #273: ib_write_bw, 60 s, 8 B messages, --report_gbits
    gbits = parse_perftest_bw((FIXTURES / "ib_write_bw-gbits.txt").read_text())
    assert gbits == {"size_bytes": 8.0, "peak_gbit_per_s": 0.0, "average_gbit_per_s": 0.48}
    # linux-rdma/perftest issue #65: ib_send_bw in MB/sec (1 MB/s = 8e-3 Gb/s)
    mbytes = parse_perftest_bw((FIXTURES / "ib_send_bw-mbytes.txt").read_text())
    assert mbytes["average_gbit_per_s"] == pytest.approx(5544.28 * 8e-3)


def test_perftest_latency_row_after_the_tools_own_warnings() -> None:
    # spidernet-io/spiderpool docs: ib_read_lat between two pods over RoCE (ConnectX-5)
    lat = parse_perftest_lat((FIXTURES / "ib_read_lat-roce.txt").read_text())
    assert lat["typical_us"] == 6.74
    assert (lat["min_us"], lat["max_us"], lat["p99_us"], lat["p999_us"]) == (
        6.66, 20.37, 7.15, 20.37,
    )  # fmt: skip
    with pytest.raises(AcceptError, match="no 't_typical"):
        parse_perftest_lat((FIXTURES / "ib_write_bw-gbits.txt").read_text())


# --- counters read through the real sysfs reader -------------------------------------------


def _ib_tree(root: Path, counters: dict[str, int] | Path, hca: str = "mlx5_1") -> Path:
    """A sysfs tree in the kernel ABI's layout (sysfs-class-infiniband) for one IB port."""
    port = root / "sys/class/infiniband" / hca / "ports/1"
    (port / "counters").mkdir(parents=True)
    (port / "link_layer").write_text("InfiniBand\n")
    (port / "state").write_text("4: ACTIVE\n")
    (port / "rate").write_text("400 Gb/sec (4X NDR)\n")
    if isinstance(counters, Path):
        for f in counters.iterdir():
            shutil.copy(f, port / "counters" / f.name)
    else:
        for name, value in counters.items():
            (port / "counters" / name).write_text(f"{value}\n")
    return root


def _counters(root: Path) -> dict[str, int]:
    [nic] = SysfsReader(root).nics()
    return dict(nic.counters)


def test_saturated_ib_counters_make_the_loss_unmeasurable(tmp_path) -> None:
    # leptonai/gpud PR #943: a ConnectX-7 port whose 16-bit port_xmit_discards and 8-bit
    # link_downed stopped at their maximum; traffic moves on, the discards cannot rise.
    before = _counters(_ib_tree(tmp_path / "a", FIXTURES / "ib-counters-cx7"))
    after = dict(before, port_xmit_packets=before["port_xmit_packets"] + 10_000_000)
    window = port_window("infiniband", before, after, 10.0)
    assert "port_xmit_discards" in unmeasurable(window)
    assert "port_xmit_wait" in window.saturated  # 32-bit wait counter at 4294967295 too
    assert loss_of(window) == (0.0, loss_of(window)[1])  # type: ignore[index]
    rows = [_row("gpu-0001", "mlx5_1", "gpu-0033", window)]
    [result] = [r for r in fabric_results(rows, _rules()) if r.test == "fabric loss"]
    assert result.verdict == "fail" and "perfquery -x -R" in result.evidence


def test_ib_loss_over_a_tenth_of_a_percent_fails_the_port_and_names_its_cable(tmp_path) -> None:
    base = {"port_xmit_packets": 10**9, "port_rcv_packets": 10**9, "port_xmit_discards": 0,
            "port_rcv_errors": 0, "symbol_error": 0, "link_downed": 0, "port_xmit_wait": 0,
            "port_xmit_data": 0}  # fmt: skip
    before = _counters(_ib_tree(tmp_path / "a", base))
    lossy = _counters(_ib_tree(tmp_path / "b", base | {
        "port_xmit_packets": 10**9 + 100_000, "port_xmit_discards": 500,
        "port_xmit_wait": 7_000, "port_xmit_data": 10**9 // 4 * 45}))  # fmt: skip
    clean = _counters(_ib_tree(tmp_path / "c", base | {
        "port_xmit_packets": 10**9 + 100_000, "port_xmit_discards": 50}))  # fmt: skip
    rows = [
        _row("gpu-0001", "mlx5_0", "gpu-0033", port_window("infiniband", before, lossy, 10.0)),
        _row("gpu-0002", "mlx5_0", "gpu-0034", port_window("infiniband", before, clean, 10.0)),
    ]
    results = {(r.test, r.node): r for r in fabric_results(rows, _rules())}
    bad = results[("fabric loss", "gpu-0001")]
    assert bad.verdict == "fail" and bad.measured == pytest.approx(0.5)
    assert bad.port == "mlx5_0 (cable gpu-0001 mlx5_0 -> leaf-0001 p1, 8 m mmf-om4)"
    assert "port_xmit_discards" in bad.evidence and "gpu-0033" in bad.evidence
    assert results[("fabric loss", "gpu-0002")].verdict == "pass"  # 0.05 %
    congestion = results[("fabric congestion", "gpu-0001")]
    assert congestion.verdict == "info" and "port_xmit_wait +7,000" in congestion.evidence


def test_roce_counters_from_a_published_ethtool_dump(tmp_path) -> None:
    # bpf@vger.kernel.org, 2024-06-19 ("XDP Performance Regression"): an mlx5 port flooded
    # with 64 B packets; read as the increase since the counters were zero.
    root = tmp_path / "r"
    port = root / "sys/class/infiniband/mlx5_0/ports/1"
    port.mkdir(parents=True)
    (port / "link_layer").write_text("Ethernet\n")
    (root / "sys/class/infiniband/mlx5_0/device/net/ens1f0np0").mkdir(parents=True)
    (root / "ethtool-S").mkdir()
    shutil.copy(FIXTURES / "ethtool-S-mlx5.txt", root / "ethtool-S" / "ens1f0np0")
    after = _counters(root)
    window = port_window("roce", dict.fromkeys(after, 0), after, 10.0)
    loss, evidence = loss_of(window)  # type: ignore[misc]
    assert loss == pytest.approx((58591428329 + 990473555) / 97052087562)
    assert evidence.startswith("receive:")
    assert congestion_of(window) == {"tx_pause_ctrl_phy": 5745055}


# --- verdicts -------------------------------------------------------------------------------


def _rules() -> FabricRules:
    design = plan(load_spec("examples/colo-512-h100.yaml"))
    from clusterforge.accept.fabric.verdicts import fabric_rules

    return fabric_rules(design, ["gpu-0001", "gpu-0002", "gpu-0033", "gpu-0034"], max_loss=1e-3)


def _row(node: str, hca: str, peer: str, window: Any = None, **extra: Any) -> dict[str, Any]:
    row = {"test": "fabric", "round": 0, "rail": 0, "hca": hca, "node": node, "peer": peer,
           "tool": "ib_write_bw", **extra}  # fmt: skip
    if window is not None:
        row["counters"] = window.as_dict()
    return row


def test_a_slow_port_is_named_only_when_slow_with_every_partner() -> None:
    # gpu-0033 mlx5_0 has a bad cable: both directions of its rail are slow in both rounds,
    # which also drags its partners' flows to it; their other flows are fine.
    flows = {("gpu-0001", "gpu-0033"): 180.0, ("gpu-0033", "gpu-0001"): 170.0,
             ("gpu-0002", "gpu-0034"): 390.0, ("gpu-0034", "gpu-0002"): 391.0,
             ("gpu-0001", "gpu-0034"): 389.0, ("gpu-0034", "gpu-0001"): 392.0,
             ("gpu-0002", "gpu-0033"): 175.0, ("gpu-0033", "gpu-0002"): 172.0}  # fmt: skip
    rows = [_row(a, "mlx5_0", b, tx_gbit_per_s=v) for (a, b), v in flows.items()]
    results = [r for r in fabric_results(rows, _rules()) if r.test == "fabric bandwidth"]
    assert {r.node for r in results if r.verdict == "fail"} == {"gpu-0033"}
    [bad] = [r for r in results if r.verdict == "fail"]
    assert "leaf-0009" in bad.port and bad.measured == 172.0
    assert all(r.targets[0].value == pytest.approx(360.0) for r in results)  # 90 % of 400G


def test_stand_in_bandwidth_is_reported_not_judged() -> None:
    rows = [_row("gpu-0001", "mlx5_0", "gpu-0033", tx_gbit_per_s=3.0, tool="iperf3"),
            _row("gpu-0033", "mlx5_0", "gpu-0001", tx_gbit_per_s=3.1, tool="iperf3")]  # fmt: skip
    results = fabric_results(rows, _rules())
    assert {r.verdict for r in results} == {"info"}


def test_latency_is_judged_against_the_design_path() -> None:
    rows = [{"test": "fabric-latency", "round": 0, "rail": 0, "hca": "mlx5_0", "node": n,
             "peer": p, "tool": "ib_write_lat", "typical_us": v}
            for n, p, v in (("gpu-0033", "gpu-0001", 2.1), ("gpu-0034", "gpu-0002", 9.0))]  # fmt: skip
    results = {r.node: r for r in fabric_results(rows, _rules())}
    assert results["gpu-0001"].verdict == "pass"  # 4 links x 0.5 us, limit twice that
    assert results["gpu-0034"].verdict == "fail" and results["gpu-0002"].verdict == "fail"


# --- the suite's rounds through a launcher --------------------------------------------------


class _FakeFabric:
    """Answers each fabric step as the workers would, with one lossy port."""

    def __init__(self, lossy: tuple[str, str]) -> None:
        self.lossy = lossy
        self.steps: list[Step] = []

    def run(self, step: Step) -> StepRun:
        self.steps.append(step)
        args = dict(zip(step.args[1::2], step.args[2::2], strict=False))
        pairs = [p.split(":") for p in args["--pairs"].split(",")]
        records = []
        for a, b in pairs:
            for node, peer in ((a, b), (b, a)):
                for hca in args["--hcas"].split(","):
                    dropped = 900 if (node, hca) == self.lossy else 3
                    window = port_window("infiniband", {"port_xmit_packets": 0,
                        "port_xmit_discards": 0}, {"port_xmit_packets": 300_000,
                        "port_xmit_discards": dropped}, 10.0)  # fmt: skip
                    records.append(_row(node, hca, peer, window, round=int(args["--round"]),
                                        tx_gbit_per_s=392.0))  # fmt: skip
        return StepRun(step, records, "", 0)


def test_suite_runs_rounds_on_the_catalog_hcas_and_fails_only_the_lossy_port() -> None:
    design = plan(load_spec("examples/colo-512-h100.yaml"))
    nodes = ("gpu-0001", "gpu-0002", "gpu-0033", "gpu-0034")  # two scalable units
    launcher = _FakeFabric(lossy=("gpu-0034", "mlx5_9"))
    options = AcceptOptions(nodes=nodes, tests=("fabric",), fabric=FabricOptions(seconds=5))
    report = run_acceptance(design, options, launcher)
    assert len(launcher.steps) == 2  # every node meets both nodes of the other unit
    hcas = launcher.steps[0].args[launcher.steps[0].args.index("--hcas") + 1]
    assert hcas == "mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11"  # DGX compute
    failed = [r for r in report.results if r.verdict == "fail"]
    assert [(r.test, r.node) for r in failed] == [("fabric loss", "gpu-0034")]
    assert failed[0].port.startswith("mlx5_9 (cable gpu-0034 mlx5_9 -> leaf-0014")
    assert report.failed_nodes == ["gpu-0034"]
    assert report.as_dict()["results"][0]["port"]
