"""The exporter's HTTP side: scrapes read the cached snapshot, never wait for a check run."""

from __future__ import annotations

import dataclasses
import gzip
import http.client
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
from ops_fixtures import NVML_FIXTURES

from clusterforge.ops.checker import build_checker
from clusterforge.ops.exporter import Exporter
from clusterforge.ops.nvml import NvmlApi, RecordedNvml, load_fixture
from clusterforge.ops.options import SourceOptions
from clusterforge.ops.runner import NodeChecker
from clusterforge.ops.serve import MetricsServer, serve_metrics


class Gate:
    """An NVML factory that blocks until opened, or raises a bug-like error."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.broken = False
        self.data = load_fixture(NVML_FIXTURES / "h100-healthy.json")

    def __call__(self) -> NvmlApi:
        self.open.wait(timeout=30)
        if self.broken:
            raise RuntimeError("adapter bug")
        return RecordedNvml(self.data)


@pytest.fixture
def checker(fake_root: Callable[[str], Path]) -> NodeChecker:
    source = SourceOptions(node="gpu-0001", sysfs_root=fake_root("ib-8x400-healthy.json"),
                           nvml_fixture=NVML_FIXTURES / "h100-healthy.json", budget_s=4.0)  # fmt: skip
    return build_checker(source)


@pytest.fixture
def served(checker: NodeChecker) -> Iterator[tuple[Exporter, Gate, int]]:
    gate = Gate()
    exporter = Exporter(dataclasses.replace(checker, nvml_factory=gate), interval_s=0.05)
    server = serve_metrics(exporter, "127.0.0.1", 0)
    yield exporter, gate, server.server_address[1]
    gate.open.set()
    exporter.stop()
    server.shutdown()
    server.server_close()


def _get(connection: http.client.HTTPConnection, path: str = "/metrics") -> tuple[int, str]:
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, response.read().decode()


@pytest.mark.parametrize(
    ("accept", "gzipped"),
    [("gzip", True), ("identity, gzip;q=0.5", True), ("gzip;q=0", False), ("", False)],
)
def test_gzip_is_served_to_scrapers_that_accept_it(
    served: tuple[Exporter, Gate, int], accept: str, gzipped: bool
) -> None:
    exporter, _gate, port = served
    exporter.refresh()
    with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=5)) as connection:
        connection.request("GET", "/metrics", headers={"Accept-Encoding": accept})
        response = connection.getresponse()
        body = response.read()
    assert (response.getheader("Content-Encoding") == "gzip") is gzipped
    text = gzip.decompress(body) if gzipped else body
    assert text == exporter.snapshot().text and b"clusterforge_node_healthy" in text


def test_a_hung_check_run_does_not_delay_scrapes(served: tuple[Exporter, Gate, int]) -> None:
    exporter, gate, port = served
    exporter.refresh()
    gate.open.clear()  # every later run hangs in NVML
    exporter.start()
    time.sleep(0.2)
    start_s = time.monotonic()
    with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=5)) as connection:
        status, body = _get(connection)
    assert time.monotonic() - start_s < 1.0
    assert status == 200 and 'clusterforge_node_healthy{node="gpu-0001"} 1.0' in body


def test_one_connection_serves_many_scrapes_and_other_paths_are_404(
    served: tuple[Exporter, Gate, int],
) -> None:
    exporter, _gate, port = served
    exporter.refresh()
    with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=5)) as connection:
        bodies = [_get(connection)[1] for _ in range(3)]  # keep-alive: one connection
        status, body = _get(connection, "/other")
    assert bodies[0] == bodies[2] and "clusterforge_check_status" in bodies[0]
    assert status == 404 and "/metrics" in body


def test_a_run_that_raises_is_counted_and_the_last_snapshot_kept(
    served: tuple[Exporter, Gate, int],
) -> None:
    exporter, gate, port = served
    exporter.refresh()
    gate.broken = True
    exporter.start()
    deadline = time.monotonic() + 5
    while b"failures_total 0.0" in exporter.snapshot().text and time.monotonic() < deadline:
        time.sleep(0.05)
    with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=5)) as connection:
        _status, body = _get(connection)
    assert "clusterforge_exporter_check_failures_total 0.0" not in body
    assert 'clusterforge_node_healthy{node="gpu-0001"} 1.0' in body


def test_a_burst_of_connections_is_queued_not_dropped(checker: NodeChecker) -> None:
    # No thread accepts: every connection waits in the listen queue.  socketserver's
    # default backlog of 5 would leave most of these SYNs unanswered (connect times out).
    server = MetricsServer(socket.AF_INET, ("127.0.0.1", 0), Exporter(checker))
    clients = []
    try:
        for _ in range(200):
            client = socket.create_connection(server.server_address, timeout=0.5)
            clients.append(client)
    finally:
        for client in clients:
            client.close()
        server.server_close()
    assert len(clients) == 200
