"""Checkpoint cost: a fixed coordination floor that grows with the ranks, the write at the
storage's (or the nodes' links') bandwidth, and an interval of whole steps."""

from __future__ import annotations

from functools import cache

import pytest

from clusterforge.design import Design, plan
from clusterforge.goodput import (
    GoodputInputs,
    checkpoint_cost,
    checkpoint_floor_s,
    expected_goodput,
    goodput_report,
    job_rates,
)
from clusterforge.goodput.checkpoint import CHECKPOINT_BASE_S
from clusterforge.spec import load_spec, parse_spec


@cache
def colossus() -> Design:
    return plan(load_spec("examples/colossus-100k-h100.yaml"))


def test_the_floor_grows_with_the_ranks() -> None:
    assert checkpoint_floor_s(256) == pytest.approx(CHECKPOINT_BASE_S, rel=0.01)
    assert checkpoint_floor_s(100_000) > checkpoint_floor_s(10_000) > checkpoint_floor_s(256)


def test_the_interval_is_whole_steps_and_never_shorter_than_one() -> None:
    rates = job_rates(num_gpus=100_000, num_nodes=12_500, num_nics=100_000)
    # A checkpoint so cheap that Young/Daly would ask for one every ~0.2 s.
    inputs = GoodputInputs(rates=rates, work_s=1e5, delta_s=1e-5, relaunch_s=600.0, step_s=2.5)
    exp = expected_goodput(inputs)
    assert exp.checkpoint_interval_s >= 2.5
    assert exp.checkpoint_interval_steps == round(exp.checkpoint_interval_steps) >= 1
    assert exp.checkpoint_interval_s == pytest.approx(exp.checkpoint_interval_steps * 2.5)
    # An async write still running in the background holds the next checkpoint back.
    held = expected_goodput(
        GoodputInputs(rates=rates, work_s=1e5, delta_s=1.0, step_s=2.5, min_interval_s=400.0)
    )
    assert held.checkpoint_interval_s >= 400.0


def test_a_100k_gpu_checkpoint_costs_its_floor_and_is_not_taken_every_step() -> None:
    design = colossus()
    cost = checkpoint_cost(design)
    assert cost.floor_s == pytest.approx(checkpoint_floor_s(100_000))
    assert cost.bottleneck == "storage system"
    assert cost.write_s == pytest.approx(
        design.storage.checkpoint_tbyte * 1000 / design.storage.write_gbyte_per_s
    )
    report = goodput_report(design, runs=20)
    exp = report.expected
    assert exp.checkpoint_s == pytest.approx(cost.floor_s + cost.write_s)
    assert exp.checkpoint_s > CHECKPOINT_BASE_S
    assert exp.checkpoint_interval_steps is not None and exp.checkpoint_interval_steps >= 10
    assert exp.checkpoint_interval_s > 60.0


def test_a_few_nodes_write_at_their_links_not_at_the_storage_system() -> None:
    spec = parse_spec(
        {
            "num_gpus": 16,
            "node": "dgx-h100",
            "workload": {"model": "llama3-70b", "tokens_b": 10},
            "storage": {"num_blocks": 40},
        }
    )
    design = plan(spec)
    cost = checkpoint_cost(design)
    assert cost.bottleneck == "node storage links"
    assert cost.write_s > design.storage.checkpoint_tbyte * 1000 / design.storage.write_gbyte_per_s
