#!/usr/bin/env bash
# Network acceptance at full load on ONE real DGX H100/H200 node, by hand (root).
#
# Pairs the node's compute HCAs with each other through the fabric (rail i against rail
# i+4: in a rail-optimized fabric the two rails sit on different leaves, so the traffic
# crosses the spine), both directions at once with ib_write_bw, reads every port's sysfs
# counters before and after, then ib_write_lat per pair, and judges the result with
# clusterforge's own parsers and counter rules (loss > 0.1 % fails, naming the HCA).
# For several nodes use `clusterforge accept SPEC --via slurm --tests fabric` instead.
#
#   sudo PYTHONPATH=src scripts/net-accept-h200.sh [SECONDS] [OUT_DIR]
#
# Needs perftest (ib_write_bw, ib_write_lat) and the clusterforge sources (PYTHONPATH).
set -euo pipefail
SECONDS_PER_ROUND="${1:-10}"
OUT="${2:-net-accept-$(hostname -s)-$(date +%Y%m%dT%H%M%S)}"
# DGX H100/H200 User Guide: compute ports of GPUs 0-7 (the catalog's compute_hca_names).
HCAS=(${HCAS:-mlx5_0 mlx5_3 mlx5_4 mlx5_5 mlx5_6 mlx5_9 mlx5_10 mlx5_11})
LINK_GBIT="${LINK_GBIT:-400}"
BASE_PORT="${BASE_PORT:-18515}"
mkdir -p "$OUT/before" "$OUT/after" "$OUT/bw" "$OUT/lat"
command -v ib_write_bw >/dev/null || { echo "perftest is not installed (apt-get install perftest)"; exit 2; }

snapshot() {  # $1: folder; one file per HCA, "name value" per counter
  for hca in "${HCAS[@]}"; do
    d=/sys/class/infiniband/$hca/ports/1/counters
    [ -d "$d" ] || { echo "no $d" >&2; exit 2; }
    for f in "$d"/*; do echo "$(basename "$f") $(cat "$f")"; done > "$1/$hca"
  done
}

half=$(( ${#HCAS[@]} / 2 ))
snapshot "$OUT/before"
start=$(date +%s.%N)
pids=()
for ((i = 0; i < half; i++)); do
  a=${HCAS[$i]}; b=${HCAS[$((i + half))]}
  pa=$((BASE_PORT + 2 * i)); pb=$((pa + 1))
  common=(-D "$SECONDS_PER_ROUND" -F --report_gbits -q 4 -s 1048576)
  ib_write_bw -d "$a" -p "$pa" "${common[@]}" > "$OUT/bw/server-$a" 2>&1 & pids+=($!)
  ib_write_bw -d "$b" -p "$pb" "${common[@]}" > "$OUT/bw/server-$b" 2>&1 & pids+=($!)
done
sleep 1
for ((i = 0; i < half; i++)); do
  a=${HCAS[$i]}; b=${HCAS[$((i + half))]}
  pa=$((BASE_PORT + 2 * i)); pb=$((pa + 1))
  common=(-D "$SECONDS_PER_ROUND" -F --report_gbits -q 4 -s 1048576)
  ib_write_bw -d "$a" -p "$pb" "${common[@]}" localhost > "$OUT/bw/$a-to-$b" 2>&1 & pids+=($!)
  ib_write_bw -d "$b" -p "$pa" "${common[@]}" localhost > "$OUT/bw/$b-to-$a" 2>&1 & pids+=($!)
done
wait "${pids[@]}" || true
end=$(date +%s.%N)
snapshot "$OUT/after"
for ((i = 0; i < half; i++)); do
  a=${HCAS[$i]}; b=${HCAS[$((i + half))]}
  for tool in ib_write_lat ib_send_lat; do
    "$tool" -d "$a" -p "$BASE_PORT" -n 10000 -F > /dev/null 2>&1 &
    sleep 1
    "$tool" -d "$b" -p "$BASE_PORT" -n 10000 -F localhost > "$OUT/lat/$tool-$b-$a" 2>&1 || true
    wait || true
  done
done

python3 - "$OUT" "$start" "$end" "$LINK_GBIT" "${HCAS[@]}" <<'PY'
"""Judge the run with clusterforge's own parsers and counter rules; one line per HCA."""
import sys
from pathlib import Path

from clusterforge.errors import AcceptError
from clusterforge.accept.fabric.counters import congestion_of, errors_of, loss_of, port_window
from clusterforge.accept.fabric.counters import unmeasurable
from clusterforge.accept.parsers import parse_perftest_bw, parse_perftest_lat

out, start, end, link = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
hcas = sys.argv[5:]
half = len(hcas) // 2
failed = 0


def counters(path: Path) -> dict[str, int]:
    pairs = (line.split() for line in path.read_text().splitlines())
    return {k: int(v) for k, v in pairs if v.lstrip("-").isdigit()}


for i, hca in enumerate(hcas):
    peer = hcas[(i + half) % len(hcas)]
    window = port_window("infiniband", counters(out / "before" / hca),
                         counters(out / "after" / hca), end - start)
    try:
        rate = parse_perftest_bw((out / "bw" / f"{hca}-to-{peer}").read_text())
        gbit = rate["average_gbit_per_s"]
    except (AcceptError, OSError) as exc:
        gbit = 0.0
        print(f"{hca}: no bandwidth ({exc})")
    lost = loss_of(window)
    stuck = unmeasurable(window)
    bad = gbit < 0.9 * link or stuck or (lost is not None and lost[0] > 0.001)
    failed += bool(bad)
    print(f"{hca} -> {peer}: {gbit:.1f} Gb/s (>= {0.9 * link:g}), "
          f"loss {'unmeasurable: ' + ', '.join(stuck) if stuck else lost}, "
          f"errors {errors_of(window) or 'none'}, congestion {congestion_of(window) or 'none'}"
          f"{'  FAIL' if bad else ''}")
for path in sorted((out / "lat").iterdir()):
    try:
        print(f"{path.name}: t_typical {parse_perftest_lat(path.read_text())['typical_us']} us")
    except AcceptError as exc:
        print(f"{path.name}: {exc}")
print(f"raw outputs and counters in {out}; {failed} port(s) failed")
sys.exit(1 if failed else 0)
PY
