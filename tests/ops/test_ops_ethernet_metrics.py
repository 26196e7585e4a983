"""Ethernet (RoCE) port metrics: recorded ``ethtool -S`` text and RDMA hw_counters, through the
sysfs reader, into the exporter's named counters with device, port and rail labels."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ops_fixtures import ETHTOOL_FIXTURES, NVML_FIXTURES
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from clusterforge.ops.checker import build_checker
from clusterforge.ops.ethernet import PORT_METRICS, PRIORITY_METRICS, PortSample, ethernet_samples
from clusterforge.ops.exporter import Exporter
from clusterforge.ops.options import SourceOptions
from clusterforge.ops.sysfs import SysfsReader, parse_ethtool_stats

Samples = dict[tuple[str, str, str], float]  # (metric, device, priority) -> value


def test_recorded_ethtool_text_gives_the_phy_counters() -> None:
    stats = parse_ethtool_stats((ETHTOOL_FIXTURES / "cx7-roce-400g.txt").read_text())
    samples = {(s.metric, s.priority): s.value for s in ethernet_samples(stats)}
    assert samples[("clusterforge_eth_link_down_events", None)] == 1
    assert samples[("clusterforge_eth_rx_fec_corrected_bits", None)] == 2_952_000
    assert samples[("clusterforge_eth_rx_bits", None)] == 29_520_000_000_000_000
    assert samples[("clusterforge_eth_rx_symbol_errors", None)] == 0  # reported, and zero
    assert samples[("clusterforge_eth_rx_pause_microseconds", "3")] == 60_000
    assert samples[("clusterforge_eth_tx_pause_frames", "3")] == 12
    # per-ring counters (rx0_ecn_mark) and per-lane ones are not port metrics
    assert samples[("clusterforge_eth_rx_ecn_marked_packets", None)] == 0
    assert not any(metric.startswith("clusterforge_roce_cnp") for metric, _ in samples)


def test_priority_counters_take_their_priority_label_and_nothing_else() -> None:
    counters = {"rx_prio3_pause": 5, "rx_prio3_pause_duration": 9, "rx_prio0_pause": 0}
    assert sorted(ethernet_samples(counters), key=lambda s: (s.metric, s.priority or "")) == [
        PortSample("clusterforge_eth_rx_pause_frames", 0.0, priority="0"),
        PortSample("clusterforge_eth_rx_pause_frames", 5.0, priority="3"),
        PortSample("clusterforge_eth_rx_pause_microseconds", 9.0, priority="3"),
    ]


def test_sysfs_reader_merges_ethtool_and_rdma_hw_counters(
    fake_root: Callable[[str], Path],
) -> None:
    nics = SysfsReader(fake_root("roce-recorded-counters.json")).nics()
    port = next(n for n in nics if n.name == "mlx5_0")
    assert port.link_layer == "Ethernet" and port.errors == {}
    assert port.counters["rp_cnp_handled"] == 2100  # hw_counters
    assert port.counters["rx_corrected_bits_phy"] == 2_952_000  # ethtool -S


def _samples(exporter: Exporter) -> tuple[Samples, dict[str, list[dict[str, str]]]]:
    text = generate_latest(exporter.registry).decode()
    samples: Samples = {}
    labels: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.startswith(("clusterforge_eth_", "clusterforge_roce_")):
                key = (s.name, s.labels.get("device", ""), s.labels.get("priority", ""))
                samples[key] = s.value
                labels.setdefault(s.name, []).append(s.labels)
    return samples, labels


def _exported(root: Path, spec: Path | None) -> tuple[Samples, dict[str, list[dict[str, str]]]]:
    options = SourceOptions(node="gpu-0001", spec_path=spec, sysfs_root=root, budget_s=4.0,
                            nvml_fixture=NVML_FIXTURES / "h100-healthy.json")  # fmt: skip
    exporter = Exporter(build_checker(options))
    exporter.refresh()
    return _samples(exporter)


def test_exporter_serves_ethernet_and_roce_counters_by_device_port_and_rail(
    fake_root: Callable[[str], Path], tmp_path: Path
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("num_gpus: 64\nnode: dgx-h100\nnetwork:\n  fabric: roce\n")
    samples, labels = _exported(fake_root("roce-recorded-counters.json"), spec)
    assert samples[("clusterforge_roce_cnp_handled_total", "mlx5_0", "")] == 2100
    assert samples[("clusterforge_roce_ecn_marked_packets_total", "mlx5_0", "")] == 4400
    assert samples[("clusterforge_eth_rx_pause_microseconds_total", "mlx5_0", "3")] == 60_000
    assert samples[("clusterforge_eth_link_down_events_total", "mlx5_0", "")] == 1
    assert samples[("clusterforge_eth_port_up", "mlx5_0", "")] == 1
    # DGX H100 rails: mlx5_0 is rail 0, mlx5_3 rail 1 (the catalog's compute HCA names)
    rails = {lab["device"]: lab["rail"] for lab in labels["clusterforge_eth_rx_discards_total"]}
    assert rails["mlx5_0"] == "0" and rails["mlx5_3"] == "1"
    assert {lab["port"] for lab in labels["clusterforge_eth_port_up"]} == {"1"}


def test_without_a_design_the_rail_label_is_empty_and_only_ethernet_ports_have_series(
    fake_root: Callable[[str], Path],
) -> None:
    _samples_roce, labels = _exported(fake_root("roce-8x400-healthy.json"), None)
    assert {lab["rail"] for lab in labels["clusterforge_eth_rx_discards_total"]} == {""}
    samples_ib, _ = _exported(fake_root("ib-8x400-healthy.json"), None)
    # the InfiniBand compute ports have none; the node's two Ethernet storage ports do
    assert {device for _metric, device, _prio in samples_ib} == {"mlx5_8", "mlx5_9"}


def test_every_ethernet_metric_is_documented_with_its_driver_counter() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ops.md").read_text()
    for metric in (*PORT_METRICS, *PRIORITY_METRICS):
        counter = metric.counter.replace("{p}", "<p>")
        assert f"`{metric.name}_total" in doc and f"`{counter}`" in doc, metric.name
