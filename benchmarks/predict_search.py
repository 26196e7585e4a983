"""Speed of the plan search: GPT 530B (MT-NLG dimensions) on 5,120 A100 80GB, global batch 2,560.

Prints the wall time of ``search_plans`` (the design and its fabric graph are built before
the clock starts; the collective simulations are part of the search), the number of plans
evaluated and the best plan. Run it twice in one process (``--repeat 2``) to see the time
with a warm collective cache.

    python benchmarks/predict_search.py [--repeat 2] [--gpus 5120]
"""

from __future__ import annotations

import argparse
import time

from clusterforge.catalog import ModelArch
from clusterforge.design import plan as design_cluster
from clusterforge.job import JobLayout
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.predict import design_comm
from clusterforge.perf.search import search
from clusterforge.spec import parse_spec

# Smith et al. 2022 (MT-NLG, arXiv 2201.11990, Table 1): 105 layers, hidden 20480, 128 heads.
GPT_530B = ModelArch(
    id="gpt-530b",
    num_layers=105,
    hidden_size=20480,
    num_heads=128,
    vocab_size=51200,
    seq_length=2048,
    position_embedding="learned",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=5120)
    parser.add_argument("--global-batch", type=int, default=2560)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    spec = parse_spec(
        {
            "num_gpus": args.gpus,
            "node": "dgx-a100",
            "network": {"fabric": "infiniband", "topology": "rail-optimized"},
            "workload": {
                "model": GPT_530B.model_dump(),
                "tensor_parallel": 8,
                "pipeline_parallel": 1,
                "global_batch": args.global_batch,
                "seq_length": 2048,
            },
        },
        source="benchmark",
    )
    design = design_cluster(spec, break_even=False)
    comm = design_comm(design)
    job = JobLayout.for_gpus(args.gpus, tp=8)
    base = ParallelPlan(**job.degrees(), global_batch=args.global_batch, seq_length=2048)
    for attempt in range(args.repeat):
        start = time.perf_counter()
        result = search(
            GPT_530B, base, design.compute.gpu, comm, design.compute.nvlink_domain_gpus, top=5
        )
        elapsed = time.perf_counter() - start
        best = result.predictions[0]
        p = best.plan
        print(
            f"run {attempt + 1}: {elapsed:.2f} s; plans: {result.num_candidates} generated, "
            f"{result.num_fitting} fit in memory, {result.num_timed} timed on the fabric; best "
            f"TP{p.tp} PP{p.pp} DP{p.dp} mb{p.micro_batch} v{p.vpp} Z{p.zero_stage} "
            f"{p.recompute}: MFU {best.mfu:.1%}, {best.tokens_per_s_per_gpu:,.1f} tokens/s/GPU"
        )


if __name__ == "__main__":
    main()
