"""The sustained share of MAMF that the GEMM microbenchmarks of ``validation/`` give each GPU.

Prints, per GPU and precision, the rows and the median and spread of measured / (MAMF x
eta_shape), then the step factor (the H100's fitted share over its microbenchmark share) and
the derived share of each GPU with BF16 rows: the values of the ``derived`` rows of
``[[sustained_gemm]]`` in ``src/clusterforge/perf/data/efficiency.toml``.

    python benchmarks/fit_gemm_share.py
"""

from __future__ import annotations

from validation.gemm_rows import (
    STEP_FACTOR_GPU,
    derived_share,
    load_gemm_rows,
    microbenchmark_share,
    row_share,
    step_factor,
)


def main() -> None:
    rows = load_gemm_rows()
    for gpu, precision in sorted({(r.gpu, r.precision) for r in rows}):
        shares = sorted(row_share(r) for r in rows if r.gpu == gpu and r.precision == precision)
        print(
            f"{gpu:<9} {precision:<4} rows {len(shares):>3}  microbenchmark share "
            f"{microbenchmark_share(gpu, precision):.3f} (min {shares[0]:.3f}, max {shares[-1]:.3f})"
        )
    print(f"step factor ({STEP_FACTOR_GPU}): {step_factor():.3f}")
    for gpu in sorted({r.gpu for r in rows if r.precision == "bf16"}):
        print(f"derived sustained share {gpu:<9} {derived_share(gpu):.3f}")


if __name__ == "__main__":
    main()
