"""How long ``clusterforge diagnose`` takes on a large job, against a real Prometheus.

Run by hand: ``python benchmarks/diagnose_scale.py [--nodes 64] [--gpus 8] [--repeat 3]``.
It writes 40 minutes of history for one Slurm job (every GPU and host series the
diagnosis reads, one node with a slow SM clock), loads it with ``promtool tsdb
create-blocks-from openmetrics``, starts Prometheus on loopback and times the diagnosis
(median of ``--repeat`` runs).  It prints the series and sample counts, the load and start
times, the diagnosis time and the verdict (expected: straggler, naming the slow node).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "diagnose"))

from scenarios import HISTORY_S, STEP_S, Scenario, openmetrics

from clusterforge.diagnose import DiagnoseRequest, JobSelector, run_diagnose


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/-/ready", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("prometheus did not become ready")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        raise SystemExit("needs prometheus and promtool (apt-get install prometheus)")
    job = Scenario("big", "4242", frozenset(), num_nodes=args.nodes, gpus_per_node=args.gpus,
                   odd={(args.nodes // 2, None): {"DCGM_FI_DEV_SM_CLOCK": 1500.0}})  # fmt: skip
    end_s = int(time.time()) - 60
    with tempfile.TemporaryDirectory() as work:
        text = openmetrics(end_s, (job,))
        source = Path(work) / "history.om"
        source.write_text(text)
        num_samples = text.count("\n") - 1
        print(f"job: {args.nodes} nodes x {args.gpus} GPUs, {HISTORY_S // 60} min at {STEP_S} s")
        print(f"series: {num_samples // (HISTORY_S // STEP_S + 1)}, samples: {num_samples}")
        t0 = time.perf_counter()
        subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(source),
                        f"{work}/tsdb"], check=True, capture_output=True)  # fmt: skip
        print(f"promtool load: {time.perf_counter() - t0:.2f} s")
        (Path(work) / "p.yml").write_text("global:\n  scrape_interval: 1h\n")
        port = _free_port()
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [prometheus, f"--config.file={work}/p.yml", f"--storage.tsdb.path={work}/tsdb",
             "--storage.tsdb.retention.time=10y", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _wait_ready(f"http://127.0.0.1:{port}")
            print(f"prometheus ready: {time.perf_counter() - t0:.2f} s")
            request = DiagnoseRequest(prometheus_url=f"http://127.0.0.1:{port}",
                                      selector=JobSelector(job="4242"), at_s=float(end_s))  # fmt: skip
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                result = run_diagnose(request)
                times.append(time.perf_counter() - t0)
            d = result.diagnosis
            print(f"diagnose: median {statistics.median(times):.3f} s over {args.repeat} runs")
            print(f"verdict: {d.verdict}; stragglers: "
                  f"{[f.subject for f in d.findings if f.verdict == 'straggler']}")  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
