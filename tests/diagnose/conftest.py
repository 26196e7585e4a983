"""A real Prometheus loaded with the generated scenarios, shared by the module's tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scenarios import openmetrics


@dataclass(frozen=True)
class LoadedPrometheus:
    url: str
    at_s: float  # the end of the generated history: evaluate queries there


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"prometheus exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/-/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    pytest.fail("prometheus did not become ready")


@pytest.fixture(scope="session")
def loaded_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadedPrometheus]:
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        pytest.skip("prometheus and promtool are not installed (apt-get install prometheus)")
    work = tmp_path_factory.mktemp("diagnose-prometheus")
    end_s = int(time.time()) - 60
    source = work / "history.om"
    source.write_text(openmetrics(end_s))
    tsdb = work / "tsdb"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(tsdb)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    config = work / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\n")
    port = _free_port()
    with (work / "prometheus.log").open("w") as log:
        proc = subprocess.Popen(
            [prometheus, f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
             "--storage.tsdb.retention.time=10y", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc)
        yield LoadedPrometheus(url, float(end_s))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
