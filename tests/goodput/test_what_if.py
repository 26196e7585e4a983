"""What-ifs that apply to the design and change its answer, and where the lost time goes."""

from __future__ import annotations

import math
from functools import cache

import pytest

from clusterforge.design import Design, plan
from clusterforge.goodput import GoodputInputs, expected_goodput, goodput_report, job_rates
from clusterforge.spec import load_spec


@cache
def design(name: str) -> Design:
    return plan(load_spec(f"examples/{name}.yaml"))


@pytest.mark.parametrize("name", ["lab-8-gpu", "gb200-nvl72-pod", "colo-512-h100"])
def test_every_what_if_shown_changes_the_answer(name: str) -> None:
    report = goodput_report(design(name), runs=10)
    base = report.variants["as designed"]
    assert base == report.expected
    for label, variant in report.variants.items():
        if label != "as designed":
            moved = abs(variant.wall_s - base.wall_s) / base.wall_s
            assert moved >= 1e-3 or variant.spares.spares_for_99 != base.spares.spares_for_99


def test_what_ifs_follow_the_design_facts() -> None:
    no_spares = goodput_report(design("lab-8-gpu"), runs=10).variants
    assert design("lab-8-gpu").compute.num_spare_nodes == 0
    assert "twice the spares" not in no_spares
    assert "one spare node" in no_spares
    liquid = goodput_report(design("gb200-nvl72-pod"), runs=10).variants
    assert design("gb200-nvl72-pod").compute.node.cooling == "liquid"
    assert not [label for label in liquid if label.startswith("liquid cooling")]
    air = goodput_report(design("colo-512-h100"), runs=10).variants
    assert design("colo-512-h100").compute.node.cooling == "air"
    assert [label for label in air if label.startswith("liquid cooling")]


@pytest.mark.parametrize(("mtbf_h", "spares"), [(2.0, 0), (8.0, 3), (math.inf, 0)])
def test_lost_time_by_cause_adds_up_to_the_wall_time(mtbf_h: float, spares: int) -> None:
    nodes = 0 if math.isinf(mtbf_h) else 4096
    rates = job_rates(num_gpus=8 * nodes, num_nodes=nodes, num_nics=8 * nodes)
    inputs = GoodputInputs(
        rates=rates,
        work_s=30 * 86400.0,
        delta_s=40.0,
        relaunch_s=900.0,
        read_s=60.0,
        num_spares=spares,
        repair_s=3 * 86400.0,
        step_s=5.0,
    )
    exp = expected_goodput(inputs)
    lost = exp.lost
    assert lost.total_s == pytest.approx(exp.wall_s - inputs.work_s, rel=1e-9)
    assert lost.spare_wait_s == exp.spare_wait_s
    assert lost.checkpoints_s == pytest.approx(
        inputs.work_s / exp.checkpoint_interval_s * inputs.delta_s
    )
    assert min(lost.failures_s, lost.restarts_s, lost.checkpoints_s, lost.spare_wait_s) >= 0
    if math.isinf(mtbf_h):
        assert lost.failures_s == pytest.approx(0.0, abs=1e-6) and lost.restarts_s == 0


def test_the_terminal_and_the_page_show_the_lost_time_by_cause() -> None:
    from rich.console import Console

    from clusterforge.assess import GoodputOutlook
    from clusterforge.report.goodput import print_goodput
    from clusterforge.report.html.studies import goodput_section

    report = goodput_report(design("colo-512-h100"), runs=10)
    console = Console(record=True, width=120)
    print_goodput(report, console)
    text = console.export_text()
    for cause in ("failures", "restarts", "checkpoints", "waiting for spares"):
        assert cause in text
    section = goodput_section(GoodputOutlook(report, 512))
    captions = [t.caption for t in section.tables]
    assert "lost time by cause" in captions
