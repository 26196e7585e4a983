#!/usr/bin/env bash
# Record what a real NVIDIA GPU machine (e.g. an H200 box) reports, for clusterforge's fixtures.
#
# Run from the repository root:  OUT=/some/dir scripts/device_check.sh
# Writes into $OUT (default ./device-check-out):
#   pip.log                  install log of `pip install -e .[nvml]`
#   nvidia-smi-q.txt         `nvidia-smi -q` (the reference to compare NVML readings with)
#   nvidia-smi-topo.txt      `nvidia-smi topo -m` (GPU/NIC/NUMA affinity)
#   check.json / check.rc    `clusterforge check --json` and its exit code (no expectations)
#   check-h200.json / .rc    the same, expecting H200 GPUs (catalog id h200-sxm)
#   check.txt                the table output
#   check-state1.json / check-state2.json  two runs with --state-file: a baseline, then the
#                            counters judged by their increase (check-state.json is the state)
#   nvml-fixture.json        the NVML readings in the RecordedNvml fixture format
#   metrics.txt              one scrape of `clusterforge exporter`
#   dmesg-xid.txt            XID lines in the kernel log, if any (needs root)
#   timings.txt              wall time of each step
# Every step has a timeout; a failing step is recorded and the script goes on.
set -u
OUT="${OUT:-$PWD/device-check-out}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."

step() {  # step NAME TIMEOUT_S COMMAND... ; stdout+stderr -> $OUT/NAME, wall time -> timings
  local name=$1 limit=$2
  shift 2
  local start end rc
  start=$(date +%s.%N)
  timeout "$limit" "$@" >"$OUT/$name" 2>&1
  rc=$?
  end=$(date +%s.%N)
  printf '%-22s rc=%-3s %6.2f s\n' "$name" "$rc" "$(awk "BEGIN{print $end - $start}")" >>"$OUT/timings.txt"
  return $rc
}

: >"$OUT/timings.txt"
step pip.log 300 python -m pip install -e '.[nvml]' ||
  step pip-offline.log 300 python -m pip install --no-deps --no-build-isolation -e .
if command -v clusterforge >/dev/null; then
  CF=(clusterforge)
else  # no network and no install: run from the source tree
  export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
  CF=(python -m clusterforge.cli.main)
fi
step nvidia-smi-q.txt 60 nvidia-smi -q
step nvidia-smi-topo.txt 60 nvidia-smi topo -m
step check.json 90 "${CF[@]}" check --json --timeout-s 45 --state-file none
echo $? >"$OUT/check.rc"
step check-h200.json 90 "${CF[@]}" check --json --timeout-s 45 --gpu h200-sxm --state-file none
echo $? >"$OUT/check-h200.rc"
COLUMNS=200 step check.txt 90 "${CF[@]}" check --verbose --timeout-s 45 --gpu h200-sxm --state-file none
step check-state1.json 90 "${CF[@]}" check --json --timeout-s 45 --state-file "$OUT/check-state.json"
sleep 5
step check-state2.json 90 "${CF[@]}" check --json --timeout-s 45 --state-file "$OUT/check-state.json"
step nvml-fixture.json 90 python - <<'EOF'
import json, socket
from clusterforge.ops.nvml import collect_gpu_snapshot, snapshot_to_fixture
from clusterforge.ops.nvml_pynvml import PynvmlApi

snapshot = collect_gpu_snapshot(PynvmlApi(), budget_s=45.0, per_call_s=5.0, listen_s=0.5)
print(json.dumps(snapshot_to_fixture(snapshot, f"recorded on {socket.gethostname()} by scripts/device_check.sh"), indent=1))
EOF
PORT=19410
"${CF[@]}" exporter --port "$PORT" --address 127.0.0.1 --interval-s 30 --timeout-s 45 >"$OUT/exporter.log" 2>&1 &
EXPORTER=$!
for _ in $(seq 1 60); do
  if step metrics.txt 5 python -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$PORT/metrics', timeout=4).read().decode())"; then
    break
  fi
  sleep 1
done
kill "$EXPORTER" 2>/dev/null
wait "$EXPORTER" 2>/dev/null
(dmesg --time-format iso 2>&1 | grep -i 'xid' | tail -50) >"$OUT/dmesg-xid.txt"
cat "$OUT/timings.txt"
echo "check exit codes: plain $(cat "$OUT/check.rc"), h200 $(cat "$OUT/check-h200.rc")"
