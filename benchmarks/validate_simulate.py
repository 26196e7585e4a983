"""Mean absolute error of ``simulate`` on published nccl-tests results.

Rows and their sources: ``validation/nccl_tests_published.toml``.  Calibration rows set
a constant of the model; held-out rows were never used to set one.

    python benchmarks/validate_simulate.py
"""

from __future__ import annotations

from validation.nccl_rows import ROWS, mean_abs_error, score


def main() -> None:
    for name in ("calibration", "heldout"):
        scored = [score(r) for r in ROWS if r["set"] == name]
        print(f"\n{name} rows ({len(scored)})")
        print(f"{'row':28} {'measured':>9} {'simulated':>9} {'error':>7}  algorithm/protocol")
        for s in scored:
            print(
                f"{s.row['id']:28} {s.row['busbw']:9.1f} {s.simulated_gbyte_per_s:9.1f} "
                f"{s.error:+7.1%}  {s.algorithm}/{s.protocol}"
            )
        print(f"mean absolute error, {name}: {mean_abs_error(scored):.1%}")


if __name__ == "__main__":
    main()
