"""Acceptance: parsers on captured tool outputs, verdicts on recorded records, bisection,
targets from the design, Kubernetes manifests, and a local run of the whole suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.accept import (
    Target,
    Targets,
    allreduce_bound_gbyte_per_s,
    bisect_slowest,
    design_targets,
)
from clusterforge.accept.launch import Step, records_of
from clusterforge.accept.launch_k8s import job_manifests
from clusterforge.accept.parsers import (
    parse_dcgmi_diag,
    parse_fio,
    parse_iperf3,
    parse_nccl_tests,
    parse_perftest_bw,
)
from clusterforge.accept.verdicts import collective_results, node_results
from clusterforge.errors import AcceptError

FIXTURES = Path(__file__).parent / "fixtures"


def test_nccl_tests_rows_from_a_published_run() -> None:
    rows = parse_nccl_tests((FIXTURES / "nccl-tests-all_reduce-2x8-h100.txt").read_text())
    assert len(rows) == 9
    last = rows[-1]
    assert (last.size_bytes, last.busbw_gbyte_per_s, last.wrong) == (8589934592, 338.82, 0)
    # busbw = algbw x 2(n-1)/n for 16 ranks (nccl-tests' definition).
    assert last.busbw_gbyte_per_s == pytest.approx(last.algbw_gbyte_per_s * 2 * 15 / 16, rel=0.01)
    with pytest.raises(AcceptError, match="no result rows"):
        parse_nccl_tests("# nThread 1 nGpus 1\n# Avg bus bandwidth : 0\n")


def test_perftest_fio_iperf3_and_dcgmi_outputs() -> None:
    bw = parse_perftest_bw((FIXTURES / "perftest-ib_write_bw.txt").read_text())
    assert bw["average_gbit_per_s"] == 0.48 and bw["size_bytes"] == 8
    read = parse_fio((FIXTURES / "fio-randread.json").read_text())
    assert read["read_p999_ms"] > read["read_p99_ms"] > 0 and read["read_iops"] > 0
    write = parse_fio((FIXTURES / "fio-seqwrite.json").read_text())
    assert write["write_mbyte_per_s"] > 0 and "read_mbyte_per_s" not in write
    assert parse_iperf3((FIXTURES / "iperf3-loopback.json").read_text()) > 0.1
    rows = parse_dcgmi_diag((FIXTURES / "dcgmi-diag-table.txt").read_text())
    failed = [r for r in rows if r.result == "Fail"]
    assert [(r.test, r.detail) for r in failed] == [("GPU Memory", "GPU: 3")]
    with pytest.raises(AcceptError, match="iperf3"):
        parse_iperf3('{"error": "unable to connect to server"}')
    with pytest.raises(AcceptError, match="not JSON"):
        parse_fio("fio: engine libaio not loadable")


def test_bisection_finds_the_slow_node_and_keeps_its_evidence() -> None:
    nodes = [f"n{i}" for i in range(8)]

    def measure(group):
        return 10.0 if "n5" in group else 100.0

    found = bisect_slowest(nodes, measure)
    assert found.culprit == "n5"
    assert all(len(g) >= 2 for g, _ in found.evidence)
    assert bisect_slowest(nodes, lambda g: 100.0).culprit is None  # nothing stands out


def test_records_survive_interleaved_output() -> None:
    text = 'noise\nCFACCEPT {"test": "gemm", "node": "a", "tflops": 1.0}\nCFACCEPT {"broken\n'
    assert records_of(text) == [{"test": "gemm", "node": "a", "tflops": 1.0}]


def _targets(**kw) -> Targets:
    base = dict(
        gemm_tflops=Target(700.0, "TFLOP/s", "catalog"),
        memory_gbyte_per_s=None,
        allreduce_predicted=Target(360.0, "GB/s", "simulated"),
        allreduce_bound=Target(465.0, "GB/s", "bound"),
        storage_p999_ms=Target(1.0, "ms", "rule", at_least=False),
        storage_write_mbyte_per_s=None,
        inband_gbit_per_s=None,
    )
    return Targets(**(base | kw))


def test_node_verdicts_against_targets_and_peers() -> None:
    records = [
        {"test": "gemm", "node": f"n{i}", "tflops": t, "device": "gpu"}
        for i, t in enumerate([740.0, 745.0, 600.0, 742.0])
    ] + [
        {"test": "burn-in", "node": "n0", "products": 100, "mismatches": 2},
        {"test": "storage", "node": "n1", "read_p999_ms": 3.2, "write_mbyte_per_s": 900.0},
        {
            "test": "dcgm",
            "node": "n2",
            "rows": [{"test": "PCIe", "result": "Fail", "detail": "GPU: 1"}],
        },
    ]
    results = {(r.test, r.node): r for r in node_results(records, _targets())}
    assert results[("gemm", "n2")].verdict == "fail"
    assert "below 700" in results[("gemm", "n2")].evidence
    assert results[("gemm", "n0")].verdict == "pass"
    assert results[("burn-in", "n0")].verdict == "fail"
    assert results[("storage p99.9", "n1")].verdict == "fail"
    assert results[("dcgm", "n2")].verdict == "fail"


def test_inband_ring_blames_only_the_node_both_runs_share() -> None:
    speeds = {("a", "b"): 90.0, ("b", "c"): 20.0, ("c", "d"): 21.0, ("d", "a"): 91.0}
    records = [
        {"test": "inband", "node": s, "peer": d, "gbit_per_s": v} for (s, d), v in speeds.items()
    ]
    verdicts = {r.node: r.verdict for r in node_results(records, _targets())}
    assert verdicts == {"a": "pass", "b": "pass", "c": "fail", "d": "pass"}


def test_collective_verdict_uses_the_lower_of_prediction_and_bound() -> None:
    row = {
        "test": "collective",
        "op": "all_reduce",
        "size_bytes": 1 << 30,
        "ranks": 32,
        "busbw_gbyte_per_s": 370.0,
    }
    (gpu,) = collective_results([row], _targets(), gpu=True)
    assert gpu.verdict == "pass"  # 370 >= min(360, 465)
    (cpu,) = collective_results([row], _targets(), gpu=False)
    assert cpu.verdict == "info"


def test_targets_come_from_the_design() -> None:
    from clusterforge.design import plan
    from clusterforge.spec import load_spec

    design = plan(load_spec("examples/colo-512-h100.yaml"))
    targets = design_targets(design, num_nodes=4, size_bytes=2**30)
    assert targets.gemm_tflops is not None and targets.gemm_tflops.value == pytest.approx(
        0.9 * 794.5
    )
    assert targets.allreduce_bound is not None and targets.allreduce_predicted is not None
    bound = allreduce_bound_gbyte_per_s(400.0, 4, 32)
    assert targets.allreduce_bound.value == pytest.approx(0.9 * bound)
    assert 0 < targets.allreduce_predicted.value <= bound * 1.0001
    # Two nodes: the tree-like bound of 8 x 400G nodes is 400 x (2 x 15/16) = 750 GB/s.
    assert allreduce_bound_gbyte_per_s(400.0, 2, 16) == pytest.approx(750.0)


def test_kubernetes_job_is_a_valid_indexed_job() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    step = Step("collective", ("collective",), ("node-a", "node-b"), 1)
    docs = job_manifests(step, image="example/accept:1", namespace="accept", gpus=8)
    for doc in docs:
        kubernetes_validate.validate(doc, "1.30", strict=True)
    job = docs[1]
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == 2
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert "IPC_LOCK" in container["securityContext"]["capabilities"]["add"]
    assert "hostNetwork" not in job["spec"]["template"]["spec"]
    fabric = Step("fabric-0", ("fabric", "--pairs", "node-a:node-b"), ("node-a", "node-b"), 1)
    pod = job_manifests(fabric, image="example/accept:1", namespace="accept", gpus=0)[1]
    kubernetes_validate.validate(pod, "1.30", strict=True)
    assert pod["spec"]["template"]["spec"]["hostNetwork"] is True  # partners by node name


def test_kubernetes_without_kubectl_could_not_run(tmp_path, monkeypatch, capsys) -> None:
    from clusterforge.cli.main import main

    monkeypatch.setenv("PATH", "/nonexistent")
    spec = tmp_path / "s.yaml"
    spec.write_text("num_gpus: 16\nnode: dgx-h100\n")
    code = main(
        ["accept", str(spec), "--via", "kubernetes", "--tests", "node", "-o", str(tmp_path / "o")]
    )
    assert code == 2
    assert "kubectl" in capsys.readouterr().err
    assert (tmp_path / "o" / "raw" / "node.yaml").exists()


def test_two_nodes_name_no_straggler_by_the_peer_rule() -> None:
    records = [
        {"test": "gemm", "node": "a", "tflops": 1.0, "device": "cpu"},
        {"test": "gemm", "node": "b", "tflops": 0.5, "device": "cpu"},
    ]
    assert {r.verdict for r in node_results(records, _targets())} == {"info"}


class _ThrottledClock:
    """A rank's wall clock under a CFS quota: ``quota_s`` of CPU in each ``period_s``; work
    runs at full speed until the period's quota is spent, then waits for the next period."""

    def __init__(self, quota_s: float, period_s: float = 0.1) -> None:
        self.now, self.used, self.quota_s, self.period_s = 0.0, 0.0, quota_s, period_s

    def work(self, cpu_s: float) -> None:
        while cpu_s > 0:
            run = min(cpu_s, self.quota_s - self.used)
            self.now, self.used, cpu_s = self.now + run, self.used + run, cpu_s - run
            if self.used >= self.quota_s:  # throttled to the start of the next period
                self.now = (self.now // self.period_s + 1) * self.period_s
                self.used = 0.0


def test_a_collective_timing_is_long_enough_to_see_a_throttled_rank(monkeypatch):
    """A warm-up and five 4 ms all_reduces fit in one 30 ms quota and look unthrottled (4 ms
    a call); a timing of at least a quarter second sees the rank's real rate (about 13 ms a
    call): the bisection missed the capped node when its calls happened to fit one period."""
    from types import SimpleNamespace

    from clusterforge.accept.worker import collective

    clock = _ThrottledClock(quota_s=0.03)
    monkeypatch.setattr(collective.time, "perf_counter", lambda: clock.now)

    class Tensor:
        is_cuda = False

        def __init__(self, values=()):
            self.values = list(values)

        def item(self):
            return self.values[0]

    def all_reduce(t, op=None):
        if op is None:  # the collective being timed: 4 ms of this rank's CPU
            clock.work(0.004)

    dist = SimpleNamespace(
        all_reduce=all_reduce, barrier=lambda: None, ReduceOp=SimpleNamespace(MAX="max")
    )
    torch = SimpleNamespace(tensor=lambda v, dtype=None: Tensor(v), float64="f64")
    burst = collective._time_op(torch, dist, "all_reduce", Tensor(), Tensor(), 5, min_s=0.0)
    assert burst < 0.005  # what five calls alone measure: the burst
    clock.__init__(quota_s=0.03)
    per_call_s = collective._time_op(torch, dist, "all_reduce", Tensor(), Tensor(), iters=5)
    assert per_call_s > 0.01
