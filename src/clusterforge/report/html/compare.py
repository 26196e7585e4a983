"""Two designs side by side: their headline figures with the difference, their fabric, racks,
floor and power as pictures next to each other, their bandwidth and cost curves on shared
axes, and each one's findings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clusterforge.assess import Assessment, ExpectedPerformance
from clusterforge.design import Design
from clusterforge.report.html import charts, facts, money, studies
from clusterforge.report.html.model import Figure, Section, Table, css_string, kw, num, pct, pp
from clusterforge.report.html.model import money as usd
from clusterforge.report.html.render import page_assets, template_env

__all__ = ["Comparison", "Pair", "build_comparison", "render_comparison"]


@dataclass(frozen=True)
class Row:
    """One compared figure: how to read it from a design, how to show it, and whether more
    is better (for the colour of the difference)."""

    label: str
    read: Callable[[Design], float]
    show: Callable[[float], str]
    higher_is_better: bool


ROWS = (
    Row("training GPUs", lambda d: d.compute.num_training_gpus, num, True),
    Row("nodes", lambda d: d.compute.num_nodes, num, False),
    Row("racks", lambda d: len(d.racks), num, False),
    Row("fabric switches", lambda d: d.fabric.num_switches, num, False),
    Row("bandwidth per GPU (Gb/s)", lambda d: d.fabric.gbit_per_s_per_gpu, num, True),
    Row("bisection (Tb/s)", lambda d: d.fabric.bisection_gbit_per_s / 1000, num, True),
    Row("IT power, max", lambda d: d.power.it_max_kw, kw, False),
    Row("facility power", lambda d: d.power.facility_kw, kw, False),
    Row("capex", lambda d: d.cost.capex_usd, usd, False),
    Row("capex per GPU", lambda d: d.cost.capex_per_gpu_usd, usd, False),
    Row("opex per year", lambda d: d.cost.opex_per_year_usd, usd, False),
    Row("build total", lambda d: d.cost.build_total_usd, usd, False),
    Row("rent total", lambda d: d.cost.rent_total_usd, usd, False),
    Row("break-even utilization", lambda d: d.cost.break_even_utilization, pct, False),
    Row("findings", lambda d: len(d.findings), num, False),
)


@dataclass(frozen=True)
class DeltaRow:
    label: str
    a: str
    b: str
    delta: str
    verdict: str  # "better", "worse" or "" (equal)


@dataclass(frozen=True)
class Pair:
    """One picture of both designs, side by side, and a sentence on each."""

    id: str
    title: str
    figures: tuple[Figure, Figure]
    leads: tuple[str, str]


@dataclass(frozen=True)
class Comparison:
    """Everything the comparison page shows, formatted."""

    title: str
    names: tuple[str, str]
    rows: tuple[DeltaRow, ...]
    pairs: tuple[Pair, ...]
    sections: tuple[Section, ...]
    findings: tuple[Section, Section]

    @property
    def print_title(self) -> str:
        """The title as a CSS string, for the printed pages' top margin."""
        return css_string(self.title)


def _delta_row(row: Row, a: Design, b: Design) -> DeltaRow:
    return _pair_row(row, float(row.read(a)), float(row.read(b)))


def _pair_row(row: Row, va: float, vb: float) -> DeltaRow:
    """The row's two values and b - a, with its relative change and verdict; a difference
    of two percentages is in percentage points, with no relative change (a percent of a
    percent would read as points)."""
    if vb == va:
        return DeltaRow(row.label, row.show(va), row.show(vb), "=", "")
    better = (vb > va) == row.higher_is_better
    verdict = "better" if better else "worse"
    if row.show is pct:
        return DeltaRow(row.label, row.show(va), row.show(vb), pp(vb - va), verdict)
    change = f" ({(vb - va) / abs(va):+.0%})" if va else ""
    sign = "+" if vb > va else "-"
    delta = f"{sign}{row.show(abs(vb - va))}{change}"
    return DeltaRow(row.label, row.show(va), row.show(vb), delta, verdict)


EXPECTED_ROWS = (
    (lambda e: e.prediction.mfu, Row("MFU (spec's plan)", lambda _: 0.0, pct, True)),
    (lambda e: e.time_to_train_days,
     Row("time to train, no failures (days)", lambda _: 0.0, lambda v: num(v, 1), False)),
)  # fmt: skip


def _expected_rows(a: Assessment, b: Assessment) -> list[DeltaRow]:
    """The predicted figures of both designs' workloads, when both could be predicted."""
    ea, eb = a.performance, b.performance
    if not (isinstance(ea, ExpectedPerformance) and isinstance(eb, ExpectedPerformance)):
        return []
    return [_pair_row(row, float(read(ea)), float(read(eb))) for read, row in EXPECTED_ROWS]


def build_comparison(a: Assessment, b: Assessment) -> Comparison:
    """Design ``b`` against design ``a``: differences are b - a; the simulated bandwidth
    when both assessments hold it."""
    da, db = a.design, b.design
    rows = [_delta_row(r, da, db) for r in ROWS] + _expected_rows(a, b)
    sections = [_tco_section(a, b), _capex_section(da, db)]
    if a.busbw is not None and b.busbw is not None:
        sections.insert(0, studies.busbw_section([a.busbw, b.busbw]))
    return Comparison(
        title=f"{da.spec.name} vs {db.spec.name}",
        names=(da.spec.name, db.spec.name),
        rows=tuple(rows),
        pairs=_pairs(da, db),
        sections=tuple(sections),
        findings=(facts.findings_section(da), facts.findings_section(db)),
    )


# the report's sections whose picture is compared side by side: (id, title, section builder)
PAIRED: tuple[tuple[str, str, Callable[[Design], Section]], ...] = (
    ("fabric", "Fabric", facts.fabric_section),
    ("racks", "Racks", facts.racks_section),
    ("floor", "Floor plan", facts.floor_section),
    ("power", "Power", facts.power_section),
)


def _pairs(a: Design, b: Design) -> tuple[Pair, ...]:
    """The topology, racks and power of both designs as pictures next to each other."""
    pairs = []
    for pair_id, title, build in PAIRED:
        sa, sb = build(a), build(b)
        pairs.append(Pair(pair_id, title, (sa.figures[0], sb.figures[0]), (sa.lead, sb.lead)))
    return tuple(pairs)


def _tco_section(a: Assessment, b: Assessment) -> Section:
    series = []
    for d in (a.design, b.design):
        years, build, rent = money.tco_curves(d)
        series += [(f"{d.spec.name}: build", years, build), (f"{d.spec.name}: rent", years, rent)]
    figure = charts.line_chart(
        "build vs rent, both designs", series=series, x_title="years",
        y_title="cumulative cost ($M)", markers=False,
    )  # fmt: skip
    lead = " ".join(
        f"{x.design.spec.name}: {money.tco_section(x.design, x.economics).lead}" for x in (a, b)
    )
    return Section("tco", "Build vs rent", lead, (Figure(figure, "tco"),))


def _capex_section(a: Design, b: Design) -> Section:
    categories = list(dict.fromkeys([*a.cost.capex_by_category_usd, *b.cost.capex_by_category_usd]))
    series = [
        (d.spec.name, [d.cost.capex_by_category_usd.get(k, 0.0) / 1e6 for k in categories])
        for d in (a, b)
    ]
    figure = charts.bar_chart("capex by category", labels=categories, series=series, y_title="$M")
    rows = Table(
        headers=("category", a.spec.name, b.spec.name),
        rows=tuple((k, usd(series[0][1][i] * 1e6), usd(series[1][1][i] * 1e6))
                   for i, k in enumerate(categories)),
        numeric=(False, True, True),
    )  # fmt: skip
    return Section("capex", "Capex by category", "", (Figure(figure, "capex"),), (rows,))


def render_comparison(comparison: Comparison) -> str:
    """The comparison as one self-contained HTML page."""
    template = template_env().get_template("compare.html.j2")
    return template.render(report=comparison, **page_assets())
