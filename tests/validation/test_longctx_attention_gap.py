"""``benchmarks/longctx_attention_gap.py`` splits a long-context development row's layer into
its attention core and the rest, and normalises the published gap by the attention's work
and by the tokens on the GPU. Only development rows are read; held-out names are refused."""

from __future__ import annotations

import pytest
from benchmarks.longctx_attention_gap import gap_split, recompute_errors, without_cp_probes
from benchmarks.step_breakdown import selected_runs

from clusterforge.perf.compute import layer_times
from clusterforge.perf.roofline import gpu_perf
from validation.runs import Run, load_runs, predict_run, run_design

NEMO_8B_128K = "nemo2504-longctx-llama3-8b-128k"  # TP2 CP4, 131,072 tokens
TT_8B_128K = "pub-tt-h100-8b-128k-fsdp2-cp4"  # TP1 CP4, full recomputation
TT_405B_128K = "pub-tt-h100-405b-128k-fsdp2-cp4"  # TP8 PP8 CP4, full recomputation


def _row(name: str) -> Run:
    (run,) = [r for r in load_runs() if r.name == name and r.subset == "development"]
    return run


@pytest.mark.parametrize("name", [NEMO_8B_128K, TT_8B_128K])
def test_attention_and_the_rest_add_up_to_the_layer(name: str) -> None:
    run = _row(name)
    pred = predict_run(run).prediction
    split = gap_split(run)
    assert pred is not None and split is not None
    gpu = run_design(run).compute.gpu.model_copy(update=dict(run.gpu or {}))
    times = layer_times(run.arch, pred.plan, gpu_perf(gpu, pred.plan.precision), run.stack)
    assert (split.attention_ms + split.other_ms) / 1e3 == pytest.approx(times.total_s, rel=1e-9)
    assert split.attention_ms > split.other_ms  # attention dominates an 8B layer at 128K


def test_pair_heads_match_a_hand_count() -> None:
    """Llama 3 8B at 131,072 tokens over CP 4 and TP 2: each GPU scores 131,072^2 / (2 x 4)
    = 2.15e9 causal pairs per head for 32 / 2 = 16 query heads: 3.44e10 pair-heads."""
    split = gap_split(_row(NEMO_8B_128K))
    assert split is not None
    assert split.pair_heads == pytest.approx(131_072**2 / 8 * 16, rel=1e-12)
    assert split.tokens == pytest.approx(131_072 / 4, rel=1e-12)


def test_torchtitan_8b_and_405b_run_the_same_call_per_head() -> None:
    """Both torchtitan 128K rows run CP 4 over 32,768 local tokens with the same SDPA
    FlashAttention-2 call per query head (32 heads on a GPU at TP 1, 16 at TP 8): the
    attention per pair-head is the same, so the 8B row's gap is not the kernel's rate."""
    small, large = gap_split(_row(TT_8B_128K)), gap_split(_row(TT_405B_128K))
    assert small is not None and large is not None
    assert small.attention_ms / small.pair_heads == pytest.approx(
        large.attention_ms / large.pair_heads, rel=0.02
    )
    assert small.gap_ms / small.attention_ms > 10 * large.gap_ms / large.attention_ms


def test_heldout_names_are_refused() -> None:
    heldout = next(r.name for r in load_runs() if r.subset == "heldout")
    with pytest.raises(SystemExit):
        selected_runs([heldout])


def test_without_cp_probes_keep_each_gpus_work() -> None:
    """NeMo 25.04's 8K point ran 512 sequences on 2 GPUs and its 16K point 256 on 4: probed
    on one 8-GPU node, each GPU still runs 256 and 64 sequences, at CP 1 and TP 1."""
    probes = without_cp_probes()
    assert [p.base.seq_length for p in probes] == [8192, 16384]
    for probe, per_gpu in zip(probes, (256, 64), strict=True):
        layout = probe.base.layout
        assert (layout.tp, layout.cp, layout.pp) == (1, 1, 1)
        assert probe.base.global_batch // layout.dp == per_gpu
        assert probe.subset == "development"  # built from the development 32K row


def test_forced_recomputation_matches_the_chosen_plan_and_slows_the_step() -> None:
    """The least recomputation that fits is the chosen plan's own error; forcing full
    recomputation reruns each layer's forward, so it predicts less and keeps fewer
    activations (the NeMo 25.04 B200 gap is about that size: docs/validation.md)."""
    run = _row(NEMO_8B_128K)
    errors = recompute_errors(run)
    assert set(errors) == set(run.recompute)
    assert errors["none"][0] == pytest.approx(predict_run(run).error, rel=1e-12)
    assert errors["full"][0] < errors["none"][0]
    assert errors["full"][1] < errors["none"][1]
