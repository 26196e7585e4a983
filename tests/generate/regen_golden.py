"""Regenerate the golden files: ``python -m tests.generate.regen_golden`` (from the repo root).

The golden design is tests/generate/specs/lab-leaf-spine.yaml.  Review the diff before
committing: a changed golden file is a changed generated file for every user.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from clusterforge.design import plan
from clusterforge.generate import render, write_files
from clusterforge.spec import load_spec

GOLDEN = Path(__file__).parent / "golden"
SPEC = Path(__file__).parent / "specs" / "lab-leaf-spine.yaml"


def main() -> None:
    shutil.rmtree(GOLDEN, ignore_errors=True)
    files = write_files(render(plan(load_spec(SPEC))), GOLDEN)
    print(f"wrote {len(files)} golden files under {GOLDEN}")


if __name__ == "__main__":
    main()
