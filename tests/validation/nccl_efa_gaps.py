"""Known gaps of the AWS EFA all-reduce rows (pub_mleng_efa_nccl.toml): development rows the
simulator misses by more than 15 %, each with its measured and simulated figures (strict
xfails in test_nccl_validation.py)."""

from __future__ import annotations

__all__ = ["EFA_GAPS"]

# Development rows of the ml-engineering P6-B200 table (pub_mleng_efa_nccl.toml, added
# 2026-12-03) that the model misses by more than 15 %.
P6_B200_MID_SIZE_LL128 = (
    "all-reduce of 16-256 MiB on AWS P6-B200 (8 B200, 8 x 400 Gb/s EFA v4; ml-engineering's "
    "all_reduce_bench.py, NCCL 2.27.7): simulated 21-65 % too fast (1 node, NCCL's own "
    "choice: 16 MiB +32.6 %, 64 MiB +29.9 % on ring/LL128; 4 nodes, the pair AWS's OFI tuner "
    "plugin pins, nccl_tuner aws-ofi-p6-b200 from aws-ofi-nccl v1.17.0-v1.21.1: 16 MiB "
    "+65.0 % tree/LL128, 64 MiB +47.8 % ring/LL128, 256 MiB +21.3 % NVLS-Tree/Simple; "
    "+96.6 % and +27.5 % on ring/LL128 before the plugin's table was modelled).  Measured "
    "115 and 293 us on 1 node, 505, 830 and 2,270 us on 4 nodes, where the model takes 87, "
    "226, 306, 561 and 1,872 us.  With NCCL_PROTO=simple "
    "(benchmarks/efa_simple_protocol_whatif.py) the rows come to +7.6 %, +22.3 %, +21.2 %, "
    "+6.7 % and +21.3 %; aws-ofi-nccl (src/platform-aws.cpp) sets it when the EFA device does "
    "not report 128-byte aligned in-order RDMA writes, and no public source says whether "
    "P6-B200's EFA v4 does (AWS's own P6 table pins LL128 pairs, which suggests it does).  The "
    "benchmark times one blocking call after a barrier (not nccl-tests' back-to-back mean).  "
    "From 1 GiB the rows are within 6 % (ring/Simple on 4 nodes, NVLS on 1)"
)
EFA_GAPS: dict[str, str] = dict.fromkeys(
    [f"pub-mleng-p6b200-1n-ar-{s}" for s in ("16mib", "64mib")]
    + [f"pub-mleng-p6b200-4n-ar-{s}" for s in ("16mib", "64mib", "256mib")],
    P6_B200_MID_SIZE_LL128,
)
