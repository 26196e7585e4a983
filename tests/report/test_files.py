"""plan's output files: readable numbers, strict JSON, all or nothing."""

from __future__ import annotations

import json

import pytest

from clusterforge.design import plan
from clusterforge.errors import SpecError
from clusterforge.report.files import design_json, render_findings_md, write_atomically
from clusterforge.spec import default_spec


@pytest.fixture(scope="module")
def design():
    return plan(default_spec())


def test_findings_numbers_have_no_float_noise(design):
    text = render_findings_md(design)
    assert "99999999" not in text and "00000001" not in text
    numbers = [v for f in design.findings for v in f.numbers.values() if isinstance(v, float)]
    assert numbers, "the default design has findings with numbers"


def test_design_json_is_strict_json(design):
    text = design_json(design, {"expected_performance": {"available": False}})
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in design.json"))


def test_nothing_is_written_when_the_target_is_a_file(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(SpecError, match="is not a folder"):
        write_atomically(target, {"a.txt": "a"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_folder_is_created_but_never_its_parents(tmp_path):
    assert write_atomically(tmp_path / "out", {"sub/a.txt": "a"}) == [tmp_path / "out/sub/a.txt"]
    with pytest.raises(SpecError, match="create it first"):
        write_atomically(tmp_path / "no" / "out", {"a.txt": "a"})
    with pytest.raises(SpecError, match="does not exist"):
        write_atomically(tmp_path / "absent", {"a.txt": "a"}, create=False)


def test_pictures_are_written_as_bytes_with_the_text_files(tmp_path):
    png = b"\x89PNG\r\n\x1a\n\x00\xff"
    written = write_atomically(tmp_path / "out", {"a.png": png, "b.txt": "b"})
    assert [p.read_bytes() for p in written] == [png, b"b"]


def test_plan_pictures_are_svg_with_their_content(design):
    from clusterforge.assess import QUICK, assess
    from clusterforge.report.files import plan_files
    from tests.report.pictures import ids, svg_root

    files = plan_files(assess(design, QUICK))
    racks, tco = svg_root(files["racks.svg"]), svg_root(files["tco.svg"])
    assert ids(racks, "rack-line-") and ids(tco, "series-") == ["series-1", "series-2"]
