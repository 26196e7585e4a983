"""Prometheus exporter: the same checks as ``clusterforge check``, plus NIC counters.

A background loop runs the checks every ``interval_s`` (scrapes never run checks, so a slow
node cannot time out Prometheus) and keeps the previous reading so counters are judged by
their increase (the first run is a baseline, see :mod:`clusterforge.ops.checks`).  Metric
names (labels node/check/severity/gpu/nic/subject):

- ``clusterforge_check_status``: 0 pass, 1 warn, 2 unknown, 3 fail (one series per result)
- ``clusterforge_node_info{rack, role}`` = 1 with ``--expect``: the node's rack and whether it
  is a spare, to group failures by rack (a shared cause) in alerts
- ``clusterforge_node_healthy``: 1 when the node passes (warnings allowed), else 0
- ``clusterforge_check_read_errors``, ``clusterforge_check_duration_seconds``,
  ``clusterforge_check_last_run_timestamp_seconds``
- ``clusterforge_nic_counter_total{counter=...}``: raw sysfs / ethtool counters
- ``clusterforge_nic_up``, ``clusterforge_nic_speed_gbit_per_second``
- ``clusterforge_gpu_temperature_celsius``, ``clusterforge_gpu_power_watts``,
  ``clusterforge_gpu_ecc_dbe_volatile``, ``clusterforge_gpu_remapped_rows_uncorrectable``
- ``clusterforge_driver_info{driver_version, cuda_version}`` = 1: alert on
  ``count(count by (driver_version) (clusterforge_driver_info)) > 1`` for a mixed cluster.

Counters are exported as counters and alerted on with ``increase()``, never as "last value"
gauges (the sticky-XID-gauge complaint of dcgm-exporter #500/#190, operations.md §4).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from clusterforge.ops.checks import STATUS_ORDER
from clusterforge.ops.readings import NodeReading
from clusterforge.ops.runner import Report

__all__ = ["Exporter", "HealthCollector"]

CheckFn = Callable[[NodeReading | None], Report]


def _label(value: Any) -> str:
    return "" if value is None else str(value)


class HealthCollector(Collector):
    """Turns the latest Report into metric families at scrape time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._report: Report | None = None

    def update(self, report: Report) -> None:
        with self._lock:
            self._report = report

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            report = self._report
        if report is None:
            return
        yield from self._checks(report)
        yield from self._nics(report)
        yield from self._gpus(report)

    def _checks(self, report: Report) -> Iterator[Metric]:
        node = report.node
        status = GaugeMetricFamily(
            "clusterforge_check_status",
            "Check status: 0 pass, 1 warn, 2 unknown, 3 fail",
            labels=["node", "check", "severity", "gpu", "nic", "subject"],
        )
        for r in report.results:
            status.add_metric(
                [node, r.check, r.severity, _label(r.gpu), _label(r.nic), r.subject],
                STATUS_ORDER[r.status],
            )
        yield status
        if report.facts is not None:
            info = GaugeMetricFamily(
                "clusterforge_node_info",
                "The node's place in the design: rack, and role (training or spare)",
                labels=["node", "rack", "role"],
            )
            role = "spare" if report.facts.spare else "training"
            info.add_metric([node, _label(report.facts.rack), role], 1.0)
            yield info
        for name, doc, value in (
            (
                "clusterforge_node_healthy",
                "1 when the node passes (warnings allowed)",
                float(report.exit_code == 0),
            ),
            (
                "clusterforge_check_read_errors",
                "Readings that failed or timed out",
                float(len(report.errors)),
            ),
            (
                "clusterforge_check_duration_seconds",
                "Time the last check run took",
                report.duration_s,
            ),
            (
                "clusterforge_check_last_run_timestamp_seconds",
                "When the last check ran",
                report.reading.taken_at_s,
            ),
        ):
            family = GaugeMetricFamily(name, doc, labels=["node"])
            family.add_metric([node], value)
            yield family
        info = GaugeMetricFamily(
            "clusterforge_driver_info",
            "NVIDIA driver and CUDA driver versions",
            labels=["node", "driver_version", "cuda_version"],
        )
        info.add_metric(
            [
                node,
                _label(report.reading.gpu.driver_version),
                _label(report.reading.gpu.cuda_driver_version),
            ],
            1.0,
        )
        yield info

    def _nics(self, report: Report) -> Iterator[Metric]:
        node = report.node
        counters = CounterMetricFamily(
            "clusterforge_nic_counter",
            "Raw NIC port counters (sysfs, ethtool -S)",
            labels=["node", "nic", "port", "counter"],
        )
        up = GaugeMetricFamily(
            "clusterforge_nic_up",
            "1 when the port is ACTIVE / LinkUp",
            labels=["node", "nic", "port", "link_layer"],
        )
        speed = GaugeMetricFamily(
            "clusterforge_nic_speed_gbit_per_second",
            "Port rate, Gb/s",
            labels=["node", "nic", "port"],
        )
        for nic in report.reading.nics:
            port = str(nic.port)
            for name, value in sorted(nic.counters.items()):
                counters.add_metric([node, nic.name, port, name], float(value))
            up.add_metric(
                [node, nic.name, port, _label(nic.link_layer)],
                float(nic.state == "ACTIVE" and nic.phys_state == "LinkUp"),
            )
            if nic.rate_gbit_per_s is not None:
                speed.add_metric([node, nic.name, port], nic.rate_gbit_per_s)
        yield from (counters, up, speed)

    def _gpus(self, report: Report) -> Iterator[Metric]:
        node = report.node
        fields = (
            ("clusterforge_gpu_temperature_celsius", "GPU temperature, C", "temperature_c"),
            ("clusterforge_gpu_power_watts", "GPU power draw, W", "power_w"),
            (
                "clusterforge_gpu_ecc_dbe_volatile",
                "Volatile double-bit ECC errors",
                "ecc_dbe_volatile",
            ),
            (
                "clusterforge_gpu_remapped_rows_uncorrectable",
                "Rows remapped for uncorrectable errors",
                "remapped_rows_uncorrectable",
            ),
        )
        for name, doc, attr in fields:
            family = GaugeMetricFamily(name, doc, labels=["node", "gpu", "uuid"])
            for gpu in report.reading.gpu.gpus:
                value = getattr(gpu, attr)
                if value is not None:
                    family.add_metric([node, str(gpu.index), _label(gpu.uuid)], float(value))
            yield family


class Exporter:
    """Runs ``check_fn`` every ``interval_s`` and serves the results."""

    def __init__(self, check_fn: CheckFn, interval_s: float = 60.0) -> None:
        self.check_fn = check_fn
        self.interval_s = interval_s
        self.collector = HealthCollector()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self._previous: NodeReading | None = None
        self._stop = threading.Event()

    def refresh(self) -> Report:
        """Run the checks once (counters judged against the previous run) and publish."""
        report = self.check_fn(self._previous)
        self._previous = report.reading
        self.collector.update(report)
        return report

    def serve(self, port: int, address: str = "0.0.0.0") -> Any:
        """Start the HTTP server in a daemon thread; returns the server (call .shutdown())."""
        server, _thread = start_http_server(port, addr=address, registry=self.registry)
        return server

    def run_forever(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
