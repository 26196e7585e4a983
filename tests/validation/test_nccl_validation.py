"""Published nccl-tests results against the simulator: each row within its tolerance, and
the mean error of the development rows (no constant was fitted to them; called held-out
until Dec 2026, when it showed their errors had been studied) within 5 %. Held-out rows are
scored as a whole by ``benchmarks/validate_simulate.py --heldout`` only, never here."""

from __future__ import annotations

import pytest

from clusterforge.constants import read_constants
from tests.validation.nccl_efa_gaps import EFA_GAPS
from tests.validation.nccl_oci_gaps import OCI_RACK_SCALE_GAPS
from validation.nccl_rows import LARGE_BYTES, ROWS, mean_abs_error, score
from validation.sets import SETS

DEVELOPMENT = [r for r in ROWS if r["set"] == "development"]
# The development rows the 5 % mean-error guard was set on (nccl_tests_published.toml); rows
# of sources added later are held to their row tolerance and to the strict-xfail aggregate.
GUARDED = [r for r in DEVELOPMENT if not r["id"].startswith("pub-")]
CALIBRATION = [r for r in ROWS if r["set"] == "calibration"]
STUDIED = CALIBRATION + DEVELOPMENT


def test_every_row_names_its_source_and_set():
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    for row in ROWS:
        assert row["source"] and row["set"] in SETS, row["id"]
        assert row["set"] != "calibration" or row["fits"], row["id"]


def test_fitted_constants_name_calibration_rows_that_name_them():
    by_id = {row["id"]: row for row in ROWS}
    constants = read_constants("clusterforge.netsim", "efficiency.toml")
    fitted = [c for c in constants.values() if c.tag == "fitted"]
    assert fitted
    for constant in fitted:
        for row_id in constant.fitted_on:
            row = by_id[row_id]
            assert row["set"] == "calibration", row_id
            assert constant.name in row["fits"], (constant.name, row_id)


def test_call_across_nodes_is_the_mean_excess_of_its_calibration_rows():
    """``call_across_nodes_us`` is refitted from its rows: the mean of measured minus
    simulated time without it (the simulated time with it, less the constant; adding one
    constant to every candidate across nodes leaves NCCL's choice unchanged)."""
    from clusterforge.busbw import bus_factor

    constant = read_constants("clusterforge.netsim", "efficiency.toml")["call_across_nodes_us"]
    rows = [r for r in CALIBRATION if r["id"] in constant.fitted_on]
    assert len(rows) == len(constant.fitted_on) == 3
    excess = []
    for row in rows:
        bus_bytes = row["size_bytes"] * bus_factor(row["collective"], 8 * row["num_nodes"])
        measured_us = bus_bytes / row["busbw"] / 1e3
        simulated_us = bus_bytes / score(row).simulated_gbyte_per_s / 1e3
        excess.append(measured_us - (simulated_us - constant.value))
    assert sum(excess) / len(excess) == pytest.approx(constant.value, abs=0.05)


# Rows the model is known to miss by more than 15 %, and why; the test fails if one passes.
GB200_RACK_RAMP = (
    "all-reduce over one NVL72 rack (72 GPUs, NVLS) at 512 MiB: simulated 692 GB/s where 586 "
    "was measured (+18 %), after the NVLS ramp grew with NCCL's loop of 32 channels x 32 heads "
    "(was +37 %) and NVLS in the rack lost the network latency of a call across trays (NCCL's "
    "one-node clique; +16 % before); the 8 GiB rate itself is 4 % high (the NVLink5 NVLS "
    "payload share, a geometric middle of 8 and 32 GPUs)"
)
GB200_TWO_RACKS = (
    "all-reduce across 2 NVL72 racks (NVLS-Tree, the rack as NCCL's node) at 512 MiB: "
    "simulated 593 GB/s where 494 was measured (+20 %; was -64 %): the measurement pays "
    "~0.3 ms more per call than the model (candidate: the tree's network stages in the "
    "pipeline fill, not modelled)"
)
A100_RING_SIMPLE_LATENCY = (
    "all-reduce of 128 MiB across 3 A100 nodes with 4 HDR NICs each (ring, Simple): simulated "
    "15.1 % too slow (15.0 % before a call across nodes paid its fixed cost, call_across_nodes_us, "
    "4.6 us of the 3.2 ms): NCCL's ring Simple latency (base + 46 steps, x 1.4 for the ring's "
    "plateau, ~0.3 ms on 24 ranks) is longer than the measured call allows, as on the 2-node rows "
    "of the same cluster (test_development_mean_error_within_5_percent_from_16_mib)"
)
KNOWN_GAPS = {
    "a100-3node-4hdr-128m": A100_RING_SIMPLE_LATENCY,
    "pub-cw-gb200-1rack-512m": GB200_RACK_RAMP,
    "pub-cw-gb200-2rack-512m": GB200_TWO_RACKS,
}
# Development rows of the sources added 2026-12-01 (pub_together_b200_nccl.toml,
# pub_voltagepark_h100_nccl.toml) that the model misses by more than 15 %.
SHARP_RATE = (
    "CollnetChain all-reduce on 8x400G InfiniBand B200 nodes with SHARP, 2-32 nodes at 32 GiB: "
    "simulated 709-753 GB/s where 526-546 were measured; the simulator's CollNet sends each "
    "GPU's 1/8 share at NIC line rate and reduces in the switch for free, while the measured "
    "SHARP all-reduce saturates near 540 GB/s at every node count (the in-network aggregation "
    "rate is not modelled: no primary source gives a Quantum-2 streaming-aggregation rate "
    "below line rate, Graham et al., ISC 2020, measured ~95 % of HDR's; 540 GB/s is ~34 GB/s "
    "per 400G port, and the same fabric's NVLink-bound H100 SHARP rows are within 9 %).  "
    "NCCL's own CollNet chain estimate (ring-graph channels x the chain graph's bwIntra, no "
    "per-channel ceiling) does not bound it either: 8 x 48 GB/s, 360-383 GB/s busbw, at "
    "v2.28.9-1, the rows' release, and 8 x 80, 600-638 GB/s, from v2.29.2-1 "
    "(benchmarks/collnet_chain_whatif.py)"
)
UNTUNED_RING_SCALING = (
    "ring all-reduce/all-gather (and NCCL's own choice, which runs ring) on the use3a-ss B200 "
    "cluster at 8-32 nodes, 16 GiB: simulated 364-376 GB/s where 300-323 were measured, "
    "falling with node count from 345 at 2 nodes; the same 8x400G B200 generation on the other "
    "Together cluster runs 389 flat over 2-64 nodes, and that cluster's 2026-07-11 report "
    "traced a 20-25 % ring loss to unset IB variables (NCCL_IB_QPS_PER_CONNECTION=2, "
    "NCCL_IB_AR_THRESHOLD=0) that this cluster's job script does not set either; the rows "
    "carry no queue-pair or routing setting, so the simulator models a tuned fabric"
)
NVLSTREE_SCALING = (
    "NVLSTree all-reduce on the use3a-ss B200 cluster at 8-32 nodes, 16 GiB: simulated "
    "347-348 GB/s where 274-281 were measured (below that cluster's own ring, 304-323); "
    "372-376 before NCCL's perChMaxNVLSTreeBws was taken at the rows' release (Blackwell from "
    "3 nodes 43.8 GB/s x 8 heads, v2.28.9-1 to v2.29.7-1; 80.0 from v2.30.3-1), which is also "
    "NCCL's own estimate there (350 GB/s, benchmarks/collnet_chain_whatif.py): the measured "
    "rate is below NCCL's own model; the inter-node tree stage of NVLSTree loses more than the "
    "ring at scale there"
)
VP_RAMP = (
    "4 nodes x 8 H100 (Voltage Park, 3.2 Tbps InfiniBand per node), 1-256 MiB: the simulator "
    "runs LL128 across the nodes up to 128 MiB (all-gather 4 MiB: 42 GB/s simulated, 21 "
    "measured; 16 MiB: 118 vs 70), but the measured all-gather, broadcast and reduce curves "
    "from 4 to 64 MiB are the simulator's own Simple protocol (mean error 7 %, "
    "test_voltage_park_mid_sizes_follow_the_simple_protocol) and the 1-2 MiB rows sit near its "
    "LL: these runs did not use LL128 between nodes.  NCCL 2.24.3 enables LL128 across nodes "
    "only where the NIC is at most PXB (PXN on Hopper) from the GPU (ncclTopoTuneModel, "
    "src/graph/tuning.cc); the source states neither its PCIe topology nor NCCL_PROTO, so the "
    "rows keep the catalog's HGX node (NIC on the GPU's PCIe switch, LL128 on).  The measured "
    "curves also dip at 256-512 MiB (all-reduce 240 GB/s at 256 MiB between 275 and 291) where "
    "the model is monotonic.  Since the chain's first LL128 step waits whole at each network hop "
    "(latency.chain_fill_s) and a call across nodes pays its fixed cost (call_across_nodes_us), "
    "broadcast was 20-31 % high at 1-64 MiB and reduce 12-34 % (were 44-96 % and 31-74 %); "
    "since the candidates are ranked with NCCL's own broadcast/reduce latency (base + one "
    "network step, latency.tuner_latency_s), broadcast and reduce run Simple from 8 MiB as "
    "NCCL's table does and are within 15 % from 8 to 128 MiB (broadcast +1 to +14 %, reduce "
    "-10 to +7 %); at 1-4 MiB they still run LL128, 12-34 % high (broadcast 21-26 %, reduce "
    "1 MiB 34 %), and broadcast is 19 % high at 256 MiB; all-gather is unchanged"
)
VP_CHAIN_PLATEAU = (
    "broadcast/reduce on 4 nodes x 8 H100 (Voltage Park) from 512 MiB up: the chain pipeline "
    "is simulated at 335-358 GB/s where 239-279 were measured (all-reduce and all-gather of "
    "the same run are within 5-11 % at those sizes); the measured single-root pipeline stays "
    "below the ring's rate, which the simulator's chain does not reproduce; the chain moves "
    "1-step slices (BROADCAST_SLICESTEPS, REDUCE_SLICESTEPS, NCCL v2.24.3-1) against 2-step "
    "slices for all-gather, and one fixed cost of about 5 us per slice and channel would draw "
    "both plateaus, but no source prices it (benchmarks/large_internode_whatif.py)"
)
# Development rows of NVIDIA/nccl-tests issue #309 (pub_nccltests309_h100_nccl.toml, added
# 2026-12-02) that the model misses by more than 15 %.
N309_LL128_MID = (
    "all-reduce of 0.5-32 MiB across 2-8 H100 nodes with 8x400G InfiniBand (nccl-tests #309; "
    "NCCL's tree with LL128 in the model): simulated 18-104 % too fast; at 4 MiB the measured "
    "time exceeds the model by 23-32 us on 2 nodes, 38-118 us on 4 and 71 us on 8, growing "
    "with the size (the VP_RAMP pattern on two more clusters).  Charging LL128 across nodes the "
    "Simple protocol's step ramp (whole steps through the network proxy) fits the 4-8 node "
    "rows but makes 2-node rows of three clusters (#309's bare-metal pair, #232, #152) 15-34 % "
    "too slow, so it is not modelled.  Ruled out 2026-12-02 from NCCL's source (commit "
    "5067397): fewer channels (topoGetAlgoInfo keeps all 16 of a tree LL128 call from 80 KiB, "
    "640 threads x 8 B each); NCCL choosing another algorithm (its own table, 8 channels at "
    "48 GB/s with perChMaxTreeLL128Bw 29 and the 0.8 tree correction, times tree/LL128 at "
    "111 us and ring/LL128 at 172 us for 4 MiB on 4 nodes: it runs the tree, and its own "
    "estimate is as short as ours); a 1 us proxy cost per network operation per chunk "
    "(net_overhead), which would make #232's one-GPU rows twice too slow (29 chunks x 8 "
    "operations at 2 MiB against 113 us measured; #232 allows at most 0.34 us per operation, "
    "which hides under the 4-node rows' bandwidth time).  Also ruled out 2026-12-02: the "
    "receive flush (recvProxyProgress flushes Simple steps only, not LL128); up and down "
    "of the tree serializing (LL128 trees run runTreeSplit, 70 % of a block's threads up and "
    "30 % down at once); the 8 slots of a network connection (a slot returns one round trip, "
    "2 x (8.5 + 1) = 19 us, after the receiver consumed it: this binds only while 8 chunks "
    "cross a channel in under 19 us, 2.4 us per 18,000-B chunk, yet NCCL's own per-channel "
    "LL128 ceiling, 8 x 29 GB/s over 16 channels, already takes 2.4 us, and the measured "
    "per-chunk times are 5.6-11 us; charged at the network rate it closes only 13 of the "
    "38-118 us at 4 MiB).  The measured 4-8 node times fit a + chunk / b per chunk with "
    "a = 3-9 us and b = 7-11 GB/s per channel (a ~1.5 us on 2 nodes), and the three clusters "
    "differ by 80 us at the same 4 MiB, 4-node call; the qoofyk runs set "
    "NCCL_NET_GDR_LEVEL=1 (PIX), which turns GPUDirect RDMA off where the GPU reaches its "
    "NIC through more than one PCIe bridge, so their LL128 steps may cross host memory "
    "(not modelled: the source gives no PCIe topology).  Checked 2026-12-02, already in the "
    "model: NCCL's lower LL128 tree ceiling from 3 nodes (perChMaxTreeLL128Bws Hopper 29 "
    "GB/s per channel, 36.7 on 2 nodes: 8 x 29 x 0.8 treeCorrection = 186 GB/s is the "
    "model's 4 MiB rate), and the interior node's traffic (two children and a parent in one "
    "tree, a leaf in the other: 2 S per NIC each way, in the flow model).  A per-level fill "
    "does not explain it either: at 4 MiB on 4-8 nodes NCCL halves the LL128 tree chunk to "
    "18,000 B (calcCollChunking, 16 channels), which crosses a network level in ~1.5 us, "
    "under NCCL's own per-hop latency.  Checked 2026-12-02 (v2.24.3-1): runTreeSplit gives "
    "the broadcast down 30 % of a block's LL128 threads, sending to 3 peers at an interior "
    "node, 2 on 2 nodes, which NCCL's table prices by lowering perChMaxTreeLL128Bws from 36.7 "
    "to 29 GB/s per channel from 3 nodes (in the model).  A serial network proxy at NCCL's "
    "getNetOverhead (1 us per post or test, 8 per chunk at a GPU of an interior node, 4 on 2 "
    "nodes; benchmarks/proxy_serial_whatif.py) brings the 8-node rows within 1 % and Voltage Park's "
    "4 MiB to -14 %, but turns #232's one-GPU pair -54 to -58 % (it served 232 operations "
    "in 113 us): not modelled.  Nor is it slot reuse alone (the "
    "9th step of a channel waiting for its first slot's round trip): on 4 Voltage Park "
    "nodes 2 MiB runs 7.3 steps of 18,000 B per channel and is already 51 us slow, 1 MiB "
    "(3.6 steps) 4 us, 16 MiB (14.6 steps of 72,000 B) 16 us.  Checked 2026-12-02 across NCCL "
    "releases v2.19.3-1 to commit 5067397 (docs/validation.md, NCCL's algorithm at 1-32 MiB "
    "across H100 nodes): tree and ring are priced alike in all; NVLS-Tree's network hop was 14 "
    "us until v2.28.9-1 (then 20.9), so the releases these rows ran rank NVLS-Tree ahead of "
    "tree/LL128 from 1-2 MiB, yet NCCL's own NVLS-Tree estimate is below the measured times too "
    "and the model's NVLS-Tree there is 18-52 % too slow: following the ranking is not the fix"
)
N309_UNTUNED = (
    "all-reduce on the 4-node H100 cluster of nccl-tests #309 (gj-aion) at 256 MiB: the "
    "measured curve dips to 234 GB/s between 246 (128 MiB) and 289 (512 MiB) where the model "
    "is monotonic (305 GB/s).  The cluster's default-setting runs sit below the tuned fabric "
    "the simulator models (8 nodes, 8 GiB: 320 GB/s measured, 360 simulated, within 15 % "
    "since NCCL's NVLS-Tree per-channel ceiling, 8 x 45.5 GB/s, was modelled; 370 before); on "
    "the same nodes NCCL_MIN_CTAS=24 and NCCL_IB_QPS_PER_CONNECTION=2 reached 391 and the "
    "NVIDIA answer points to adaptive routing"
)
SIZES_1M_256M = ("1m", "2m", "4m", "8m", "16m", "32m", "64m", "128m", "256m")
KNOWN_GAPS |= {
    **dict.fromkeys([f"pub-tg-fa-b200-{n}n-ar-collnetchain-32g" for n in (2, 8, 32)], SHARP_RATE),
    **dict.fromkeys(
        [
            f"pub-tg-ss-b200-{n}n-{c}-16g"
            for n in (8, 32)
            for c in ("ar-ring", "ar-nvls", "ag-ring", "ag-nvls")
        ],
        UNTUNED_RING_SCALING,
    ),
    **dict.fromkeys([f"pub-tg-ss-b200-{n}n-ar-nvlstree-16g" for n in (8, 32)], NVLSTREE_SCALING),
    **dict.fromkeys(
        [f"pub-vp-h100-4n-ar-{s}" for s in ("2m", "4m", "8m", "256m")]
        + [f"pub-vp-h100-4n-ag-{s}" for s in SIZES_1M_256M]
        + [f"pub-vp-h100-4n-bc-{s}" for s in ("1m", "2m", "4m", "256m")]
        + ["pub-vp-h100-4n-rd-1m"],
        VP_RAMP,
    ),
    **dict.fromkeys(
        [f"pub-vp-h100-4n-{c}-{s}" for c in ("bc", "rd") for s in ("512m", "1g", "2g", "4g", "8g")],
        VP_CHAIN_PLATEAU,
    ),
    **dict.fromkeys(
        ["pub-n309-q-bm-h100-2n-ar-512k", "pub-n309-q-vm-h100-4n-ar-4m"]
        + [f"pub-n309-g-h100-8n-ar-{s}" for s in ("4m", "32m")]
        + [f"pub-n309-g-h100-2n-ar-{s}" for s in ("1m", "4m")]
        + [f"pub-n309-g-h100-4n-ar-{s}" for s in ("4m", "16m")],
        N309_LL128_MID,
    ),
    **dict.fromkeys(["pub-n309-g-h100-4n-ar-256m"], N309_UNTUNED),
}
# Development rows of the sources added 2026-12-02 (pub_roce_nccl.toml, pub_nebius_h100_nccl.toml)
# that the model misses by more than 15 %.
TWO_NODE_TREE_LATENCY = (
    "all-reduce of 8 KiB-2 MiB across 2 nodes x 8 GPUs on NCCL's tree (OCI BM.GPU4.8 A100 on "
    "16 x 100G RoCE, Nebius H100 on InfiniBand): simulated 28-61 % too fast, after the fixed "
    "cost of a call across nodes (call_across_nodes_us, 4.6 us, fitted on nccl-tests #309's "
    "bare-metal H100 pair: it brought OCI's 512 KiB and Nebius's 8 KiB, 128 KiB and 8 MiB rows "
    "within 15 %); the figures below are before it.  The measured call "
    "pays more than the model at every such size: OCI 36.5 us at 8 B where the model gives "
    "27.2 us, and 18-21 us more than the model at 8-128 KiB, shrinking to 13 us at 512 KiB and 8 "
    "us at 2 MiB (tree/LL128), none at 8 MiB (ring); Nebius ~30 us at 16-512 B, 8.5-15 us more at "
    "8-128 KiB and 24-42 us more at 0.5-8 MiB (LL128, the N309_LL128_MID pattern).  The OCI runs "
    "are Kubernetes pods on SR-IOV virtual functions and Nebius's are VMs: a per-call cost of the "
    "virtualised RDMA path is a candidate, not modelled (neither source gives a latency figure)"
)
OCI_TWO_NODE_TREE_CHANNELS = (
    "all-reduce of 2-8 GiB across 2 OCI BM.GPU4.8 nodes (8 A100, 16 x 100G RoCE): 220-238 GB/s "
    "measured, above the 200 GB/s line rate of the node's network, so NCCL ran its 2-node tree "
    "(each node sends S, not 2S(n-1)/n); the measured curve jumps from 156 GB/s at 512 MiB to "
    "219 at 1 GiB where NCCL 2.19.3 switches algorithm.  The model's ring and tree both stay at "
    "186-189 GB/s: the rows map OCI's 16 x 100G ports to the catalog's 8 x 200G NICs, and the "
    "tree is capped at NCCL's perChMaxTreeBw times its channels, 23.6 GB/s (Ampere, 2 nodes) x "
    "8 channels = 189 GB/s (netsim.tuner.channel_cap_gbyte_per_s); with 16 NICs NCCL builds "
    "twice the channels.  The same A100 40GB shapes with NCCL 2.25.1 and 2.29.3 measure "
    "185-191 GB/s at 1-10 GiB, within 2 % of the model (pub_oci_oke_roce_nccl.toml): the 2024 "
    "run's excess is NCCL 2.19.3's choice on 16 NICs, not the hardware.  Not modelled: a node "
    "whose GPUs each drive two NICs of half the rate, and NCCL releases' different choices there"
)
KNOWN_GAPS |= {
    **dict.fromkeys(
        [f"pub-oci-a100-2n-ar-{s}" for s in ("8k", "32k", "128k")]
        + [f"pub-nebius-h100-2n-ar-{s}" for s in ("32k", "512k", "2m")],
        TWO_NODE_TREE_LATENCY,
    ),
    **dict.fromkeys(["pub-oci-a100-2n-ar-2g", "pub-oci-a100-2n-ar-8g"], OCI_TWO_NODE_TREE_CHANNELS),
}
# Development rows of the dstack B200 source (pub_dstack_b200_nccl.toml, added 2026-12-02)
# that the model misses by more than 15 %.
B200_TWO_NODE_SMALL = (
    "all-reduce of 8 KiB-8 MiB across 2 nodes x 8 B200 (dstack's Lambda 1CC log, InfiniBand, "
    "NCCL 2.26.2, and its GCP A4 log, ConnectX-7 RoCE): simulated 21-70 % too fast on the "
    "tree (Lambda 8 KiB +27.8 %, 32 KiB +36.4 %, 128 KiB +24.5 % on LL; 1 MiB +69.9 %, 4 MiB "
    "+25.9 % on LL128; A4 8 MiB +20.7 % on LL128).  The measured call pays 9-12 us more than "
    "the model at 8-128 KiB (42.7 us against 33.4 at 8 KiB), 48 us more at 1 MiB, 24 us at "
    "4 MiB and 27 us at A4's 8 MiB, the TWO_NODE_TREE_LATENCY pattern; the Lambda nodes are "
    "bare metal, so a virtualised RDMA path does not explain it there.  From 16 MiB the rows "
    "are within 14 % (-13.3 % to +4.8 %)"
)
KNOWN_GAPS |= dict.fromkeys(
    [f"pub-dstack-lambda-b200-2n-ar-{s}" for s in ("8k", "32k", "128k", "1m", "4m")]
    + ["pub-dstack-gcp-a4-b200-2n-ar-8m"],
    B200_TWO_NODE_SMALL,
)
KNOWN_GAPS |= OCI_RACK_SCALE_GAPS
KNOWN_GAPS |= EFA_GAPS


def _cases() -> list[object]:
    return [
        pytest.param(
            r,
            id=r["id"],
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[r["id"]])]
            if r["id"] in KNOWN_GAPS
            else [],
        )
        for r in STUDIED
    ]


@pytest.mark.parametrize("row", _cases())
def test_row_within_15_percent(row):
    assert abs(score(row).error) < 0.15


@pytest.mark.xfail(
    strict=True,
    reason="5.2 % since a call across nodes pays its fixed cost (call_across_nodes_us, 4.6 us; "
    "4.9 % before): the rows it moves away are rows the model already ran too slow for other "
    "causes, nccl-tests #232's one-GPU-per-node RoCE tree (2 MiB -4.3 -> -7.9 %, 8 MiB -11.1 -> "
    "-12.7 %: NCCL's medium-size tree correction on the bandwidth side, see the 16 MiB target "
    "below) and the 4-HDR A100 ring rows (NCCL's ring Simple latency with its 1.4 plateau)",
)
def test_development_mean_absolute_error_within_5_percent():
    assert mean_abs_error([score(r) for r in GUARDED]) <= 0.05


@pytest.mark.xfail(
    strict=True,
    reason="over all 338 development rows the mean error is 20.1 % (13.1 % at >= 16 MiB, "
    "38.8 % below; 27.2 %, 13.7 % and 63.4 % before aws-ofi-nccl's reported network latency "
    "on the EFA rows, network.efa_instance; 28.3 % and 15.2 % before the busiest proxy's bound on the all-to-all "
    "across cliques, netsim.alltoall.proxy_serial_s; 21.4 %, 15.2 % and 39.5 % on the 317 rows "
    "before the awsome-distributed-training EFA rows of pub_awsome_efa_nccl.toml, "
    "P5_TWO_NODE_CALL_COST and P4DE_TWO_NODE_CALL_COST in nccl_efa_gaps.py; 21.5 % and 15.4 % "
    "before AWS's OFI tuner table on the P6-B200 rows, "
    "nccl_tuner; 15.5 % at >= 16 MiB before NCCL's Blackwell NVLS-Tree ceiling of "
    "v2.28.9-1 to v2.29.7-1; 21.6 % on the 305 rows before the AWS EFA rows of "
    "pub_mleng_efa_nccl.toml; 18 OCI 32-tray all-reduce rows moved from held-out; on the 287 rows "
    "before them 21.0 %; 23.8 % before NCCL's one-node clique inside a rack and its clique tree "
    "for uneven racks; 17.3 % on the 233 rows before the OCI GB300 sweeps): the small-size gaps "
    "of the next test, the GB200 1- and 2-rack all-reduce and the other rows listed in "
    "KNOWN_GAPS, and rows within 15 % but not 5 %",
)
def test_every_development_row_mean_absolute_error_within_5_percent():
    assert mean_abs_error([score(r) for r in DEVELOPMENT]) <= 0.05


def test_calibration_mean_absolute_error_within_5_percent():
    assert mean_abs_error([score(r) for r in CALIBRATION]) <= 0.05


def test_a_row_counts_its_nodes_with_the_catalog_node_s_gpus():
    """``num_nodes`` counts machines of the row's node: a GB200 NVL72 rack is 18 trays of 4."""
    from validation.nccl_rows import _graph

    graph = _graph("gb200-nvl72-tray", 18, None, (("max_rack_kw", 140),))
    assert graph.gpus_per_node == 4
    assert graph.num_gpus == 72


# Development rows: the targets, stated before the rows were first simulated:
# mean absolute error <= 5 % from 16 MiB up and <= 15 % below.
@pytest.mark.xfail(
    strict=True,
    reason="mid-size all-reduce across 2-3 A100 nodes with 4 HDR NICs (32-128 MiB) runs 10-15 % "
    "below the measurement: NCCL's ring Simple latency (base + 30 steps x 1.4 plateau, 186 us on "
    "16 ranks) and its 4-channel LL128 ceiling (4 x 20 GB/s) leave 73-84 GB/s where 82-96 was "
    "measured; the one-GPU-per-node RoCE tree (nccl-tests #232) runs LL128 under NCCL's "
    "medium-size tree correction (0.9) at 36 GB/s where 41 was measured; and, since the 2026-12-01 "
    "sources, the SHARP, use3a-ss, Voltage Park and nccl-tests #309 gaps listed in KNOWN_GAPS; "
    "since the 2026-12-02 sources, OCI_TWO_NODE_TREE_CHANNELS and GB300_ALLTOALL_TWO_RACKS; "
    "since the OCI GB300 sweeps, the GB300_* gaps of nccl_oci_gaps.py; since the AWS EFA rows "
    "(2026-12-03), P6_B200_MID_SIZE_LL128 of nccl_efa_gaps.py (15.2 % on 225 rows before them, "
    "15.5 % on 237 after; 15.4 % since the Blackwell NVLS-Tree ceiling of v2.28.9-1 to "
    "v2.29.7-1; 15.2 % since AWS's OFI tuner table on the P6-B200 rows; 15.2 % on 246 rows "
    "with the awsome-distributed-training EFA rows, whose 32 MiB rows are "
    "P5_TWO_NODE_CALL_COST and P4DE_TWO_NODE_CALL_COST; 13.7 % since the busiest proxy's "
    "bound on the all-to-all across cliques; 13.1 % since aws-ofi-nccl's reported network "
    "latency on the EFA rows, network.efa_instance)",
)
def test_development_mean_error_within_5_percent_from_16_mib():
    large = [score(r) for r in DEVELOPMENT if r["size_bytes"] >= LARGE_BYTES]
    assert len(large) >= 4
    assert mean_abs_error(large) <= 0.05


@pytest.mark.xfail(
    strict=True,
    reason="with the Voltage Park, nccl-tests #309, OCI, Nebius, dstack B200, OCI GB200 "
    "RoCE, OCI GB300 sweep and AWS EFA (awsome-distributed-training) rows the mean error "
    "below 16 MiB is 38.8 % (92 rows; 63.4 % before aws-ofi-nccl's reported network latency "
    "on the EFA rows, network.efa_instance, which leaves p5 too slow and p4de's LL128 sizes "
    "too fast: P5_TWO_NODE_CALL_COST and P4DE_TWO_NODE_CALL_COST in nccl_efa_gaps.py; 39.5 % "
    "on 80 before the EFA rows; 80 rows with six "
    "OCI 32-tray all-reduce rows moved from held-out; 36.6 % on 74 before them; 47.3 % "
    "before NCCL's one-node clique inside a rack and its clique tree for uneven racks; 36.0 % "
    "on 55 before the GB300 sweeps, GB300_* in nccl_oci_gaps.py; 26.7 % on 49 before the OCI "
    "GB200 RoCE rows, GB200_ROCE_TWO_RACK_SMALL; 25.7 % on 43 before the dstack B200 rows, "
    "B200_TWO_NODE_SMALL; 26.5 % before broadcast and reduce were ranked with NCCL's "
    "own latency, 33.9 % before the fixed cost of a call across "
    "nodes, call_across_nodes_us): 2-8 nodes x 8 H100 at 0.5-8 MiB are simulated 12-96 % too "
    "fast (VP_RAMP and N309_LL128_MID in KNOWN_GAPS) and 2-node tree calls of 8 KiB-2 MiB on "
    "OCI's RoCE pods and Nebius's VMs 28-61 % too fast (TWO_NODE_TREE_LATENCY)",
)
def test_development_mean_error_within_15_percent_below_16_mib():
    small = [score(r) for r in DEVELOPMENT if r["size_bytes"] < LARGE_BYTES]
    assert len(small) >= 2
    assert mean_abs_error(small) <= 0.15


def test_coreweave_twenty_rack_table_ran_without_nvls():
    """coreweave/nccl-tests added the 20-rack GB200 table in commit bee97e7 (2025-05-05),
    when its GB200 jobs set NCCL_NVLS_ENABLE=0 (commit a736384, 2025-04-14); the 1- and
    2-rack tables are the outputs of its pull request #43 (2025-02-20), whose job set
    NCCL_NVLS_ENABLE=1.  The simulator runs each cluster with its source's setting."""
    gb200 = [r for r in STUDIED if r["id"].startswith("pub-cw-gb200-")]
    assert gb200
    for row in gb200:
        algorithm = score(row).algorithm
        if row["cluster"] == "coreweave-gb200-20rack":
            assert algorithm in ("ring", "tree"), row["id"]
        else:
            assert algorithm in ("nvls", "nvls_tree"), row["id"]


def test_voltage_park_mid_sizes_follow_the_simple_protocol():
    """Where the VP_RAMP gap lies: the Voltage Park all-gather, broadcast and reduce rows of
    4-64 MiB are within 10 % on average of the simulator's Simple protocol, and its own
    choice (LL128 across the nodes) is more than 40 % off for all-gather: the protocol the
    runs used, not the bandwidth or the Simple ramp, is what the model misses there
    (KNOWN_GAPS).  Broadcast and reduce were more than 40 % off too until the chain's
    store-and-forward of whole LL128 steps at the network hops was modelled
    (latency.chain_fill_s), and 17-30 % off until the candidates were ranked with NCCL's own
    broadcast/reduce latency (latency.tuner_latency_s): from 8 MiB they now run Simple."""
    from clusterforge.netsim import simulate_collective
    from validation.nccl_rows import _graph, ranks

    rows = [
        r
        for r in DEVELOPMENT
        if r["id"].startswith("pub-vp-h100-4n-")
        and r["collective"] in ("all_gather", "broadcast", "reduce")
        and 4 * 2**20 <= r["size_bytes"] <= 64 * 2**20
    ]
    assert len(rows) == 15

    def error(row: dict, protocol: str) -> float:
        graph = _graph(row["node"], row["num_nodes"], None)
        group = ranks(row, graph.gpus_per_node)[None, :]
        res = simulate_collective(
            graph, row["collective"], row["size_bytes"], group, protocol=protocol
        )
        return abs(res.busbw_gbyte_per_s / row["busbw"] - 1.0)

    simple = sum(error(r, "simple") for r in rows) / len(rows)
    gather = [r for r in rows if r["collective"] == "all_gather"]
    chosen = sum(error(r, "auto") for r in gather) / len(gather)
    assert simple <= 0.10 < 0.40 < chosen


def test_roce_rows_are_simulated_on_an_ethernet_fabric():
    """The RoCE sources (pub_roce_nccl.toml) say ``fabric = "roce"``: their graphs are built
    on the lossy, rate-controlled Ethernet fabric at the node's NIC rate (OCI BM.GPU4.8's
    16 x 100 Gb/s as 8 x 200 Gb/s, 25 GB/s a GPU), the other new source on InfiniBand."""
    from validation.nccl_rows import CLUSTERS, _graph, raw_rows

    roce = [r for f, r in raw_rows() if f == "pub_roce_nccl.toml"]
    nebius = [r for f, r in raw_rows() if f == "pub_nebius_h100_nccl.toml"]
    assert len(roce) == 22 and len(nebius) == 21
    for row in roce + nebius:
        graph = _graph(row["node"], row["num_nodes"], None, (), row.get("fabric"))
        assert graph.fabric == ("roce" if row in roce else "infiniband"), row["id"]
        assert graph.num_nodes == 2 and graph.gpus_per_node == 8, row["id"]
    oci = _graph("dgx-a100-40gb", 2, None, (), "roce")
    assert (oci.nics_per_node, oci.nic_gbyte_per_s, oci.lossless) == (8, 25.0, False)
    assert CLUSTERS["oci-bm-gpu4-8-roce"]["nccl_version"] == "2.19.3"


def test_two_node_h100_nvls_tree_plateau_within_5_percent_on_four_clusters():
    """All-reduce of 1-8 GiB on 2 nodes x 8 H100 (8 x 400G) runs NVLS-Tree and measures
    456-469 GB/s on four clusters (nccl-tests #309's bare-metal pair and gj-aion, Nebius,
    the RoCE run of nccl-tests #2409): NCCL's per-channel NVLS-Tree ceiling, 8 heads x
    57.7 GB/s (netsim.tuner.channel_cap_gbyte_per_s), not the NVLS pass (~505 GB/s)."""
    rows = [
        r
        for r in DEVELOPMENT
        if r["node"] == "hgx-h100"
        and r["num_nodes"] == 2
        and r["size_bytes"] >= 2**30
        and r.get("ranks_per_node", 8) == 8
        and r["collective"] == "all_reduce"
    ]
    scored = [score(r) for r in rows]
    assert len({r["cluster"] for r in rows}) == 4 and len(rows) == 7
    assert all(s.algorithm == "nvls_tree" for s in scored)
    assert max(abs(s.error) for s in scored) <= 0.05
