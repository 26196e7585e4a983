"""``clusterforge report OPTIMIZE_SPEC``: one page with the front's chart, a table row per
front point, the winner and why, the search's counts and each point's spec as YAML that
``plan`` reads; in a browser, no console message; with --pdf, a PDF."""

from __future__ import annotations

import html
import re
import shutil

import pytest
import yaml

from clusterforge.cli.main import main
from clusterforge.design import plan
from clusterforge.spec import parse_spec
from tests.conftest import EXAMPLES
from tests.optimize_specs import SMALL_OPTIMIZE
from tests.web.browser import open_page

SMALL = {"name": "small-front", **SMALL_OPTIMIZE}
FRONT_ROW = re.compile(r"<tr><td class=\"num\">(\d+)</td><td>([^<]*)</td>")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The page of the small search, and the front as ``optimize --json`` gives it."""
    folder = tmp_path_factory.mktemp("optimize-report")
    spec = folder / "small.yaml"
    spec.write_text(yaml.safe_dump(SMALL), encoding="utf-8")
    out = folder / "front.html"
    assert main(["report", str(spec), "-o", str(out), "--workers", "1"]) == 0
    return out


def _section(text: str, section_id: str) -> str:
    start = text.index(f'<section id="{section_id}">')
    return text[start : text.index("</section>", start)]


def test_page_has_the_chart_a_row_per_front_point_and_the_winner(page, capsys):
    from clusterforge.assess.optimize import optimize, parse_optimize_spec

    result = optimize(parse_optimize_spec(SMALL))
    assert len(result.front) >= 2  # the test needs a front of several points
    text = page.read_text(encoding="utf-8")
    front = _section(text, "front")
    assert "<svg" in front and 'id="c' in front and "-front" in front  # the front's line
    rows = FRONT_ROW.findall(front)
    assert [int(i) for i, _ in rows] == list(range(1, len(result.front) + 1))
    assert [html.unescape(label) for _, label in rows] == [p.label() for p in result.front]
    winner = html.unescape(_section(text, "winner"))
    assert result.reasoning is not None
    assert f"the winner is {result.reasoning.winner.label()}" in winner
    assert f"The runner-up lacks: {result.reasoning.runner_up_lacks}" in winner
    search = _section(text, "search")
    assert f"searched {result.counts.families} families" in search
    assert "dominated by their bounds" in search


def test_each_front_points_yaml_plans(page):
    specs = re.findall(r"<pre>(.*?)</pre>", _section(page.read_text(encoding="utf-8"), "specs"),
                       flags=re.S)  # fmt: skip
    assert len(specs) == len(FRONT_ROW.findall(page.read_text(encoding="utf-8")))
    design = plan(parse_spec(yaml.safe_load(html.unescape(specs[0])), "front-1.yaml"))
    assert design.compute.num_training_gpus in (8, 32)


def test_vs_with_an_optimize_spec_is_a_clear_error(page, capsys):
    spec = page.parent / "small.yaml"
    out = page.parent / "pair.html"
    assert main(["report", str(spec), "--vs", str(spec), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "--vs" in err and "optimize spec" in err and "Traceback" not in err
    assert not out.exists()
    lab = str(EXAMPLES / "lab-8-gpu.yaml")
    assert main(["report", lab, "--vs", str(spec), "-o", str(out), "--no-studies"]) == 1
    assert "--vs takes a cluster spec" in capsys.readouterr().err


def test_a_bad_optimize_spec_names_its_field(tmp_path, capsys):
    spec = tmp_path / "bad.yaml"
    spec.write_text(yaml.safe_dump({**SMALL, "objective": "fastest"}), encoding="utf-8")
    assert main(["report", str(spec), "-o", str(tmp_path / "x.html"), "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert "objective" in err and "Traceback" not in err


@pytest.mark.system
def test_page_opens_in_chromium_without_console_messages(page):
    run = open_page(page.as_uri())
    assert run.console == []
    assert 'id="specs"' in run.dom and "<pre>" in run.dom


@pytest.mark.system
def test_pdf_prints_the_page(page):
    if not shutil.which("chromium"):
        pytest.skip("headless Chromium is not installed (Debian package 'chromium')")
    spec = page.parent / "small.yaml"
    out = page.parent / "printed.html"
    assert main(["report", str(spec), "-o", str(out), "--workers", "1", "--pdf"]) == 0
    pdf = out.with_suffix(".pdf")
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 10_000
