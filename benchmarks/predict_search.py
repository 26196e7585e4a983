"""Speed of ``clusterforge predict --search``: GPT 530B (MT-NLG) on 5,120 A100 80GB, batch 2,560.

What a user pays, measured on the path the user runs:

1. the command end to end, cold: a new ``python -m clusterforge.cli.main predict SPEC
   --search`` process per run, wall / user / system seconds from ``/usr/bin/time`` (from
   ``getrusage`` when that is missing), and the plans it evaluated (from its output);
2. import time of every module the command loads (``python -X importtime``), by package;
3. the same command's stages in one new process: imports, spec, design, prediction with
   the search (cold: first search of the process, so every collective is simulated),
   expected goodput, rendering; then the library search cold on a new fabric graph and
   warm (the same graph and communication model: nothing left to simulate);
4. a sweep over cluster sizes (``--max-gpus 8192``: 8, 16, .. 8,192 GPUs, the last one
   above the designed 5,120, so the cluster is designed again at that size).

    python benchmarks/predict_search.py [--runs 3] [--gpus 5120] [--profile] [--no-cli]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterforge.design import Design

# Smith et al. 2022 (MT-NLG, arXiv 2201.11990, Table 1): 105 layers, hidden 20480, 128 heads.
SPEC = """\
name: gpt-530b-on-{gpus}-a100
num_gpus: {gpus}
node: dgx-a100
network:
  fabric: infiniband
  topology: rail-optimized
workload:
  model:
    id: gpt-530b
    num_layers: 105
    hidden_size: 20480
    num_heads: 128
    vocab_size: 51200
    seq_length: 2048
    position_embedding: learned
  tensor_parallel: 8
  pipeline_parallel: 1
  global_batch: {batch}
  seq_length: 2048
"""

MAX_GPUS = 8192
SWEEP_GPUS = tuple(2**i for i in range(3, MAX_GPUS.bit_length()))  # as --max-gpus

# What `clusterforge predict --search` imports, including its lazy imports (netsim for the
# fabric, goodput for the time to train with failures).
COMMAND_IMPORTS = (
    "import clusterforge.cli.main, clusterforge.cli.predict, clusterforge.design, "
    "clusterforge.perf, clusterforge.netsim, clusterforge.goodput, clusterforge.report.predict, "
    "clusterforge.report.terminal, clusterforge.report.expected"
)


def _cli_once(spec: Path, extra: list[str]) -> tuple[float, float, float, str]:
    """One cold run of the command: (wall, user, sys) seconds and its 'plans evaluated'."""
    command = [sys.executable, "-m", "clusterforge.cli.main", "predict", str(spec), *extra]
    timer = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists() else None)
    if timer:
        done = subprocess.run(
            [timer, "-f", "%e %U %S", *command], capture_output=True, text=True, check=True
        )
        wall, user, system = (float(v) for v in done.stderr.strip().splitlines()[-1].split())
    else:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    plans = re.search(r"plans evaluated: (.*)", done.stdout)
    return wall, user, system, plans.group(1).strip() if plans else "?"


def _report_cli(spec: Path, runs: int, extra: list[str], label: str) -> None:
    results = [_cli_once(spec, extra) for _ in range(runs)]
    for name, index in (("wall", 0), ("user", 1), ("sys", 2)):
        values = [r[index] for r in results]
        print(
            f"  {name:4s} s: min {min(values):.2f}  median {statistics.median(values):.2f}  "
            f"max {max(values):.2f}"
        )
    print(f"  {label}: plans evaluated: {results[0][3]}")


def _import_times() -> None:
    """Import seconds of the command's modules, by package (each module's own time, so a
    package is charged for itself and not for the packages it pulls in)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", COMMAND_IMPORTS],
        capture_output=True,
        text=True,
        check=True,
    )
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)$", line)
        if not match:
            continue  # the header
        parts = match.group(2).split(".")
        group = ".".join(parts[:2]) if parts[0] == "clusterforge" else parts[0]
        totals[group] = totals.get(group, 0.0) + int(match.group(1)) / 1e6
    print(f"  all imports: {sum(totals.values()):.2f} s (python -X importtime, self times)")
    for group, seconds in sorted(totals.items(), key=lambda kv: -kv[1])[:14]:
        print(f"    {group:28s} {seconds:.3f} s")


def _child(spec: Path, profile: bool) -> None:
    """The command's stages in this (new) process, then the library search cold and warm."""
    clock = [(time.perf_counter(), time.process_time())]
    stages: list[tuple[str, float, float]] = []

    def lap(name: str) -> None:
        clock.append((time.perf_counter(), time.process_time()))
        (wall_0, cpu_0), (wall_1, cpu_1) = clock[-2:]
        stages.append((name, wall_1 - wall_0, cpu_1 - cpu_0))

    exec(COMMAND_IMPORTS)
    from rich.console import Console

    from clusterforge.assess import PredictAssessment, goodput_outlook
    from clusterforge.design import plan as design_plan
    from clusterforge.perf import PredictRequest, run_predict
    from clusterforge.report.predict import print_predict
    from clusterforge.spec import load_spec

    lap("imports")
    spec_obj = load_spec(spec)
    lap("spec")
    design = design_plan(spec_obj)
    lap("design")
    profiler = _start_profile() if profile else None
    outcome = run_predict(design, PredictRequest(search=True))
    lap("predict --search (cold)")
    if profiler is not None:
        _print_profile(profiler)
    best = outcome.predictions[0]
    days = best.time_to_train_s(outcome.tokens) / 86400
    assessment = PredictAssessment(outcome, goodput_outlook(design, runs=200, days=days))
    lap("goodput")
    print_predict(assessment, Console(file=io.StringIO(), width=132))
    lap("render")
    stages += _library_search(design)
    stages += _sweep(design)
    print(json.dumps(stages))


def _library_search(design: Design) -> list[tuple[str, float, float]]:
    from clusterforge.perf import plan_from_workload, resolve_model
    from clusterforge.perf.predict import design_comm
    from clusterforge.perf.search import search

    workload, job = design.require_workload("a benchmark")
    arch = resolve_model(workload, design.catalog)
    base = plan_from_workload(workload, job, arch)
    compute = design.compute
    comm = design_comm(design)
    laps = []
    for label in ("library search (cold, new fabric graph)", "library search (warm)"):
        start, cpu = time.perf_counter(), time.process_time()
        result = search(arch, base, compute.gpu, comm, compute.nvlink_domain_gpus, top=10)
        laps.append((label, time.perf_counter() - start, time.process_time() - cpu))
    counts = (result.num_candidates, result.num_fitting, result.num_timed)
    laps.append((f"  plans generated / fit / timed: {counts}", 0.0, 0.0))
    best = result.predictions[0]
    p, job = best.plan, best.plan.layout
    laps.append(
        (f"  best: TP{job.tp} PP{job.pp} DP{job.dp} mb{p.micro_batch} v{job.vpp} Z{p.zero_stage} "
         f"{p.recompute}, MFU {best.mfu:.1%}, {best.tokens_per_s_per_gpu:.1f} tokens/s/GPU", 0.0, 0.0)
    )  # fmt: skip
    return laps


def _sweep(design: Design) -> list[tuple[str, float, float]]:
    from clusterforge.perf import PredictRequest, run_predict

    start, cpu = time.perf_counter(), time.process_time()
    outcome = run_predict(design, PredictRequest(search=True, gpu_counts=SWEEP_GPUS))
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    sizes = ", ".join(
        f"{p.plan.layout.num_gpus}: {p.step_time_s:.2f} s" for p in outcome.predictions
    )
    counts = (outcome.num_candidates, outcome.num_fitting, outcome.num_timed)
    return [
        (f"size sweep {SWEEP_GPUS[0]}..{SWEEP_GPUS[-1]} GPUs (cold)", elapsed, cpu),
        (f"  best step per size: {sizes}; plans generated / fit / timed: {counts}", 0.0, 0.0),
    ]


def _start_profile() -> object:
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    return profiler


def _print_profile(profiler: object) -> None:
    import pstats

    profiler.disable()  # type: ignore[attr-defined]
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)  # type: ignore[arg-type]
    stats.sort_stats("cumulative").print_stats(25)
    stats.sort_stats("tottime").print_stats(15)
    print(out.getvalue(), file=sys.stderr)


def _report_stages(spec: Path, profile: bool) -> None:
    command = [sys.executable, __file__, "--child", str(spec)] + (["--profile"] if profile else [])
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    if profile:
        print(done.stderr)
    stages = json.loads(done.stdout.strip().splitlines()[-1])
    wall_s = sum(wall for _, wall, _ in stages[:6])  # imports .. render
    cpu_s = sum(cpu for *_, cpu in stages[:6])
    print(f"  the command's path in one new process: {wall_s:.2f} s wall, {cpu_s:.2f} s CPU")
    print(f"    {'':44s} {'wall':>8s} {'CPU':>8s}")
    for name, wall, cpu in stages:
        print(f"    {name:44s} {wall:8.3f} {cpu:8.3f}" if wall else f"    {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=5120)
    parser.add_argument("--global-batch", type=int, default=2560)
    parser.add_argument("--runs", type=int, default=3, help="cold command runs")
    parser.add_argument("--profile", action="store_true", help="cProfile the cold search")
    parser.add_argument("--no-cli", action="store_true", help="skip the end-to-end runs")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.profile)
        return
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "gpt-530b.yaml"
        spec.write_text(SPEC.format(gpus=args.gpus, batch=args.global_batch))
        print(f"GPT 530B on {args.gpus} x A100 80GB, global batch {args.global_batch}")
        if not args.no_cli:
            print(f"clusterforge predict SPEC --search, end to end, {args.runs} cold runs:")
            _report_cli(spec, args.runs, ["--search"], "--search")
            print(f"clusterforge predict SPEC --max-gpus {MAX_GPUS}, end to end:")
            _report_cli(spec, args.runs, ["--max-gpus", str(MAX_GPUS)], "--max-gpus")
        print("imports:")
        _import_times()
        print("stages:")
        _report_stages(spec, args.profile)


if __name__ == "__main__":
    main()
