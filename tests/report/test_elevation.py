"""Rack elevations (racks.svg): racks in lines by floor row, every racked device at its U,
titles with kW, a legend of device kinds and switch roles; truncated with a note when large."""

from __future__ import annotations

import pytest

from clusterforge.design import plan
from clusterforge.report.elevation import U_IN, elevation_picture, elevation_svg, rack_lines
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES
from tests.report.pictures import ids, png_size, points, svg_root, texts

PT_PER_IN = 72  # matplotlib's SVG unit is the point


@pytest.fixture(scope="module")
def colo():
    return plan(load_spec(EXAMPLES / "colo-512-h100.yaml"))


@pytest.fixture(scope="module")
def colo_svg(colo):
    return svg_root(elevation_svg(colo))


def test_one_line_per_floor_row_with_every_rack(colo, colo_svg):
    rows = sorted({r.row for r in colo.racks})
    assert len(colo.racks) <= 96 and all(
        sum(r.row == row for r in colo.racks) <= 16 for row in rows
    )  # the example fits whole: one line per floor row
    assert ids(colo_svg, "rack-line-") == [f"rack-line-{n}" for n in range(1, len(rows) + 1)]
    assert ids(colo_svg, "rack-r") == [f"rack-{r.name}" for r in colo.racks]
    words = texts(colo_svg)
    assert [f"row {row}" for row in rows] == [w for w in words if w.startswith("row ")]
    assert f"colo-512-h100: {len(colo.racks)} racks, front view" in words


def test_every_racked_device_is_drawn_at_its_height(colo, colo_svg):
    expected = [f"device-{r.name}-{d.name}" for r in colo.racks for d in r.devices if d.u_height]
    assert ids(colo_svg, "device-") == expected
    node = next(d for d in colo.racks[0].devices if d.kind == "node")
    ys = [y for _, y in points(colo_svg, f"device-{colo.racks[0].name}-{node.name}")]
    height_pt = max(ys) - min(ys)
    assert height_pt == pytest.approx((node.u_height - 0.12) * U_IN * PT_PER_IN, abs=0.01)


def test_racks_are_titled_with_their_draw_and_u_positions_labelled(colo, colo_svg):
    words = texts(colo_svg)
    for rack in colo.racks:
        assert f"{rack.max_kw:.1f} kW" in words
    assert {"U1", "U6", "U48"} <= set(words)
    # the legend: device kinds, switches by fabric role
    assert {"node", "leaf switch", "spine switch", "patch-panel"} <= set(words)


def test_long_rows_wrap_onto_the_next_line(colo):
    lines = rack_lines(colo, max_racks=100, racks_per_line=10)
    assert [r.name for ln in lines for r in ln.racks] == [r.name for r in colo.racks]
    assert all(len(ln.racks) <= 10 and {f"row {r.row}" for r in ln.racks} == {ln.label}
               for ln in lines)  # fmt: skip
    assert {n for ln in lines for n in ln.alike} == {1}


def _look(rack) -> tuple:
    """A rack from the front: its role and its devices (with their roles) at their U."""
    return (rack.role, *((d.u_position, d.u_height, d.kind, d.role) for d in rack.devices))


def test_a_large_design_shows_one_rack_of_each_layout(colo):
    lines = rack_lines(colo, max_racks=50, racks_per_line=4)  # 76 racks: more than 50
    drawn = [r for ln in lines for r in ln.racks]
    alike = [n for ln in lines for n in ln.alike]
    assert sum(alike) == len(colo.racks) and max(alike) > 1
    assert len({_look(r) for r in drawn}) == len(drawn)  # each layout once
    gpu = next(i for i, r in enumerate(drawn) if r.role == "gpu")
    assert alike[gpu] == sum(1 for r in colo.racks if _look(r) == _look(drawn[gpu]))
    words = texts(svg_root(elevation_picture(colo, max_racks=50)))
    title = f"colo-512-h100: one rack of each of {len(drawn)} layouts, covering 76 of 76 racks"
    assert any(w.startswith(title) for w in words)
    assert f"+{alike[gpu] - 1:,} alike" in words


def test_layouts_beyond_the_limit_are_left_out_with_a_note(colo):
    root = svg_root(elevation_picture(colo, max_racks=3))
    assert len(ids(root, "rack-r")) == 3
    title = next(w for w in texts(root) if w.startswith("colo-512-h100: "))
    assert "one rack of each of 3 layouts" in title and "(racks.csv lists all)" in title


def test_nvl72_racks_name_their_nvlink_domain():
    design = plan(load_spec(EXAMPLES / "gb200-nvl72-pod.yaml"))
    words = texts(svg_root(elevation_svg(design, max_racks=3)))
    assert "(NVLink 1)" in words and "nvlink switch" in words


def test_elevation_is_the_same_file_on_every_run_in_any_format(colo):
    assert elevation_svg(colo, max_racks=20) == elevation_svg(colo, max_racks=20)
    png = elevation_picture(colo, "png", max_racks=20)
    assert png == elevation_picture(colo, "png", max_racks=20)
    width_px, height_px = png_size(png)
    assert width_px > height_px  # two lines of 16 racks: wider than tall
