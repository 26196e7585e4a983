"""Published runs vs the model: every run that ran must fit, and the error stays bounded.

Only the calibration and development sets are predicted here: held-out runs are scored as a
whole by ``benchmarks/validate_predict.py --heldout``, never per row in a test.
Each run is predicted on a design of its cluster with the fabric simulated (see ``runs.py``).
Guards (looser than the goals, which are MAPE <= 10 %, |median signed error| <= 3 % on the
development set and a rank correlation >= 0.9 inside every sweep of plans): each set's
MAPE <= 12 % and |median signed error| <= 6 %, Spearman >= 0.65 inside every sweep, every
run within 25 % except the known gaps listed below (each with its reason), every run that
ran predicted to fit. ``benchmarks/validate_predict.py`` prints the
figures, including Spearman rank correlation. ``python benchmarks/validate_predict.py`` prints the per-run table.
"""

from __future__ import annotations

import statistics
import tomllib
from importlib import resources

import pytest
from scipy.stats import spearmanr

from clusterforge.constants import read_constants
from clusterforge.perf.uncertainty import RUN_CLASSES, Band, validation_band
from tests.validation.blockscale_time_gaps import BLOCKSCALE_TIME_GAPS
from tests.validation.gaps import gap_cases
from validation.band import derive
from validation.first_seen import first_seen
from validation.runs import Run, load_runs, predict_run, run_design
from validation.sets import SETS

ALL_RUNS = load_runs()
RUNS = tuple(r for r in ALL_RUNS if r.subset != "heldout")
ROW_TOLERANCE = 0.25
# Development (until Dec 2026 called held-out) MAPE is 9.7 % over 154 runs: 8.1 % on the 45 single runs, higher on the 109
# plans of the vTrain sweeps (which include deliberately bad plans); the guard catches
# regressions from there (benchmarks/validate_predict.py prints the current figures).
MAPE_LIMIT = 0.12
# Worst Spearman rank correlation inside a sweep is 0.71 (vTrain 39.1B on 512 A100).
SWEEP_RHO_LIMIT = 0.65
# The development median is -2.1 % (+3.6 % on the 45 single runs; it was +5.2 % before the
# LLM Foundry rows ran MPT's Triton flash attention and xentropy loss); this guard catches
# regressions from there.
MEDIAN_LIMIT = 0.06
# Runs the model is known to miss by more than the row tolerance, and why. They stay in the
# set (and in its MAPE and median); the test fails if one of them starts to pass.
SMALL_TP_GEMMS = (
    "micro-batch 2 split 4- or 8-way: 2.9 ms per layer and micro-batch above the line the same "
    "TP degree's micro-batches 4-32 follow, where TP 1, 2 and 16 at micro-batch 2 sit on "
    "theirs; TP 4 mb 2 measures slower than TP 8 mb 4, its twin of the same per-GPU GEMM "
    "FLOPs, attention batches and micro-batch count (the sweep's one inverted twin), and its "
    "GEMM shape fits in the 18.4B sweep, so no per-GPU work separates them. Theirs alone is a "
    "24 MiB TP all-reduce on 4 or 8 GPUs in a node, +0.5 ms each over vTrain's own nccl-tests "
    "time of that size: cause not found (benchmarks/vtrain_small_twins.py)"
)
ZERO3_CPU_ADAM = (
    "DeepSpeed ZeRO-3 with offload_optimizer to the host, Llama 3.1 8B, one 8k sequence per "
    "GPU on 8 H200 or 8 B200, the offload modelled (perf.optimizer_offload: CPU Adam, unscale, "
    "cast and the staging copy's read at the host's peak DRAM bandwidth shared by 8 ranks, "
    "575 ms on dgx-h200 and 493 ms on dgx-b200, plus 31 ms of BF16 parameters up PCIe; 607 "
    "and 524 ms exposed): +80.7 % (H200) and +130.8 % (B200), the measured step still 1.34 s "
    "(2.99 against 1.66 s) and 1.43 s (2.52 against 1.09 s) longer than predicted, about the "
    "same on both GPUs as a host-side cost would be: the host passes would take 1.91 and "
    "1.92 s, 185 and 184 GB/s of 614 and 717. Counting every byte of the pageable upload at "
    "DRAM leaves +72.5 and +117.4 % (benchmarks/cpu_adam_host_whatif.py); not priced: the "
    "eight ranks' unbound OpenMP threads (no --bind_cores_to_rank), NUMA placement, page "
    "faults of the fresh BF16 temporary; no measured CPU-Adam rate on these hosts was found. "
    "At 64k +4.6 and +4.9 %, at 192k -0.8 and -8.5 %"
)
TORCHAO_B200_750W = (
    "torchao's torchtitan Llama 3 8B on one node of 8 B200 limited to 750 W (FSDP2, batch 1, "
    "sequence 8192, per-op SAC, torch.compile, BF16): measured 0.99 s a step, predicted "
    "0.64 s (+54.1 %; +82.9 % before the row stated its 750 W limit, priced by "
    "perf.power_limit at 0.817 of the 1000 W matmul rate); the same table's H100 BF16 row is "
    "+7.9 % on Meta's 2.4 TB/s H100. Not the attention kernel: torchtitan 6fc499f6 runs "
    "cuDNN attention on sm_100, rerun in the backward by its per-op policy; priced so, the row "
    "is +58.4 % (benchmarks/torchao_attention_whatif.py). Left: the 750 W relation or sm_100 "
    "kernels not measured (docs/validation.md, 'torchao float8 / MXFP8 single-node tables', "
    "'A GPU power limit', 'The torchao single-node rows')"
)
TORCHAO_MI300X_FP8 = (
    "torchao's torchtitan Llama 3 8B on one node of 8 MI300X (ROCm 6.4, FSDP2, batch 1, "
    "sequence 8192, per-op SAC, torch.compile, float8 tensorwise with float8 all-gather): "
    "measured 1.33 s a step, predicted 0.86 s (+53.8 %; +57.2 % before AMD's measured FP8 "
    "MAF, 1,273 TFLOPs, replaced the BF16 MAMF's share of the FP8 peak, 1,337). Left: no "
    "measured ROCm SDPA (AOTriton) rate (the FlashAttention-2 estimate); not measured "
    "(docs/validation.md, 'torchao float8 / MXFP8 single-node tables', 'A GPU power limit')"
)
LONG_CONTEXT = (
    "torchtitan's context parallelism, Llama 3.1 8B at 128K tokens over CP 4 in one node "
    "(PyTorch's experimental context_parallel, full recomputation, H100 96GB at 500 W): 30 % "
    "optimistic (+30.4 % in Dec 2026, +33.5 % before the compiled ring's waits were priced) "
    "with its all-gather and FP32 dK/dV passes exposed where torch.compile traces them "
    "(cp_exposure.COMPILED_WAITS_AT_ISSUE), FP32 merges, repeated K/V heads, SDPA's "
    "FlashAttention-2 rate (its first, diagonal step at the causal share, the later steps "
    "unmasked), torch.compile, the eager FP32 loss and the 500 W part's peak modelled; the "
    "same run without CP at 32K is 4.2 % optimistic. The source "
    "(torch/distributed/tensor/experimental/_attention.py of the Dec 2024 line) was checked "
    "step by step: load-balanced head-tail chunks (each step 1/cp of the causal pairs), one "
    "all-gather of K/V, per-step dK/dV sends, nothing else on the critical path. The ring's "
    "transfers inside one NVLink domain are ~26 ms per layer, exposed whole; what is left is "
    "~220 ms per layer, ~40 % of the layer's predicted attention time, a cost of the "
    "attention itself, not of its communication (Llama 3.1 405B under the same CP 4 across "
    "nodes, pub-tt-h100-405b-128k-fsdp2-cp4, is +1.6 % with the same waits priced). Nor is "
    "it the kernel's rate: the 405B runs the same call per query head (32,768 local tokens, "
    "modelled attention per pair-head within 2 %) and leaves 3 % of its attention, the 8B "
    "36 % (benchmarks/longctx_attention_gap.py). Cause not found (candidate: "
    "caching-allocator retries near the memory limit: 84.0 GiB reserved on a 96 GB part, "
    "with ~2 GiB of gathered K/V and ~1 GiB FP32 dK/dV buffers allocated and freed per "
    "layer, against 77.1 GiB reserved for the 405B run; but the 32K CP1 row, +4.2 %, "
    "published 83.9 GiB)"
)
MOE_LAYER = (
    "Megatron-Bridge MoE (gpt-oss-120b, Qwen3-30B-A3B, force-balanced routing): 15-203 % "
    "optimistic; the modelled GPU work (TE's grouped expert GEMMs four at a time, their "
    "backward at its data- and weight-gradient shapes with FP32 accumulation, the EP "
    "all-to-all with the dispatcher's token-count all-gather and probability all-to-all, "
    "the two-stage token permutation, per-expert FP8 current-scaling kernels, FP8 casts of "
    "every routed copy and TE's Fp8Padding copies, cuDNN attention at head-dim-64 rates, "
    "gpt-oss's 128-key sliding-window layers at cuDNN's measured windowed rate (Dec 2026, "
    "perf/window_attention.py) and its YaRN rotary as Megatron-Core's unfused ops (Dec 2026, "
    "perf/rotary.py), the eager per-expert bias of the second expert linear (in FP32 under "
    "the flex dispatcher's FP32 probabilities, Dec 2026), the flex dispatcher's standalone "
    "permute and unpermute passes (perf/flex_permute.py, Dec 2026), the serial "
    "expert-weight bucket gathers of Megatron-Core's one-ahead parameter all-gather "
    "(perf/param_gather.py, Dec 2026), "
    "the eager clamp and re-join of gpt-oss's GLU halves, the recipes' layernorm + moe_act "
    "recomputation, the expert-data-parallel reduction) explains 47-79 % of the measured "
    "step. The rest, 2.8-7.4 ms per layer and micro-batch on the gpt-oss rows since those "
    "(3.7-10.5 before; 11-20 ms "
    "for Qwen3 on H100), is no GPU work the model knows of. Divided by the routed copies "
    "(tokens x top-k) of the micro-batch it is flat on DGX H100, 0.27-0.34 us per copy and "
    "layer across Qwen3 (FP8, top-8, hidden 2,048, 4,096 and 8,192 tokens) and gpt-oss "
    "(BF16, top-4, hidden 2,880, 4,096 tokens), where per token it spans 1.06-2.73 us and "
    "per routed hidden element 92-167 ps (benchmarks/moe_gap_per_copy.py): a cost per "
    "routed row, not per byte moved, not per GEMM FLOP (FP8 and BF16 alike) and not fixed "
    "per layer and micro-batch; 0.15-0.16 us per copy on DGX B300 with 16 local experts, "
    "0.06-0.07 on NVL72 trays with 2, 0.11-0.13 on DGX B200 at EP 64 over InfiniBand. "
    "No per-row kernel with a published time is known to the model; an earlier candidate is "
    "host time: "
    "Megatron-Core's MoE guide (megatron/core/transformer/moe/README.md, 'CPU Overhead Bottleneck') and its "
    "all-to-all dispatcher's device-to-host synchronisation per layer forward "
    "(token_dispatcher.py, cuda_sync_point 'before_ep_alltoall'); no published per-layer host "
    "time to model it with. Not a fixed cost per layer and micro-batch: on GB300 the "
    "25.11 run (micro-batch 2 x 8,192) and the 26.x runs (4 x 4,096) leave 5.1-5.6 "
    "ms per layer, 0.31-0.34 us per token, and on the gpt-oss rows the gap is 0.27-0.33 of "
    "the predicted GPU layer time on NVL72 trays and 0.39-0.57 on DGX H100/B300 "
    "(benchmarks/moe_host_floor.py): a share of the layer's GPU work, larger with 16 local "
    "experts (DGX B300, EP 8: 9.7-10.1 ms) than with 2 (GB300, EP 64: 5.1-5.6 ms) at the same "
    "16,384 tokens per micro-batch. Not the expert GEMMs at half rate: with 4,096 tokens per "
    "expert each is a 4,096 x 5,760 x 2,880 GEMM, and published grouped-GEMM measurements "
    "keep such shapes at the dense rate (DeepGEMM README at 55ab91f, H800 FP8: 8 groups of "
    "4,096 x 7,168 x 2,048 at 1,214 TFLOP/s, the dense 4,096 x 7,168 x 2,048 at 1,168; "
    "NVIDIA/TransformerEngine issue 2939, 8x B300 BF16: GroupedLinear's kernels 0.97 ms "
    "against 0.95 ms for a loop of F.linear per layer). Not the EP "
    "all-to-all's bandwidth: to absorb the gap its four calls per layer would have to run at "
    "52-58 GB/s busbw inside a DGX H100 and ~105 GB/s inside a DGX B300 (NVIDIA GTC25 slide: "
    "320 and 640 GB/s for 8x H100 and 8x B200). Ruled out from the "
    "sources: unfused sink attention (the 25.11 container pairs Transformer Engine 2.9 with "
    "cuDNN 9.13.1.26, Megatron-Bridge docs/releases/software-versions; TE 2.9 runs learnable "
    "softmax in cuDNN from 9.13.1 on, fused_attn.cpp nvte_get_fused_attn_backend; an S^2 "
    "fallback would double the 8,192-token run's gap), the weighted quick-GEGLU itself "
    "(compiled: jit_fuser is torch.compile, megatron/core/jit.py), the router (logits, "
    "fused top-k and the force-balancing random logits, RandomSTE: tokens x 128 experts, a "
    "few kB per token against the gap's ~3 MB of HBM-time per token and layer), the "
    "imbalance of random routing (the busiest EP rank's rows and each expert's ragged row "
    "tiles are modelled since Dec 2026, perf/expert_rows.py: 0.2-3.8 points, which brought "
    "the 26.02 and 26.02.01 DGX H100 gpt-oss rows within tolerance, the 26.04 / 26.04.01 "
    "ones to +25.6 / +25.3 %), and the row "
    "inputs (each matches its published table, but the 25.11 B200 row's EP, taken from its "
    "release's config: see its note in validation/megatron_bridge_moe.toml; audited in Dec "
    "2026 against the Megatron-Bridge tag of each container, which added the GB300 and B300 "
    "rows' CUDA-graph scopes, without a change in their prediction). On the two Qwen3 DGX H100 "
    "rows the per-copy flatness rests on the 25.11 table's micro-batch 2: at its release's "
    "micro-batch 1 and VP 12 the gap is 9.2 ms per layer and micro-batch against 11.1 ms for "
    "the 26.02 row, as flat per micro-batch (host) as per copy; the same model on the same "
    "GPUs ran at 9,058 tokens/s/GPU dropless without moe_a2a_overlap (26.02.01) against "
    "5,113-5,275 with it (docs/validation.md, 'Dropless on DGX H100')"
)
MOE_HYBRIDEP = MOE_LAYER + (
    ". The DGX B300 EP 8 runs also used the HybridEP flex dispatcher with 32 SMs "
    "(Megatron-Bridge GPT_OSS_120B_PRETRAIN_CONFIG_B300_BF16_V2, v0.4.0 / v0.4.2; at 26.02.01 "
    "by its EP 8, PR 2906); priced as such (fused permutation, no metadata collectives, one "
    "row per destination rank at DeepEP's NVLink rate) the prediction grows 10 % faster, "
    "+37-39 % -> +51-53 %"
)
PAXML_175B_LEVEL = (
    "Paxml GPT-3 175B FP8, FSDP over 128 H100 with SAVE_QKV_OUT_PROJ: 24-33 % optimistic "
    "(+24.2 / +25.8 / +32.5 % at 128 / 512 / 2,048 GPUs, the 128-GPU row within the row "
    "tolerance; published step time +7.4 % from 128 to 2,048 GPUs, predicted +0.6 %). "
    "Predicted to fit since Dec 2026 (77.4 GiB of "
    "79.6: a gathered unit's unsharded gradients are the BF16 weight-gradient dot output, "
    "Stack.unit_grad_bytes; 80.8 GiB with FP32 unit gradients), though the run's XLA pool "
    "was XLA_PYTHON_CLIENT_MEM_FRACTION=0.9 (paxml/configure.sh) and the model's tensors "
    "without its 4 GiB reserve are 73.4 GiB. The level gap is shared with the 5B rows of the "
    "same container (+11-14 %, where NeMo 24.07's GPT-3 5B is +3.8 %): Paxml/XLA runs "
    "slower than the model's maxtext stack prices, one-hot embedding matmuls included "
    "(Stack.embedding_onehot, Dec 2026), and the recipe's undouble-buffered layer loop "
    "(scan_carry_copies, 245 ms a step) and the 5B's input dropout as the rows state them "
    "(Dec 2026, benchmarks/paxml_recipe_costs.py); the rest not found (docs/validation.md, "
    "'Paxml on DGX H100', 'Paxml and Praxis against the maxtext stack', 'Adopted: Paxml's "
    "carried-weight copies and input dropout'). The growth with the replicas (+420 ms from "
    "512 to 2,048 GPUs) is more than four times what the replica all-reduces and amax "
    "reductions add even fully exposed (benchmarks/paxml_175b_scale_whatif.py; 'Paxml GPT-3 "
    "175B FP8 as data parallelism grows')"
)
KNOWN_GAPS = {
    "vtrain-3.6b-tp4-pp1-mb2": SMALL_TP_GEMMS,
    "vtrain-3.6b-tp8-pp1-mb2": SMALL_TP_GEMMS,
    "vtrain-3.6b-tp8-pp1-mb64": (
        "measured at twice the iteration time of micro-batch 32 in the same sweep (9.8 s vs "
        "5.0 s for the same work); nothing in the model doubles the time of one large micro-batch"
    ),
    "vtrain-39.1b-tp2-pp8-mb2": (
        "TP 2 with 8-16 pipeline stages: predicted throughput 45-47 % above measured, +37-59 ms per "
        "layer and micro-batch slot; cause not found. Not the data-parallel all-reduce or the "
        "memory (TP 4 and TP 1 rows of the same parameters per GPU and DP fit), not the pipeline "
        "(TP 4 rows of the same PP and micro-batch fit), not the 2-GPU TP all-reduce (it would "
        "need 6-10 ms each where vTrain's nccl-tests table gives 0.4-0.6 ms): "
        "benchmarks/vtrain_tp2_whatif.py"
    ),
    "vtrain-39.1b-tp2-pp16-mb2": "see vtrain-39.1b-tp2-pp8-mb2",
    "vtrain-39.1b-tp2-pp16-mb3": "see vtrain-39.1b-tp2-pp8-mb2",
    # Development rows of the sources added in Dec 2026 (validation/pub_*.toml).
    "pub-tt-h100-8b-128k-fsdp2-cp4": LONG_CONTEXT,
    "llmfoundry-a100-mpt-30b-s8192": (
        "one 8K-token sequence per A100 with full recomputation: measured 63 % of the 2K-token "
        "run's throughput where the FLOPs per token rise 13 %; 38 % optimistic with Composer's "
        "training metrics, BACKWARD_POST prefetch and the early-stopped recomputation modelled "
        "(29 % before the early stop, which brought the other A100 full-recompute rows from "
        "-4..-12 % to -5..+3 %), cause not found (candidate: memory pressure, 73.0 of "
        "74.5 GiB predicted); 28 % with the Triton attention at its measured rate by "
        "sequence length"
    ),
    # Development rows of validation/megatron_bridge_moe.toml.
    "bridge2511-h100-qwen3-30b-a3b": MOE_LAYER
    + ". Its release's config (v0.2.0) also set moe_a2a_overlap; modelled (row field), it "
    "hides most of the EP all-to-all and the prediction grows faster, +112 % -> +152 %. "
    "The 25.09 run of the same layout (pub-bridge2509-h100-qwen3-30b-a3b, token-drop padded "
    "to capacity, no moe_a2a_overlap) measured 2.0x its throughput and is predicted +12.5 %; "
    "what drop-and-pad removes per core_v0.15.0 (the dispatcher's D2H sync with its host "
    "floor, ~0.62 ms per layer forward here, the token-count all-gather and TE's "
    "Fp8Padding copies) is modelled and "
    "explains ~5 % of the step, not the 19.5 ms per layer and micro-batch (docs/validation.md, "
    "'Dropless against drop-and-pad'). The overlap's measured cost per model chunk under the "
    "interleaved schedule (Megatron-Bridge #1760; clusterforge.perf.host."
    "interleaved_overlap_idle_s) takes it from +143.5 % to +67.8 %; the combined 1F1B "
    "schedule's stage-boundary sends on the critical path at PP 2 (clusterforge.perf."
    "exposure.combined_schedule_sends_exposed) to +58.0 %",
    "bridge260401-b300-gpt-oss-120b": MOE_HYBRIDEP,
    # validation/megatron_bridge_moe_releases.toml (development rows)
    "bridge2604-b300-gpt-oss-120b": MOE_HYBRIDEP,
    "bridge260201-b300-gpt-oss-120b": MOE_HYBRIDEP,
    "bridge2602-h100-qwen3-30b-a3b-pp2": (
        MOE_LAYER + ". This run (v0.3.0 config) also ran the DeepEP flex dispatcher and "
        "moe_a2a_overlap (EP all-to-all of one micro-batch hidden behind another's compute); "
        "modelled (row fields), they make the prediction faster still, +102 % -> +203 %; "
        "since the flex kernels hide only the share measured with the overlap in "
        "Megatron-Bridge #5094 (36.55 %), +171 % -> +150 %; with the overlap's measured cost "
        "per model chunk under the interleaved schedule (Megatron-Bridge #1760), +150 % -> "
        "+72.5 %; with the combined 1F1B schedule's stage-boundary sends on the critical "
        "path at PP 2 (clusterforge.perf.exposure.combined_schedule_sends_exposed), "
        "+67.1 %. "
        "The 26.02.01 figure once paired with it (9,058) ran another layout (v0.3.1: PP 1, "
        "EP 16, HybridEP) and is left out (validation/megatron_bridge_moe_releases.toml)"
    ),
    # validation/pub_mlm_moe_recipes.toml: the H100 row is within the row tolerance since
    # the measured flex-dispatcher idle (clusterforge.perf.host.flex_dropless_idle_s).
    # validation/pub_mleng_zero3_h200_b200.toml (development rows)
    "pub-mleng-zero3-h200-8b-8k": ZERO3_CPU_ADAM,
    "pub-mleng-zero3-b200-8b-8k": ZERO3_CPU_ADAM,
    # validation/pub_torchao_float8_1node.toml (development rows)
    "pub-torchao-b200-8b-bf16": TORCHAO_B200_750W,
    "pub-torchao-mi300x-8b-fp8-tensorwise": TORCHAO_MI300X_FP8,
    # validation/pub_paxml_fsdp_h100.toml (development rows)
    "pub-paxml-h100-gpt3-175b-fp8-512gpu": PAXML_175B_LEVEL,
    "pub-paxml-h100-gpt3-175b-fp8-2048gpu": PAXML_175B_LEVEL,
    # validation/pub_mlperf_training_llm.toml (development rows)
    "pub-mlperf-v51-cisco-hpf-n16-llama31-8b-128gpu": (
        "MLPerf v5.1 Cisco Llama 3.1 8B on 16 H100 nodes over RoCE (TP 2, DP 64, one "
        "micro-batch of one 8,192-token sequence per rank, GBS 64): median step 0.485 s "
        "measured, 0.378 s predicted (+28.2 %); 0.34 s of it compute, 16 ms of data-parallel "
        "communication exposed out of about 0.06 s (8.0 GB reduce-scattered and 4.0 GB "
        "gathered per rank, the ring crossing each node on its NICs); with none of it hidden "
        "the row is still +13.8 % (benchmarks/mlperf_config_whatif.py). Cause not found: the "
        "configuration (custom_communicator_cta.yaml, CUBLAS_WORKSPACE_CONFIG, the DDP bucket "
        "size, which NeMo's overlap callback resets) sets nothing the sources quantify; "
        "candidates: the RoCE fabric's sustained rate (switch and topology not named) "
        "together with the overlap's interference with the one micro-batch's backward "
        "(docs/validation.md, 'MLPerf Training development rows: what the submissions' "
        "configs run')"
    ),
    # validation/pub_bridge_blockscaled.toml and pub_mcore_moe_blockscaled.toml (development
    # rows predicted not to fit; docs/validation.md, 'What MXFP8 and NVFP4 runs keep in memory')
    "bridge260201-gb300-llama3-70b-nvfp4": (
        "the table's layout (TP 1, PP 1, DP 64, FSDP 0) cannot hold Llama 3 70B: at v0.3.1 the "
        "NVFP4 preset keeps BF16 parameters (no fp4_param_gather), and the BF16 parameter "
        "buffer and the gradient buffer alone take 2 x 2 B x 70.6e9 = 263 GiB of GB300's 268; "
        "the release's preset LLAMA3_70B_PRETRAIN_CONFIG_GB300_NVFP4_V2 is PP 4, VP 5 "
        "(scripts/performance/configs/llama/llama3_workload_base_configs.py at v0.3.1)"
    ),
}


def _row_cases() -> list[object]:
    return gap_cases(RUNS, KNOWN_GAPS | BLOCKSCALE_TIME_GAPS)


def test_every_run_says_its_set_and_source() -> None:
    assert {r.subset for r in ALL_RUNS} <= set(SETS)
    assert {"calibration", "development"} <= {r.subset for r in ALL_RUNS}
    assert all(r.source for r in ALL_RUNS)
    assert len({r.name for r in ALL_RUNS}) == len(ALL_RUNS)


def test_a_stated_class_is_a_class_and_agrees_with_the_plan() -> None:
    """A row may state its class (``class``); it must be one of ``RUN_CLASSES`` and, on the
    rows predicted here, the class ``predict`` gives the chosen plan (which picks its range)."""
    for run in ALL_RUNS:
        assert run.stated_class in (None, *RUN_CLASSES), run.name
    for run in RUNS:
        if run.stated_class is not None:
            assert predict_run(run).run_class == run.stated_class, run.name


@pytest.mark.parametrize("run", _row_cases())
def test_run_that_ran_is_predicted_to_fit_and_within_tolerance(run: Run) -> None:
    outcome = predict_run(run)
    assert outcome.prediction is not None, f"{run.name} ran but no allowed plan fits"
    assert abs(outcome.error) < ROW_TOLERANCE


def _check_mape_and_median(runs: list[Run]) -> None:
    # Over the runs predicted to fit, as benchmarks/validate_predict.py reports it (a run
    # predicted not to fit fails its own row test above).
    outcomes = [predict_run(r) for r in runs]
    errors = [o.error for o in outcomes if o.prediction is not None]
    assert statistics.fmean(abs(e) for e in errors) <= MAPE_LIMIT
    assert abs(statistics.median(errors)) <= MEDIAN_LIMIT


@pytest.mark.parametrize("subset", ["calibration", "development"])
def test_set_mape_and_median_signed_error(subset: str) -> None:
    _check_mape_and_median([r for r in RUNS if r.subset == subset])


def test_development_mape_and_median_outside_the_moe_gap() -> None:
    """The development guard on every run but the MoE-layer gap's (strict xfails above)."""
    moe_gap = {name for name, cause in KNOWN_GAPS.items() if cause.startswith(MOE_LAYER)}
    _check_mape_and_median([r for r in RUNS if r.subset == "development" and r.name not in moe_gap])


def test_plans_of_a_sweep_rank_as_measured() -> None:
    """Inside each sweep (plans of one model on one cluster) the predicted order of the plans
    follows the measured one."""
    sweeps = sorted({r.sweep for r in RUNS if r.sweep is not None})
    assert sweeps
    for sweep in sweeps:
        outcomes = [predict_run(r) for r in RUNS if r.sweep == sweep]
        rho = spearmanr([o.run.published for o in outcomes], [o.predicted for o in outcomes])[0]
        assert rho >= SWEEP_RHO_LIMIT, f"{sweep}: Spearman {rho:.2f}"


def test_fitted_perf_constants_name_calibration_runs():
    calibration = {run.name for run in RUNS if run.subset == "calibration"}
    constants = read_constants("clusterforge.perf", "efficiency.toml", section="constants")
    fitted = [c for c in constants.values() if c.tag == "fitted"]
    assert fitted
    for constant in fitted:
        assert set(constant.fitted_on) <= calibration, constant.name


def test_fitted_sustained_gemm_rows_name_calibration_runs_of_their_gpu():
    """A per-GPU ``[[sustained_gemm]]`` share that is fitted names the calibration runs it was
    fitted on, and they ran on that GPU."""
    raw = tomllib.loads(
        resources.files("clusterforge.perf").joinpath("data", "efficiency.toml").read_text()
    )
    calibration = {run.name: run for run in RUNS if run.subset == "calibration"}
    fitted = [row for row in raw["sustained_gemm"] if row["tag"] == "fitted"]
    assert fitted
    for row in fitted:
        assert row["fitted_on"] and set(row["fitted_on"]) <= set(calibration), row["gpu"]
        for name in row["fitted_on"]:
            assert run_design(calibration[name]).compute.gpu.id == row["gpu"], name


_BAND_KEYS = ("low_fraction", "high_fraction", "num_runs", "num_sources", "mape")


def _as_tuple(band: dict[str, float]) -> tuple[float | None, ...]:
    own = tuple(band.get(k) for k in ("class_runs", "class_sources"))
    return tuple(band[k] for k in _BAND_KEYS) + own


def _shipped(band: Band) -> tuple[float | None, ...]:
    own = (band.class_runs, band.class_sources)
    return (band.low_fraction, band.high_fraction, band.num_runs, band.num_sources, band.mape, *own)


def test_the_shipped_error_band_is_the_validation_band():
    """``predict`` prints its range from ``perf/data/uncertainty.toml``: it must be the range
    of today's model on the calibration and development runs, pooled and per class
    (``benchmarks/validate_predict.py --write`` refreshes it)."""
    pooled, classes = derive([predict_run(r) for r in RUNS], first_seen())
    shipped = validation_band()
    assert _shipped(shipped) == _as_tuple(pooled)
    for name, band in classes.items():
        assert _shipped(validation_band(name)) == _as_tuple(band)
