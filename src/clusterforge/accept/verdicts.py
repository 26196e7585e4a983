"""Verdicts: measurements against targets and against the node's peers.

Pure functions over the workers' records (plain dicts), so they are tested with recorded
records and no cluster.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from clusterforge.accept.targets import PEER_FRACTION, Target, Targets

__all__ = ["TestResult", "Verdict", "collective_results", "node_results"]

Verdict = Literal["pass", "fail", "skip", "info"]


@dataclass(frozen=True)
class TestResult:
    """One test on one node (or on the whole set: node = 'all')."""

    test: str
    node: str
    verdict: Verdict
    measured: float | None = None
    unit: str = ""
    targets: tuple[Target, ...] = ()
    evidence: str = ""
    port: str = ""  # the HCA port (and its cable) a fabric result names; "" for node tests

    def as_dict(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "node": self.node,
            "verdict": self.verdict,
            "measured": self.measured,
            "unit": self.unit,
            "targets": [
                {"value": t.value, "unit": t.unit, "source": t.source, "at_least": t.at_least}
                for t in self.targets
            ],
            "evidence": self.evidence,
            "port": self.port,
        }


@dataclass(frozen=True)
class _Metric:
    test: str
    key: str
    unit: str
    absolute: Target | None = None
    peers: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


MIN_PEERS = 3  # with two nodes, which one is 'slow' is undecidable: no majority is normal


def _peer_target(values: Sequence[float], unit: str) -> Target | None:
    if len(values) < MIN_PEERS:
        return None
    median = statistics.median(values)
    return Target(
        PEER_FRACTION * median,
        unit,
        f"{PEER_FRACTION:.0%} of the median of the {len(values)} nodes",
    )


def _judge(metric: _Metric, node: str, value: float, peer: Target | None, gpu: bool) -> TestResult:
    targets = [t for t in (metric.absolute if gpu else None, peer if metric.peers else None) if t]
    if not targets:
        return TestResult(metric.test, node, "info", value, metric.unit)
    failed = [t for t in targets if not t.met_by(value)]
    evidence = "; ".join(
        f"{'below' if t.at_least else 'above'} {t.value:,.3g} {t.unit} ({t.source})" for t in failed
    )
    return TestResult(
        metric.test,
        node,
        "fail" if failed else "pass",
        value,
        metric.unit,
        tuple(targets),
        evidence,
    )


def _metric_results(metric: _Metric, by_node: dict[str, dict[str, Any]]) -> list[TestResult]:
    values = {n: float(r[metric.key]) for n, r in by_node.items() if metric.key in r}
    peer = _peer_target(list(values.values()), metric.unit)
    return [
        _judge(metric, node, value, peer, by_node[node].get("device") == "gpu")
        for node, value in sorted(values.items())
    ]


def _by_test(records: list[dict[str, Any]], test: str) -> dict[str, dict[str, Any]]:
    return {r["node"]: r for r in records if r.get("test") == test}


def _skipped_or_errors(records: list[dict[str, Any]]) -> list[TestResult]:
    out = []
    for r in records:
        if "skipped" in r:
            out.append(TestResult(r["test"], r.get("node", "?"), "skip", evidence=r["skipped"]))
        elif "error" in r:
            out.append(TestResult(r["test"], r.get("node", "?"), "fail", evidence=r["error"]))
    return out


def _burn_in(records: list[dict[str, Any]]) -> list[TestResult]:
    out = []
    for node, r in sorted(_by_test(records, "burn-in").items()):
        bad = int(r["mismatches"])
        out.append(
            TestResult(
                "burn-in",
                node,
                "fail" if bad else "pass",
                float(bad),
                "mismatching products",
                (Target(0, "mismatches", "every product equals the first", at_least=False),),
                f"{bad} of {r['products']} products differ from the first" if bad else "",
            )
        )
    return out


def _dcgm(records: list[dict[str, Any]]) -> list[TestResult]:
    out = []
    for node, r in sorted(_by_test(records, "dcgm").items()):
        if "rows" not in r:
            continue
        failed = [f"{row['test']}: {row['detail']}" for row in r["rows"] if row["result"] == "Fail"]
        out.append(
            TestResult("dcgm", node, "fail" if failed else "pass", evidence="; ".join(failed))
        )
    return out


def _ring_best(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """In-band ring: each node appears in two runs (as client and as server); a slow run
    names both ends, so each node keeps the better of its two: only a node whose runs are
    both slow is at fault."""
    runs = [r for r in records if r.get("test") == "inband" and "gbit_per_s" in r]
    best: dict[str, dict[str, Any]] = {}
    for r in runs:
        for node in (r["node"], r.get("peer", r["node"])):
            if node not in best or r["gbit_per_s"] > best[node]["gbit_per_s"]:
                best[node] = {**r, "node": node}
    return best


def _storage(records: list[dict[str, Any]], targets: Targets) -> list[TestResult]:
    """Tail latency against the run's rule; write bandwidth against the design's share only
    on the designed hardware (a CPU stand-in's scratch disk is not the designed storage)."""
    gpu_nodes = {n for n, r in _by_test(records, "gemm").items() if r.get("device") == "gpu"}
    out = []
    for node, r in sorted(_by_test(records, "storage").items()):
        if "read_p999_ms" in r:
            metric = _Metric("storage p99.9", "", "ms", targets.storage_p999_ms, peers=False)
            out.append(_judge(metric, node, r["read_p999_ms"], None, True))
        if "write_mbyte_per_s" in r:
            metric = _Metric("storage write", "", "MB/s", targets.storage_write_mbyte_per_s, False)
            out.append(_judge(metric, node, r["write_mbyte_per_s"], None, node in gpu_nodes))
    return out


def node_results(records: list[dict[str, Any]], targets: Targets) -> list[TestResult]:
    """Verdicts of the per-node suite: GEMM, memory, burn-in, storage, DCGM."""
    metrics = [
        _Metric("gemm", "tflops", "TFLOP/s", targets.gemm_tflops),
        _Metric("memory", "gbyte_per_s", "GB/s", targets.memory_gbyte_per_s),
    ]
    out: list[TestResult] = []
    for metric in metrics:
        out += _metric_results(metric, _by_test(records, metric.test))
    out += _burn_in(records)
    out += _storage(records, targets)
    out += _dcgm(records)
    out += _metric_results(
        _Metric("in-band net", "gbit_per_s", "Gb/s", targets.inband_gbit_per_s), _ring_best(records)
    )
    return out + _skipped_or_errors(records)


def collective_results(
    records: list[dict[str, Any]], targets: Targets, *, gpu: bool
) -> list[TestResult]:
    """Verdicts of the cross-node sweep: all_reduce busbw at the largest size, #wrong."""
    rows = [r for r in records if r.get("test") == "collective" and "busbw_gbyte_per_s" in r]
    out: list[TestResult] = []
    reduce_rows = [r for r in rows if r["op"] == "all_reduce"]
    if reduce_rows:
        top = max(reduce_rows, key=lambda r: r["size_bytes"])
        absolute = [t for t in (targets.allreduce_predicted, targets.allreduce_bound) if t]
        if gpu and absolute:
            goal = min(absolute, key=lambda t: t.value)
            verdict: Verdict = "pass" if goal.met_by(top["busbw_gbyte_per_s"]) else "fail"
        else:
            verdict = "info"  # CPU stand-in: the GPU fabric's targets do not apply
        out.append(
            TestResult(
                "all_reduce busbw",
                "all",
                verdict,
                top["busbw_gbyte_per_s"],
                "GB/s",
                tuple(absolute),
                f"{top['ranks']} ranks, {top['size_bytes']:,} B",
            )
        )
    for r in records:
        if r.get("test") == "collective-check":
            wrong = int(r["wrong"])
            out.append(
                TestResult(
                    "all_reduce values",
                    "all",
                    "fail" if wrong else "pass",
                    float(wrong),
                    "wrong elements",
                )
            )
    return out + _skipped_or_errors([r for r in records if r.get("test") == "collective"])
