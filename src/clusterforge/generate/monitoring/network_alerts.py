"""Alert rules for the compute NICs, per fabric kind, and for rack power from the PDUs.

Each fabric kind reads the counters its ports really count; the other kind's rules are left
out of the file (an InfiniBand counter never moves on an Ethernet port, so its rule could
never fire there).  Counters are alerted on with ``increase``/``rate``, never their raw value.

* **InfiniBand** (``network.fabric: infiniband``), from node_exporter's ``infiniband``
  collector (sysfs ``/sys/class/infiniband/<hca>/ports/<n>/``; IBTA port counters):
  ``state_id`` 4 is ACTIVE; ``link_downed_total`` counts links that failed to recover and
  went down, ``link_error_recovery_total`` links that retrained (a flapping cable or
  transceiver), ``symbol_error_total`` minor lane errors (a marginal cable, the first sign of
  a rising bit error rate), ``port_errors_received_total`` packets received with errors.
* **RoCE** (``network.fabric: roce``, e.g. Spectrum-X), from the clusterforge exporter's
  Ethernet and RDMA counters (:mod:`clusterforge.ops.ethernet`: mlx5 ``ethtool -S`` physical
  port and priority counters, Linux kernel Documentation/networking/device_drivers/ethernet/
  mellanox/mlx5/counters.rst; RDMA ``hw_counters``, kernel drivers/infiniband/hw/mlx5/
  counters.c).  Link health: the port's state, ``link_down_events_phy`` (port flapping),
  ``rx_symbol_err_phy`` (packets dropped for coding errors) and ``rx_pcs_symbol_err_phy``
  (symbol errors FEC did not correct: traffic lost; counters.rst says to replace the cable or
  transceiver when either rises), and the pre-FEC bit error ratio,
  ``rx_corrected_bits_phy / rx_bits_phy``, against :data:`PRE_FEC_BER_LIMIT`.  Congestion:
  the time the host was paused by PFC on the lossless priority (``rx_prio3_pause_duration``,
  microseconds), the NIC's own pause-storm watchdog (``tx_pause_storm_error_events``: it
  stopped sending pauses, so the lossless priority may drop), the share of RoCE packets the
  switches ECN-marked (``np_ecn_marked_roce_packets`` of ``rx_vport_rdma_unicast_packets``)
  and the congestion notifications the senders acted on (``rp_cnp_handled``).
* **Drops** on either kind: more than 0.1 % of packets discarded is a failing port (the NIC
  check's limit, :mod:`clusterforge.ops.checks.net`).
* **Rack power** from the PDUs (:mod:`clusterforge.generate.monitoring.pdu_snmp`) against the
  usable power of the rack's feed.
"""

from __future__ import annotations

from typing import Any, assert_never

from clusterforge.design import Design
from clusterforge.generate.monitoring.pdu_snmp import RACK_POWER_RECORD, rack_power_expr
from clusterforge.generate.training.launch import ROCE_PRIORITY, hca_names

__all__ = [
    "CNP_PER_S_LIMIT",
    "DROP_RATE_LIMIT",
    "ECN_MARKED_LIMIT",
    "PAUSE_SHARE_LIMIT",
    "PRE_FEC_BER_LIMIT",
    "RACK_POWER_WARN_FRACTION",
    "alert",
    "network_rules",
    "power_rules",
]

DROP_RATE_LIMIT = 0.001  # 0.1 % of packets discarded: the NIC check's failure limit
ERROR_RATE_LIMIT = 1e-5  # received packets with errors, share [unverified]
SYMBOL_ERRORS_PER_HOUR = 10  # [unverified] a healthy HDR/NDR link counts none for days
# Pre-FEC bit error ratio [standard]: IEEE Std 802.3 specifies its RS(544,514)-FEC PMDs
# (e.g. 200GBASE-SR4/400GBASE-SR8, subclause 138.1.1; 400GBASE-DR4, 124.1.1) to a BER below
# 2.4e-4 at the PMA, the input for which the FEC still meets the frame loss ratio.  A link
# above it runs past the margin FEC was designed for.
PRE_FEC_BER_LIMIT = 2.4e-4
PAUSE_SHARE_LIMIT = 0.1  # share of time the host was PFC-paused [unverified]
ECN_MARKED_LIMIT = 0.01  # share of received RoCE packets ECN-marked [unverified]
CNP_PER_S_LIMIT = 10_000  # congestion notifications handled per second per port [unverified]
RACK_POWER_WARN_FRACTION = 0.9  # of the feed's usable power
IB_PORT_ACTIVE = 4  # node_infiniband_state_id: 4 = ACTIVE
US_PER_S = 1_000_000
_PORT = "{{ $labels.node }} {{ $labels.device }} (rail {{ $labels.rail }})"


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


def _ib_drop_rule(sel: str) -> dict[str, Any]:
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


def _rate(metric: str, sel: str) -> str:
    return f"rate({metric}{sel}[5m])"


def _roce_link_rules(sel: str) -> list[dict[str, Any]]:
    eth = "clusterforge_eth_"
    ber = f"{_rate(f'{eth}rx_fec_corrected_bits_total', sel)} / {_rate(f'{eth}rx_bits_total', sel)}"
    return [
        alert(
            "RocePortDown",
            f"{eth}port_up{sel} == 0",
            "2m",
            "critical",
            f"{_PORT} is not ACTIVE / LinkUp: the rail is down",
        ),
        alert(
            "RoceLinkDownEvents",
            f"increase({eth}link_down_events_total{sel}[10m]) > 0",
            "0m",
            "warning",
            f"{_PORT} went down and came back (link down events: check cable and transceiver)",
        ),
        alert(
            "RoceSymbolErrors",
            f"increase({eth}rx_symbol_errors_total{sel}[10m]) > 0",
            "0m",
            "warning",
            f"{_PORT} drops packets for symbol errors (check cable and transceiver)",
        ),
        alert(
            "RoceFecUncorrectedErrors",
            f"increase({eth}rx_fec_uncorrected_symbols_total{sel}[10m]) > 0",
            "0m",
            "warning",
            f"{_PORT} has symbol errors FEC could not correct: traffic is lost "
            "(replace cable or transceiver)",
        ),
        alert(
            "RocePreFecBerHigh",
            f"{ber} > {PRE_FEC_BER_LIMIT:g}",
            "10m",
            "warning",
            f"{_PORT} pre-FEC bit error ratio is above {PRE_FEC_BER_LIMIT:g}, "
            "the IEEE 802.3 limit for RS-FEC links",
        ),
    ]


def _roce_congestion_rules(sel: str, lossless: str) -> list[dict[str, Any]]:
    eth, roce = "clusterforge_eth_", "clusterforge_roce_"
    return [
        alert(
            "RocePfcPauseHigh",
            f"{_rate(f'{eth}rx_pause_microseconds_total', lossless)} / {US_PER_S}"
            f" > {PAUSE_SHARE_LIMIT:g}",
            "10m",
            "warning",
            f"{_PORT} is paused by PFC more than {PAUSE_SHARE_LIMIT:.0%} of the time",
        ),
        alert(
            "RocePfcPauseStorm",
            f"increase({eth}tx_pause_storm_errors_total{sel}[10m]) > 0",
            "0m",
            "critical",
            f"{_PORT} sent PFC pauses until its watchdog stopped them (a pause storm: "
            "the host cannot take its traffic)",
        ),
        alert(
            "RoceEcnMarksHigh",
            f"{_rate(f'{roce}ecn_marked_packets_total', sel)}"
            f" / {_rate(f'{roce}rx_packets_total', sel)} > {ECN_MARKED_LIMIT:g}",
            "15m",
            "warning",
            f"{_PORT}: more than {ECN_MARKED_LIMIT:.0%} of received RoCE packets are ECN-marked",
        ),
        alert(
            "RoceCnpRateHigh",
            f"{_rate(f'{roce}cnp_handled_total', sel)} > {CNP_PER_S_LIMIT}",
            "15m",
            "warning",
            f"{_PORT} is told to slow down (CNPs) more than {CNP_PER_S_LIMIT} times a second",
        ),
    ]


def _roce_drop_rule(sel: str) -> dict[str, Any]:
    eth = "clusterforge_eth_"
    dropped = " + ".join(
        _rate(f"{eth}{name}_total", sel)
        for name in ("rx_discards", "rx_out_of_buffer", "tx_discards")
    )
    packets = " + ".join(_rate(f"{eth}{name}_total", sel) for name in ("rx_packets", "tx_packets"))
    return alert(
        "RoceDropRateHigh",
        f"({dropped}) / ({packets}) > {DROP_RATE_LIMIT:g}",
        "5m",
        "warning",
        f"{_PORT} drops more than 0.1 % of packets",
    )


def network_rules(design: Design) -> list[dict[str, Any]]:
    """The compute HCAs' rules for the design's fabric kind."""
    devices = "|".join(hca_names(design))
    sel = f'{{device=~"{devices}"}}'
    fabric = design.spec.network.fabric
    match fabric:
        case "infiniband":
            return [*_ib_rules(sel), _ib_drop_rule(sel)]
        case "roce":
            lossless = f'{{device=~"{devices}", priority="{ROCE_PRIORITY}"}}'
            return [
                *_roce_link_rules(sel),
                *_roce_congestion_rules(sel, lossless),
                _roce_drop_rule(sel),
            ]
        case _:
            assert_never(fabric)


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
