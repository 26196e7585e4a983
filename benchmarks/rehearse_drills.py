"""Time each drill of ``clusterforge rehearse`` on this machine (needs root, slurm-wlm, munge,
prometheus).  Prints per drill: verdict, time taken, time to detect, drain and recover.

    python benchmarks/rehearse_drills.py [SPEC] [--nodes N] [--drills bring-up,xid,...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from clusterforge.rehearse.model import DRILLS, RehearseOptions
from clusterforge.rehearse.run import rehearse

SPEC = "name: rehearse-bench\nnum_gpus: 32\nnode: dgx-h100\nnetwork: {topology: rail-optimized}\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("spec", nargs="?", type=Path)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--drills", default=",".join(DRILLS))
    args = parser.parse_args()
    spec = args.spec
    if spec is None:
        spec = Path(tempfile.mkdtemp()) / "spec.yaml"
        spec.write_text(SPEC)
    drills = tuple(d for d in DRILLS if d in args.drills.split(","))
    start = time.monotonic()

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - start:6.1f} s] {message}", flush=True)

    options = RehearseOptions(spec=spec, num_nodes=args.nodes, drills=drills)
    report = rehearse(options, progress)
    print(f"{len(report.nodes)} nodes, {time.monotonic() - start:.1f} s in all")
    print(
        f"{'drill':<10} {'verdict':<7} {'took_s':>7} {'detect_s':>8} {'drain_s':>8} {'recover_s':>9}"
    )
    for d in report.drills:
        cells = [f"{v:.1f}" if v is not None else "-" for v in (d.detect_s, d.drain_s, d.recover_s)]
        print(
            f"{d.name:<10} {d.verdict:<7} {d.duration_s:>7.1f} {cells[0]:>8} {cells[1]:>8} {cells[2]:>9}"
        )
    for d in report.drills:
        print(f"\n{d.name}:", *d.evidence, sep="\n  ")


if __name__ == "__main__":
    main()
