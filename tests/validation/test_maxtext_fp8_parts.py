"""MaxText FP8 against BF16 on H100 (``benchmarks/maxtext_fp8_breakdown.py``): what the
model prices for FP8 besides faster GEMMs, and whether an FP8 row is missed like its BF16
twin (same table, GPU count and layout; only ``quantization=fp8`` and, for Llama 2, the MLP
output kept or not differ). The 5-point tolerance of the twin test was set with it, after
the pairs were first printed; pairs outside it are strict xfails with what the breakdown
shows. Only development rows are read."""

from __future__ import annotations

import pytest
from benchmarks.maxtext_fp8_breakdown import StepParts, maxtext_parts

TWIN_TOLERANCE = 0.05

PARTS = {p.run.name: p for p in maxtext_parts()}
FP8 = sorted(name for name, p in PARTS.items() if p.run.base.precision == "fp8")

_GEMM_RATE = (
    "the FP8 row needs its weight GEMMs {fp8:.2f}x faster than priced to be met, its BF16 "
    "twin {bf16:.2f}x: removing every priced FP8 extra (casts, transposes, weight "
    "quantisation, {share:.1%} of the step) leaves it {left:+.1%}. Unpriced: the Hopper "
    "forward FP8 GEMM's fast accumulation (XLA's DEFAULT precision, Flax "
    "dot_general_with_precision), whose speed-up has no per-shape measurement; the FP8 "
    "ceiling is mamf-finder's without it (docs/validation.md, 'MaxText FP8 on H100')"
)
_SCALE = (
    "Llama 2 FP8 loses 13-15 % of its per-GPU throughput from 64 to 256-1,024 GPUs "
    "(4.32 -> 4.96 / 5.06 s), its BF16 twin 1-2 %; the model keeps both flat, so the twin "
    "errors part by {gap:.1f} points. The growth exceeds the unit collectives' own at NCCL's "
    "latency model (tests/validation/test_fsdp_rank_pairs.py); not modelled"
)


def _twin(fp8: StepParts) -> StepParts:
    return PARTS[fp8.run.name.replace("-fp8-", "-bf16-")]


def _gap_reason(name: str) -> str | None:
    fp8 = PARTS[name]
    bf16 = _twin(fp8)
    if abs(fp8.error - bf16.error) < TWIN_TOLERANCE:
        return None
    if fp8.error > bf16.error:
        return _SCALE.format(gap=100 * (fp8.error - bf16.error))
    return _GEMM_RATE.format(
        fp8=fp8.gemm_speedup_needed(),
        bf16=bf16.gemm_speedup_needed(),
        share=fp8.fp8_s / fp8.step_s,
        left=fp8.error_without(fp8.fp8_s),
    )


# Written from the breakdown's figures (printed before this test was): the Llama 3 FP8 rows
# at every size, the Llama 2 FP8 rows above 64 GPUs.
KNOWN_GAPS = {
    "pub-maxtext-h100-llama3-70b-fp8-128gpu",
    "pub-maxtext-h100-llama3-70b-fp8-512gpu",
    "pub-maxtext-h100-llama3-70b-fp8-2048gpu",
    "pub-maxtext-h100-llama2-70b-fp8-256gpu",
    "pub-maxtext-h100-llama2-70b-fp8-1024gpu",
}


def _cases() -> list[object]:
    return [
        pytest.param(
            name,
            id=name,
            marks=[pytest.mark.xfail(strict=True, reason=_gap_reason(name) or "")]
            if name in KNOWN_GAPS
            else [],
        )
        for name in FP8
    ]


def test_every_fp8_row_has_a_bf16_twin() -> None:
    assert len(FP8) == 6
    assert all(_twin(PARTS[name]).run.base.precision == "bf16" for name in FP8)


@pytest.mark.parametrize("name", FP8)
def test_priced_fp8_extras_are_a_small_share_of_the_maxtext_step(name: str) -> None:
    """XLA fuses each quantisation into the op that produces its input or quantises the
    weight shard before its gather; what the model charges for them stays under 4 % of the
    step (2.5 % Llama 3, 3.3 % Llama 2), so no re-pricing of those passes can close a
    10-13 % miss."""
    parts = PARTS[name]
    assert 0.0 < parts.fp8_s / parts.step_s < 0.04


def test_bf16_rows_price_no_fp8_extras() -> None:
    assert all(p.fp8_s == 0.0 for p in PARTS.values() if p.run.base.precision == "bf16")


def test_the_parts_add_up_to_the_predicted_step() -> None:
    for parts in PARTS.values():
        assert parts.rest_s > 0.0
        assert parts.rest_s < 0.1 * parts.step_s


@pytest.mark.parametrize("name", _cases())
def test_fp8_row_is_missed_like_its_bf16_twin(name: str) -> None:
    fp8 = PARTS[name]
    assert abs(fp8.error - _twin(fp8).error) < TWIN_TOLERANCE
