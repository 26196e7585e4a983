"""The verdict rules on plain readings, no Prometheus."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from clusterforge.diagnose import (
    GpuReading,
    JobReadings,
    NodeReading,
    Thresholds,
    diagnose_readings,
)
from clusterforge.diagnose.judge import stragglers

BUSY = GpuReading(node="n0", gpu="0", gr_engine_active=0.9, tensor_active=0.5,
                  dram_active=0.4, sm_clock_mhz=1980.0, fb_used_share=0.7)  # fmt: skip
QUIET_HOST = NodeReading(node="n0", cpu_busy_share=0.3, iowait_share=0.0, disk_busy_share=0.1,
                         nic_line_share=0.2, pause_share=0.0, drop_share=0.0)  # fmt: skip


def _job(gpu: GpuReading, host: NodeReading = QUIET_HOST, num_nodes: int = 1) -> JobReadings:
    gpus = [replace(gpu, node=f"n{i}") for i in range(num_nodes)]
    hosts = [replace(host, node=f"n{i}") for i in range(num_nodes)]
    return JobReadings(job="1", window="30m", gpus=tuple(gpus), nodes=tuple(hosts))


def _verdicts(gpu: GpuReading, host: NodeReading = QUIET_HOST) -> set[str]:
    return set(diagnose_readings(_job(gpu, host)).verdicts)


def test_busy_gpu_with_moderate_dram_is_compute_bound() -> None:
    assert _verdicts(BUSY) == {"compute-bound"}


@pytest.mark.parametrize(("dram", "expected"), [(0.81, {"memory-bound"}), (0.8, {"compute-bound"})])
def test_memory_bound_above_eighty_percent_dram(dram: float, expected: set[str]) -> None:
    assert _verdicts(replace(BUSY, dram_active=dram)) == expected


def test_starved_gpu_with_busy_cpu_is_input_bound() -> None:
    starved = replace(BUSY, gr_engine_active=0.3, dram_active=0.1)
    finding = diagnose_readings(_job(starved, replace(QUIET_HOST, cpu_busy_share=0.97))).findings
    assert [f.verdict for f in finding] == ["input-bound"]
    assert "CPU busy > 0.85" in finding[0].rule


def test_starved_gpu_with_quiet_host_is_not_input_bound() -> None:
    starved = replace(BUSY, gr_engine_active=0.3, dram_active=0.1)
    diagnosis = diagnose_readings(_job(starved))
    assert diagnosis.verdicts == set()
    assert diagnosis.verdict == "inconclusive"


def test_starved_gpu_with_busy_dram_is_not_input_bound() -> None:
    busy_dram = replace(BUSY, gr_engine_active=0.3, dram_active=0.5)
    assert _verdicts(busy_dram, replace(QUIET_HOST, cpu_busy_share=0.97)) == set()


@pytest.mark.parametrize(
    "host_change",
    [{"nic_line_share": 0.95}, {"pause_share": 0.2}, {"drop_share": 0.01},
     {"ecn_marked_share": 0.05}, {"tcp_retransmit_share": 0.02}],
)  # fmt: skip
def test_line_rate_or_congestion_is_network_bound(host_change: dict[str, Any]) -> None:
    gpu = replace(BUSY, gr_engine_active=0.5)
    assert _verdicts(gpu, replace(QUIET_HOST, **host_change)) == {"network-bound"}


def test_missing_series_trip_no_rule() -> None:
    bare = GpuReading(node="n0", gpu="0", gr_engine_active=0.5)
    assert _verdicts(bare, NodeReading(node="n0")) == set()


@pytest.mark.parametrize(
    "change",
    [{"power_violation_share": 0.3}, {"thermal_violation_share": 0.06},
     {"throttle_reasons": 0x40}, {"throttle_reasons": 0x4}],
)  # fmt: skip
def test_violation_time_or_reason_bits_are_throttled(change: dict[str, Any]) -> None:
    assert "throttled" in _verdicts(replace(BUSY, **change))


def test_idle_clock_reason_bit_is_not_throttling() -> None:
    assert _verdicts(replace(BUSY, throttle_reasons=0x1, power_violation_share=0.01)) == {
        "compute-bound"
    }


@pytest.mark.parametrize(("fb_used", "expected"), [(0.5, "hung"), (0.0, "idle")])
def test_idle_engine_is_hung_when_memory_is_held(fb_used: float, expected: str) -> None:
    quiet = replace(BUSY, gr_engine_active=0.0, dram_active=0.0, fb_used_share=fb_used)
    congested = replace(QUIET_HOST, pause_share=0.5)  # nothing else is judged on an idle node
    assert _verdicts(quiet, congested) == {expected}


def _peers(**odd: Any) -> list[GpuReading]:
    gpus = [replace(BUSY, node=f"n{i // 2}", gpu=str(i % 2)) for i in range(8)]
    gpus[5] = replace(gpus[5], **odd)
    return gpus


def test_slow_clock_names_the_gpu() -> None:
    found = stragglers(_peers(sm_clock_mhz=1700.0), Thresholds())
    assert [f.subject for f in found] == ["n2/gpu1"]
    assert found[0].evidence["median_sm_clock_mhz"] == 1980.0


def test_clock_within_ten_percent_is_no_straggler() -> None:
    assert stragglers(_peers(sm_clock_mhz=1800.0), Thresholds()) == []


def test_odd_activity_names_the_gpu() -> None:
    assert [f.subject for f in stragglers(_peers(gr_engine_active=0.5), Thresholds())] == [
        "n2/gpu1"
    ]


def test_whole_node_slow_is_named_as_the_node() -> None:
    gpus = _peers(sm_clock_mhz=1500.0)
    gpus[4] = replace(gpus[4], sm_clock_mhz=1500.0)
    assert [f.subject for f in stragglers(gpus, Thresholds())] == ["n2"]


def test_too_few_peers_give_no_straggler() -> None:
    two = [BUSY, replace(BUSY, gpu="1", sm_clock_mhz=1000.0)]
    assert stragglers(two, Thresholds()) == []


def test_idle_job_has_no_activity_straggler() -> None:
    idle = [replace(BUSY, gpu=str(i), gr_engine_active=0.0) for i in range(4)]
    idle[0] = replace(idle[0], gr_engine_active=0.01)
    assert stragglers(idle, Thresholds()) == []


def test_thresholds_are_parameters() -> None:
    assert _verdicts(replace(BUSY, dram_active=0.7)) == {"compute-bound"}
    strict = Thresholds(memory_bound_dram_min=0.6)
    assert diagnose_readings(_job(replace(BUSY, dram_active=0.7)), strict).verdicts == {
        "memory-bound"
    }


def test_headline_follows_priority() -> None:
    gpu = replace(BUSY, power_violation_share=0.5)
    diagnosis = diagnose_readings(_job(gpu, replace(QUIET_HOST, pause_share=0.5), num_nodes=2))
    assert diagnosis.verdicts == {"throttled", "network-bound", "compute-bound"}
    assert diagnosis.verdict == "throttled"
    assert [n.verdict for n in diagnosis.nodes] == ["throttled", "throttled"]


def test_job_that_stopped_lately_is_hung_though_its_window_average_is_high() -> None:
    stopped = replace(BUSY, gr_engine_active=0.7, gr_engine_active_recent=0.0)
    findings = diagnose_readings(_job(stopped)).findings
    assert [f.verdict for f in findings] == ["hung"]
    assert "lately" in findings[0].rule
    assert findings[0].evidence["gr_engine_active"] == 0.7


def test_job_busy_lately_is_not_idle_though_its_window_started_idle() -> None:
    started = replace(BUSY, gr_engine_active=0.03, gr_engine_active_recent=0.9)
    assert "idle" not in _verdicts(started) and "hung" not in _verdicts(started)


def test_an_oversized_prometheus_answer_is_refused_not_read_whole(monkeypatch):
    """A query gone wrong (or a hostile endpoint) cannot make diagnose read without end."""
    import http.server
    import threading

    from clusterforge.diagnose import prometheus
    from clusterforge.diagnose.prometheus import PrometheusClient, PrometheusError

    class Endless(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"status":"success","data":' + b" " * 4096 + b"}")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(prometheus, "MAX_RESPONSE_BYTES", 1024)
    try:
        client = PrometheusClient(f"http://127.0.0.1:{server.server_port}", at_s=0.0)
        with pytest.raises(PrometheusError, match="more than"):
            client._post("/api/v1/query", {"query": "up"})
    finally:
        server.shutdown()
        server.server_close()
