"""Regenerate the golden files: ``python -m tests.generate.regen_golden`` (from the repo root).

The golden design is tests/generate/specs/lab-leaf-spine.yaml (InfiniBand; every target, under
golden/); the RoCE design tests/generate/specs/roce-rail-optimized.yaml adds its monitoring files
under ``golden-roce/`` (its alert rules read other counters); the rack-scale one
tests/generate/specs/gb200-nvl72.yaml its Slurm files for each Slurm release in
RACK_SCALE_VERSIONS, under ``golden-nvl72/slurm-<version>/``.  Review the diff before
committing: a changed golden file is a changed generated file for every user.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from clusterforge.design import Design, plan
from clusterforge.generate import GeneratedFile, render, write_files
from clusterforge.spec import SlurmSpec, SlurmVersion, load_spec

GOLDEN = Path(__file__).parent / "golden"
SPEC = Path(__file__).parent / "specs" / "lab-leaf-spine.yaml"
GOLDEN_ROCE = Path(__file__).parent / "golden-roce"
ROCE_SPEC = Path(__file__).parent / "specs" / "roce-rail-optimized.yaml"
ROCE_TARGETS = ["monitoring"]
GOLDEN_RACK_SCALE = Path(__file__).parent / "golden-nvl72"
SPEC_RACK_SCALE = Path(__file__).parent / "specs" / "gb200-nvl72.yaml"
# Debian 12's Slurm (tree topology, no IMEX plugin) and the current one (blocks, IMEX).
RACK_SCALE_VERSIONS: tuple[SlurmVersion, ...] = ("22.05", "25.11")


def rack_scale_design(version: SlurmVersion) -> Design:
    spec = load_spec(SPEC_RACK_SCALE)
    return plan(spec.model_copy(update={"slurm": SlurmSpec(version=version)}))


def rack_scale_files(version: SlurmVersion) -> list[GeneratedFile]:
    """The Slurm files of the rack-scale design, paths under ``slurm-<version>/``."""
    files = render(rack_scale_design(version), ["slurm"])
    return [
        GeneratedFile(f"slurm-{version}/{f.path.removeprefix('slurm/')}", f.content, f.mode)
        for f in files
    ]


def main() -> None:
    shutil.rmtree(GOLDEN, ignore_errors=True)
    files = write_files(render(plan(load_spec(SPEC))), GOLDEN)
    print(f"wrote {len(files)} golden files under {GOLDEN}")
    shutil.rmtree(GOLDEN_ROCE, ignore_errors=True)
    files = write_files(render(plan(load_spec(ROCE_SPEC)), ROCE_TARGETS), GOLDEN_ROCE)
    print(f"wrote {len(files)} golden files under {GOLDEN_ROCE}")
    shutil.rmtree(GOLDEN_RACK_SCALE, ignore_errors=True)
    for version in RACK_SCALE_VERSIONS:
        files = write_files(rack_scale_files(version), GOLDEN_RACK_SCALE)
        print(f"wrote {len(files)} golden files under {GOLDEN_RACK_SCALE}/slurm-{version}")


if __name__ == "__main__":
    main()
