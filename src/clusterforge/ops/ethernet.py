"""Ethernet (RoCE) port counters of ConnectX NICs, named as exporter metrics.

On a RoCE fabric the InfiniBand port counters (``symbol_error``, ``link_downed``,
``link_error_recovery`` under ``/sys/class/infiniband/<dev>/ports/<n>/counters``) do not count
the Ethernet link's errors; the mlx5 driver reports those through ``ethtool -S <netdev>``, and
the RDMA congestion counters through ``/sys/class/infiniband/<dev>/ports/<n>/hw_counters/``.
:class:`~clusterforge.ops.sysfs.SysfsReader` merges both into a port's ``counters``; this module
says which of them the exporter serves, under which metric name, and pulls them out of a port's
counters (a pure function, tested with recorded ``ethtool -S`` text).

Counter names and meanings, from the primary sources:

* Physical port and priority counters: Linux kernel
  ``Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst``
  ("Physical Port Counters", "Priority Port Counters"; also NVIDIA's "Understanding mlx5
  ethtool Counters").  ``rx_symbol_err_phy`` counts received packets dropped for physical
  coding errors; ``rx_pcs_symbol_err_phy`` symbol errors FEC did not correct (traffic lost);
  ``rx_corrected_bits_phy`` bits FEC corrected, which over ``rx_bits_phy`` is the
  corrected-bit ratio, the pre-FEC bit error ratio the link runs at; ``link_down_events_phy``
  times the link went down (port flapping); ``rx_prio<p>_pause`` / ``_pause_duration``
  (microseconds) PFC pause frames received on priority ``p``, i.e. time the port could not
  send; ``tx_pause_storm_error_events`` the NIC's pause-storm watchdog disabling its pauses;
  ``rx_discards_phy`` / ``tx_discards_phy`` / ``rx_out_of_buffer`` drops.
* RDMA counters: Linux kernel ``drivers/infiniband/hw/mlx5/counters.c`` (``cong_cnts``,
  ``basic_q_cnts``, ``retrans_q_cnts``), added with commit e1f24a79f424 "IB/mlx5: Support
  congestion related counters": ``np_ecn_marked_roce_packets`` CE-marked RoCE packets the
  notification point received, ``np_cnp_sent`` congestion notification packets (CNPs) it sent
  back, ``rp_cnp_handled`` CNPs the reaction point (the sender) acted on by slowing down,
  ``rp_cnp_ignored`` those it ignored; ``out_of_buffer`` drops for lack of receive WQEs,
  ``packet_seq_err`` NAK sequence errors (go-back-N retransmissions).

A counter the driver or firmware does not report (older ConnectX, PFC off on a priority) is
simply absent: no series, rather than a zero that looks healthy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "PORT_METRICS",
    "PRIORITY_METRICS",
    "PortMetric",
    "PortSample",
    "ethernet_samples",
]


@dataclass(frozen=True)
class PortMetric:
    """One exporter counter family read from one driver counter.

    ``counter`` is the driver's name; in :data:`PRIORITY_METRICS` ``{p}`` stands for the L2
    priority 0-7, which becomes the ``priority`` label."""

    name: str  # Prometheus family name; the text format adds ``_total``
    counter: str
    help: str


# ethtool -S physical port counters (counters.rst, "Physical Port Counters").
_PHY: tuple[PortMetric, ...] = (
    PortMetric(
        "clusterforge_eth_rx_symbol_errors",
        "rx_symbol_err_phy",
        "Received packets dropped for physical coding (symbol) errors (ethtool rx_symbol_err_phy)",
    ),
    PortMetric(
        "clusterforge_eth_rx_fec_uncorrected_symbols",
        "rx_pcs_symbol_err_phy",
        "Symbol errors FEC did not correct, traffic lost (ethtool rx_pcs_symbol_err_phy)",
    ),
    PortMetric(
        "clusterforge_eth_rx_fec_corrected_bits",
        "rx_corrected_bits_phy",
        "Bits corrected by FEC; over rx_bits the pre-FEC bit error ratio "
        "(ethtool rx_corrected_bits_phy)",
    ),
    PortMetric(
        "clusterforge_eth_rx_bits",
        "rx_bits_phy",
        "Bits the port could have received (ethtool rx_bits_phy)",
    ),
    PortMetric(
        "clusterforge_eth_rx_crc_errors",
        "rx_crc_errors_phy",
        "Received packets dropped for FCS errors (ethtool rx_crc_errors_phy)",
    ),
    PortMetric(
        "clusterforge_eth_link_down_events",
        "link_down_events_phy",
        "Times the link went down (ethtool link_down_events_phy)",
    ),
    PortMetric(
        "clusterforge_eth_rx_packets",
        "rx_packets_phy",
        "Packets received on the physical port (ethtool rx_packets_phy)",
    ),
    PortMetric(
        "clusterforge_eth_tx_packets",
        "tx_packets_phy",
        "Packets transmitted on the physical port (ethtool tx_packets_phy)",
    ),
    PortMetric(
        "clusterforge_eth_rx_discards",
        "rx_discards_phy",
        "Received packets dropped for lack of buffers (ethtool rx_discards_phy)",
    ),
    PortMetric(
        "clusterforge_eth_tx_discards",
        "tx_discards_phy",
        "Packets discarded on transmission (ethtool tx_discards_phy)",
    ),
    PortMetric(
        "clusterforge_eth_rx_out_of_buffer",
        "rx_out_of_buffer",
        "Times a receive queue had no software buffers (ethtool rx_out_of_buffer)",
    ),
    PortMetric(
        "clusterforge_eth_rx_ecn_marked_packets",
        "rx_ecn_mark",
        "Received Ethernet (not RoCE) packets with the ECN mark on (ethtool rx_ecn_mark)",
    ),
    PortMetric(
        "clusterforge_eth_tx_pause_storm_errors",
        "tx_pause_storm_error_events",
        "Times the NIC sent pauses so long that its watchdog disabled them "
        "(ethtool tx_pause_storm_error_events)",
    ),
)

# RDMA hw_counters (drivers/infiniband/hw/mlx5/counters.c) and the vPort RDMA packet count.
_ROCE: tuple[PortMetric, ...] = (
    PortMetric(
        "clusterforge_roce_rx_packets",
        "rx_vport_rdma_unicast_packets",
        "RDMA unicast packets received (ethtool rx_vport_rdma_unicast_packets)",
    ),
    PortMetric(
        "clusterforge_roce_ecn_marked_packets",
        "np_ecn_marked_roce_packets",
        "CE-marked RoCE packets received (hw_counters np_ecn_marked_roce_packets)",
    ),
    PortMetric(
        "clusterforge_roce_cnp_sent",
        "np_cnp_sent",
        "Congestion notification packets sent for CE-marked packets (hw_counters np_cnp_sent)",
    ),
    PortMetric(
        "clusterforge_roce_cnp_handled",
        "rp_cnp_handled",
        "Congestion notification packets the sender slowed down for (hw_counters rp_cnp_handled)",
    ),
    PortMetric(
        "clusterforge_roce_cnp_ignored",
        "rp_cnp_ignored",
        "Congestion notification packets the sender ignored (hw_counters rp_cnp_ignored)",
    ),
    PortMetric(
        "clusterforge_roce_out_of_buffer",
        "out_of_buffer",
        "RDMA packets dropped for lack of receive WQEs (hw_counters out_of_buffer)",
    ),
    PortMetric(
        "clusterforge_roce_packet_seq_errors",
        "packet_seq_err",
        "NAK sequence errors, each a go-back-N retransmission (hw_counters packet_seq_err)",
    ),
)

PORT_METRICS: tuple[PortMetric, ...] = _PHY + _ROCE

# ethtool -S priority port counters (counters.rst, "Priority Port Counters"); PFC only.
PRIORITY_METRICS: tuple[PortMetric, ...] = (
    PortMetric(
        "clusterforge_eth_rx_pause_frames",
        "rx_prio{p}_pause",
        "PFC pause frames received on the priority (ethtool rx_prio<p>_pause)",
    ),
    PortMetric(
        "clusterforge_eth_tx_pause_frames",
        "tx_prio{p}_pause",
        "PFC pause frames sent on the priority (ethtool tx_prio<p>_pause)",
    ),
    PortMetric(
        "clusterforge_eth_rx_pause_microseconds",
        "rx_prio{p}_pause_duration",
        "Time paused by received PFC on the priority, microseconds "
        "(ethtool rx_prio<p>_pause_duration)",
    ),
    PortMetric(
        "clusterforge_eth_tx_pause_microseconds",
        "tx_prio{p}_pause_duration",
        "Time the NIC paused its peer on the priority, microseconds "
        "(ethtool tx_prio<p>_pause_duration)",
    ),
)


@dataclass(frozen=True)
class PortSample:
    """One value of one metric for one port; ``priority`` only for per-priority metrics."""

    metric: str
    value: float
    priority: str | None = None


def _priority_pattern(counter: str) -> re.Pattern[str]:
    return re.compile(re.escape(counter).replace(re.escape("{p}"), r"([0-7])") + "$")


def ethernet_samples(counters: Mapping[str, int]) -> list[PortSample]:
    """The exporter's Ethernet/RoCE samples of one port, from its merged raw counters."""
    samples = [
        PortSample(m.name, float(counters[m.counter]))
        for m in PORT_METRICS
        if m.counter in counters
    ]
    for metric in PRIORITY_METRICS:
        pattern = _priority_pattern(metric.counter)
        for name, value in sorted(counters.items()):
            match = pattern.match(name)
            if match:
                samples.append(PortSample(metric.name, float(value), priority=match.group(1)))
    return samples
