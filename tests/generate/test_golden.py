"""Golden files: every generator on the lab design, and the monitoring files of the RoCE design,
byte for byte.

Regenerate with ``python -m tests.generate.regen_golden`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.design import Design, plan
from clusterforge.generate import TARGETS, render
from clusterforge.spec import SlurmVersion, load_spec
from tests.generate.regen_golden import (
    GOLDEN_RACK_SCALE,
    GOLDEN_ROCE,
    RACK_SCALE_VERSIONS,
    ROCE_SPEC,
    ROCE_TARGETS,
    rack_scale_files,
)

GOLDEN = Path(__file__).parent / "golden"


def _golden_paths() -> list[str]:
    return sorted(str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*") if p.is_file())


def test_every_target_has_golden_files() -> None:
    tops = {path.split("/")[0] for path in _golden_paths()}
    assert tops == set(TARGETS)


def test_generated_paths_match_golden(lab_design: Design) -> None:
    assert sorted(f.path for f in render(lab_design)) == _golden_paths()


@pytest.mark.parametrize("path", _golden_paths())
def test_generated_file_matches_golden(path: str, lab_design: Design) -> None:
    files = {f.path: f for f in render(lab_design)}
    assert path in files, f"{path} is no longer generated"
    expected = (GOLDEN / path).read_text(encoding="utf-8")
    assert files[path].content == expected, f"{path} differs; see tests/generate/regen_golden.py"
    if path.endswith((".sh", ".sbatch")):
        assert files[path].mode == 0o755


def _roce_golden_paths() -> list[str]:
    return sorted(str(p.relative_to(GOLDEN_ROCE)) for p in GOLDEN_ROCE.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def roce_files() -> dict[str, str]:
    design = plan(load_spec(ROCE_SPEC))
    return {f.path: f.content for f in render(design, ROCE_TARGETS)}


def test_roce_generated_paths_match_golden(roce_files: dict[str, str]) -> None:
    assert sorted(roce_files) == _roce_golden_paths()


@pytest.mark.parametrize("path", _roce_golden_paths())
def test_roce_generated_file_matches_golden(path: str, roce_files: dict[str, str]) -> None:
    expected = (GOLDEN_ROCE / path).read_text(encoding="utf-8")
    assert roce_files.get(path) == expected, f"{path} differs; see tests/generate/regen_golden.py"


def _rack_scale_golden_paths() -> list[str]:
    return sorted(
        str(p.relative_to(GOLDEN_RACK_SCALE)) for p in GOLDEN_RACK_SCALE.rglob("*") if p.is_file()
    )


@pytest.mark.parametrize("version", RACK_SCALE_VERSIONS)
def test_rack_scale_slurm_files_match_golden(version: SlurmVersion) -> None:
    """GB200 NVL72 Slurm files per target release: blocks and IMEX on 25.11, tree on 22.05."""
    files = {f.path: f for f in rack_scale_files(version)}
    golden = [p for p in _rack_scale_golden_paths() if p.startswith(f"slurm-{version}/")]
    assert sorted(files) == golden
    for path in golden:
        expected = (GOLDEN_RACK_SCALE / path).read_text(encoding="utf-8")
        assert files[path].content == expected, f"{path} differs; see regen_golden.py"
