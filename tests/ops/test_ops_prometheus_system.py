"""Real Prometheus (Debian package) scrapes the exporter on loopback; the series carry labels."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ops_fixtures import NVML_FIXTURES

from clusterforge.ops.checker import build_checker
from clusterforge.ops.expect import ExpectOverrides
from clusterforge.ops.exporter import Exporter
from clusterforge.ops.options import SourceOptions
from clusterforge.ops.serve import serve_metrics

pytestmark = pytest.mark.system


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _query(port: int, promql: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            data = json.loads(response.read())
    except OSError:
        return []
    return list(data["data"]["result"]) if data.get("status") == "success" else []


def _wait_for(port: int, promql: str, timeout_s: float = 90.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = _query(port, promql)
        if result:
            return result
        time.sleep(0.5)
    pytest.fail(f"Prometheus never returned {promql!r}")


def test_prometheus_scrapes_check_and_nic_series(
    fake_root: Callable[[str], Path], tmp_path: Path
) -> None:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    overrides = ExpectOverrides(gpu_id="h100-sxm", num_gpus=8, num_compute_nics=8,
                                nic_gbit_per_s=400.0, fabric="infiniband")  # fmt: skip
    options = SourceOptions(node="gpu-0007", nvml_fixture=NVML_FIXTURES / "h100-xid48.json",
                            sysfs_root=fake_root("ib-error-counters.json"), budget_s=4.0,
                            overrides=overrides)  # fmt: skip
    exporter = Exporter(build_checker(options), interval_s=3600.0)  # one run: the baseline
    exporter_port, prom_port = _free_port(), _free_port()
    server = serve_metrics(exporter, "127.0.0.1", exporter_port)
    exporter.start()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: clusterforge\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n"
    )
    log = (tmp_path / "prometheus.log").open("w")
    prom = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{prom_port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        xid = _wait_for(prom_port, 'clusterforge_check_status{check="gpu.xid", gpu="5"}')
        labels = xid[0]["metric"]
        assert (labels["node"], labels["check"], labels["gpu"], labels["subject"]) == (
            "gpu-0007",
            "gpu.xid",
            "5",
            "gpu5",
        )
        assert "nic" not in labels  # Prometheus drops empty labels
        assert float(xid[0]["value"][1]) == 3  # fail
        nic = _wait_for(
            prom_port, 'clusterforge_nic_counter_total{nic="mlx5_1", counter="symbol_error"}'
        )
        assert float(nic[0]["value"][1]) == 1543 and nic[0]["metric"]["port"] == "1"
        errors = _wait_for(prom_port, 'clusterforge_check_status{check="nic.errors", nic="mlx5_1"}')
        assert float(errors[0]["value"][1]) == 1  # warn
        healthy = _wait_for(prom_port, "clusterforge_node_healthy")
        assert float(healthy[0]["value"][1]) == 0
        assert _wait_for(prom_port, 'up{job="clusterforge"} == 1')
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=20)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()
        log.close()
        exporter.stop()
        server.shutdown()
        server.server_close()
