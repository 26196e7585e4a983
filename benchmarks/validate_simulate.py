"""Mean absolute error of ``simulate`` on published nccl-tests results.

Rows and their sources: every nccl-tests ``*.toml`` of ``validation/`` (see
``validation.nccl_rows``). Calibration rows set a constant of the model; development rows
(their errors may guide mechanisms) are printed per row; held-out rows are listed with the
commit that froze them and, with ``--heldout`` only, scored as a whole: mean absolute error
for sizes >= 16 MiB and below, inter-node rows and clusters counted, never per row.

    python benchmarks/validate_simulate.py [--heldout] [--by-cluster]

``--by-cluster`` adds the development rows' mean absolute error by cluster (the row's
``cluster``, else its ``source``), >= 16 MiB and below.
"""

from __future__ import annotations

import argparse
from typing import Any

from clusterforge.catalog import load_catalog
from validation.nccl_rows import ROWS, Scored, mean_abs_error, score
from validation.sets import read_lock

LARGE_BYTES = 16 * 2**20


def _print_rows(name: str, scored: list[Scored]) -> None:
    print(f"\n{name} rows ({len(scored)})")
    print(f"{'row':28} {'measured':>9} {'simulated':>9} {'error':>7}  algorithm/protocol")
    for s in scored:
        print(
            f"{s.row['id']:28} {s.row['busbw']:9.1f} {s.simulated_gbyte_per_s:9.1f} "
            f"{s.error:+7.1%}  {s.algorithm}/{s.protocol}"
        )
    large = [s for s in scored if s.row["size_bytes"] >= LARGE_BYTES]
    small = [s for s in scored if s.row["size_bytes"] < LARGE_BYTES]
    print(
        f"mean absolute error, {name}: {mean_abs_error(scored):.1%}; >= 16 MiB "
        f"{mean_abs_error(large):.1%} ({len(large)} rows), < 16 MiB {mean_abs_error(small):.1%} "
        f"({len(small)} rows)"
    )


def spans_nvlink_domains(row: dict[str, Any]) -> bool:
    """Whether the row's communicator crosses the scale-out network (more GPUs than one
    NVLink domain: 8 on a DGX H100, 72 on a GB200 NVL72 rack)."""
    domain = load_catalog().nodes[row["node"]].nvlink_domain_gpus
    gpus = row.get("num_gpus", load_catalog().nodes[row["node"]].num_gpus * row["num_nodes"])
    return bool(gpus > domain)


def heldout_aggregate(scored: list[Scored]) -> str:
    """One line: mean absolute error by size class, inter-node rows, clusters."""
    large = [s for s in scored if s.row["size_bytes"] >= LARGE_BYTES]
    small = [s for s in scored if s.row["size_bytes"] < LARGE_BYTES]
    inter = [s for s in scored if spans_nvlink_domains(s.row)]
    clusters = {s.row.get("cluster", s.row["source"]) for s in inter}
    return (
        f"heldout: {len(scored)} rows, mean absolute error >= 16 MiB {mean_abs_error(large):.1%} "
        f"({len(large)} rows), < 16 MiB {mean_abs_error(small):.1%} ({len(small)} rows); "
        f"{len(inter)} rows across NVLink domains from {len(clusters)} clusters"
    )


def by_cluster(scored: list[Scored]) -> None:
    """Mean absolute error of ``scored`` by cluster, >= 16 MiB and below."""
    groups: dict[str, list[Scored]] = {}
    for s in scored:
        groups.setdefault(str(s.row.get("cluster", s.row["source"])), []).append(s)
    print(
        f"\ndevelopment rows by cluster\n{'cluster':48} {'rows':>4} {'all':>6} {'>=16M':>6} {'<16M':>6}"
    )
    for name in sorted(groups):
        rows = groups[name]
        large = [s for s in rows if s.row["size_bytes"] >= LARGE_BYTES]
        small = [s for s in rows if s.row["size_bytes"] < LARGE_BYTES]
        cells = [f"{mean_abs_error(part):6.1%}" if part else f"{'-':>6}" for part in (large, small)]
        print(f"{name[:48]:48} {len(rows):4} {mean_abs_error(rows):6.1%} {' '.join(cells)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heldout", action="store_true", help="score held-out rows as a whole")
    parser.add_argument("--by-cluster", action="store_true", help="development error by cluster")
    args = parser.parse_args()
    for name in ("calibration", "development"):
        _print_rows(name, [score(r) for r in ROWS if r["set"] == name])
    if args.by_cluster:
        by_cluster([score(r) for r in ROWS if r["set"] == "development"])
    held = [r for r in ROWS if r["set"] == "heldout"]
    frozen = {e.id: e.commit for e in read_lock() if e.kind == "nccl"}
    print(f"\nheldout rows ({len(held)}), frozen (scored only with --heldout, as a whole)")
    for row in held:
        print(f"{row['id']:40} frozen at {frozen.get(row['id'], 'NOT LOCKED')[:12]}")
    if args.heldout and held:
        print(heldout_aggregate([score(r) for r in held]))


if __name__ == "__main__":
    main()
