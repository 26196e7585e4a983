"""Charts drawn with matplotlib: busbw against size, build vs rent, time to train. Each is
a valid picture in the format asked, carries its data, labels and legend, and is the same
file on every run."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.errors import SpecError
from clusterforge.report.figure_file import picture_format
from clusterforge.report.files import tco_svg
from clusterforge.report.format import money
from clusterforge.report.plots import Series, busbw_chart, size_label, tco_chart
from clusterforge.spec import default_spec
from tests.conftest import EXAMPLES
from tests.report.pictures import ids, png_size, points, svg_root, texts

SRC = Path(__file__).resolve().parents[2] / "src" / "clusterforge"
SIZES = [2**20, 2**24, 2**30]


@pytest.fixture(scope="module")
def design():
    return plan(default_spec())


def test_busbw_chart_draws_each_series_with_higher_bandwidth_higher():
    svg = busbw_chart(
        "all_reduce", [Series("a", SIZES, [1, 10, 20]), Series("b", SIZES, [1, 20, 40])]
    )
    root = svg_root(svg)
    assert ids(root, "series-") == ["series-1", "series-2"]
    a, b = points(root, "series-1"), points(root, "series-2")
    assert [x for x, _ in a] == sorted(x for x, _ in a)  # by message size
    assert b[-1][1] < a[-1][1]  # SVG y grows downwards: b's 40 GB/s sits above a's 20
    # equal steps in log2(size): 2^20 -> 2^24 is 4/10 of 2^20 -> 2^30
    assert (a[1][0] - a[0][0]) / (a[2][0] - a[0][0]) == pytest.approx(0.4, abs=1e-3)
    words = texts(root)
    assert {"message size", "busbw (GB/s)", "all_reduce", "a", "b"} <= set(words)
    assert {"1 MiB", "1 GiB"} <= set(words)


def test_size_labels_are_binary_units():
    assert [size_label(s) for s in (512, 2**10, 3 * 2**20, 2**33)] == [
        "512 B", "1 KiB", "3 MiB", "8 GiB"
    ]  # fmt: skip


@pytest.mark.parametrize("fmt", ["svg", "png", "pdf"])
def test_charts_are_the_same_file_on_every_run(design, fmt):
    series = [Series("a", SIZES, [1, 10, 20])]
    assert busbw_chart("t", series, fmt) == busbw_chart("t", series, fmt)
    assert tco_chart(design, fmt) == tco_chart(design, fmt)


def test_picture_format_follows_the_extension():
    assert [picture_format(p) for p in ("a.svg", "b.PNG", "c/d.pdf")] == ["svg", "png", "pdf"]
    for bad in ("chart.jpg", "chart"):
        with pytest.raises(SpecError, match=r"\.svg, \.png or \.pdf"):
            picture_format(bad)


def test_tco_chart_ends_at_the_cost_model_totals(design):
    root = svg_root(tco_svg(design))
    words = texts(root)
    assert f"build: {money(design.cost.build_total_usd)}" in words
    assert f"rent ({design.cost.rent_basis}): {money(design.cost.rent_total_usd)}" in words
    assert {"years", "cumulative cost ($M)"} <= set(words)
    build, rent = points(root, "series-1"), points(root, "series-2")
    assert build[0][1] < rent[0][1]  # capex up front: building starts above renting's zero
    assert rent[0][1] > rent[-1][1]  # renting grows from zero
    # the resale at the end: a vertical drop at the last year, down to the build total
    assert build[-1][0] == build[-2][0] and build[-1][1] > build[-2][1]


@pytest.mark.parametrize(("name", "check"), [
    ("chart.svg", lambda data: ids(svg_root(data), "series-") == ["series-1", "series-2"]),
    ("chart.png", lambda data: png_size(data)[0] > 600),
    ("chart.pdf", lambda data: data.startswith(b"%PDF")),
])  # fmt: skip
def test_simulate_writes_the_chart_in_the_format_of_its_name(tmp_path, capsys, name, check):
    out = tmp_path / name
    a, b = EXAMPLES / "seed-design-a.yaml", EXAMPLES / "seed-design-b.yaml"
    code = main(
        ["simulate", str(a), "--vs", str(b), "--size", "64MiB", "--json", "--plot", str(out)]
    )
    assert code == 0
    assert check(out.read_bytes())
    if name.endswith(".svg"):
        assert {"seed-design-a", "seed-design-b"} <= set(texts(svg_root(out.read_bytes())))


def test_simulate_refuses_an_unknown_picture_format_before_simulating(tmp_path, capsys):
    out = tmp_path / "chart.jpg"
    assert main(["simulate", "--size", "1GiB", "--plot", str(out)]) == 1
    err = capsys.readouterr().err
    assert "'jpg'" in err and ".png" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_time_to_train_histogram(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "num_gpus: 64\nnode: dgx-h100\nworkload: {model: llama3-8b, tensor_parallel: 1}\n"
    )
    out = tmp_path / "ttt.svg"
    args = ["goodput", str(spec), "--days", "5", "--runs", "50", "--json", "--plot"]
    assert main([*args, str(out)]) == 0
    root = svg_root(out.read_bytes())
    assert len(ids(root, "bar-")) == 30
    assert ids(root, "expected") == ["expected"] and ids(root, "p90") == ["p90"]
    words = texts(root)
    assert {"time to train (days)", "lives", "50 simulated lives"} <= set(words)
    assert any(w.startswith("expected: ") and w.endswith(" days") for w in words)
    png = tmp_path / "ttt.png"
    assert main([*args, str(png)]) == 0
    assert png_size(png.read_bytes())[0] > 600


def test_no_module_builds_svg_by_hand():
    """Pictures come from matplotlib (files and the HTML report), not strings."""
    hand_drawn = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if any(tag in path.read_text(encoding="utf-8") for tag in ("<svg", "<polyline", "<rect "))
    ]
    assert hand_drawn == []
