"""Compute-NIC checks: count, link state, speed, InfiniBand error counters, drops and pauses.

Counter names: InfiniBand port counters from sysfs (``ports/N/counters``; kernel ABI
Documentation/ABI/stable/sysfs-class-infiniband) and mlx5 ``ethtool -S`` names for RoCE
(kernel Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst
[unverified: names from memory]).  Counters are cumulative; when a previous reading is given
the checks judge the increase since then, otherwise the totals since the counters were reset.
"""

from __future__ import annotations

from clusterforge.ops.checks.base import CheckResult, Status, Thresholds, result
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
            "critical",
            "node",
            f"{len(nics)} {layer} ports",
            f">= {expect.num_compute_nics} {layer} ports",
            "a NIC is missing: check "
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
                "critical",
                _subject(nic),
                f"{nic.state} / {nic.phys_state}",
                "ACTIVE / LinkUp",
                "check the cable and transceiver, the switch port, and "
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
                "critical",
                _subject(nic),
                f"{rate} Gb/s",
                f"{expect.nic_gbit_per_s:g} Gb/s",
                "the link trained slower than designed: "
                "check the cable/transceiver type and the switch port speed",
                nic=nic.name,
            )
        )
    return out


def _delta(nic: NicReading, before: NicReading | None, name: str) -> int | None:
    now = nic.counters.get(name)
    if now is None:
        return None
    if before is None or name not in before.counters:
        return now
    return max(0, now - before.counters[name])


def check_nic_errors(
    nics: tuple[NicReading, ...], previous: dict[str, NicReading]
) -> list[CheckResult]:
    """InfiniBand error counters: any increase warns (symbol errors, link downed, ...)."""
    out = []
    for nic in nics:
        if nic.link_layer != "InfiniBand":
            continue
        deltas = {c: _delta(nic, previous.get(_subject(nic)), c) for c in IB_ERROR_COUNTERS}
        known = {c: v for c, v in deltas.items() if v is not None}
        rising = {c: v for c, v in known.items() if v > 0}
        status: Status = "unknown" if not known else "warn" if rising else "pass"
        observed = ", ".join(f"{c} {v}" for c, v in rising.items()) or "no errors"
        out.append(
            result(
                "nic.errors",
                status,
                "warning",
                _subject(nic),
                observed,
                "0 errors",
                "rising symbol errors / link downs: clean or replace the cable or "
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
    nics: tuple[NicReading, ...], previous: dict[str, NicReading], limits: Thresholds
) -> list[CheckResult]:
    """A drop rate above 0.1 % (issue 6) fails: RDMA collapses under loss."""
    out = []
    for nic in nics:
        ratio = drop_ratio(nic, previous.get(_subject(nic)))
        status: Status = (
            "unknown" if ratio is None else "fail" if ratio > limits.max_drop_ratio else "pass"
        )
        observed = "not counted" if ratio is None else f"{ratio:.4%} dropped"
        out.append(
            result(
                "nic.drops",
                status,
                "critical",
                _subject(nic),
                observed,
                f"<= {limits.max_drop_ratio:.1%}",
                "RoCE: check PFC/ECN on the NIC and the "
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
        before = previous.get(_subject(nic))
        names = [
            n
            for n in nic.counters
            if n == "rx_pause_ctrl_phy" or (n.startswith("rx_prio") and n.endswith("_pause"))
        ]
        pauses = [_delta(nic, before, n) or 0 for n in names]
        packets = _delta(nic, before, "rx_packets_phy")
        if not names or packets is None:
            out.append(
                result(
                    "nic.pause",
                    "unknown",
                    "warning",
                    _subject(nic),
                    "not counted",
                    f"<= {limits.max_pause_ratio:.0%} pause frames",
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
                "warning",
                _subject(nic),
                f"{ratio:.2%} pause frames",
                f"<= {limits.max_pause_ratio:.0%} pause frames",
                "persistent pauses: a slow "
                "receiver or a congested switch port; check PFC storm counters",
                nic=nic.name,
            )
        )
    return out
