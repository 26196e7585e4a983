"""A job's diagnosis: the node rules on every node, the straggler rule across the job, and
the headline verdict (the first in :data:`PRIORITY` that any finding carries)."""

from __future__ import annotations

import math
from collections import defaultdict
from statistics import median

from clusterforge.diagnose.readings import GpuReading, JobReadings, NodeReading, Thresholds
from clusterforge.diagnose.rules import (
    PRIORITY,
    Diagnosis,
    Finding,
    NodeVerdict,
    Verdict,
    node_findings,
)

__all__ = ["diagnose_readings", "stragglers"]


def _headline(findings: list[Finding]) -> Verdict:
    present = {f.verdict for f in findings}
    return next((v for v in PRIORITY if v in present), "inconclusive")


def _slow_clock(g: GpuReading, median_mhz: float, t: Thresholds) -> bool:
    return g.sm_clock_mhz is not None and g.sm_clock_mhz < median_mhz * (1 - t.straggler_clock_dev)


def _odd_activity(g: GpuReading, median_gr: float, t: Thresholds) -> bool:
    if g.gr_engine_active is None or median_gr < t.idle_gr_max:
        return False  # an idle job has no pace to fall behind
    return abs(g.gr_engine_active - median_gr) / median_gr > t.straggler_activity_dev


def _outliers(gpus: list[GpuReading], t: Thresholds) -> tuple[list[GpuReading], dict[str, float]]:
    """GPUs off their peers' median clock or activity, and the medians."""
    clocks = [g.sm_clock_mhz for g in gpus if g.sm_clock_mhz is not None]
    actives = [g.gr_engine_active for g in gpus if g.gr_engine_active is not None]
    medians: dict[str, float] = {}
    if len(clocks) >= t.min_peers:
        medians["median_sm_clock_mhz"] = median(clocks)
    if len(actives) >= t.min_peers:
        medians["median_gr_engine_active"] = median(actives)
    odd = [
        g
        for g in gpus
        if _slow_clock(g, medians.get("median_sm_clock_mhz", 0.0), t)
        or _odd_activity(g, medians.get("median_gr_engine_active", 0.0), t)
    ]
    return odd, medians


def stragglers(gpus: list[GpuReading], t: Thresholds) -> list[Finding]:
    """GPUs (or whole nodes, when every GPU of the node is off) that lag their peers."""
    odd, medians = _outliers(gpus, t)
    per_node: dict[str, list[GpuReading]] = defaultdict(list)
    for g in gpus:
        per_node[g.node].append(g)
    odd_names = {g.name for g in odd}
    rule = (
        f"SM clock > {t.straggler_clock_dev:g} under the peers' median, or engine activity "
        f"> {t.straggler_activity_dev:g} off it"
    )
    found: list[Finding] = []
    for node, members in per_node.items():
        lagging = [g for g in members if g.name in odd_names]
        if not lagging:
            continue
        whole_node = len(lagging) == len(members)
        subjects = [(node, lagging)] if whole_node else [(g.name, [g]) for g in lagging]
        for subject, group in subjects:
            evidence = dict(medians)
            evidence["sm_clock_mhz"] = _avg([g.sm_clock_mhz for g in group])
            evidence["gr_engine_active"] = _avg([g.gr_engine_active for g in group])
            found.append(Finding("straggler", subject, rule, _rounded(evidence)))
    return found


def _avg(values: list[float | None]) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else float("nan")


def _rounded(evidence: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in evidence.items() if not math.isnan(v)}


def diagnose_readings(readings: JobReadings, thresholds: Thresholds | None = None) -> Diagnosis:
    """Findings per node and across the job; headline verdicts by :data:`PRIORITY`."""
    t = thresholds or Thresholds()
    by_node: dict[str, list[GpuReading]] = defaultdict(list)
    for g in readings.gpus:
        by_node[g.node].append(g)
    hosts = {n.node: n for n in readings.nodes}
    names = sorted(set(by_node) | set(hosts))
    lagging = stragglers(list(readings.gpus), t)
    nodes = []
    for name in names:
        own = node_findings(by_node.get(name, []), hosts.get(name, NodeReading(node=name)), t)
        own += [f for f in lagging if f.subject.split("/")[0] == name]
        nodes.append(NodeVerdict(name, _headline(own), tuple(own)))
    findings = [f for n in nodes for f in n.findings]
    return Diagnosis(
        job=readings.job,
        window=readings.window,
        verdict=_headline(findings),
        nodes=tuple(nodes),
        findings=tuple(findings),
        num_gpus=len(readings.gpus),
    )
