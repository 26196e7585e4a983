"""Generated metric histories, one Slurm job per scenario, as OpenMetrics text for
``promtool tsdb create-blocks-from openmetrics``.

Gauges hold their value; counters grow at their per-second rate.  Each scenario names the
verdicts it must produce (exactly: any other verdict is a failure).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

STEP_S = 30  # the generated scrape interval
HISTORY_S = 40 * 60
EARLY_S = 10 * 60
LATE_S = 8 * 60
_STOPPED = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.0, "DCGM_FI_PROF_SM_ACTIVE": 0.0,
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.0, "DCGM_FI_PROF_DRAM_ACTIVE": 0.0}  # fmt: skip

GPU_GAUGES = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.92,
    "DCGM_FI_PROF_SM_ACTIVE": 0.88,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.55,
    "DCGM_FI_PROF_DRAM_ACTIVE": 0.45,
    "DCGM_FI_PROF_PCIE_TX_BYTES": 2e9,
    "DCGM_FI_PROF_PCIE_RX_BYTES": 2e9,
    "DCGM_FI_DEV_POWER_USAGE": 650.0,
    "DCGM_FI_DEV_SM_CLOCK": 1980.0,
    "DCGM_FI_DEV_FB_USED": 60_000.0,
    "DCGM_FI_DEV_FB_FREE": 20_000.0,
}
GPU_COUNTERS = {  # per second: nanoseconds of violation (dcgm_fields.h)
    "DCGM_FI_DEV_POWER_VIOLATION": 0.0,
    "DCGM_FI_DEV_THERMAL_VIOLATION": 0.0,
}
NODE_GAUGES = {
    "node_memory_MemAvailable_bytes": 1.5e12,
    "node_memory_MemTotal_bytes": 2e12,
    "ib_rate_bytes": 50e9,  # 400 Gbit/s ports
}
NODE_COUNTERS = {  # per second
    "cpu_idle": 0.7,
    "cpu_iowait": 0.01,
    "node_disk_io_time_seconds_total": 0.1,
    "node_nfs_rpc_retransmissions_total": 0.0,
    "ib_rx_bytes": 10e9,
    "ib_tx_bytes": 10e9,
    "ib_rx_packets": 1e6,
    "ib_tx_packets": 1e6,
    "ib_discards": 0.0,
    "pause_us": 0.0,
    "ecn_marked": 0.0,
    "roce_rcv_packets": 1e6,
    "node_netstat_Tcp_RetransSegs": 1.0,
    "node_netstat_Tcp_OutSegs": 1e4,
}


@dataclass(frozen=True)
class Scenario:
    key: str
    job: str
    expected: frozenset[str]
    num_nodes: int = 2
    gpus_per_node: int = 2
    gpu: dict[str, float] = field(default_factory=dict)  # overrides for every GPU
    host: dict[str, float] = field(default_factory=dict)  # overrides for every node
    odd: dict[tuple[int, int | None], dict[str, float]] = field(default_factory=dict)
    tokens_per_s: float | None = None
    early: dict[str, float] = field(default_factory=dict)  # GPU gauges for the first 10 min
    late: dict[str, float] = field(default_factory=dict)  # GPU gauges for the last 8 min

    def node(self, i: int) -> str:
        return f"{self.key}-{i:02d}"


def _set(*verdicts: str) -> frozenset[str]:
    return frozenset(verdicts)


SCENARIOS = (
    Scenario("compute", "101", _set("compute-bound"), tokens_per_s=2.0e5),
    Scenario("memory", "102", _set("memory-bound"),
             gpu={"DCGM_FI_PROF_DRAM_ACTIVE": 0.9, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.15}),
    Scenario("cpu", "103", _set("input-bound"),
             gpu={"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.35, "DCGM_FI_PROF_DRAM_ACTIVE": 0.12},
             host={"cpu_idle": 0.02}),
    Scenario("storage", "104", _set("input-bound"),
             gpu={"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.3, "DCGM_FI_PROF_DRAM_ACTIVE": 0.1},
             host={"cpu_iowait": 0.3, "node_disk_io_time_seconds_total": 0.95,
                   "node_nfs_rpc_retransmissions_total": 2.0}),
    Scenario("linerate", "105", _set("network-bound"),
             gpu={"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.55, "DCGM_FI_PROF_DRAM_ACTIVE": 0.35},
             host={"ib_rx_bytes": 48.5e9, "ib_tx_bytes": 48.5e9}),
    Scenario("congested", "106", _set("network-bound"),
             gpu={"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.6, "DCGM_FI_PROF_DRAM_ACTIVE": 0.35},
             host={"pause_us": 300_000.0, "ib_discards": 20_000.0}),
    Scenario("throttled", "107", _set("throttled", "compute-bound"),
             gpu={"DCGM_FI_DEV_POWER_VIOLATION": 400_000_000.0, "DCGM_FI_DEV_SM_CLOCK": 1500.0}),
    Scenario("slownode", "108", _set("straggler", "compute-bound"), num_nodes=4,
             odd={(2, None): {"DCGM_FI_DEV_SM_CLOCK": 1500.0}}),
    Scenario("slowgpu", "109", _set("straggler", "compute-bound"), num_nodes=3,
             odd={(1, 1): {"DCGM_FI_DEV_SM_CLOCK": 1400.0}}),
    Scenario("idle", "110", _set("idle"),
             gpu={"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.0, "DCGM_FI_PROF_SM_ACTIVE": 0.0,
                  "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.0, "DCGM_FI_PROF_DRAM_ACTIVE": 0.0,
                  "DCGM_FI_DEV_FB_USED": 0.0, "DCGM_FI_DEV_FB_FREE": 80_000.0}),
    Scenario("hung", "111", _set("hung"), gpu=_STOPPED),
    # ran well for 22 of the 30 minutes, then stopped with its memory held
    Scenario("stalled", "112", _set("hung"), late=_STOPPED),
    # loaded its data for the first 10 of 40 minutes, then ran well: busy now
    Scenario("warmup", "113", _set("compute-bound"), early=_STOPPED),
)  # fmt: skip

# Generated names -> (metric, extra labels).  Host counters with a shape of their own.
_HOST_SERIES: dict[str, list[tuple[str, dict[str, str]]]] = {
    "cpu_idle": [("node_cpu_seconds_total", {"cpu": c, "mode": "idle"}) for c in "01"],
    "cpu_iowait": [("node_cpu_seconds_total", {"cpu": c, "mode": "iowait"}) for c in "01"],
    "ib_rate_bytes": [("node_infiniband_rate_bytes_per_second", {"device": d, "port": "1"})
                      for d in ("mlx5_0", "mlx5_1")],
    "ib_rx_bytes": [("node_infiniband_port_data_received_bytes_total",
                     {"device": d, "port": "1"}) for d in ("mlx5_0", "mlx5_1")],
    "ib_tx_bytes": [("node_infiniband_port_data_transmitted_bytes_total",
                     {"device": d, "port": "1"}) for d in ("mlx5_0", "mlx5_1")],
    "ib_rx_packets": [("node_infiniband_port_packets_received_total",
                       {"device": "mlx5_0", "port": "1"})],
    "ib_tx_packets": [("node_infiniband_port_packets_transmitted_total",
                       {"device": "mlx5_0", "port": "1"})],
    "ib_discards": [("node_infiniband_port_discards_received_total",
                     {"device": "mlx5_0", "port": "1"})],
    "pause_us": [("clusterforge_nic_counter_total",
                  {"nic": "mlx5_0", "counter": "rx_prio3_pause_duration"})],
    "ecn_marked": [("clusterforge_nic_counter_total",
                    {"nic": "mlx5_0", "counter": "np_ecn_marked_roce_packets"})],
    "roce_rcv_packets": [("clusterforge_nic_counter_total",
                          {"nic": "mlx5_0", "counter": "port_rcv_packets"})],
}  # fmt: skip


Series = tuple[str, dict[str, str], float, bool, dict[str, float], dict[str, float]]


def _gpu_series(s: Scenario) -> Iterator[Series]:
    for i in range(s.num_nodes):
        for g in range(s.gpus_per_node):
            values = {**GPU_GAUGES, **GPU_COUNTERS, **s.gpu}
            values.update(s.odd.get((i, None), {}))
            values.update(s.odd.get((i, g), {}))
            labels = {"node": s.node(i), "gpu": str(g), "hpc_job": s.job, "job": "dcgm"}
            for metric, value in values.items():
                yield metric, labels, value, metric in GPU_COUNTERS, s.early, s.late


def _host_series(s: Scenario) -> Iterator[Series]:
    for i in range(s.num_nodes):
        values = {**NODE_GAUGES, **NODE_COUNTERS, **s.host}
        base = {"node": s.node(i), "job": "node"}
        for name, value in values.items():
            counter = name in NODE_COUNTERS
            for metric, extra in _HOST_SERIES.get(name, [(name, {})]):
                yield metric, {**base, **extra}, value, counter, {}, {}
        if s.tokens_per_s is not None and i == 0:
            labels = {"node": s.node(i), "hpc_job": s.job, "job": "trainer"}
            yield "train_tokens_per_second", labels, s.tokens_per_s, False, {}, {}


def _fmt(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))


def openmetrics(end_s: int, scenarios: tuple[Scenario, ...] = SCENARIOS) -> str:
    """Every scenario's history ending at ``end_s``; families kept contiguous."""
    families: dict[str, list[Series]] = defaultdict(list)
    for s in scenarios:
        for series in [*_gpu_series(s), *_host_series(s)]:
            families[series[0]].append(series)
    start_s = end_s - HISTORY_S
    lines = []
    for metric, members in families.items():
        for _, labels, value, counter, early, late in members:
            for t in range(start_s, end_s + 1, STEP_S):
                if counter:
                    sample = value * (t - start_s)
                elif t < start_s + EARLY_S:
                    sample = early.get(metric, value)
                elif t > end_s - LATE_S:
                    sample = late.get(metric, value)
                else:
                    sample = value
                lines.append(f"{metric}{{{_fmt(labels)}}} {sample:.6g} {t}")
    return "\n".join(lines) + "\n# EOF\n"
