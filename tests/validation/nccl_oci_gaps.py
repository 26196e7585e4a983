"""Known gaps of the OCI rack-scale nccl-tests rows (pub_oke_gb200_roce_nccl.toml,
pub_ocigpu_gb300_roce_nccl.toml and pub_ocigpu_gb300_roce_sweeps.toml): development rows the simulator misses by more than 15 %,
each with its measured and simulated figures (strict xfails in test_nccl_validation.py)."""

from __future__ import annotations

# Development rows of the OCI GB200 RoCE source (pub_oke_gb200_roce_nccl.toml, added
# 2026-12-02) that the model misses by more than 15 %.
GB200_ROCE_TWO_RACK_SMALL = (
    "all-reduce of 8 KiB-8 MiB across 32 GB200 trays in two NVL72 racks joined by RoCE "
    "(oci-hpc-oke's log, NCCL 2.29.2, NVLS off), on NCCL's tree of the two cliques (72 + 56 "
    "GPUs): simulated 21-105 % too fast up to 4 MiB (8 KiB +99.4 %, 16 KiB +98.0 %, 32 KiB "
    "+99.8 %, 64 KiB +97.9 %, 128 KiB +97.8 %, 256 KiB +104.5 %, 512 KiB +53.2 % on LL; 1 MiB "
    "+43.5 %, 2 MiB +47.2 %, 4 MiB +20.8 % on LL128) and 29.8 % too slow at 8 MiB (LL128).  The measured call takes 204 us at 8 KiB (183 us at 8 B), 310 us at 2 MiB and "
    "341 us at 8 MiB, where the model's tree takes about 100 us, 210 us and 485 us: about "
    "100 us per call more than the model below 2 MiB, which the model's tree then overtakes "
    "by the fill of its first chunk through the 72-GPU chain (latency.tree_fill_s).  Cause "
    "not established (the source does not give NCCL's chosen algorithm; the RoCE path "
    "between the racks, 4 QPs per connection and the eight-HCA list are not modelled).  "
    "Before the clique tree for uneven racks the model ran a tree of 32 trays: +44 to "
    "+161 %.  From 64 MiB the rows are within 14 %"
)
GB200_ROCE_TWO_RACK_32M = (
    "all-reduce of 16-32 MiB across 32 GB200 trays in two NVL72 racks joined by RoCE (NCCL "
    "2.29.2, NVLS off): simulated 25.0 % and 17.2 % too slow on NCCL's tree of the two cliques "
    "(72 + 56 GPUs, LL128; at 32 MiB 608 us where 504 us was measured; the ring would take "
    "618 us).  The "
    "model's first chunk crosses the 72-GPU NVLink chain up and down before the pipeline "
    "runs full (latency.tree_fill_s), the part of the call that grows from 210 us at 2 MiB "
    "to 485 us at 8 MiB where the measured call grows from 310 to 341 us.  Cause not "
    "established (NCCL's LL128 chunk through a chain this long is modelled, not measured).  "
    "The tree of 32 trays the model ran before NCCL's clique tree for uneven racks gave "
    "-14.0 %"
)
OCI_RACK_SCALE_GAPS: dict[str, str] = dict.fromkeys(
    [
        f"pub-oke-gb200-32n-ar-{s}"
        for s in ("8k", "16k", "32k", "64k", "128k", "256k", "512k", "1m", "2m", "4m", "8m")
    ],
    GB200_ROCE_TWO_RACK_SMALL,
)
OCI_RACK_SCALE_GAPS |= dict.fromkeys(
    ["pub-oke-gb200-32n-ar-16m", "pub-oke-gb200-32n-ar-32m"], GB200_ROCE_TWO_RACK_32M
)
# Development row of the OCI GB300 source (pub_ocigpu_gb300_roce_nccl.toml, added 2026-12-02)
# that the model misses by more than 15 %.
GB300_ALLTOALL_TWO_RACKS = (
    "all-to-all of 16 GiB over 32 GB300 trays in two NVL72 racks joined by RoCE (OCI's "
    "oci-gpu-quickstarts page, NCCL 2.28.7): 47.7 GB/s busbw measured, 115.6 simulated "
    "(+142.5 %; 161.6, +239.0 %, before the busiest proxy's bound of 2 x 72 peers x 1,024 "
    "chunks at NCCL's 1 us per network operation, netsim.alltoall.proxy_serial_s).  The same "
    "page's 2- and 16-tray runs inside one rack are within 8 % "
    "(-7.8 %, -5.4 %), as is the 32-tray all-reduce (-8.4 %).  Measured, each GPU moves its "
    "cross-rack half (~8.6 GB with 16 trays a rack) in 358 ms, ~24 GB/s a GPU against the "
    "tray's 8 x 400 Gb/s = 100 GB/s a GPU; the model runs the cross-rack flows near line rate.  "
    "The rest is not established (candidates: a proxy operation on Grace costing about 2.4 us, "
    "as the measured call implies, which no source states; congestion of many-to-many RoCE "
    "flows between two racks, the uplinks of Oracle's network; the model puts 18 + 14 trays "
    "in the racks where the source's titles suggest 16 + 16)"
)
OCI_RACK_SCALE_GAPS["pub-ocigpu-gb300-32n-a2a-16g"] = GB300_ALLTOALL_TWO_RACKS
# Development rows of the OCI GB300 full sweeps (pub_ocigpu_gb300_roce_sweeps.toml, the same
# runs' 512 KiB-4 GiB lines, added 2026-12-02) that the model misses by more than 15 %.
GB300_NVLINK_ALL_REDUCE_SMALL = (
    "all-reduce of 512 KiB-32 MiB on 1 and 2 GB300 trays (one NVLink domain; OCI's full "
    "sweeps, NCCL 2.28.7): simulated 16-66 % too fast on the ring (1 tray: 512 KiB +38.0 %, "
    "2 MiB +25.1 % on LL, 32 MiB +16.3 % on LL128; 2 trays: 512 KiB +66.1 %, 2 MiB +24.2 % on "
    "LL, 8 MiB +19.2 %, 32 MiB +27.2 % on LL128).  The measured call takes 17.9 us at 512 KiB "
    "on one tray (model 13.0) and 30.3 us on two (model 18.3), and the two-tray call stays at "
    "30 us up to 1 MiB: a fixed cost of the call across two trays' multi-node NVLink the "
    "model's ring does not carry.  Cause not established (the source does not give NCCL's "
    "choice; NVLS, MNNVL and NCCL_MNNVLS_ENABLE are set).  From 128 MiB the rows are within "
    "7 % (-7.0 % to +0.6 %)"
)
GB300_RACK_ALL_REDUCE_SMALL = (
    "all-reduce of 2-8 MiB on 16 GB300 trays in one NVL72 rack (64 ranks, one NVLink domain): "
    "simulated 26-33 % too slow (2 MiB -25.6 % on NVLS, 8 MiB -32.5 % on the ring with LL, "
    "where NVLS ties it).  Measured 69.9 us at 2 MiB and 95.0 us at 8 MiB; the model's NVLS, "
    "with NCCL's one node for the clique, takes 94.0 and 140.8 us: its NVLS pipeline ramp "
    "scales with nvlsChannels x nHeads = 32 x 32 chunks per loop, eight times the "
    "calibration's, where the measured call grows only from 66 to 95 us between 512 KiB and "
    "8 MiB.  Cause not established.  512 KiB (-3.4 %) and 32 MiB (-11.0 %) are within 15 % "
    "since NVLS in the rack sees one node (-22.8 and -18.5 % before)"
)
GB300_TWO_RACK_ALL_REDUCE_SMALL = (
    "all-reduce of 512 KiB-4 MiB over 32 GB300 trays in two NVL72 racks joined by RoCE "
    "(NCCL 2.28.7): simulated 86-313 % too fast on NCCL's tree of the two cliques (72 + 56 "
    "GPUs; 512 KiB +312.7 % on LL, 1 MiB +140.9 %, 2 MiB +133.2 %, 4 MiB +86.4 % on LL128).  The measured "
    "call takes 484-495 us at every size from 1 MiB to 8 MiB (611 us at 512 KiB) where the "
    "model's tree takes about 150-210 us up to 2 MiB: the pattern of GB200_ROCE_TWO_RACK_SMALL "
    "(204 us at 8 KiB over two GB200 racks, NCCL 2.29.2) with a floor 2.4 times higher.  "
    "Cause not established (the source does not give NCCL's choice; the RoCE path between "
    "the racks, 4 QPs per connection and the SHARP plugin are not modelled).  8 MiB is "
    "within 2 % (+1.9 %) since the model runs the clique tree for uneven racks (+108.9 % on "
    "the tree of 32 trays)"
)
GB300_NVLINK_ALL_TO_ALL_SMALL = (
    "all-to-all of 1-64 MiB on 1, 2 and 16 GB300 trays (one NVLink domain; 4, 8 and 64 "
    "ranks): simulated 17-41 % too slow or 72 % too fast (1 tray: 1 MiB -39.2 %, 4 MiB "
    "-40.6 %, 16 MiB -27.8 %; 2 trays: 1 MiB -38.9 %, 16 MiB -27.6 %, 64 MiB -16.9 %; 16 "
    "trays: 16 MiB +71.6 %).  Measured at 1 MiB 16.8 and 17.4 us on 4 and 8 ranks, the "
    "model's direct exchange 27.6 and 28.5 us with NCCL's one node for the clique (54.1 on 8 "
    "ranks when the trays counted as nodes); on one tray the simulated bandwidth part alone "
    "(15.8 us) nearly equals the measured call.  The 16-tray log is itself uneven (16 and "
    "32 MiB at 130 and 140 GB/s, 64 MiB at 409), hence +71.6 % at 16 MiB.  Cause not "
    "established.  2 trays at 4 MiB and 16 trays at 1, 4, 64 and 256 MiB are within 15 % "
    "since the clique is one node"
)
GB300_ALL_TO_ALL_TWO_RACKS_SWEEP = (
    "all-to-all of 32 MiB-2 GiB over 32 GB300 trays in two NVL72 racks joined by RoCE: "
    "simulated 145-193 % too fast (32 MiB +192.5 %, 128 MiB +158.6 %, 512 MiB +156.4 %, "
    "2 GiB +145.2 %; +175-288 % before the busiest proxy's bound at NCCL's 1 us per network "
    "operation, which the measured calls exceed at 2.4-2.9 us).  Measured busbw stays at 45-48 GB/s from 128 MiB to 16 GiB (19.8 at "
    "32 MiB), the plateau of GB300_ALLTOALL_TWO_RACKS's 16 GiB row; the model runs the "
    "cross-rack flows near the tray's 8 x 400 Gb/s.  Cause not established (as "
    "GB300_ALLTOALL_TWO_RACKS)"
)
GB300_TWO_RACK_ALL_REDUCE_256M = (
    "all-reduce of 256 MiB over 32 GB300 trays in two NVL72 racks joined by RoCE (NCCL "
    "2.28.7): simulated 22.0 % too fast on the ring (LL128: 381.3 GB/s busbw against 312.6 "
    "measured).  The measured sweep is not monotone in the model's way: 269.8 GB/s at "
    "128 MiB (model 279.4, +3.6 %), 312.6 at 256 MiB, 484.6 at 512 MiB (model 466.2, "
    "-3.8 %); the model's curve is smooth between its neighbours, the log rises by a step "
    "of 55 % after 256 MiB.  Cause not established (the source does not give NCCL's choice "
    "per size)"
)
for _ids, _gap in (
    (
        ["1n-ar-512k", "1n-ar-2m", "1n-ar-32m", "2n-ar-512k", "2n-ar-2m", "2n-ar-8m", "2n-ar-32m"],
        GB300_NVLINK_ALL_REDUCE_SMALL,
    ),
    (["16n-ar-2m", "16n-ar-8m"], GB300_RACK_ALL_REDUCE_SMALL),
    (["32n-ar-512k", "32n-ar-1m", "32n-ar-2m", "32n-ar-4m"], GB300_TWO_RACK_ALL_REDUCE_SMALL),
    (["32n-ar-256m"], GB300_TWO_RACK_ALL_REDUCE_256M),
    (
        [f"1n-a2a-{s}" for s in ("1m", "4m", "16m")]
        + [f"2n-a2a-{s}" for s in ("1m", "16m", "64m")]
        + ["16n-a2a-16m"],
        GB300_NVLINK_ALL_TO_ALL_SMALL,
    ),
    ([f"32n-a2a-{s}" for s in ("32m", "128m", "512m", "2g")], GB300_ALL_TO_ALL_TWO_RACKS_SWEEP),
):
    OCI_RACK_SCALE_GAPS |= {f"pub-ocigpu-gb300-{i}": _gap for i in _ids}
