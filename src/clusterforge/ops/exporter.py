"""Prometheus metrics of the node checks: the same checks as ``clusterforge check``, plus NIC
and GPU readings.

:class:`Exporter` runs the checks every ``interval_s`` in its own thread and renders the
metrics once per run into a cached snapshot; a scrape only copies those bytes
(:mod:`clusterforge.ops.serve`), so a slow node, or a hundred scrapers at once, never makes a
scrape wait for a reading.  The previous reading is kept so counters are judged by their
increase (the first run is a baseline, see :mod:`clusterforge.ops.checks`).  Metric names
(labels node/check/severity/gpu/nic/subject):

- ``clusterforge_check_status``: 0 pass, 1 warn, 2 unknown, 3 fail (one series per result)
- ``clusterforge_node_info{rack, role}`` = 1 with a spec: the node's rack and whether it is
  a spare, to group failures by rack (a shared cause) in alerts
- ``clusterforge_node_healthy``: 1 when the node passes (warnings allowed), else 0
- ``clusterforge_check_read_errors``, ``clusterforge_check_duration_seconds``,
  ``clusterforge_check_last_run_timestamp_seconds``
- ``clusterforge_exporter_check_failures_total``: check runs that raised (the snapshot then
  keeps the last good run; alert on its age with the timestamp above)
- ``clusterforge_nic_counter_total{counter=...}``: raw sysfs / ethtool counters
- ``clusterforge_nic_up``, ``clusterforge_nic_speed_gbit_per_second``
- Ethernet (RoCE) ports, labels node/device/port/rail (rail: the device's index in the
  design's HCA names with ``--expect``, else empty): ``clusterforge_eth_port_up`` and the
  counters of :mod:`clusterforge.ops.ethernet` (``clusterforge_eth_*_total``,
  ``clusterforge_roce_*_total``; PFC ones also by ``priority``)
- ``clusterforge_gpu_temperature_celsius``, ``clusterforge_gpu_power_watts``,
  ``clusterforge_gpu_ecc_dbe_volatile``, ``clusterforge_gpu_remapped_rows_uncorrectable``
- ``clusterforge_gpu_foreign_processes{gpu, uuid, kind}``: processes on the GPU that belong
  to no running job or pod (``kind="outside_job"``) or look like a cryptocurrency miner
  (``kind="miner"``); every GPU with a process list has both series, 0 when clean
- ``clusterforge_gpu_foreign_process_info{gpu, pid, user, command, kind}`` = 1 for each such
  process, to name it in an alert
- ``clusterforge_driver_info{driver_version, cuda_version}`` = 1: alert on
  ``count(count by (driver_version) (clusterforge_driver_info)) > 1`` for a mixed cluster.

Cumulative error counters are exported as Prometheus counters and alerted on with
``increase()`` (Prometheus documentation, "Metric types": a counter is only meaningful as a
rate or an increase), never as a "last value" gauge that stays raised after the event.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from clusterforge.ops.checks import STATUS_ORDER
from clusterforge.ops.checks.processes import FOREIGN_KINDS
from clusterforge.ops.ethernet import PORT_METRICS, PRIORITY_METRICS, ethernet_samples
from clusterforge.ops.readings import NodeReading
from clusterforge.ops.runner import NodeChecker, Report

__all__ = ["Exporter", "HealthCollector", "Snapshot"]


def _label(value: object) -> str:
    return "" if value is None else str(value)


class HealthCollector(Collector):
    """Turns the latest Report into metric families (once per check run, see Exporter)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._report: Report | None = None
        self._num_failed_runs = 0

    def update(self, report: Report) -> None:
        with self._lock:
            self._report = report

    def count_failed_run(self) -> None:
        with self._lock:
            self._num_failed_runs += 1

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            report, num_failed = self._report, self._num_failed_runs
        failures = CounterMetricFamily(
            "clusterforge_exporter_check_failures",
            "Check runs that raised instead of returning a report",
            value=float(num_failed),
        )
        yield failures
        if report is None:
            return
        yield from self._checks(report)
        yield from self._node(report)
        yield from self._nics(report)
        yield from self._ethernet(report)
        yield from self._gpus(report)
        yield from self._gpu_processes(report)

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

    def _node(self, report: Report) -> Iterator[Metric]:
        for name, doc, value in (
            ("clusterforge_node_healthy", "1 when the node passes (warnings allowed)",
             float(report.exit_code == 0)),
            ("clusterforge_check_read_errors", "Readings that failed or timed out",
             float(len(report.errors))),
            ("clusterforge_check_duration_seconds", "Time the last check run took",
             report.duration_s),
            ("clusterforge_check_last_run_timestamp_seconds", "When the last check ran",
             report.reading.taken_at_s),
        ):  # fmt: skip
            family = GaugeMetricFamily(name, doc, labels=["node"])
            family.add_metric([report.node], value)
            yield family
        gpu = report.reading.gpu
        info = GaugeMetricFamily(
            "clusterforge_driver_info",
            "NVIDIA driver and CUDA driver versions",
            labels=["node", "driver_version", "cuda_version"],
        )
        info.add_metric(
            [report.node, _label(gpu.driver_version), _label(gpu.cuda_driver_version)], 1.0
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

    def _ethernet(self, report: Report) -> Iterator[Metric]:
        port_labels = ["node", "device", "port", "rail"]
        up = GaugeMetricFamily(
            "clusterforge_eth_port_up",
            "1 when the Ethernet (RoCE) port is ACTIVE / LinkUp",
            labels=port_labels,
        )
        families = {
            m.name: CounterMetricFamily(m.name, m.help, labels=port_labels) for m in PORT_METRICS
        }
        families |= {
            m.name: CounterMetricFamily(m.name, m.help, labels=[*port_labels, "priority"])
            for m in PRIORITY_METRICS
        }
        rails = {name: str(rail) for rail, name in enumerate(report.hca_names)}
        for nic in report.reading.nics:
            if nic.link_layer != "Ethernet":
                continue
            labels = [report.node, nic.name, str(nic.port), rails.get(nic.name, "")]
            up.add_metric(labels, float(nic.state == "ACTIVE" and nic.phys_state == "LinkUp"))
            for sample in ethernet_samples(nic.counters):
                extra = [] if sample.priority is None else [sample.priority]
                families[sample.metric].add_metric([*labels, *extra], sample.value)
        yield up
        yield from families.values()

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

    def _gpu_processes(self, report: Report) -> Iterator[Metric]:
        node = report.node
        counts = GaugeMetricFamily(
            "clusterforge_gpu_foreign_processes",
            "Processes on the GPU outside any running job or pod, or mining",
            labels=["node", "gpu", "uuid", "kind"],
        )
        info = GaugeMetricFamily(
            "clusterforge_gpu_foreign_process_info",
            "One foreign process on a GPU: who runs what",
            labels=["node", "gpu", "pid", "user", "command", "kind"],
        )
        foreign = [v for v in report.gpu_processes if v.kind in FOREIGN_KINDS]
        for gpu in report.reading.gpu.gpus:
            if gpu.processes is None:
                continue
            for kind in FOREIGN_KINDS:
                num = sum(1 for v in foreign if v.gpu == gpu.index and v.kind == kind)
                counts.add_metric([node, str(gpu.index), _label(gpu.uuid), kind], float(num))
        for v in foreign:
            info.add_metric([node, str(v.gpu), str(v.pid), _label(v.user), v.command, v.kind], 1.0)
        yield from (counts, info)


@dataclass(frozen=True)
class Snapshot:
    """Rendered metrics: the Prometheus text format, and the same gzip-compressed for
    scrapers that accept it (Prometheus asks for gzip, RFC 9110 section 12.5.3)."""

    text: bytes
    gzip: bytes

    @classmethod
    def render(cls, registry: CollectorRegistry) -> Snapshot:
        text = generate_latest(registry)
        return cls(text=text, gzip=gzip.compress(text, mtime=0))


class Exporter:
    """Runs the checks every ``interval_s`` in a background thread and keeps the rendered
    metrics of the last run; :meth:`snapshot` is all a scrape reads."""

    def __init__(self, check: NodeChecker, *, interval_s: float = 60.0) -> None:
        self.check = check
        self.interval_s = interval_s
        self.collector = HealthCollector()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        self._previous: NodeReading | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._snapshot = Snapshot.render(self.registry)

    def snapshot(self) -> Snapshot:
        """The metrics of the last check run (replaced whole on each run, never mutated)."""
        return self._snapshot

    def refresh(self) -> Report:
        """Run the checks once (counters judged against the previous run) and publish."""
        report = self.check.run(self._previous)
        self._previous = report.reading
        self.collector.update(report)
        self._snapshot = Snapshot.render(self.registry)
        return report

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:  # a bug in one run must not stop the exporter: count it
                self.collector.count_failed_run()
                self._snapshot = Snapshot.render(self.registry)
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        """Run the checks now and then every ``interval_s``, in a daemon thread."""
        self._thread = threading.Thread(target=self._loop, name="clusterforge-checks", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the loop; a run in progress is left to finish in its daemon thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
