"""Snapshot the outputs of plan, simulate, predict and generate on every example.

Refactors must leave these unchanged except for deliberate fixes; run it before and after,
then diff the two folders::

    python scripts/snapshot_outputs.py /tmp/before
    ... change the code ...
    python scripts/snapshot_outputs.py /tmp/after
    diff -r /tmp/before /tmp/after
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.yaml"))
COMMANDS = {
    "plan.json": ["plan", "{spec}", "--json"],
    "simulate.json": ["simulate", "{spec}", "--size", "1GiB", "--json"],
    "predict.json": ["predict", "{spec}", "--json"],
}


def _run(args: list[str], out: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "clusterforge.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    out.write_text(f"exit {proc.returncode}\n{proc.stdout}\n--- stderr\n{proc.stderr}")


def main(target: str) -> None:
    root = Path(target)
    shutil.rmtree(root, ignore_errors=True)
    for spec in EXAMPLES:
        folder = root / spec.stem
        folder.mkdir(parents=True)
        for name, template in COMMANDS.items():
            _run([a.format(spec=spec) for a in template], folder / name)
        _run(["generate", str(spec), "-o", str(folder / "generated")], folder / "generate.log")
        print(f"{spec.stem}: done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
