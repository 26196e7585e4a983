"""Streamed files: CSV batches, atomic writes of files rendered while written, progress, and
the inventory reading the design's own catalog."""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from clusterforge.catalog import Table, load_catalog
from clusterforge.cli.main import main
from clusterforge.design import Design, plan
from clusterforge.errors import GenerateError
from clusterforge.generate import render, write_files
from clusterforge.generate import streamed as streamed_module
from clusterforge.generate.bundle import generate
from clusterforge.generate.common import GeneratedFile
from clusterforge.generate.inventory.files import INVENTORY_FILES
from clusterforge.generate.inventory.ports import occurrences
from clusterforge.generate.streamed import StreamedFile, csv_chunks, csv_file
from clusterforge.spec import load_spec
from tests.generate.conftest import GOLDEN_SPEC


def test_csv_chunks_are_batches_of_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streamed_module, "CSV_BATCH_ROWS", 3)
    rows = [(f"dev-{i}", f"a,b {i}", i) for i in range(7)]
    chunks = list(csv_chunks(("device", "description", "n"), rows))
    assert len(chunks) == 4  # 3 + 3 + 1 rows (the header rides in the first)
    assert list(csv.reader(io.StringIO("".join(chunks)))) == [
        ["device", "description", "n"],
        *([a, b, str(n)] for a, b, n in rows),
    ]


def test_a_row_that_does_not_match_its_header_fails() -> None:
    with pytest.raises(ValueError, match="does not match the header"):
        list(csv_chunks(("a", "b"), [("only one",)]))


def test_inventory_files_are_streamed_and_read_nothing_until_written(
    lab_design: Design,
) -> None:
    files = render(lab_design, ["inventory"])
    assert all(isinstance(f, StreamedFile) for f in files)
    assert [f.path for f in files] == [f"inventory/{name}" for name, *_ in INVENTORY_FILES]


def _failing_rows() -> Iterator[tuple[str]]:
    yield ("first row",)
    raise GenerateError("bad name in the middle of a file")


def test_an_error_while_streaming_leaves_the_output_untouched(tmp_path: Path) -> None:
    write_files([GeneratedFile("inventory/old.csv", "kept\n")], tmp_path)
    broken = csv_file("inventory/01.csv", ("a",), _failing_rows)
    with pytest.raises(GenerateError, match="middle of a file"):
        write_files([GeneratedFile("slurm/x.conf", "x\n"), broken], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inventory"]
    assert (tmp_path / "inventory" / "old.csv").read_text() == "kept\n"
    assert not (tmp_path / "inventory" / "01.csv").exists()


def test_streamed_and_in_memory_text_are_the_same(lab_design: Design, tmp_path: Path) -> None:
    files = render(lab_design, ["inventory"])
    write_files(files, tmp_path)
    for f in files:
        assert (tmp_path / f.path).read_text(encoding="utf-8") == f.content, f.path


def test_generate_reports_progress_for_every_file(lab_design: Design, tmp_path: Path) -> None:
    steps: list[tuple[str, int, int | None]] = []

    def progress(what: str, *, done: int, total: int | None) -> None:
        steps.append((what, done, total))

    written = generate(lab_design, tmp_path, ["slurm", "inventory"], progress=progress)
    writes = [s for s in steps if s[0].startswith("writing ")]
    assert [w[1] for w in writes] == list(range(len(written)))
    assert {w[2] for w in writes} == {len(written)}
    assert ("rendering inventory", 0, None) in steps
    assert steps[-1] == ("done", len(written), len(written))


def test_cli_prints_progress_on_stderr_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["generate", str(GOLDEN_SPEC), "-o", str(tmp_path), "--only", "inventory"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("wrote 14 files") and "writing" not in out


def test_inventory_uses_the_catalog_the_design_was_planned_with() -> None:
    """A custom catalog's manufacturer reaches the device types, not the packaged one's."""
    catalog = load_catalog()
    spec = load_spec(GOLDEN_SPEC)
    node_id = plan(spec).compute.node.id
    node = catalog.nodes[node_id]
    rows = {**catalog.nodes.rows, node_id: node.model_copy(update={"manufacturer": "Acme"})}
    custom = dataclasses.replace(catalog, nodes=Table(catalog.nodes.kind, rows))
    files = {f.path: f.content for f in render(plan(spec, custom), ["inventory"])}
    types = list(csv.DictReader(io.StringIO(files["inventory/03-device-types.csv"])))
    assert {t["manufacturer"] for t in types if t["model"] == node.name} == {"Acme"}
    makers = list(csv.DictReader(io.StringIO(files["inventory/01-manufacturers.csv"])))
    assert "Acme" in {m["name"] for m in makers}


def test_switch_ports_count_each_switch_in_link_order() -> None:
    ids = np.array([5, 7, 5, 5, 2, 7])
    assert occurrences(ids).tolist() == [1, 1, 2, 3, 1, 2]
    assert occurrences(np.array([], dtype=np.int64)).tolist() == []
