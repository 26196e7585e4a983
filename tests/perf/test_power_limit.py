"""A board power limit below TDP (``nvidia-smi -pl``): the sustained matmul and attention
rates fall as (P / TDP) ** 0.705 (HGX B100 against HGX B200), HBM-bound kernels keep their
rate, MFU stays against the part's datasheet peak, and a limit outside half-TDP..TDP is one
clear error naming the field, from the spec, ``predict --gpu-power-limit-w`` and the model."""

from __future__ import annotations

import json
import math

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.errors import SpecError
from clusterforge.perf.attention import _fused_attention_rates
from clusterforge.perf.power_limit import (
    POWER_LIMIT_EXPONENT,
    matmul_rate_share,
    power_limited,
)
from clusterforge.perf.roofline import gpu_perf, memory_time_s
from clusterforge.perf.stack import stack_named
from clusterforge.spec import ClusterSpec


def test_the_exponent_reproduces_hgx_b100_against_hgx_b200() -> None:
    b200 = load_catalog().gpus["b200"]
    assert matmul_rate_share(b200, 700) == pytest.approx(56 / 72)
    assert matmul_rate_share(b200, 1000) == 1.0
    assert 1 / 3 < POWER_LIMIT_EXPONENT < 1
    assert matmul_rate_share(b200, 750) == pytest.approx(0.75**POWER_LIMIT_EXPONENT)


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
def test_the_limit_slows_matmul_and_attention_not_hbm(precision: str) -> None:
    b200 = load_catalog().gpus["b200"]
    capped = power_limited(b200, 750)
    share = 0.75**POWER_LIMIT_EXPONENT
    full, low = gpu_perf(b200, precision), gpu_perf(capped, precision)
    assert low.matmul_tflops == pytest.approx(share * full.matmul_tflops)
    assert low.bf16_matmul_tflops == pytest.approx(share * full.bf16_matmul_tflops)
    assert low.hbm_gbyte_per_s == full.hbm_gbyte_per_s
    assert memory_time_s(1e9, low) == memory_time_s(1e9, full)
    stack = stack_named("torchtitan")
    assert _fused_attention_rates(stack, low)[0] == pytest.approx(
        share * _fused_attention_rates(stack, full)[0]
    )
    assert low.peak_bf16_tflops == b200.bf16_dense_tflops  # MFU against the datasheet peak


def test_no_limit_is_the_catalog_part() -> None:
    h100 = load_catalog().gpus["h100-sxm"]
    assert power_limited(h100, None) is h100
    assert gpu_perf(power_limited(h100, 700), "bf16") == gpu_perf(h100, "bf16")


@pytest.mark.parametrize(("limit_w", "words"), [(1100, "above"), (400, "below")])
def test_a_limit_outside_half_tdp_to_tdp_names_the_field(limit_w: float, words: str) -> None:
    b200 = load_catalog().gpus["b200"]
    with pytest.raises(SpecError, match=f"gpu_power_limit_w = {limit_w} W is {words}") as err:
        power_limited(b200, limit_w)
    assert "500-1000 W" in str(err.value)


def test_the_spec_field_reaches_the_design_and_is_checked() -> None:
    design = plan(ClusterSpec(num_gpus=8, node="dgx-b200", gpu_power_limit_w=750))
    assert design.compute.gpu_power_limit_w == 750
    with pytest.raises(SpecError, match="gpu_power_limit_w"):
        plan(ClusterSpec(num_gpus=8, node="dgx-b200", gpu_power_limit_w=1200))


def _tokens_per_gpu(capsys: pytest.CaptureFixture[str], *args: str) -> float:
    assert main(["predict", *args, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["plans"]
    limit = args[args.index("--gpu-power-limit-w") + 1] if args else None
    assert row.get("gpu_power_limit_w") == (float(limit) if limit else None)
    return float(row["tokens_per_s_per_gpu"])


def test_the_table_names_the_limit(capsys) -> None:
    assert main(["predict", "--gpu-power-limit-w", "600"]) == 0
    assert "x h100-sxm limited to 600 W" in capsys.readouterr().out


def test_predict_takes_the_limit_and_refuses_one_above_tdp(capsys) -> None:
    full = _tokens_per_gpu(capsys)
    capped = _tokens_per_gpu(capsys, "--gpu-power-limit-w", "500")
    assert capped < full
    assert capped > full * (500 / 700) ** POWER_LIMIT_EXPONENT * 0.99  # comm does not slow
    assert main(["predict", "--gpu-power-limit-w", "900"]) == 1
    err = capsys.readouterr().err
    assert "gpu_power_limit_w = 900 W is above the h100-sxm's 700 W TDP" in err
    assert "Traceback" not in err
    assert math.isfinite(full)
