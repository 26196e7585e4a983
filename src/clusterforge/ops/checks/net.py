"""Compute-NIC checks: count, link state, speed, InfiniBand error counters, drops and pauses.

Counter names: InfiniBand port counters from sysfs (``ports/N/counters``; kernel ABI
Documentation/ABI/stable/sysfs-class-infiniband) and mlx5 ``ethtool -S`` names for RoCE
(kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst,
"Physical Port Counters" and "Priority Port Counters").  Counters are cumulative.  With a previous reading of the
port (the exporter's last run, or the state file of a one-shot check) the checks judge the
increase since then; without one (a *baseline* run) they see only totals since the counters
were last reset, possibly months ago, and only warn when those are absurd (see Thresholds).
"""

from __future__ import annotations

from clusterforge.ops.checks.base import (
    CheckResult,
    Status,
    Thresholds,
    counter_increase,
    result,
)
from clusterforge.ops.expect import NodeExpectation
from clusterforge.ops.readings import NicReading

__all__ = [
    "check_nic_count",
    "check_nic_drops",
    "check_nic_errors",
    "check_nic_link",
    "check_nic_pause",
    "check_nic_speed",
    "compute_nics",
]

IB_ERROR_COUNTERS = ("symbol_error", "link_downed", "port_rcv_errors", "link_error_recovery")
# (dropped, of packets) pairs; the drop ratio is the worst pair.
IB_DROP_PAIRS = (
    (("port_xmit_discards",), "port_xmit_packets"),
    (("port_rcv_errors",), "port_rcv_packets"),
)
ROCE_DROP_PAIRS = (
    (("rx_discards_phy", "rx_out_of_buffer"), "rx_packets_phy"),
    (("tx_discards_phy",), "tx_packets_phy"),
)
_LAYER = {"infiniband": "InfiniBand", "roce": "Ethernet"}


def compute_nics(nics: tuple[NicReading, ...], expect: NodeExpectation) -> tuple[NicReading, ...]:
    """The ports of the compute fabric: those whose link layer matches the design's fabric."""
    if expect.fabric is None:
        return nics
    return tuple(n for n in nics if n.link_layer == _LAYER[expect.fabric])


def _subject(nic: NicReading) -> str:
    return f"{nic.name}/{nic.port}"


def check_nic_count(nics: tuple[NicReading, ...], expect: NodeExpectation) -> list[CheckResult]:
    if expect.num_compute_nics is None:
        return []
    layer = _LAYER.get(expect.fabric or "", "any")
    status: Status = "fail" if len(nics) < expect.num_compute_nics else "pass"
    return [
        result(
            "nic.count",
            status,
            severity="critical",
            subject="node",
            observed=f"{len(nics)} {layer} ports",
            expected=f">= {expect.num_compute_nics} {layer} ports",
            remedy="a NIC is missing: check "
            "`ibstat`/`lspci`, the firmware (`mlxfwmanager`) and the link layer setting",
        )
    ]


def check_nic_link(nics: tuple[NicReading, ...]) -> list[CheckResult]:
    out = []
    for nic in nics:
        up = nic.state == "ACTIVE" and nic.phys_state == "LinkUp"
        status: Status = "unknown" if nic.state is None else "pass" if up else "fail"
        out.append(
            result(
                "nic.link",
                status,
                severity="critical",
                subject=_subject(nic),
                observed=f"{nic.state} / {nic.phys_state}",
                expected="ACTIVE / LinkUp",
                remedy="check the cable and transceiver, the switch port, and "
                "(InfiniBand) that a subnet manager runs",
                nic=nic.name,
            )
        )
    return out


def check_nic_speed(nics: tuple[NicReading, ...], expect: NodeExpectation) -> list[CheckResult]:
    if expect.nic_gbit_per_s is None:
        return []
    out = []
    for nic in nics:
        rate = nic.rate_gbit_per_s
        status: Status = (
            "unknown" if rate is None else "fail" if rate < expect.nic_gbit_per_s else "pass"
        )
        out.append(
            result(
                "nic.speed",
                status,
                severity="critical",
                subject=_subject(nic),
                observed=f"{rate} Gb/s",
                expected=f"{expect.nic_gbit_per_s:g} Gb/s",
                remedy="the link trained slower than designed: "
                "check the cable/transceiver type and the switch port speed",
                nic=nic.name,
            )
        )
    return out


def _delta(nic: NicReading, before: NicReading | None, name: str) -> int | None:
    """Increase since ``before``; the total when there is no previous value (baseline)."""
    now = nic.counters.get(name)
    if now is None:
        return None
    if before is None or name not in before.counters:
        return now
    return counter_increase(now, before.counters[name])


def _previous(
    nic: NicReading, previous: dict[str, NicReading], names: tuple[str, ...] | list[str]
) -> NicReading | None:
    """The port's previous reading, if it has every one of ``names`` that the port has now;
    otherwise this port is a baseline (a counter that was not read last time, e.g. when
    ``ethtool -S`` timed out, has no increase to judge)."""
    before = previous.get(_subject(nic))
    if before is None:
        return None
    missing = [n for n in names if n in nic.counters and n not in before.counters]
    return None if missing else before


def _drop_names(nic: NicReading) -> list[str]:
    pairs = IB_DROP_PAIRS if nic.link_layer == "InfiniBand" else ROCE_DROP_PAIRS
    return [n for dropped, packets in pairs for n in (*dropped, packets)]


def _since(elapsed_s: float | None) -> str:
    return f" in {elapsed_s:.0f} s" if elapsed_s else ""


def check_nic_errors(
    nics: tuple[NicReading, ...],
    previous: dict[str, NicReading],
    limits: Thresholds,
    elapsed_s: float | None = None,
) -> list[CheckResult]:
    """InfiniBand error counters: any increase since the last run warns (symbol errors, link
    downed, ...); a baseline run warns only on totals of ``baseline_max_nic_errors`` or more."""
    out = []
    for nic in nics:
        if nic.link_layer != "InfiniBand":
            continue
        before = _previous(nic, previous, IB_ERROR_COUNTERS)
        deltas = {c: _delta(nic, before, c) for c in IB_ERROR_COUNTERS}
        known = {c: v for c, v in deltas.items() if v is not None}
        limit = 1 if before is not None else limits.baseline_max_nic_errors
        rising = {c: v for c, v in known.items() if v >= limit}
        status: Status = "unknown" if not known else "warn" if rising else "pass"
        if before is None:
            observed = ", ".join(f"{c} {v} since reset" for c, v in rising.items())
            expected = f"< {limits.baseline_max_nic_errors} since reset (baseline run)"
        else:
            observed = ", ".join(f"{c} +{v}{_since(elapsed_s)}" for c, v in rising.items())
            expected = "no new errors"
        out.append(
            result(
                "nic.errors",
                status,
                severity="warning",
                subject=_subject(nic),
                observed=observed or "no errors",
                expected=expected,
                remedy="rising symbol errors / link downs: clean or replace the cable or "
                "transceiver (`ibdiagnet` locates the bad segment)",
                nic=nic.name,
            )
        )
    return out


def drop_ratio(nic: NicReading, before: NicReading | None) -> float | None:
    """Worst dropped/packets ratio over receive and transmit; None when not counted."""
    pairs = IB_DROP_PAIRS if nic.link_layer == "InfiniBand" else ROCE_DROP_PAIRS
    ratios = []
    for dropped_names, packets_name in pairs:
        dropped = [_delta(nic, before, n) for n in dropped_names]
        packets = _delta(nic, before, packets_name)
        if packets is None or all(d is None for d in dropped):
            continue
        ratios.append(sum(d or 0 for d in dropped) / packets if packets else 0.0)
    return max(ratios) if ratios else None


def check_nic_drops(
    nics: tuple[NicReading, ...],
    previous: dict[str, NicReading],
    limits: Thresholds,
    elapsed_s: float | None = None,
) -> list[CheckResult]:
    """Drops over 0.1 % of packets since the last run fail (``Thresholds.max_drop_ratio``):
    RDMA goodput collapses under loss.

    A baseline run sees only the ratio since the counters were reset; above the limit that is
    already absurd for a lossless fabric, but it may be history, so it only warns.
    """
    out = []
    for nic in nics:
        before = _previous(nic, previous, _drop_names(nic))
        ratio = drop_ratio(nic, before)
        over = ratio is not None and ratio > limits.max_drop_ratio
        status: Status = (
            "unknown" if ratio is None else "pass" if not over else "fail" if before else "warn"
        )
        window = (
            "since reset (baseline run)" if before is None else f"since last run{_since(elapsed_s)}"
        )
        observed = "not counted" if ratio is None else f"{ratio:.4%} dropped {window}"
        out.append(
            result(
                "nic.drops",
                status,
                severity="critical",
                subject=_subject(nic),
                observed=observed,
                expected=f"<= {limits.max_drop_ratio:.1%}",
                remedy="RoCE: check PFC/ECN on the NIC and the "
                "switch (priority, buffer); InfiniBand: check the link and congestion",
                nic=nic.name,
            )
        )
    return out


def check_nic_pause(
    nics: tuple[NicReading, ...], previous: dict[str, NicReading], limits: Thresholds
) -> list[CheckResult]:
    """RoCE pause frames per received packet (a site threshold, see Thresholds)."""
    out = []
    for nic in nics:
        if nic.link_layer != "Ethernet":
            continue
        names = [
            n
            for n in nic.counters
            if n == "rx_pause_ctrl_phy" or (n.startswith("rx_prio") and n.endswith("_pause"))
        ]
        before = _previous(nic, previous, [*names, "rx_packets_phy"])
        pauses = [_delta(nic, before, n) or 0 for n in names]
        packets = _delta(nic, before, "rx_packets_phy")
        if not names or packets is None:
            out.append(
                result(
                    "nic.pause",
                    "unknown",
                    severity="warning",
                    subject=_subject(nic),
                    observed="not counted",
                    expected=f"<= {limits.max_pause_ratio:.0%} pause frames",
                    nic=nic.name,
                )
            )
            continue
        ratio = sum(pauses) / packets if packets else 0.0
        status: Status = "warn" if ratio > limits.max_pause_ratio else "pass"
        out.append(
            result(
                "nic.pause",
                status,
                severity="warning",
                subject=_subject(nic),
                observed=f"{ratio:.2%} pause frames "
                + ("since reset (baseline run)" if before is None else "since last run"),
                expected=f"<= {limits.max_pause_ratio:.0%} pause frames",
                remedy="persistent pauses: a slow "
                "receiver or a congested switch port; check PFC storm counters",
                nic=nic.name,
            )
        )
    return out
