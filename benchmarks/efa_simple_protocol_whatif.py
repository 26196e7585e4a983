"""What if aws-ofi-nccl ran the AWS P6-B200 rows with NCCL_PROTO=simple (a what-if; the
rows keep NCCL's default protocols).

aws-ofi-nccl (``src/platform-aws.cpp``, ``PlatformAWS::config_endpoint``) creates one EFA
endpoint when the plugin initializes (once per process, on one node too) and asks libfabric
for ``FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES``; libfabric's efa provider answers with
rdma-core's ``ibv_query_qp_data_in_order``, which reports 128-byte aligned in-order writes
where the EFA device reports ``EFA_QUERY_DEVICE_CAPS_DATA_POLLING_128``.  Where it does not,
the plugin sets ``NCCL_PROTO=simple`` (P5en with the RDMA protocol is exempted by name).
No public source says whether P6-B200's EFA v4 reports the capability, and AWS's own P6
tuner table pins LL128 pairs, so the rows are not given the setting; this script shows what
it would change.  Development and calibration rows only (a held-out row is never
simulated).

    PYTHONPATH=$PWD/src:$PWD python benchmarks/efa_simple_protocol_whatif.py
"""

from __future__ import annotations

from typing import Any

from validation.nccl_rows import ROWS, Scored, mean_abs_error, score

__all__ = ["CLUSTER", "main", "simple_only"]

CLUSTER = "aws-p6-b200-efa-mleng"
LARGE_BYTES = 16 * 2**20


def simple_only(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with the plugin's NCCL_PROTO=simple (spec ``network.nccl_protocols``)."""
    if row["set"] == "heldout":
        raise ValueError(f"row {row['id']}: held-out rows are never simulated here")
    return {**row, "nccl_protocols": ["simple"]}


def _summary(name: str, scored: list[Scored]) -> str:
    large = [s for s in scored if s.row["size_bytes"] >= LARGE_BYTES]
    return (
        f"{name}: development {mean_abs_error(scored):.1%} ({len(scored)} rows), "
        f">= 16 MiB {mean_abs_error(large):.1%} ({len(large)} rows)"
    )


def main() -> None:
    dev = [r for r in ROWS if r["set"] == "development"]
    before = [score(r) for r in dev]
    after = [
        score(simple_only(r)) if r.get("cluster") == CLUSTER else s
        for r, s in zip(dev, before, strict=True)
    ]
    print(f"{'row':32} {'measured':>9} {'model':>16} {'NCCL_PROTO=simple':>24}")
    for b, a in zip(before, after, strict=True):
        if b.row.get("cluster") != CLUSTER:
            continue
        print(
            f"{b.row['id']:32} {b.row['busbw']:9.1f} {b.error:+7.1%} {b.algorithm}/{b.protocol:7}"
            f" {a.error:+7.1%} {a.algorithm}/{a.protocol}"
        )
    print(_summary("model", before))
    print(_summary("NCCL_PROTO=simple on the P6-B200 rows", after))


if __name__ == "__main__":
    main()
