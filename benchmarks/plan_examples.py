"""Planning time of every shipped example: ``plan()`` alone, and ``plan()`` with the
assessment ``clusterforge plan`` shows (prediction, goodput, break-even size).

Prints wall and CPU seconds per example, interpreter start and spec parsing excluded. Run:
``python benchmarks/plan_examples.py``.
"""

from __future__ import annotations

import time
from pathlib import Path

from clusterforge.assess import assess
from clusterforge.catalog import load_catalog
from clusterforge.design import plan
from clusterforge.spec import load_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def main() -> None:
    catalog = load_catalog()
    print(f"{'example':28} {'plan s':>7} {'cpu s':>7} {'assessed s':>10}  break-even GPUs")
    for path in sorted(EXAMPLES.glob("*.yaml")):
        spec = load_spec(path, catalog)
        wall, cpu = time.perf_counter(), time.process_time()
        design = plan(spec, catalog)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        start = time.perf_counter()
        economics = assess(design).economics
        assessed = wall + time.perf_counter() - start
        print(
            f"{path.stem:28} {wall:7.2f} {cpu:7.2f} {assessed:10.2f}  {economics.break_even_gpus}"
        )


if __name__ == "__main__":
    main()
