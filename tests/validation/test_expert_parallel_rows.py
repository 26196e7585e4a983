"""Expert parallelism in the validation run schema (``ep`` and ``etp`` of a run row).

A run row may state its expert-parallel degree (``ep``, default 1); the loader puts it on the
run's job layout, so the performance model shards the experts and adds the EP all-to-all.
Bad values fail with an error that names the file, the row, the field and the fix.
"""

from __future__ import annotations

from typing import Any

import pytest

from clusterforge.errors import PlanError
from validation.runs import _run, load_runs

MOE_ROW: dict[str, Any] = {
    "name": "moe-row",
    "set": "development",
    "source": "test",
    "stack": "megatron-bridge",
    "model": "mixtral-8x7b",
    "node": "dgx-h100",
    "network": {"fabric": "infiniband", "topology": "rail-optimized"},
    "metric": "tokens_per_s_per_gpu",
    "recompute": ["selective"],
    "num_gpus": 64,
    "global_batch": 256,
    "seq_length": 4096,
    "zero_stage": 1,
    "tp": 1,
    "pp": 1,
    "cp": 1,
    "published": 1000.0,
}


def test_a_row_without_ep_runs_without_expert_parallelism() -> None:
    assert _run("f.toml", MOE_ROW).base.layout.ep == 1


def test_the_stated_ep_is_on_the_run_layout_and_its_candidates() -> None:
    run = _run("f.toml", {**MOE_ROW, "ep": 8})
    assert run.base.layout.ep == 8
    assert run.base.layout.dp == 64


def test_etp_equal_to_tp_is_accepted() -> None:
    assert _run("f.toml", {**MOE_ROW, "tp": 2, "ep": 8, "etp": 2}).base.layout.ep == 8


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"ep": 0}, ["moe-row", "ep = 0", "at least 1"]),
        ({"ep": 2.5}, ["moe-row", "ep = 2.5", "whole number"]),
        ({"ep": 8, "num_gpus": 4}, ["moe-row", "expert_parallel = 8", "DP x CP = 4"]),
        ({"ep": 3, "num_gpus": 24, "global_batch": 24}, ["moe-row", "ep = 3", "8 experts"]),
        ({"ep": 2, "model": "llama3-8b"}, ["moe-row", "ep = 2", "MoE"]),
        ({"ep": 8, "tp": 2, "etp": 1}, ["moe-row", "etp = 1", "tp = 2"]),
    ],
)
def test_a_bad_expert_parallel_value_names_the_row_and_field(
    changes: dict[str, Any], words: list[str]
) -> None:
    with pytest.raises(PlanError) as err:
        _run("f.toml", {**MOE_ROW, **changes})
    message = str(err.value)
    assert "f.toml" in message
    for word in words:
        assert word in message, (word, message)


def test_gpt_oss_gb300_and_b300_development_rows_replay_their_recipes_cuda_graphs() -> None:
    """Megatron-Bridge's gpt-oss GB300 and B300 configs (v0.2.0 to v0.4.2) capture attention,
    router and dispatcher preprocess in CUDA graphs; their development rows say so."""
    from validation.runs import load_runs

    runs = [
        r
        for r in load_runs()
        if r.subset == "development"
        and r.file.startswith("megatron_bridge_moe")
        and r.arch.id == "gpt-oss-120b"
        and r.node in ("gb300-nvl72-tray", "dgx-b300")
    ]
    assert len(runs) == 8
    for run in runs:
        assert set(run.stack.cuda_graph_modules) == {"attn", "moe_router", "moe_preprocess"}, (
            run.name
        )


def test_dispatcher_and_a2a_overlap_fields_reach_the_stack() -> None:
    """``moe_dispatcher``, ``moe_flex_sms`` and ``moe_a2a_overlap`` of a row set the stack's
    (Megatron's moe_token_dispatcher_type, moe_flex_dispatcher_num_sms,
    overlap_moe_expert_parallel_comm); an unknown dispatcher is refused by name."""
    row = {**MOE_ROW, "ep": 8, "moe_dispatcher": "flex", "moe_flex_sms": 32}
    stack = _run("f.toml", {**row, "moe_a2a_overlap": True}).stack
    assert (stack.moe_dispatcher, stack.moe_flex_sms, stack.moe_a2a_overlap) == ("flex", 32, True)
    plain = _run("f.toml", {**MOE_ROW, "ep": 8}).stack
    assert (plain.moe_dispatcher, plain.moe_a2a_overlap) == ("alltoall", False)
    with pytest.raises(PlanError, match=r"moe_dispatcher = 'deepep'.*flex"):
        _run("f.toml", {**row, "moe_dispatcher": "deepep"})


def test_development_rows_that_ran_flex_or_a2a_overlap_say_so() -> None:
    """The Dec 2026 audit's rows: HybridEP (32 SMs) on the DGX B300 EP 8 gpt-oss rows,
    DeepEP plus the EP all-to-all overlap on the 26.02 Qwen3 H100 row, the overlap alone on
    the 25.11 Qwen3 H100 row."""
    from validation.runs import load_runs

    runs = {r.name: r.stack for r in load_runs() if r.subset == "development"}
    for name in (
        "bridge260401-b300-gpt-oss-120b",
        "bridge2604-b300-gpt-oss-120b",
        "bridge260201-b300-gpt-oss-120b",
    ):
        assert (runs[name].moe_dispatcher, runs[name].moe_flex_sms) == ("flex", 32), name
        assert not runs[name].moe_a2a_overlap, name
    qwen_2602 = runs["bridge2602-h100-qwen3-30b-a3b-pp2"]
    assert (qwen_2602.moe_dispatcher, qwen_2602.moe_a2a_overlap) == ("flex", True)
    qwen_2511 = runs["bridge2511-h100-qwen3-30b-a3b"]
    assert (qwen_2511.moe_dispatcher, qwen_2511.moe_a2a_overlap) == ("alltoall", True)


def test_drop_and_pad_field_reaches_the_stack() -> None:
    """``moe_drop_and_pad`` (Megatron moe_pad_expert_input_to_capacity with a capacity
    factor) sets the stack's; it defaults to dropless; a non-boolean is refused by name."""
    assert _run("f.toml", {**MOE_ROW, "ep": 8, "moe_drop_and_pad": True}).stack.moe_drop_and_pad
    assert not _run("f.toml", {**MOE_ROW, "ep": 8}).stack.moe_drop_and_pad
    with pytest.raises(PlanError, match=r"moe_drop_and_pad = 'yes'.*true"):
        _run("f.toml", {**MOE_ROW, "ep": 8, "moe_drop_and_pad": "yes"})


def test_token_drop_development_rows_say_so() -> None:
    """The 25.09 Megatron-Bridge rows ran apply_moe_token_drop (capacity factor 1.0, padded
    to capacity); their development rows carry it."""
    runs = {r.name: r for r in load_runs()}
    for name in ("pub-bridge2509-h100-qwen3-30b-a3b", "pub-bridge2509-gb200-qwen3-30b-a3b"):
        assert runs[name].stack.moe_drop_and_pad, name
    assert not runs["bridge2511-h100-qwen3-30b-a3b"].stack.moe_drop_and_pad
