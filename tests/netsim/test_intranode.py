"""One 8-GPU node against published nccl-tests figures (sources in nccl_published.toml)."""

from __future__ import annotations

import itertools
import tomllib
from pathlib import Path

import numpy as np
import pytest

from clusterforge.netsim import simulate_collective
from tests.netsim.designs import single_node

PUBLISHED = tomllib.loads((Path(__file__).parent / "nccl_published.toml").read_text())
LARGE = 16 * 2**30
ALL8 = np.arange(8)[None, :]


@pytest.mark.parametrize(
    "row",
    PUBLISHED["large_message"],
    ids=lambda r: f"{r['node']}-{r['collective']}-{r['algorithm']}",
)
def test_large_message_busbw_within_10_percent_of_published(row: dict) -> None:
    _, graph = single_node(row["node"])
    res = simulate_collective(graph, row["collective"], LARGE, ALL8, algorithm=row["algorithm"])
    assert res.busbw_gbyte_per_s == pytest.approx(row["busbw"], rel=0.10)


def test_h100_ring_all_reduce_lands_in_the_measured_365_to_370_band() -> None:
    _, graph = single_node("dgx-h100")
    res = simulate_collective(graph, "all_reduce", LARGE, ALL8, algorithm="ring")
    assert 360 <= res.busbw_gbyte_per_s <= 375


def test_h100_nvls_near_480_and_faster_than_ring() -> None:
    _, graph = single_node("dgx-h100")
    nvls = simulate_collective(graph, "all_reduce", LARGE, ALL8, algorithm="nvls")
    ring = simulate_collective(graph, "all_reduce", LARGE, ALL8, algorithm="ring")
    assert 465 <= nvls.busbw_gbyte_per_s <= 495
    assert nvls.busbw_gbyte_per_s > 1.2 * ring.busbw_gbyte_per_s


def test_auto_picks_nvls_on_h100_but_ring_on_a100() -> None:
    _, h100 = single_node("dgx-h100")
    _, a100 = single_node("dgx-a100")
    assert simulate_collective(h100, "all_reduce", LARGE, ALL8).algorithm == "nvls"
    assert simulate_collective(a100, "all_reduce", LARGE, ALL8).algorithm == "ring"


@pytest.mark.parametrize("point", PUBLISHED["h200_nvls_sweep"], ids=lambda p: str(p["size_bytes"]))
def test_size_sweep_follows_the_h200_nvls_curve(point: dict) -> None:
    _, graph = single_node("dgx-h200")
    res = simulate_collective(graph, "all_reduce", point["size_bytes"], ALL8, algorithm="nvls")
    assert res.busbw_gbyte_per_s == pytest.approx(point["busbw"], rel=0.25)


def test_busbw_falls_off_at_small_sizes_like_nccl_tests() -> None:
    _, graph = single_node("dgx-h100")
    sizes = [2**e for e in range(15, 35)]
    busbw = [
        simulate_collective(graph, "all_reduce", s, ALL8, algorithm="ring").busbw_gbyte_per_s
        for s in sizes
    ]
    assert all(b2 > b1 for b1, b2 in itertools.pairwise(busbw))
    # 32 KiB is latency bound: NCCL's ring LL latency on 8 NVLink GPUs is 6.6 + 14 x 0.6 µs
    assert busbw[0] < 0.02 * busbw[-1]
    assert busbw[sizes.index(2**20)] < 0.2 * busbw[-1]  # 1 MiB well below peak (ring LL)


@pytest.mark.parametrize("row", PUBLISHED["h100_nvls_by_gpus"], ids=lambda r: str(r["num_gpus"]))
def test_nvls_bus_bandwidth_grows_with_gpu_count(row: dict) -> None:
    _, graph = single_node("dgx-h100")
    group = np.arange(row["num_gpus"])[None, :]
    res = simulate_collective(graph, "all_reduce", LARGE, group, algorithm="nvls")
    assert res.busbw_gbyte_per_s == pytest.approx(row["busbw"], rel=0.08)


def test_pcie_only_node_all_reduce_near_the_pcie_gen4_figure() -> None:
    # NVIDIA GTC24 S62129 slide: PCIe Gen4 all_reduce ~24 GB/s busbw
    _, graph = single_node("rtx4090-8gpu")
    res = simulate_collective(graph, "all_reduce", LARGE, ALL8)
    assert res.busbw_gbyte_per_s == pytest.approx(24, rel=0.2)
    assert res.limiting_link is not None and res.limiting_link.link_class == "pcie"


def test_nvlink_is_the_limiting_link_class_inside_a_node() -> None:
    _, graph = single_node("dgx-h100")
    res = simulate_collective(graph, "all_gather", LARGE, ALL8)
    assert res.limiting_link is not None and res.limiting_link.link_class == "nvlink"
    assert res.link_class_utilization["nvlink"].max_utilization == pytest.approx(1.0, abs=0.01)
    nic = res.link_class_utilization.get("nic-leaf")
    assert nic is None or nic.max_utilization == 0
