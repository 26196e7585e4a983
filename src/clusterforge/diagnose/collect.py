"""Read a job's GPUs and hosts from Prometheus into :class:`JobReadings`.

The series are the ones the generated monitoring collects: dcgm-exporter fields (the
counters CSV of :mod:`clusterforge.generate.monitoring.metrics` lists every field read here,
a GPU without profiling support serves none of the ``PROF`` ones), node_exporter's cpu,
meminfo, diskstats, nfs, netstat and infiniband collectors, and the clusterforge exporter's
raw NIC counters.  Every series carries the ``node`` label the generated scrape
configuration sets; a Slurm job's GPUs carry dcgm-exporter's ``hpc_job`` label (with
``--hpc-job-mapping-dir``, dcgm-exporter README).  Every figure is an average over the
window (``avg_over_time`` of gauges, ``rate`` of counters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clusterforge.diagnose.prometheus import PrometheusClient, PrometheusError
from clusterforge.diagnose.readings import GpuReading, JobReadings, NodeReading
from clusterforge.errors import SpecError
from clusterforge.generate.monitoring.files import SCRAPE_INTERVAL_S
from clusterforge.generate.monitoring.metrics import VIOLATION_NS_PER_S
from clusterforge.generate.training.launch import ROCE_PRIORITY

__all__ = ["JobSelector", "NoSeriesError", "read_gpus", "read_job", "read_nodes", "window_ok"]

US_PER_S = 1e6  # mlx5 rx_prio<N>_pause_duration counts microseconds
BYTES_PER_GBYTE = 1e9
RECENT_S = 10 * SCRAPE_INTERVAL_S  # "lately" for the idle rule: ten scrapes
_WINDOW_RE = re.compile(r"^[1-9]\d*[smhd]$")
_SAFE_LABEL_RE = re.compile(r"^[A-Za-z0-9_.:\-]+$")


class NoSeriesError(PrometheusError):
    """Prometheus has no GPU series for the job or host list in the window."""


@dataclass(frozen=True)
class JobSelector:
    """Which GPUs: a Slurm job id (the ``hpc_job`` label) or host names."""

    job: str | None = None
    nodes: tuple[str, ...] = ()

    def gpu_matcher(self) -> str:
        if self.job is not None:
            if not _SAFE_LABEL_RE.fullmatch(self.job):
                raise SpecError(f"job id {self.job!r} is not a Slurm job id (e.g. 4242 or 4242_7)")
            return f'hpc_job="{self.job}"'
        return _node_matcher(self.nodes)


def window_ok(window: str) -> str:
    """A Prometheus duration such as ``30m``; raises naming the bad value."""
    if not _WINDOW_RE.fullmatch(window):
        raise SpecError(f"window {window!r} is not a duration: use e.g. 90s, 30m, 2h or 1d")
    return window


def _node_matcher(nodes: tuple[str, ...]) -> str:
    for name in nodes:
        if not _SAFE_LABEL_RE.fullmatch(name):
            raise SpecError(f"host name {name!r} has characters a host name cannot have")
    return 'node=~"' + "|".join(re.escape(n).replace("\\", "\\\\") for n in nodes) + '"'


def _seconds(window: str) -> int:
    return int(window[:-1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[window[-1]]


def _recent(window: str) -> str:
    """The last :data:`RECENT_S` of the window (all of it when shorter)."""
    return window if _seconds(window) <= RECENT_S else f"{RECENT_S}s"


def _eq(label: str, value: str) -> str:
    return f',{label}="{value}"'


def _both(a: str, b: str) -> str:
    """Per node ``a + b``, where a node that lacks one of the two still counts the other
    (plain ``+`` drops a series without a partner)."""
    sa, sb = f"sum by (node) ({a})", f"sum by (node) ({b})"
    return f"({sa} + ({sb} or {sa} * 0) or {sb})"


def _gpu_queries(m: str, w: str) -> dict[str, str]:
    def avg(field: str) -> str:
        return f"avg_over_time({field}{{{m}}}[{w}])"

    return {
        "gr_engine_active": avg("DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
        "gr_engine_active_recent": f"avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{m}}}"
        f"[{_recent(w)}])",
        "sm_active": avg("DCGM_FI_PROF_SM_ACTIVE"),
        "tensor_active": avg("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
        "dram_active": avg("DCGM_FI_PROF_DRAM_ACTIVE"),
        "pcie_gbyte_per_s": f"({avg('DCGM_FI_PROF_PCIE_TX_BYTES')} + "
        f"{avg('DCGM_FI_PROF_PCIE_RX_BYTES')}) / {BYTES_PER_GBYTE:g}",
        "nvlink_gbyte_per_s": f"({avg('DCGM_FI_PROF_NVLINK_TX_BYTES')} + "
        f"{avg('DCGM_FI_PROF_NVLINK_RX_BYTES')}) / {BYTES_PER_GBYTE:g}",
        "power_w": avg("DCGM_FI_DEV_POWER_USAGE"),
        "sm_clock_mhz": avg("DCGM_FI_DEV_SM_CLOCK"),
        "power_violation_share": f"rate(DCGM_FI_DEV_POWER_VIOLATION{{{m}}}[{w}])"
        f" / {VIOLATION_NS_PER_S}",
        "thermal_violation_share": f"rate(DCGM_FI_DEV_THERMAL_VIOLATION{{{m}}}[{w}])"
        f" / {VIOLATION_NS_PER_S}",
        "throttle_reasons": f"last_over_time(DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{{m}}}[{w}])",
        "fb_used_share": f"{avg('DCGM_FI_DEV_FB_USED')} / ({avg('DCGM_FI_DEV_FB_USED')}"
        f" + {avg('DCGM_FI_DEV_FB_FREE')})",
    }


def _node_queries(m: str, w: str) -> dict[str, str]:
    def rate(metric: str, extra: str = "") -> str:
        return f"rate({metric}{{{m}{extra}}}[{w}])"

    def nic(counter: str) -> str:
        return f"sum by (node) ({rate('clusterforge_nic_counter_total', _eq('counter', counter))})"

    ib = "node_infiniband_port_"
    rx, tx = rate(ib + "data_received_bytes_total"), rate(ib + "data_transmitted_bytes_total")
    idle, iowait = _eq("mode", "idle"), _eq("mode", "iowait")
    pause_counter = _eq("counter", f"rx_prio{ROCE_PRIORITY}_pause_duration")
    pause = f"max by (node) ({rate('clusterforge_nic_counter_total', pause_counter)})"
    line = f"avg_over_time(node_infiniband_rate_bytes_per_second{{{m}}}[{w}])"
    available = f"max by (node) (avg_over_time(node_memory_MemAvailable_bytes{{{m}}}[{w}]))"
    total = f"max by (node) (avg_over_time(node_memory_MemTotal_bytes{{{m}}}[{w}]))"
    dropped = _both(rate(ib + "discards_received_total"), rate(ib + "discards_transmitted_total"))
    packets = _both(rate(ib + "packets_received_total"), rate(ib + "packets_transmitted_total"))
    tcp = "node_netstat_Tcp_"
    return {
        "cpu_busy_share": f"1 - avg by (node) ({rate('node_cpu_seconds_total', idle)})",
        "iowait_share": f"avg by (node) ({rate('node_cpu_seconds_total', iowait)})",
        "disk_busy_share": f"max by (node) ({rate('node_disk_io_time_seconds_total')})",
        "memory_used_share": f"1 - {available} / {total}",
        "nfs_retransmits_per_s": f"sum by (node) ({rate('node_nfs_rpc_retransmissions_total')})",
        "nic_line_share": f"max by (node) ({rx} / {line})",
        "nic_tx_line_share": f"max by (node) ({tx} / {line})",
        "nic_gbyte_per_s": f"{_both(rx, tx)} / {BYTES_PER_GBYTE:g}",
        "pause_share": f"{pause} / {US_PER_S:g}",
        "drop_share": f"{dropped} / {packets}",
        "ecn_marked_share": f"{nic('np_ecn_marked_roce_packets')} / {nic('port_rcv_packets')}",
        "tcp_retransmit_share": f"sum by (node) ({rate(tcp + 'RetransSegs')}) / "
        f"sum by (node) ({rate(tcp + 'OutSegs')})",
    }


def _by_gpu(client: PrometheusClient, promql: str) -> dict[tuple[str, str], float]:
    return {
        (s.labels.get("node", ""), s.labels.get("gpu", "")): s.value
        for s in client.query(promql)
        if s.labels.get("node")
    }


def _by_node(client: PrometheusClient, promql: str) -> dict[str, float]:
    return {s.labels["node"]: s.value for s in client.query(promql) if s.labels.get("node")}


def read_gpus(client: PrometheusClient, selector: JobSelector, window: str) -> list[GpuReading]:
    """Every GPU of the selection that reports its engine activity, with what else it has."""
    columns = {
        name: _by_gpu(client, promql)
        for name, promql in _gpu_queries(selector.gpu_matcher(), window).items()
    }
    keys = sorted(columns["gr_engine_active"])
    if not keys:
        what = f"Slurm job {selector.job}" if selector.job else "the named hosts"
        raise NoSeriesError(
            f"no DCGM_FI_PROF_GR_ENGINE_ACTIVE series for {what} in the last {window}"
            " (dcgm-exporter serves it when its counters file lists it and the GPU supports"
            " profiling; a job's GPUs carry hpc_job with --hpc-job-mapping-dir)"
        )
    readings = []
    for node, gpu in keys:
        values = {name: column.get((node, gpu)) for name, column in columns.items()}
        reasons = values.pop("throttle_reasons")
        readings.append(
            GpuReading(
                node=node,
                gpu=gpu,
                throttle_reasons=None if reasons is None else int(reasons),
                **values,
            )
        )
    return readings


def read_nodes(client: PrometheusClient, nodes: tuple[str, ...], window: str) -> list[NodeReading]:
    """The hosts' CPU, storage and NIC figures; a series a node lacks stays ``None``."""
    columns = {
        name: _by_node(client, promql)
        for name, promql in _node_queries(_node_matcher(nodes), window).items()
    }
    tx = columns.pop("nic_tx_line_share")
    readings = []
    for node in nodes:
        values = {name: column.get(node) for name, column in columns.items()}
        line = [v for v in (values.pop("nic_line_share"), tx.get(node)) if v is not None]
        readings.append(
            NodeReading(node=node, nic_line_share=max(line) if line else None, **values)
        )
    return readings


def read_job(
    client: PrometheusClient,
    selector: JobSelector,
    *,
    window: str,
    tokens_query: str | None = None,
) -> JobReadings:
    """The job's GPUs, its hosts, and its tokens/s when a query for it is given."""
    gpus = read_gpus(client, selector, window_ok(window))
    nodes = tuple(sorted({g.node for g in gpus}))
    tokens = None
    if tokens_query:
        samples = client.query(tokens_query)
        tokens = sum(s.value for s in samples) if samples else None
    return JobReadings(
        job=selector.job,
        window=window,
        gpus=tuple(gpus),
        nodes=tuple(read_nodes(client, nodes, window)),
        tokens_per_s=tokens,
    )
