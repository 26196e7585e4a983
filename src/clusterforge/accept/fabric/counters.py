"""Port counters over one round: their increase, the loss, the errors and the congestion.

Three kinds of port, each with the counters its driver documents:

* ``infiniband``: ``/sys/class/infiniband/<hca>/ports/<p>/counters/`` (Linux kernel
  Documentation/ABI/stable/sysfs-class-infiniband; the IBTA PortCounters attribute, InfiniBand
  Architecture Specification Vol. 1, §16.1.3.5).  ``port_xmit_discards`` counts outbound
  packets the port dropped, ``port_rcv_errors`` received packets with errors, against
  ``port_xmit_packets`` / ``port_rcv_packets``; ``symbol_error``, ``link_error_recovery``,
  ``link_downed`` count physical-layer trouble; ``port_xmit_wait`` the ticks the port had
  data to send and no credit to send it (congestion downstream); ``port_xmit_data`` /
  ``port_rcv_data`` count octets divided by 4 (4-byte words), so bytes = 4 x the counter.
* ``roce``: the mlx5 ``ethtool -S`` physical and priority counters (Linux kernel
  Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst):
  ``tx_discards_phy`` / ``rx_discards_phy`` + ``rx_out_of_buffer`` drops against
  ``tx_packets_phy`` / ``rx_packets_phy``; ``rx_crc_errors_phy``, ``rx_symbol_err_phy``,
  ``rx_pcs_symbol_err_phy``, ``link_down_events_phy`` errors; ``rx_prio<p>_pause`` /
  ``tx_prio<p>_pause`` PFC pause frames; and the RDMA ``hw_counters`` of
  drivers/infiniband/hw/mlx5/counters.c: ``np_ecn_marked_roce_packets`` (ECN-marked packets
  received), ``np_cnp_sent`` / ``rp_cnp_handled`` (congestion notifications sent / acted on).
* ``netdev``: any Linux interface, from ``ip -s link`` (the kernel's ``rtnl_link_stats64``:
  ``tx_packets``, ``tx_dropped``, ``rx_packets``, ``rx_dropped``, errors; Linux
  Documentation/ABI/testing/sysfs-class-net-statistics) plus the drops of the interface's
  egress queueing discipline (``tc -s qdisc``, ``qdisc_drops``): the emulated cluster's links.

Loss = dropped / sent, per direction; the port's loss is its worse direction.

The InfiniBand error counters are the PortCounters attribute's narrow fields, which stop at
their maximum instead of wrapping (IBTA Vol. 1 §16.1.3.5: 16 bits for ``port_xmit_discards``,
``port_rcv_errors`` and ``symbol_error``, 8 for ``link_downed`` and ``link_error_recovery``,
4 for ``local_link_integrity_errors`` and ``excessive_buffer_overrun_errors``, 32 for
``port_xmit_wait``; the kernel reads data and packet counts from the 64-bit
PortCountersExtended).  A counter at its maximum cannot rise: a loss it would show is
invisible, so such a port is reported as unmeasurable until its counters are cleared
(``perfquery -x -R``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CONGESTION",
    "ERRORS",
    "LOSS",
    "CounterKind",
    "PortWindow",
    "congestion_of",
    "counter_deltas",
    "data_gbit_per_s",
    "errors_of",
    "loss_of",
    "port_window",
    "unmeasurable",
]

CounterKind = Literal["infiniband", "roce", "netdev"]

# (direction, dropped counters, sent counter) of each kind.
LOSS: dict[CounterKind, tuple[tuple[str, tuple[str, ...], str], ...]] = {
    "infiniband": (
        ("transmit", ("port_xmit_discards",), "port_xmit_packets"),
        ("receive", ("port_rcv_errors",), "port_rcv_packets"),
    ),
    "roce": (
        ("transmit", ("tx_discards_phy",), "tx_packets_phy"),
        ("receive", ("rx_discards_phy", "rx_out_of_buffer"), "rx_packets_phy"),
    ),
    "netdev": (
        ("transmit", ("tx_dropped", "qdisc_drops"), "tx_packets"),
        ("receive", ("rx_dropped",), "rx_packets"),
    ),
}
ERRORS: dict[CounterKind, tuple[str, ...]] = {
    "infiniband": ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors"),
    "roce": ("rx_crc_errors_phy", "rx_symbol_err_phy", "rx_pcs_symbol_err_phy",
             "link_down_events_phy"),
    "netdev": ("rx_errors", "tx_errors", "carrier_changes"),
}  # fmt: skip
SATURATES_AT = {
    "port_xmit_discards": 2**16 - 1,
    "port_rcv_errors": 2**16 - 1,
    "symbol_error": 2**16 - 1,
    "port_rcv_remote_physical_errors": 2**16 - 1,
    "link_downed": 2**8 - 1,
    "link_error_recovery": 2**8 - 1,
    "local_link_integrity_errors": 2**4 - 1,
    "excessive_buffer_overrun_errors": 2**4 - 1,
    "port_xmit_wait": 2**32 - 1,
}
LINK_DOWN = frozenset({"link_downed", "link_down_events_phy", "carrier_changes"})
# Congestion: the port waited, was paused, or was told to slow down.
CONGESTION: dict[CounterKind, tuple[str, ...]] = {
    "infiniband": ("port_xmit_wait",),
    "roce": (
        "np_ecn_marked_roce_packets",
        "np_cnp_sent",
        "rp_cnp_handled",
        "rx_pause_ctrl_phy",
        "tx_pause_ctrl_phy",
    ),
    "netdev": (),
}


@dataclass(frozen=True)
class PortWindow:
    """The increase of one port's counters over one round."""

    kind: CounterKind
    deltas: dict[str, int]
    window_s: float
    saturated: tuple[str, ...] = ()  # counters stuck at their maximum (InfiniBand)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "deltas": self.deltas, "window_s": self.window_s,
                "saturated": list(self.saturated)}  # fmt: skip


def counter_deltas(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Increase of every counter read both times; a counter below its first reading was
    reset meanwhile (driver reload, ``perfquery -R``), so its increase is its new value, as
    Prometheus' ``increase()`` treats a reset."""
    return {
        name: now - before[name] if now >= before[name] else now
        for name, now in after.items()
        if name in before
    }


def port_window(
    kind: CounterKind, before: Mapping[str, int], after: Mapping[str, int], window_s: float
) -> PortWindow:
    stuck = tuple(
        sorted(n for n, top in SATURATES_AT.items() if kind == "infiniband" and after.get(n) == top)
    )
    return PortWindow(kind, counter_deltas(before, after), window_s, stuck)


def unmeasurable(window: PortWindow) -> list[str]:
    """The loss counters of the port that are stuck at their maximum."""
    dropped = {n for _, names, _ in LOSS[window.kind] for n in names}
    return [n for n in window.saturated if n in dropped]


def loss_of(window: PortWindow) -> tuple[float, str] | None:
    """(loss, evidence) of the port's worse direction; None when nothing was counted."""
    worst: tuple[float, str] | None = None
    for direction, dropped_names, sent_name in LOSS[window.kind]:
        sent = window.deltas.get(sent_name)
        counted = [n for n in dropped_names if n in window.deltas]
        if sent is None or not counted:
            continue
        dropped = sum(window.deltas[n] for n in counted)
        loss = dropped / sent if sent else (1.0 if dropped else 0.0)
        text = f"{direction}: {dropped:,} dropped ({' + '.join(counted)}) of {sent:,} ({sent_name})"
        if worst is None or loss > worst[0]:
            worst = (loss, text)
    return worst


def errors_of(window: PortWindow) -> dict[str, int]:
    """The error counters that rose over the round."""
    return {n: window.deltas[n] for n in ERRORS[window.kind] if window.deltas.get(n)}


def congestion_of(window: PortWindow) -> dict[str, int]:
    """Congestion signs over the round: waits, ECN marks, CNPs and PFC pause frames."""
    names = [*CONGESTION[window.kind]]
    if window.kind == "roce":
        names += sorted(
            n
            for n in window.deltas
            if n.startswith(("rx_prio", "tx_prio")) and n.endswith("_pause")
        )
    return {n: window.deltas[n] for n in names if window.deltas.get(n)}


def data_gbit_per_s(window: PortWindow) -> float | None:
    """Transmitted data rate the port counted, Gb/s (InfiniBand: 4-byte words)."""
    if window.kind == "infiniband" and "port_xmit_data" in window.deltas:
        octets = 4 * window.deltas["port_xmit_data"]
    elif window.kind == "roce" and "tx_bytes_phy" in window.deltas:
        octets = window.deltas["tx_bytes_phy"]
    elif window.kind == "netdev" and "tx_bytes" in window.deltas:
        octets = window.deltas["tx_bytes"]
    else:
        return None
    return 8 * octets / window.window_s / 1e9 if window.window_s > 0 else None
