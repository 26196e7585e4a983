"""Mean absolute and mean signed error of ``simulate`` per cluster and size class.

Development rows only (never held-out): every nccl-tests development row of
``validation/`` scored as ``benchmarks/validate_simulate.py`` scores it, grouped by the
row's ``cluster`` (or, for rows without one, the first words of its source) and split at
16 MiB, the bandwidth / latency boundary of the error targets.

    PYTHONPATH=$PWD/src:$PWD python benchmarks/simulate_by_cluster.py
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from validation.nccl_rows import LARGE_BYTES, ROWS, score


def _cell(errors: list[float]) -> str:
    if not errors:
        return f"{'-':>30}"
    mean_abs = float(np.mean(np.abs(errors)))
    signed = float(np.mean(errors))
    return f"{mean_abs:6.1%} (signed {signed:+6.1%}, n={len(errors):2d})"


def main() -> None:
    groups: dict[str, dict[bool, list[float]]] = defaultdict(lambda: {True: [], False: []})
    for row in ROWS:
        if row["set"] != "development":
            continue
        name = row.get("cluster", row["source"][:40])
        groups[name][row["size_bytes"] >= LARGE_BYTES].append(score(row).error)
    print(f"{'cluster':40} {'>= 16 MiB':>30} {'< 16 MiB':>30}")
    for name in sorted(groups):
        print(f"{name[:40]:40} {_cell(groups[name][True])} {_cell(groups[name][False])}")


if __name__ == "__main__":
    main()
