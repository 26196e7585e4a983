"""What-if: DeepSpeed ZeRO-3 with the optimizer on the host CPU
(``benchmarks/zero_offload_whatif.py``, docs/validation.md): bytes counted per parameter,
the hosts' DRAM bandwidth and the exposure rule."""

from __future__ import annotations

import pytest
from benchmarks.zero_offload_whatif import (
    GRAD_DOWN_BYTES,
    GRAD_UP_BYTES,
    HOST_BYTES_PER_PARAM,
    host_dram_gbyte_per_s,
    offload_cost,
)


def test_bytes_per_parameter_follow_deepspeed_and_cpu_adam() -> None:
    # unscale: read + write FP32 grad (8); Step_AVX: 4 FP32 loads + 3 FP32 stores (28);
    # FP32 -> BF16 cast on the host: read 4, write 2 (6).
    assert HOST_BYTES_PER_PARAM == 8 + 28 + 6
    # backward: BF16 partition down (2), back up (2), FP32 gradient down (4)
    assert (GRAD_DOWN_BYTES, GRAD_UP_BYTES) == (6, 2)


def test_host_dram_bandwidth_two_sockets() -> None:
    # 2 sockets x 8 channels x DDR5-4800 / DDR5-5600 x 8 B
    assert host_dram_gbyte_per_s("xeon-8480c", 2) == pytest.approx(614.4)
    assert host_dram_gbyte_per_s("xeon-8570", 2) == pytest.approx(716.8)


def _cost(backward_s: float, ranks: int = 8):
    return offload_cost(
        owned_params=1e9,
        ranks_per_host=ranks,
        link_gbyte_per_s=64.0,
        host_dram_gbyte_per_s=640.0,
        backward_s=backward_s,
    )


def test_backward_copies_hidden_behind_a_long_backward() -> None:
    cost = _cost(backward_s=10.0)
    host_s = 8 * 1e9 * 42 / 640e9
    param_up_s = 1e9 * 2 / 64e9
    assert cost.host_adam_s == pytest.approx(host_s)
    assert cost.exposed_s == pytest.approx(host_s + param_up_s)
    assert cost.transfer_s == pytest.approx(1e9 * 6 / 64e9 + param_up_s)


def test_backward_copies_exposed_beyond_a_short_backward() -> None:
    grad_s = 1e9 * 6 / 64e9
    long_ = _cost(backward_s=10.0)
    short = _cost(backward_s=0.25 * grad_s)
    assert short.exposed_s - long_.exposed_s == pytest.approx(0.75 * grad_s)


def test_host_passes_shared_by_the_hosts_ranks() -> None:
    assert _cost(10.0, ranks=8).host_adam_s == pytest.approx(8 * _cost(10.0, ranks=1).host_adam_s)
