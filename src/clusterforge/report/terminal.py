"""Rich terminal summary of a design.

Every cell is a :class:`rich.text.Text`, never markup: names and messages may carry user text
such as ``[/]``.  When stdout is not a terminal (a pipe, a file) the console is
:data:`PIPE_WIDTH` columns wide instead of rich's 80, and identifiers and headers never wrap,
so a piped summary keeps whole words ("transceivers", "gpu.memory_repair").
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from clusterforge.assess import (
    BREAK_EVEN_MAX_GPUS,
    Assessment,
    Economics,
    ExpectedPerformance,
    GoodputOutlook,
    SpareOption,
    spares_held,
)
from clusterforge.design import Design
from clusterforge.report.expected import parallel_label
from clusterforge.report.format import (
    money,
    money_delta,
    npv_text,
    payback_text,
    pct,
    power_limit_text,
)

if TYPE_CHECKING:
    from clusterforge.design.cost.tco import CostDesign
from clusterforge.report.goodput import interval_label, lost_rows

__all__ = ["design_tables", "make_console", "print_design", "print_plan"]

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
PIPE_WIDTH = 120  # columns of a piped summary (rich's own fallback is 80)


def make_console(*, stderr: bool = False) -> Console:
    """A console for the summary: the terminal's width, or :data:`PIPE_WIDTH` when piped
    (``COLUMNS`` overrides both, as rich documents)."""
    stream = sys.stderr if stderr else sys.stdout
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(stderr=stderr, width=PIPE_WIDTH if piped else None)


def _kv(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left", box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, value in rows:
        table.add_row(Text(key), Text(value))
    return table


def _compute(d: Design) -> Table:
    c, den = d.compute, d.layout_density
    return _kv(
        "Compute",
        [
            (
                "GPUs",
                f"{c.num_training_gpus:,} training + {c.num_spare_nodes * c.gpus_per_node:,} spare ({c.gpu.name})",
            ),
            (
                "nodes",
                f"{c.num_nodes:,} x {c.node.id} ({c.num_training_nodes:,} + {c.num_spare_nodes:,} spare)",
            ),
            ("NVLink domain", _domain(c.nvlink_domain_gpus, c.job_nvlink_domain_gpus)),
            ("CPU cores per GPU", f"{c.cpu_cores_per_gpu:g}"),
            (
                "nodes per rack",
                f"{den.nodes_per_rack} (limited by {den.limited_by}, {den.limit_kw:g} kW)",
            ),
            ("GPU power limit", power_limit_text(d)),
        ],
    )


def _domain(gpus: int, job_gpus: int) -> str:
    """``72 GPUs``, or ``72 GPUs (jobs use 64, the rest are in-rack spares)``."""
    if job_gpus == gpus:
        return f"{gpus} GPUs"
    return f"{gpus} GPUs (jobs use {job_gpus}, the rest are in-rack spares)"


def _fabric(d: Design) -> Table:
    f = d.fabric
    switches = f"{f.num_leaves:,} leaves, {f.num_spines:,} spines, {f.num_cores:,} cores"
    if f.num_groups:
        switches = f"{f.num_groups} groups, {f.num_leaves:,} routers"
    rows = [
        (
            "topology",
            f"{f.topology}, {f.tiers} tier(s), {f.fabric}, {f.switch.id} (radix {f.radix})",
        ),
        (
            "NICs",
            f"{f.nics_per_node} x {f.nic_gbit_per_s:g} Gb/s per node = {f.gbit_per_s_per_gpu:g} Gb/s per GPU",
        ),
        ("switches", switches),
        ("planes", f"{f.num_planes} independent planes (NIC i -> plane i mod {f.num_planes})")
        if f.num_planes > 1
        else ("planes", "1"),
        ("oversubscription", f"{f.oversubscription:g}:1"),
        ("bisection", f"{f.bisection_gbit_per_s / 1000:,.1f} Tb/s"),
        ("max switch hops", str(f.max_switch_hops)),
    ]
    if not f.radix:  # one node: no compute fabric
        rows = [("topology", "; ".join(f.notes) or "no compute fabric")]
    elif d.compute.num_spare_nodes:
        held = spares_held(d)
        rows.append(("spares", f"{held.mode}: {held.summary}"))
    rows += [(f"{s.name} fabric", f"{s.num_switches} x {s.switch.id}") for s in d.support_fabrics]
    return _kv("Network", rows)


def _cabling(d: Design) -> Table:
    table = Table(title="Cabling", title_justify="left")
    for col in ("fabric", "class", "links", "Gb/s", "media", "transceivers", "max m"):
        table.add_column(
            col,
            justify="right" if col in ("links", "Gb/s", "transceivers", "max m") else "left",
            no_wrap=col != "media",
        )
    for c in d.cabling:
        media = ", ".join(f"{m.medium} {m.num_links:,}" for m in c.media)
        trx = sum(m.num_transceivers for m in c.media)
        cells = (c.fabric, c.name, f"{c.num_links:,}", f"{c.gbit_per_s:g}", media, f"{trx:,}")
        table.add_row(*(Text(cell) for cell in cells), Text(f"{c.length_m_max:.0f}"))
    return table


def _facility(d: Design) -> Table:
    roles = Counter(r.role for r in d.racks)
    cooling = Counter(r.cooling.method for r in d.racks)
    gpu_rack = next((r for r in d.racks if r.role == "gpu"), d.racks[0])
    circ = gpu_rack.circuit
    heavy = max(d.racks, key=lambda r: r.floor.mass_kg)
    p = d.power
    return _kv(
        "Racks, power, cooling",
        [
            ("racks", ", ".join(f"{n:,} {role}" for role, n in roles.items())),
            (
                "GPU rack",
                f"{gpu_rack.max_kw:.1f} kW max, {gpu_rack.cooling.method}, "
                f"{gpu_rack.cooling.airflow_cfm:,.0f} CFM",
            ),
            (
                "circuits",
                f"{circ.num_feeds} feed(s) x {circ.circuits_per_feed} x {circ.voltage_v:g} V "
                f"{circ.phases}ph {circ.breaker_a:g} A ({circ.usable_kw:.1f} kW usable each), "
                f"{circ.power_path}",
            ),
            (
                "circuit load",
                f"{circ.phase_current_a:.1f} A/phase per circuit on its {circ.breaker_a:g} A "
                f"breaker ({circ.breaker_load:.0%}; {circ.utilization:.0%} of the continuous limit)",
            ),
            (
                "floor load",
                f"{heavy.name}: {heavy.floor.mass_kg:,.0f} kg = "
                f"{heavy.floor.load_kn_per_m2:.1f} kN/m2 on {heavy.floor.footprint_m2:.2f} m2 "
                f"(floor rated {heavy.floor.rating_kn_per_m2:g}), "
                f"{heavy.floor.point_load_kn:.2f} kN per foot",
            ),
            ("IT power", f"{p.it_max_kw:,.0f} kW max, {p.it_average_kw:,.0f} kW average"),
            ("facility power", f"{p.facility_kw:,.0f} kW at PUE {d.spec.facility.pue:g}"),
            ("cooling", ", ".join(f"{n} {m}" for m, n in cooling.items())),
            (
                "storage",
                f"{d.storage.num_blocks} x {d.storage.block.id}: {d.storage.capacity_tbyte:,.0f} TB, "
                f"{d.storage.read_gbyte_per_s:,.0f} GB/s read (sized by {d.storage.sized_by})",
            ),
        ],
    )


def _cost(d: Design, economics: Economics | None) -> Table:
    c = d.cost
    rows = [(f"capex {k}", money(v)) for k, v in c.capex_by_category_usd.items()]
    opex = ", ".join(f"{k} {money(v)}" for k, v in c.opex_by_category_per_year_usd.items() if v)
    rows += [
        ("capex total", f"{money(c.capex_usd)} ({money(c.capex_per_gpu_usd)} per GPU)"),
        ("opex per year", f"{money(c.opex_per_year_usd)}: {opex}"),
        ("residual value", _residual(d)),
        (
            f"build, {c.years:g} years",
            f"{money(c.build_total_usd)} = capex + {c.years:g} x opex - residual = "
            f"{money(c.effective_build_usd_per_gpu_hour)}/GPU-h",
        ),
        (
            "rent, reserved",
            f"{money(c.rent.reserved_total_usd)} at {money(c.rent.reserved_usd_per_gpu_hour)}"
            f"/GPU-h, {c.rent.reserved_term_years:g}-year terms, every hour billed",
        ),
        (
            "rent, on-demand",
            f"{money(c.rent.on_demand_total_usd)} at "
            f"{money(c.rent.on_demand_usd_per_gpu_hour)}/GPU-h, used hours only",
        ),
        ("payback", payback_text(c)),
        (f"NPV at {pct(c.discount_rate)}", npv_text(c)),
        ("verdict", _verdict(c, economics)),
    ]
    return _kv("Cost and TCO", rows)


def _residual(d: Design) -> str:
    """The value left at the end, subtracted from the build total, and its two parts."""
    c, e = d.cost, d.spec.economics
    hardware = f"{e.residual_fraction:.0%} of hardware {money(c.hardware_residual_usd)}"
    if not c.datacenter_capex_usd:
        return f"-{money(c.residual_usd)} at the end: {hardware}"
    left = c.building_residual_usd / c.datacenter_capex_usd
    return (
        f"-{money(c.residual_usd)} at the end: {left:.0%} of the building "
        f"{money(c.building_residual_usd)} ({c.years:g} of {e.datacenter_life_years:g} years "
        f"used), {hardware}"
    )


def _verdict(c: CostDesign, economics: Economics | None) -> str:
    break_even = ""
    if economics and economics.break_even_gpus:
        break_even = f", wins from about {economics.break_even_gpus:,} GPUs"
    elif economics and economics.break_even_searched:
        break_even = f", wins at no size up to {BREAK_EVEN_MAX_GPUS:,} GPUs"
    return (
        ("build" if c.build_wins else "rent")
        + f" against {c.rent_basis} rent (prices {c.rent.price_date}); building beats "
        f"on-demand above {pct(c.break_even_utilization)} utilization" + break_even
    )


def _findings(d: Design) -> Table:
    table = Table(title="Findings", title_justify="left")
    table.add_column("severity", no_wrap=True)
    table.add_column("rule", no_wrap=True)
    table.add_column("message")
    for f in d.findings:
        table.add_row(
            Text(f.severity, style=SEVERITY_STYLE[f.severity]),
            Text(f.id),
            Text(f"{f.message}. Fix: {f.fix}."),
        )
    return table


def design_tables(design: Design, economics: Economics | None = None) -> Group:
    return Group(
        _compute(design),
        "",
        _fabric(design),
        "",
        _cabling(design),
        "",
        _facility(design),
        "",
        _cost(design, economics),
        "",
        _findings(design),
    )


def print_design(design: Design, console: Console | None = None) -> None:
    (console or Console()).print(design_tables(design))


def print_plan(assessment: Assessment, written: list[Path], console: Console) -> None:
    """``plan``'s summary: the design's tables, its expected performance, the files written."""
    console.print(design_tables(assessment.design, assessment.economics))
    print_expected_performance(assessment, console)
    if written:
        line = Text("wrote ", style="green") + Text(", ".join(str(p) for p in written))
        console.print(line)


def print_expected_performance(assessment: Assessment, console: Console) -> None:
    """The workload's predicted step, MFU and time to train, and with failures."""
    perf = assessment.performance
    if not isinstance(perf, ExpectedPerformance):
        reason = Text(perf.reason if perf else "not assessed")
        console.print(Text("expected performance unavailable: ", style="yellow") + reason)
        return
    p = perf.prediction
    rows = [
        ("workload", f"{p.model_id}, plan {parallel_label(p.plan)}"),
        ("step time", f"{p.step_time_s:.2f} s"),
        ("throughput", f"{p.tokens_per_s:,.0f} tokens/s ({p.tokens_per_s_per_gpu:,.0f} per GPU)"),
        ("MFU / HFU", f"{p.mfu:.1%} / {p.hfu:.1%}"),
        (
            "memory per GPU",
            f"{p.memory_per_gpu_gib:.1f} GiB ({'fits' if p.fits else 'does NOT fit'})",
        ),
        (
            "time to train",
            f"{perf.time_to_train_days:.1f} days for {perf.tokens_to_train / 1e9:,.0f}B tokens",
        ),
    ]
    if isinstance(assessment.goodput, GoodputOutlook):
        rows += _goodput_rows(assessment.goodput)
    console.print(_kv("Expected training performance (clusterforge predict)", rows))
    if isinstance(assessment.spare_options, tuple):
        console.print(_spare_options(assessment.spare_options))


def _spare_options(options: tuple[SpareOption, ...]) -> Table:
    """Each way to hold spares: what it adds to capex and what the job's ETTR becomes."""
    table = Table(title="Spares, each way to hold them", title_justify="left")
    for col in ("spares", "held", "capex", "ETTR", "expected days"):
        table.add_column(col, justify="left" if col in ("spares", "held") else "right")
    for o in options:
        mode = f"{o.mode} (as designed)" if o.as_designed else o.mode
        delta = "" if o.as_designed else f" ({money_delta(o.capex_delta_usd)})"
        cells = (mode, o.summary, f"{money(o.capex_usd)}{delta}")
        table.add_row(
            *(Text(c) for c in cells), Text(f"{o.ettr:.1%}"), Text(f"{o.expected_days:,.1f}")
        )
    return table


def _goodput_rows(g: GoodputOutlook) -> list[tuple[str, str]]:
    """Time to train with failures (clusterforge goodput)."""
    exp = g.report.expected
    return [
        (
            "with failures",
            f"{g.expected_days:.1f} days expected (P50 {g.p50_days:.1f}, P90 "
            f"{g.p90_days:.1f}), ETTR {exp.ettr:.1%}",
        ),
        (
            "interruptions",
            f"{exp.interruptions_per_day:.2f} per day; a checkpoint of {exp.checkpoint_s:.1f} s "
            f"every {interval_label(exp)}",
        ),
        (
            "lost time",
            ", ".join(
                f"{name.split(' (')[0]} {days:.2f}" for name, days, _ in lost_rows(g.report)[:-1]
            )
            + " days",
        ),
    ]
