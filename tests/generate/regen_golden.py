"""Regenerate the golden files: ``python -m tests.generate.regen_golden`` (from the repo root).

The golden design is tests/generate/specs/lab-leaf-spine.yaml (InfiniBand), every target; the
RoCE design tests/generate/specs/roce-rail-optimized.yaml adds its monitoring files under
``golden-roce/`` (its alert rules read other counters).  Review the diff before committing: a
changed golden file is a changed generated file for every user.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from clusterforge.design import plan
from clusterforge.generate import render, write_files
from clusterforge.spec import load_spec

GOLDEN = Path(__file__).parent / "golden"
SPEC = Path(__file__).parent / "specs" / "lab-leaf-spine.yaml"
GOLDEN_ROCE = Path(__file__).parent / "golden-roce"
ROCE_SPEC = Path(__file__).parent / "specs" / "roce-rail-optimized.yaml"
ROCE_TARGETS = ["monitoring"]


def main() -> None:
    shutil.rmtree(GOLDEN, ignore_errors=True)
    files = write_files(render(plan(load_spec(SPEC))), GOLDEN)
    print(f"wrote {len(files)} golden files under {GOLDEN}")
    shutil.rmtree(GOLDEN_ROCE, ignore_errors=True)
    files = write_files(render(plan(load_spec(ROCE_SPEC)), ROCE_TARGETS), GOLDEN_ROCE)
    print(f"wrote {len(files)} golden files under {GOLDEN_ROCE}")


if __name__ == "__main__":
    main()
