"""Host lists, windows and the comparison with ``predict``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from clusterforge.diagnose import GpuReading, JobReadings, expand_hostlist, expected_prediction
from clusterforge.diagnose.collect import window_ok
from clusterforge.diagnose.expected import compare
from clusterforge.errors import SpecError
from clusterforge.perf import Prediction

EXAMPLE = Path(__file__).parents[2] / "examples" / "lab-8-gpu.yaml"


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("gpu-00[01-03]", ("gpu-0001", "gpu-0002", "gpu-0003")),
        ("gpu-[8-10]", ("gpu-8", "gpu-9", "gpu-10")),
        ("a[1,3],b", ("a1", "a3", "b")),
        ("r[1-2]n[1-2]", ("r1n1", "r1n2", "r2n1", "r2n2")),
        ("x, x", ("x",)),
    ],
)
def test_hostlist_expands_like_slurm(expr: str, names: tuple[str, ...]) -> None:
    assert expand_hostlist(expr) == names


@pytest.mark.parametrize("expr", ["gpu-[3-1]", "gpu-[a-b]", "gpu-[1", "", "n[0-999999]"])
def test_bad_hostlist_names_the_problem(expr: str) -> None:
    with pytest.raises(SpecError, match="host list"):
        expand_hostlist(expr)


@pytest.mark.parametrize("window", ["30m", "90s", "2h", "1d"])
def test_windows(window: str) -> None:
    assert window_ok(window) == window


@pytest.mark.parametrize("window", ["30", "0m", "30min", "5m]"])
def test_bad_window(window: str) -> None:
    with pytest.raises(SpecError, match="not a duration"):
        window_ok(window)


@cache
def _prediction() -> Prediction:
    return expected_prediction(EXAMPLE)


def _readings(tensor: float, tokens: float | None) -> JobReadings:
    gpus = tuple(GpuReading(node="n", gpu=str(i), tensor_active=tensor) for i in range(8))
    return JobReadings(job="1", window="30m", gpus=gpus, nodes=(), tokens_per_s=tokens)


def test_tokens_compare_per_gpu() -> None:
    p = _prediction()
    c = compare(_readings(0.5, p.tokens_per_s_per_gpu * 8 * 0.7), p)
    assert c is not None and c.basis == "tokens-per-s-per-gpu"
    assert c.shortfall == pytest.approx(0.3)


def test_tensor_active_is_the_proxy_without_tokens() -> None:
    p = _prediction()
    c = compare(_readings(p.hfu / 2, None), p)
    assert c is not None and c.basis == "tensor-active"
    assert c.ratio == pytest.approx(0.5)


def test_nothing_to_compare() -> None:
    bare = JobReadings(job="1", window="30m", gpus=(GpuReading(node="n", gpu="0"),), nodes=())
    assert compare(bare, _prediction()) is None
