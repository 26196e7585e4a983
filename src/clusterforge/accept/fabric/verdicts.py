"""Verdicts of the fabric rounds, per port, from the workers' records (plain dicts).

* **loss**: the port's counters over each round (:mod:`.counters`); above
  :attr:`FabricRules.max_loss` (0.1 % unless the run tightens it) the port fails, named with
  its cable.  The worst round counts: loss is never noise.
* **errors**: a link that went down under load fails; other error counters that rose are
  reported.
* **congestion**: waits, pauses, ECN marks and CNPs are reported even when nothing was lost.
* **bandwidth**: each direction of a rail is measured by its sender.  A flow A->B that is
  slow implicates A's transmit and B's receive side, so each port keeps the best of its flows
  as sender and as receiver over the rounds (different partners): only a port slow with every
  partner is named.  On the designed hardware (perftest) it must reach
  :data:`~clusterforge.accept.targets.BOUND_FRACTION` of the link rate, the rule the
  collectives use; a stand-in's figure (iperf3 over shared CPUs) is reported, not judged.
* **latency**: the best ``t_typical`` (median) of the rail over its partners, against the
  design's path latency (see :func:`expected_latency_us`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clusterforge.accept.fabric.counters import (
    LINK_DOWN,
    PortWindow,
    congestion_of,
    errors_of,
    loss_of,
    unmeasurable,
)
from clusterforge.accept.targets import BOUND_FRACTION, Target
from clusterforge.accept.verdicts import TestResult, Verdict

if TYPE_CHECKING:
    from clusterforge.design import Design

__all__ = [
    "LATENCY_FACTOR",
    "MAX_LOSS",
    "FabricRules",
    "cable_names",
    "expected_latency_us",
    "fabric_results",
    "fabric_rules",
]

MAX_LOSS = 0.001  # 0.1 % of the packets sent: the practitioners' limit at full load
# The design's per-link latency is a planning figure (the simulator's), not a measurement;
# a rail fails only at twice the path's figure.
LATENCY_FACTOR = 2.0
PERFTEST_TOOLS = frozenset({"ib_write_bw", "ib_send_bw"})

Port = tuple[str, str]  # (node, hca)


@dataclass(frozen=True)
class FabricRules:
    """What the fabric rounds are judged against."""

    link_gbit_per_s: float
    expected_latency_us: float | None = None
    max_loss: float = MAX_LOSS
    bandwidth_fraction: float = BOUND_FRACTION
    latency_factor: float = LATENCY_FACTOR
    cables: Mapping[Port, str] = field(default_factory=dict)  # (node, hca) -> cable

    def port_name(self, node: str, hca: str) -> str:
        cable = self.cables.get((node, hca))
        return f"{hca} (cable {cable})" if cable else hca


def expected_latency_us(*, crosses_spine: bool) -> float:
    """One-way latency of a rail's path, µs: the design's per-link latency (the topology's
    ``NETWORK_LINK_LATENCY_S``, the simulator's figure) times the links of the path:
    node-leaf-node (2) under one leaf, node-leaf-spine-leaf-node (4) across the spine.
    perftest's latency tests report half the round trip (perftest README), the same
    one-way figure."""
    from clusterforge.topology import NETWORK_LINK_LATENCY_S

    return (4 if crosses_spine else 2) * NETWORK_LINK_LATENCY_S * 1e6


def cable_names(design: Design, nodes: Iterable[str]) -> dict[Port, str]:
    """(node, hca) -> the cable the cabling plan lays for that port:
    ``gpu-0003 mlx5_0 -> leaf-0001 p3, 3.2 m <medium>``."""
    from itertools import islice

    from clusterforge.generate.inventory.ports import compute_links

    wanted = set(nodes)
    c = design.fabric.connectivity
    out = {}
    for link in islice(compute_links(design), c.num_nodes * c.nics_per_node):
        if link.a_device in wanted:
            out[(link.a_device, link.a_port)] = (
                f"{link.a_device} {link.a_port} -> {link.b_device} {link.b_port}, "
                f"{link.length_m:g} m {link.cable_type}"
            )
    return out


def fabric_rules(
    design: Design, nodes: Iterable[str], *, max_loss: float, crosses_spine: bool = True
) -> FabricRules:
    """The design's rules for its fabric rounds (``crosses_spine``: the pairs sit under
    different leaves)."""
    return FabricRules(
        link_gbit_per_s=design.fabric.nic_gbit_per_s,
        expected_latency_us=expected_latency_us(crosses_spine=crosses_spine),
        max_loss=max_loss,
        cables=cable_names(design, nodes),
    )


def _records(records: Iterable[dict[str, Any]], test: str) -> list[dict[str, Any]]:
    return [r for r in records if r.get("test") == test and "hca" in r]


def _window(r: dict[str, Any]) -> PortWindow:
    data = r["counters"]
    return PortWindow(data["kind"], data["deltas"], data["window_s"],
                      tuple(data.get("saturated", ())))  # fmt: skip


def _stuck(rows: list[dict[str, Any]], rules: FabricRules) -> tuple[list[TestResult], set[Port]]:
    """Ports whose loss counters are stuck at their maximum: loss not measurable there."""
    out, ports = [], set()
    for r in rows:
        port = (r["node"], r["hca"])
        names = unmeasurable(_window(r)) if "counters" in r else []
        if names and port not in ports:
            ports.add(port)
            evidence = (
                f"{', '.join(names)} at the counter's maximum: a loss cannot show; clear the "
                "port's counters (perfquery -x -R) and rerun"
            )
            out.append(TestResult("fabric loss", r["node"], "fail", evidence=evidence,
                                  port=rules.port_name(*port)))  # fmt: skip
    return out, ports


def _loss(rows: list[dict[str, Any]], rules: FabricRules) -> list[TestResult]:
    stuck, skip = _stuck(rows, rules)
    worst: dict[Port, tuple[float, str]] = {}
    for r in rows:
        if "counters" not in r or (r["node"], r["hca"]) in skip:
            continue
        found = loss_of(_window(r))
        if found is None:
            continue
        port = (r["node"], r["hca"])
        text = f"{found[1]}; round {r['round']} with {r['peer']}"
        if port not in worst or found[0] > worst[port][0]:
            worst[port] = (found[0], text)
    target = Target(100 * rules.max_loss, "%", "loss limit at full load", at_least=False)
    out = stuck
    for (node, hca), (loss, text) in sorted(worst.items()):
        verdict: Verdict = "fail" if loss > rules.max_loss else "pass"
        out.append(
            TestResult("fabric loss", node, verdict, 100 * loss, "% lost", (target,), text,
                       port=rules.port_name(node, hca))
        )  # fmt: skip
    return out


def _counted(rows: list[dict[str, Any]], rules: FabricRules) -> list[TestResult]:
    """Errors and congestion, summed over the rounds."""
    errors: dict[Port, dict[str, int]] = defaultdict(dict)
    congestion: dict[Port, dict[str, int]] = defaultdict(dict)
    for r in rows:
        if "counters" not in r:
            continue
        window = _window(r)
        port = (r["node"], r["hca"])
        for target, found in ((errors, errors_of(window)), (congestion, congestion_of(window))):
            for name, value in found.items():
                target[port][name] = target[port].get(name, 0) + value
    out = []
    for (node, hca), found in sorted(errors.items()):
        down = any(n in LINK_DOWN for n in found)
        out.append(
            TestResult("fabric errors", node, "fail" if down else "info", float(sum(found.values())),
                       "errors", evidence=_listed(found), port=rules.port_name(node, hca))
        )  # fmt: skip
    for (node, hca), found in sorted(congestion.items()):
        out.append(
            TestResult("fabric congestion", node, "info", evidence=_listed(found),
                       port=rules.port_name(node, hca))
        )  # fmt: skip
    return out


def _listed(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} +{value:,}" for name, value in sorted(counts.items()))


def _bandwidth(rows: list[dict[str, Any]], rules: FabricRules) -> list[TestResult]:
    sent: dict[Port, float] = {}
    received: dict[Port, float] = {}
    judged: dict[Port, bool] = {}
    for r in rows:
        if "tx_gbit_per_s" not in r:
            continue
        value = float(r["tx_gbit_per_s"])
        me, peer = (r["node"], r["hca"]), (r["peer"], r.get("peer_hca", r["hca"]))
        sent[me] = max(sent.get(me, 0.0), value)
        received[peer] = max(received.get(peer, 0.0), value)
        judged[me] = judged.get(me, True) and r.get("tool") in PERFTEST_TOOLS
    target = Target(
        rules.bandwidth_fraction * rules.link_gbit_per_s, "Gb/s",
        f"{rules.bandwidth_fraction:.0%} of the {rules.link_gbit_per_s:g} Gb/s link rate",
    )  # fmt: skip
    out = []
    for port in sorted(sent):
        worse = min(sent[port], received.get(port, sent[port]))
        direction = "sending" if sent[port] <= received.get(port, sent[port]) else "receiving"
        verdict: Verdict = (
            ("pass" if target.met_by(worse) else "fail") if judged.get(port) else "info"
        )
        evidence = f"best {direction} rate over its partners"
        if verdict == "info":
            evidence += " (stand-in traffic: not judged against the link rate)"
        out.append(
            TestResult("fabric bandwidth", port[0], verdict, worse, "Gb/s",
                       (target,) if verdict != "info" else (), evidence,
                       port=rules.port_name(*port))
        )  # fmt: skip
    return out


def _latency(rows: list[dict[str, Any]], rules: FabricRules) -> list[TestResult]:
    best: dict[Port, tuple[float, str]] = {}
    for r in rows:
        if "typical_us" not in r:
            continue
        for port in ((r["node"], r["hca"]), (r["peer"], r.get("peer_hca", r["hca"]))):
            if port not in best or r["typical_us"] < best[port][0]:
                best[port] = (float(r["typical_us"]), f"{r['tool']} with {r['peer']}")
    limit = (
        Target(
            rules.latency_factor * rules.expected_latency_us,
            "us",
            f"{rules.latency_factor:g} x the design's path latency "
            f"{rules.expected_latency_us:.2g} us",
            at_least=False,
        )
        if rules.expected_latency_us
        else None
    )
    out = []
    for port, (value, text) in sorted(best.items()):
        verdict: Verdict = "info" if limit is None else "pass" if limit.met_by(value) else "fail"
        out.append(
            TestResult("fabric latency", port[0], verdict, value, "us",
                       (limit,) if limit else (), text, port=rules.port_name(*port))
        )  # fmt: skip
    return out


def _skipped_or_errors(records: Iterable[dict[str, Any]]) -> list[TestResult]:
    """A skip once per node and reason (every round repeats it); every error."""
    out: list[TestResult] = []
    seen: set[tuple[str, str, str]] = set()
    for r in records:
        key = (r.get("test", ""), r.get("node", "?"), r.get("skipped", ""))
        if "skipped" in r and key in seen:
            continue
        seen.add(key)
        if r.get("test") not in ("fabric", "fabric-latency"):
            continue
        port = r.get("hca", "")
        if "skipped" in r:
            out.append(TestResult(r["test"], r.get("node", "?"), "skip", evidence=r["skipped"],
                                  port=port))  # fmt: skip
        elif "error" in r:
            out.append(TestResult(r["test"], r.get("node", "?"), "fail", evidence=r["error"],
                                  port=port))  # fmt: skip
    return out


def fabric_results(records: list[dict[str, Any]], rules: FabricRules) -> list[TestResult]:
    """Every fabric verdict of the rounds' records."""
    rows = _records(records, "fabric")
    return [
        *_loss(rows, rules),
        *_counted(rows, rules),
        *_bandwidth(rows, rules),
        *_latency(_records(records, "fabric-latency"), rules),
        *_skipped_or_errors(records),
    ]
