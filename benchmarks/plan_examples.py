"""Planning time of every shipped example, break-even included (the figure a user waits for).

Prints wall and CPU seconds of ``plan()`` per example, interpreter start and spec parsing
excluded. Run: ``python benchmarks/plan_examples.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

from clusterforge.catalog import load_catalog
from clusterforge.design import plan
from clusterforge.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def main() -> None:
    catalog = load_catalog()
    print(f"{'example':28} {'wall s':>7} {'cpu s':>7}  break-even GPUs")
    for path in sorted(EXAMPLES.glob("*.yaml")):
        spec = load_spec(path, catalog)
        wall, cpu = time.perf_counter(), time.process_time()
        design = plan(spec, catalog)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{path.stem:28} {wall:7.2f} {cpu:7.2f}  {design.cost.break_even_gpus}")


if __name__ == "__main__":
    main()
