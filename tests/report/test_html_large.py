"""The report of a large design stays light: long tables reach the page as JSON (built when
opened), the power chart groups racks of one feed load, the floor becomes a grid image."""

from __future__ import annotations

import json
import re

import pytest

from clusterforge.design import plan
from clusterforge.design.facility.hall import hall_of
from clusterforge.report.html import facts
from clusterforge.report.html.model import LAZY_ROWS, Section, Table
from clusterforge.report.html.render import template_env
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES


@pytest.fixture(scope="module")
def design():
    return plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))


def _section_html(section: Section) -> str:
    return str(template_env().get_template("_sections.html.j2").module.render_section(section))


def _table(num_rows: int) -> Table:
    rows = (*((f"r{i}", f"{i}.0") for i in range(num_rows - 1)), ("</script><!--", "1"))
    return Table(headers=("rack", "kW"), rows=rows, numeric=(False, True))


def test_a_long_table_is_json_until_opened():
    html = _section_html(Section("t", "T", "lead", tables=(_table(LAZY_ROWS + 1),)))
    assert "<td" not in html and 'class="lazy-rows"' in html
    assert 'data-numeric="[false, true]"' in html
    data = re.search(
        r'<script type="application/json" class="table-rows">(.*?)</script>', html, re.S
    )
    assert data is not None and "</script><!--" not in data.group(1)
    rows = json.loads(data.group(1))
    assert len(rows) == LAZY_ROWS + 1 and rows[-1] == ["</script><!--", "1"]
    assert f"({LAZY_ROWS + 1} rows)" in html  # the summary still says how many


def test_a_short_table_is_plain_html_and_escaped():
    html = _section_html(Section("t", "T", "lead", tables=(_table(3),)))
    assert html.count("<tr>") == 4 and "table-rows" not in html
    assert "&lt;/script&gt;&lt;!--" in html


def test_feed_groups_hold_every_rack_once_with_one_load(design):
    groups = facts.feed_groups(design)
    names = [r.name for g in groups for r in g.racks]
    assert sorted(names) == sorted(r.name for r in design.racks)
    for g in groups:
        assert {(r.role, r.circuit) for r in g.racks} == {(g.role, g.circuit)}
    assert len({g.label for g in groups}) == len(groups)  # a chart category each
    utilization = [g.circuit.utilization for g in groups]
    assert utilization == sorted(utilization, reverse=True)


def test_power_chart_has_a_bar_per_rack_or_per_group(design, monkeypatch):
    per_rack = facts.power_section(design)
    assert len(per_rack.tables[0].rows) == len(design.racks)
    monkeypatch.setattr(facts, "MAX_RACK_BARS", 10)
    grouped = facts.power_section(design)
    groups = facts.feed_groups(design)
    assert [row[0] for row in grouped.tables[0].rows] == [g.label for g in groups]
    assert len(groups) < len(design.racks)
    assert "groups of racks with the same feed load" in grouped.figures[0].html


def test_the_floor_is_the_floor_svg_drawing_to_scale(design):
    """The floor section inlines floor.svg (not a heatmap on unequal axes); its table still
    lists every rack."""
    section = facts.floor_section(design)
    assert '<g id="hall">' in section.figures[0].html
    hall = hall_of(design.racks, design.spec.facility)
    assert f"{hall.width_m:.1f} m x {hall.depth_m:.1f} m" in section.lead
    assert len(section.tables[0].rows) == len(design.racks)
