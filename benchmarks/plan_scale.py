"""Wall time and peak memory of `plan` at 512, 16,384 and 100,000 GPUs.

Run by hand: ``python benchmarks/plan_scale.py``. Target: 100,000 GPUs under 2 s here.
Each size runs in a fresh process so that peak RSS belongs to that size alone.
"""

from __future__ import annotations

import json
import subprocess
import sys

SIZES = {
    512: {
        "num_gpus": 512,
        "node": "dgx-h100",
        "network": {"topology": "rail-optimized"},
        "workload": {"tensor_parallel": 8, "pipeline_parallel": 4},
    },
    16384: {
        "num_gpus": 16384,
        "node": "dgx-h100",
        "facility": {"max_rack_kw": 45},
        "workload": {"tensor_parallel": 8, "pipeline_parallel": 16, "global_batch": 2048},
    },
    100000: {
        "num_gpus": 100000,
        "node": "hgx-h100-4u-liquid",
        "spare_fraction": 0.02,
        "network": {"fabric": "roce", "switch": "sn5600"},
        "facility": {"max_rack_kw": 90, "cooling_available": ["air", "direct-to-chip"]},
        "workload": {"tensor_parallel": 8, "pipeline_parallel": 5, "global_batch": 5000},
    },
}

CHILD = """
import json, resource, sys, time
from clusterforge.catalog import load_catalog
from clusterforge.spec import parse_spec
from clusterforge.design import plan
load_catalog()
spec = parse_spec(json.loads(sys.argv[1]))
start = time.perf_counter()
design = plan(spec)
wall = time.perf_counter() - start
rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall_s": wall, "peak_rss_mib": rss_mib, "nodes": design.compute.num_nodes,
                  "switches": design.fabric.num_switches, "racks": len(design.racks)}))
"""


def main() -> None:
    print(
        f"{'GPUs':>8} {'wall s':>8} {'peak RSS MiB':>13} {'nodes':>7} {'switches':>9} {'racks':>6}"
    )
    for gpus, data in SIZES.items():
        out = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(data)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        r = json.loads(out)
        print(
            f"{gpus:>8,} {r['wall_s']:>8.3f} {r['peak_rss_mib']:>13.0f} {r['nodes']:>7,} "
            f"{r['switches']:>9,} {r['racks']:>6,}"
        )


if __name__ == "__main__":
    main()
