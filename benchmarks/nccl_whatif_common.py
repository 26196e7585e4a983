"""What the nccl-tests what-ifs share: the simulator with NCCL's per-channel rate cap
replaced, scored before and after on the studied rows (never held-out), and the summary line
by size class."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from clusterforge.netsim import simulate as sim_module
from validation.nccl_rows import LARGE_BYTES, Scored, mean_abs_error, score

ChannelCap = Callable[..., float]


def split_summary(name: str, scored: list[Scored]) -> str:
    """Mean absolute error of ``scored``: all, from :data:`LARGE_BYTES` up, and below."""
    large = [s for s in scored if s.row["size_bytes"] >= LARGE_BYTES]
    small = [s for s in scored if s.row["size_bytes"] < LARGE_BYTES]
    return (
        f"{name:12} {mean_abs_error(scored):7.2%} all ({len(scored)}), "
        f"{mean_abs_error(large):7.2%} >= 16 MiB ({len(large)}), "
        f"{mean_abs_error(small):7.2%} < 16 MiB ({len(small)})"
    )


def channel_cap_what_if(
    rows: list[dict[str, Any]],
    cap: Callable[[ChannelCap], ChannelCap],
    title: str,
    *,
    id_width: int,
    show_algorithm: bool,
) -> None:
    """Score ``rows`` with the model and with ``cap(original)`` in place of
    ``simulate.channel_cap_gbyte_per_s``; print the rows that move and, per set, the
    summaries before and after. The model is restored whatever happens."""
    if any(r["set"] == "heldout" for r in rows):
        raise ValueError("held-out rows are never simulated here")
    before = {r["id"]: score(r) for r in rows}
    original = sim_module.channel_cap_gbyte_per_s
    sim_module.channel_cap_gbyte_per_s = cap(original)  # type: ignore[assignment]
    try:
        after = {r["id"]: score(r) for r in rows}
    finally:
        sim_module.channel_cap_gbyte_per_s = original  # type: ignore[assignment]
    print(f"\n{title}: rows that move")
    for r in rows:
        b, a = before[r["id"]], after[r["id"]]
        if math.isclose(b.simulated_gbyte_per_s, a.simulated_gbyte_per_s):
            continue
        algo_b = f" {b.algorithm:>9}" if show_algorithm else ""
        algo_a = f" {a.algorithm:>9}" if show_algorithm else ""
        print(
            f"{r['id']:{id_width}} {r['busbw']:8.1f} {b.simulated_gbyte_per_s:7.1f} "
            f"{b.error:+7.1%}{algo_b} -> {a.simulated_gbyte_per_s:7.1f} {a.error:+7.1%}{algo_a}"
        )
    for name in ("calibration", "development"):
        ids = [r["id"] for r in rows if r["set"] == name]
        print(split_summary(f"{name[:3]} before", [before[i] for i in ids]))
        print(split_summary(f"{name[:3]} after", [after[i] for i in ids]))
