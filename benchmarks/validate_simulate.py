"""Mean absolute error of ``simulate`` on published nccl-tests results.

Rows and their sources: ``validation/nccl_tests_published.toml`` and
``validation/nccl_tests_more.toml``.  Calibration rows set a constant of the model;
development rows may guide a mechanism; held-out rows were never used for either and are
meant to be scored as a whole.  Each set is reported from 16 MiB up and below.

    python benchmarks/validate_simulate.py                  # every set
    python benchmarks/validate_simulate.py development      # only the named set(s)
"""

from __future__ import annotations

import sys

from validation.nccl_rows import LARGE_BYTES, ROWS, SUBSETS, Scored, mean_abs_error, score


def _band(scored: list[Scored], name: str) -> str:
    inter = {s.row["id"] for s in scored if s.row["num_nodes"] > 1}
    clusters = {s.row["source"].split(":")[0] for s in scored if s.row["id"] in inter}
    return (
        f"{name}: {len(scored)} rows ({len(inter)} across nodes, {len(clusters)} sources), "
        f"mean absolute error {mean_abs_error(scored):.1%}"
    )


def main(names: list[str]) -> None:
    for name in names or SUBSETS:
        scored = [score(r) for r in ROWS if r["set"] == name]
        print(f"\n{name} rows ({len(scored)})")
        print(f"{'row':34} {'measured':>9} {'simulated':>9} {'error':>7}  algorithm/protocol")
        for s in scored:
            print(
                f"{s.row['id']:34} {s.row['busbw']:9.1f} {s.simulated_gbyte_per_s:9.1f} "
                f"{s.error:+7.1%}  {s.algorithm}/{s.protocol}"
            )
        large = [s for s in scored if s.row["size_bytes"] >= LARGE_BYTES]
        small = [s for s in scored if s.row["size_bytes"] < LARGE_BYTES]
        print(_band(large, f"{name} >= 16 MiB"))
        print(_band(small, f"{name} < 16 MiB"))


if __name__ == "__main__":
    main(sys.argv[1:])
