"""The report sections a reader asks about after the headline: where the lost days go (a
waterfall by cause), the spec's own parallel plan among the searched ones under readable
names, and two designs' pictures side by side."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from clusterforge.assess import QUICK, AssessOptions, GoodputOutlook, assess
from clusterforge.design import plan
from clusterforge.report.expected import plan_name
from clusterforge.report.goodput import LOST_CAUSES, lost_rows, waterfall_picture
from clusterforge.report.html import build_comparison, build_report, render_comparison
from clusterforge.report.html.studies import performance_section
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES
from tests.report.pictures import ids, svg_root, texts

DAY_S = 86400.0


@pytest.fixture(scope="module")
def assessment():
    design = plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))
    return assess(design, AssessOptions(top_plans=3, goodput_runs=50, busbw=False))


def test_plan_names_read_as_people_say_them(assessment):
    spec_plan = assessment.performance.prediction.plan
    job = spec_plan.layout
    assert (job.tp, job.pp, job.cp, job.ep) == (8, 4, 1, 1)  # colo-512's workload
    expected = f"TP8 PP4 DP{job.dp}, micro-batch {spec_plan.micro_batch}"
    assert plan_name(spec_plan) == expected + (f", VPP {job.vpp}" if job.vpp > 1 else "")
    layout = SimpleNamespace(tp=8, pp=4, cp=2, ep=4, dp=8, vpp=3)
    wider = SimpleNamespace(layout=layout, micro_batch=1)
    assert plan_name(wider) == "TP8 PP4 CP2 EP4 DP8, micro-batch 1, VPP 3"


def test_the_spec_plan_is_marked_once_among_the_searched_plans(assessment):
    section = performance_section(assessment.performance, assessment.top_plans)
    rows = section.tables[0].rows
    marked = [row for row in rows if row[0].endswith("(spec's plan)")]
    assert len(marked) == 1
    assert marked[0][1] == plan_name(assessment.performance.prediction.plan)
    assert len(rows) in (len(assessment.top_plans), len(assessment.top_plans) + 1)
    assert '-highlight"' in section.figures[0].html  # outlined in the chart
    for row in rows:
        assert "TP" in row[1] and "micro-batch" in row[1] and " x " not in row[1]


def test_a_spec_plan_ranked_below_the_best_is_added_after_them(assessment):
    best = assessment.top_plans[:1]
    if plan_name(best[0].plan) == plan_name(assessment.performance.prediction.plan):
        best = assessment.top_plans[1:2]
    rows = performance_section(assessment.performance, best).tables[0].rows
    assert [row[0] for row in rows] == ["#1", "spec (spec's plan)"]


def test_the_waterfall_steps_from_failure_free_to_expected_by_cause(assessment):
    goodput = assessment.goodput
    assert isinstance(goodput, GoodputOutlook)
    report = goodput.report
    root = svg_root(waterfall_picture(report))
    assert ids(root, "step-") == [f"step-{i}" for i in range(1, len(LOST_CAUSES) + 1)]
    assert ids(root, "work") == ["work"] and ids(root, "total") == ["total"]
    words = texts(root)
    assert f"{report.inputs.work_s / DAY_S:,.1f} d" in words
    assert f"{report.expected.wall_s / DAY_S:,.1f} d" in words  # ends at the expected days
    for _, days, _ in lost_rows(report)[:-1]:
        assert f"+{days:,.2f} d" in words
    section = next(s for s in build_report(assessment).sections if s.id == "goodput")
    assert section.figures[0].alt == "lost time by cause"


def test_the_comparison_shows_both_designs_pictures_side_by_side():
    a = plan(load_spec(EXAMPLES / "seed-design-a.yaml"))
    b = plan(load_spec(EXAMPLES / "seed-design-b.yaml"))
    comparison = build_comparison(assess(a, QUICK), assess(b, QUICK))
    pairs = {p.id: p for p in comparison.pairs}
    assert set(pairs) >= {"fabric", "racks", "power", "floor"}
    for pair in pairs.values():
        assert len(pair.figures) == 2 and all("<svg" in f.html for f in pair.figures)
    page = render_comparison(comparison)
    for pair_id in pairs:
        block = page.split(f'<section id="vs-{pair_id}">')[1].split("</section>")[0]
        assert block.count('<div class="side">') == 2 and block.count("<svg") == 2


def test_a_one_node_design_shows_no_empty_fabric():
    design = plan(load_spec(EXAMPLES / "lab-8-gpu.yaml"))
    report = build_report(assess(design, QUICK))
    fabric = next(s for s in report.sections if s.id == "fabric")
    metric = next(m for m in report.metrics if m.label == "fabric")
    for text in (fabric.lead, metric.value, metric.note):
        assert "0 x" not in text and "0 ports" not in text and "1 nodes" not in text
    assert fabric.lead.startswith("One node: no compute fabric")
    assert not fabric.figures
    assert [t.caption for t in fabric.tables] == ["support fabrics"]


def test_counts_take_the_singular_for_one():
    from clusterforge.report.format import counted

    assert counted(1, "node") == "1 node"
    assert counted(68, "node") == "68 nodes"
    assert counted(2, "switch", "switches") == "2 switches"
    assert counted(1_000, "rack") == "1,000 racks"
