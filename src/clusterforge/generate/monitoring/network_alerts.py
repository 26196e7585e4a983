"""Alert rules for the compute NICs (InfiniBand and RoCE) and for rack power from the PDUs.

* **InfiniBand port health** from node_exporter's ``infiniband`` collector (sysfs
  ``/sys/class/infiniband/<hca>/ports/<n>/``; it covers RoCE HCAs too), compute HCAs only:
  ``state_id`` 4 is ACTIVE (IBTA port states); ``link_downed_total`` counts links that failed
  to recover and went down, ``link_error_recovery_total`` links that retrained (a flapping
  cable or transceiver), ``symbol_error_total`` minor lane errors (a marginal cable, the
  first sign of a rising bit error rate), ``port_errors_received_total`` packets received
  with errors.  Counters are alerted on with ``increase``/``rate``, never their raw value.
* **Drops**: more than 0.1 % of packets discarded is a failing port (the NIC check's limit).
* **RoCE congestion** from the clusterforge exporter's raw NIC counters
  (``clusterforge_nic_counter_total{counter=...}``: ``ethtool -S`` and RDMA ``hw_counters``;
  NVIDIA "Understanding mlx5 ethtool counters" and "mlx5 Linux counters"): the time the host
  was paused by PFC on the lossless priority (``rx_prio3_pause_duration``, microseconds),
  the share of RoCE packets the switches ECN-marked (``np_ecn_marked_roce_packets`` of
  ``port_rcv_packets``) and the congestion notifications the senders acted on
  (``rp_cnp_handled``).  Thresholds are planning figures [unverified]: a lossless fabric
  that pauses a host 10 % of the time, or marks 1 % of its packets for minutes, is
  congested beyond what DCQCN absorbs.
* **Rack power** from the PDUs (:mod:`clusterforge.generate.monitoring.pdu_snmp`) against the
  usable power of the rack's feed.
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.generate.monitoring.pdu_snmp import RACK_POWER_RECORD, rack_power_expr
from clusterforge.generate.training.launch import ROCE_PRIORITY, hca_names

__all__ = [
    "DROP_RATE_LIMIT",
    "ECN_MARKED_LIMIT",
    "PAUSE_SHARE_LIMIT",
    "RACK_POWER_WARN_FRACTION",
    "alert",
    "network_rules",
    "power_rules",
]

DROP_RATE_LIMIT = 0.001  # 0.1 % of packets discarded: the NIC check's failure limit
ERROR_RATE_LIMIT = 1e-5  # received packets with errors, share [unverified]
SYMBOL_ERRORS_PER_HOUR = 10  # [unverified] a healthy HDR/NDR link counts none for days
PAUSE_SHARE_LIMIT = 0.1  # share of time the host was PFC-paused [unverified]
ECN_MARKED_LIMIT = 0.01  # share of received RoCE packets ECN-marked [unverified]
CNP_PER_S_LIMIT = 10_000  # congestion notifications handled per second per port [unverified]
RACK_POWER_WARN_FRACTION = 0.9  # of the feed's usable power
IB_PORT_ACTIVE = 4  # node_infiniband_state_id: 4 = ACTIVE
US_PER_S = 1_000_000
_PORT = "{{ $labels.node }} {{ $labels.device }} (rail {{ $labels.rail }})"
_NIC = "{{ $labels.node }} {{ $labels.nic }}"


def alert(name: str, expr: str, for_: str, severity: str, summary: str) -> dict[str, Any]:
    """One alerting rule; ``for_`` "0m" fires at the first evaluation that matches."""
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if for_ != "0m":
        rule["for"] = for_
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {"summary": summary}
    return rule


def _ib_rules(sel: str) -> list[dict[str, Any]]:
    ib = "node_infiniband_"
    return [
        alert(
            "IbPortDown",
            f"{ib}state_id{sel} != {IB_PORT_ACTIVE}",
            "2m",
            "critical",
            f"{_PORT} is not ACTIVE: the rail is down",
        ),
        alert(
            "IbLinkDowned",
            f"increase({ib}link_downed_total{sel}[10m]) > 0",
            "0m",
            "warning",
            f"{_PORT} went down and came back (link downed)",
        ),
        alert(
            "IbLinkErrorRecovery",
            f"increase({ib}link_error_recovery_total{sel}[1h]) > 0",
            "0m",
            "warning",
            f"{_PORT} retrained its link in the last hour (check cable and transceiver)",
        ),
        alert(
            "IbSymbolErrors",
            f"increase({ib}symbol_error_total{sel}[1h]) > {SYMBOL_ERRORS_PER_HOUR}",
            "0m",
            "warning",
            f"{_PORT} counts symbol errors (a marginal cable or transceiver)",
        ),
        alert(
            "IbPortErrorRate",
            f"rate({ib}port_errors_received_total{sel}[5m])"
            f" / rate({ib}port_packets_received_total{sel}[5m]) > {ERROR_RATE_LIMIT:g}",
            "10m",
            "warning",
            f"{_PORT} receives packets with errors",
        ),
    ]


def _drop_rule(sel: str) -> dict[str, Any]:
    ib = "node_infiniband_port_"
    dropped = (
        f"rate({ib}discards_received_total{sel}[5m])"
        f" + rate({ib}discards_transmitted_total{sel}[5m])"
    )
    packets = (
        f"rate({ib}packets_received_total{sel}[5m]) + rate({ib}packets_transmitted_total{sel}[5m])"
    )
    return alert(
        "NicDropRateHigh",
        f"({dropped}) / ({packets}) > {DROP_RATE_LIMIT:g}",
        "5m",
        "warning",
        f"{_PORT} drops more than 0.1 % of packets",
    )


def _roce_rules(devices: str) -> list[dict[str, Any]]:
    def counter(name: str) -> str:
        return f'rate(clusterforge_nic_counter_total{{nic=~"{devices}", counter="{name}"}}[5m])'

    return [
        alert(
            "RocePfcPauseHigh",
            f"{counter(f'rx_prio{ROCE_PRIORITY}_pause_duration')} / {US_PER_S}"
            f" > {PAUSE_SHARE_LIMIT:g}",
            "10m",
            "warning",
            f"{_NIC} is paused by PFC more than {PAUSE_SHARE_LIMIT:.0%} of the time",
        ),
        alert(
            "RoceEcnMarksHigh",
            f"{counter('np_ecn_marked_roce_packets')}"
            f" / ignoring(counter) {counter('port_rcv_packets')} > {ECN_MARKED_LIMIT:g}",
            "15m",
            "warning",
            f"{_NIC}: more than {ECN_MARKED_LIMIT:.0%} of received RoCE packets are ECN-marked",
        ),
        alert(
            "RoceCnpRateHigh",
            f"{counter('rp_cnp_handled')} > {CNP_PER_S_LIMIT}",
            "15m",
            "warning",
            f"{_NIC} is told to slow down (CNPs) more than {CNP_PER_S_LIMIT} times a second",
        ),
    ]


def network_rules(design: Design) -> list[dict[str, Any]]:
    """Compute-HCA rules; RoCE congestion rules on RoCE fabrics."""
    devices = "|".join(hca_names(design))
    sel = f'{{device=~"{devices}"}}'
    rules = [*_ib_rules(sel), _drop_rule(sel)]
    if design.fabric.fabric == "roce":
        rules += _roce_rules(devices)
    return rules


def power_rules(design: Design) -> list[dict[str, Any]]:
    """PDU power per rack (recording rule) and an alert near the feed's usable power."""
    gpu_racks = [r for r in design.racks if r.role == "gpu"]
    budget_kw = min(
        (r.circuit.usable_kw for r in gpu_racks), default=design.spec.facility.max_rack_kw
    )
    limit_w = round(RACK_POWER_WARN_FRACTION * budget_kw * 1000)
    return [
        {"record": RACK_POWER_RECORD, "expr": rack_power_expr()},
        alert(
            "RackPowerNearFeedLimit",
            f"{RACK_POWER_RECORD} > {limit_w}",
            "10m",
            "warning",
            f"rack {{{{ $labels.rack }}}} draws more than {limit_w} W, "
            f"{RACK_POWER_WARN_FRACTION:.0%} of its feed's usable power (PDU reading)",
        ),
    ]
