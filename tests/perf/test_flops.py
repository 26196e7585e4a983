"""FLOP counts against the published closed forms (Narayanan 2021 eq. 3, Korthikanti 2022)."""

from __future__ import annotations

import pytest

from clusterforge.catalog import ModelArch
from clusterforge.perf.flops import (
    hardware_flops_per_step,
    layer_forward_flops,
    model_flops_per_step,
    num_params,
)

GPT_175B = ModelArch(
    num_layers=96, hidden_size=12288, num_heads=96, vocab_size=51200, seq_length=2048
)


def narayanan_eq3(b: int, s: int, l: int, h: int, v: int) -> float:  # noqa: E741
    return 96 * b * s * l * h**2 * (1 + s / (6 * h) + v / (16 * l * h))


def korthikanti_mfu(b: int, s: int, l: int, h: int, v: int) -> float:  # noqa: E741
    return 72 * b * s * l * h**2 * (1 + s / (6 * h) + v / (12 * l * h))


def test_model_flops_match_korthikanti_mfu_formula() -> None:
    ours = model_flops_per_step(GPT_175B, 1536, 2048)
    assert ours == pytest.approx(korthikanti_mfu(1536, 2048, 96, 12288, 51200), rel=1e-9)


def test_full_recompute_hardware_flops_match_narayanan_eq3() -> None:
    ours = hardware_flops_per_step(GPT_175B, 1536, 2048, "full")
    assert ours == pytest.approx(narayanan_eq3(1536, 2048, 96, 12288, 51200), rel=1e-9)


def test_mfu_is_three_quarters_of_eq3_for_large_models() -> None:
    ratio = model_flops_per_step(GPT_175B, 1, 2048) / hardware_flops_per_step(
        GPT_175B, 1, 2048, "full"
    )
    assert 0.75 <= ratio < 0.76


def test_selective_recompute_adds_only_attention_core() -> None:
    model = model_flops_per_step(GPT_175B, 8, 2048)
    selective = hardware_flops_per_step(GPT_175B, 8, 2048, "selective")
    full = hardware_flops_per_step(GPT_175B, 8, 2048, "full")
    assert model < selective < full
    assert (selective - model) / model < 0.05


def test_gqa_and_moe_flops(models) -> None:
    mha = models["llama2-70b"].model_copy(update={"num_kv_heads": None})
    gqa = models["llama2-70b"]
    assert model_flops_per_step(gqa, 1, 4096) < model_flops_per_step(mha, 1, 4096)
    mixtral = models["mixtral-8x7b"]
    dense_top2 = mixtral.model_copy(update={"num_experts": 1, "top_k": 1})
    # Top-2 routing costs about twice the MLP of one expert, far below 8 experts' worth.
    assert (
        1.5
        < model_flops_per_step(mixtral, 1, 4096) / model_flops_per_step(dense_top2, 1, 4096)
        < 2.0
    )


@pytest.mark.parametrize(
    ("model_id", "published_b"),
    [
        ("gpt3-175b", 175.0),
        ("llama2-7b", 6.74),
        ("llama2-70b", 69.0),
        ("llama3-8b", 8.03),
        ("llama3-70b", 70.6),
        ("llama3.1-405b", 405.0),
        ("mixtral-8x7b", 46.7),
        ("mixtral-8x22b", 141.0),  # Mistral AI, 'Cheaper, Better, Faster, Stronger' (2024)
        ("qwen3-30b-a3b", 30.5),  # Qwen3 Technical Report, Table 2
        ("qwen3-235b-a22b", 235.0),
        ("gpt-oss-120b", 116.8),  # gpt-oss model card, arXiv 2508.10925, Table 1
    ],
)
def test_preset_parameter_counts_match_published_sizes(models, model_id, published_b) -> None:
    assert num_params(models[model_id]) / 1e9 == pytest.approx(published_b, rel=0.03)


def test_a_head_width_apart_from_hidden_over_heads_sets_the_attention_widths() -> None:
    # Qwen3-30B-A3B: hidden 2,048 but 32 query heads of 128 (4,096 wide) and 4 KV heads
    # (Qwen/Qwen3-30B-A3B config.json): Q, K, V and the output projection are 4,096 / 512 wide.
    qwen = ModelArch(
        num_layers=48,
        hidden_size=2048,
        num_heads=32,
        num_kv_heads=4,
        head_dim=128,
        ffn_hidden_size=768,
        gated_mlp=True,
        vocab_size=151936,
        num_experts=128,
        top_k=8,
    )
    layer = layer_forward_flops(qwen, 4096)
    assert layer.qkv_proj == 2.0 * 2048 * (4096 + 2 * 512)
    assert layer.out_proj == 2.0 * 4096 * 2048
    assert layer.attn_core == 4.0 * 4096 * 4096
    same = qwen.model_copy(update={"head_dim": 2048 // 32})
    assert layer_forward_flops(same, 4096) == layer_forward_flops(
        same.model_copy(update={"head_dim": None}), 4096
    )
