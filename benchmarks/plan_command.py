"""Wall time of the whole ``clusterforge plan`` command, as a user waits for it.

Run by hand: ``python benchmarks/plan_command.py [SPEC ...] [--runs N]`` (default: the
100,000-GPU example, 5 runs). Target: ``plan examples/colossus-100k-h100.yaml`` under 2 s on a
2-core machine. Each run is a fresh interpreter (``python -m clusterforge.cli.main plan SPEC``,
its summary sent to /dev/null), so imports count; then one in-process run is split into its
stages: imports, spec, design (``plan()``), the assessment's prediction and goodput, and the
terminal summary.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "colossus-100k-h100.yaml"


def command_s(spec: Path) -> float:
    """Wall seconds of one ``plan SPEC`` in a fresh interpreter."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "clusterforge.cli.main", "plan", str(spec)],
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - start


STAGES = """
import io, json, time
clock = [time.perf_counter()]
def lap():
    clock.append(time.perf_counter())
    return clock[-1] - clock[-2]
import clusterforge.cli.main, clusterforge.cli.plan
from rich.console import Console
from clusterforge.assess import AssessOptions, assess
from clusterforge.assess.lifetime import goodput_outlook
from clusterforge.design import plan
from clusterforge.report.terminal import print_plan
from clusterforge.spec import load_spec
times = {"imports": lap()}
spec = load_spec(SPEC)
times["spec"] = lap()
design = plan(spec)
times["design"] = lap()
predicted = assess(design, AssessOptions(goodput_runs=0))
times["prediction and break-even"] = lap()
goodput = goodput_outlook(design, runs=200, days=predicted.performance.time_to_train_days)
times["goodput (200 lives)"] = lap()
from dataclasses import replace
print_plan(replace(predicted, goodput=goodput), [], Console(file=io.StringIO(), width=120))
times["terminal summary"] = lap()
print(json.dumps(times))
"""


def stages(spec: Path) -> dict[str, float]:
    """Seconds per stage of one plan, in a fresh interpreter."""
    code = STAGES.replace("SPEC", repr(str(spec)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", type=Path, default=[EXAMPLE])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    for spec in args.specs:
        walls = [command_s(spec) for _ in range(args.runs)]
        print(
            f"{spec.name}: plan command {min(walls):.2f} s best, "
            f"{statistics.median(walls):.2f} s median of {args.runs} runs"
        )
        for name, seconds in stages(spec).items():
            print(f"  {name:28s} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
