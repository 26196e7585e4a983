"""The exporter's HTTP side: serve the cached metrics snapshot, bounded and fast.

A scrape copies the bytes the last check run rendered (:meth:`Exporter.snapshot`); it never
runs a check or builds a metric.  One thread serves each connection, and connections are
HTTP/1.1 keep-alive, as Prometheus scrapes (Prometheus documentation, "Writing exporters":
metrics are cheap to scrape, expensive work belongs on its own schedule).  The listen backlog
is :data:`LISTEN_BACKLOG` rather than :mod:`socketserver`'s 5: with a backlog of 5, a burst
of connections overflows the accept queue, Linux drops the SYNs and each client waits out a
1 s, then 3 s, retransmission timeout (tcp(7), ``tcp_syn_retries``; listen(2), backlog).
"""

from __future__ import annotations

import errno
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from clusterforge.errors import AdapterError
from clusterforge.ops.checker import build_checker
from clusterforge.ops.exporter import Exporter
from clusterforge.ops.options import ExporterOptions

__all__ = ["LISTEN_BACKLOG", "MetricsServer", "RunningExporter", "serve_metrics", "start_exporter"]

# Pending connections the kernel queues before accept(); Linux caps it at
# net.core.somaxconn (4096 by default since kernel 5.4).
LISTEN_BACKLOG = 1024
# A connection idle this long (no request) is closed, so idle scrapers cannot hold threads.
_IDLE_TIMEOUT_S = 30.0
_METRIC_PATHS = ("/metrics", "/")


class MetricsServer(ThreadingHTTPServer):
    """A threading HTTP server with a deep listen backlog, serving one exporter."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, family: socket.AddressFamily, sockaddr: tuple[str, int], exporter: Exporter):
        self.address_family = family
        self.exporter = exporter
        super().__init__(sockaddr, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a scraper reuses its connection
    timeout = _IDLE_TIMEOUT_S
    server: MetricsServer

    def do_GET(self) -> None:
        if urlsplit(self.path).path not in _METRIC_PATHS:
            self._send(404, b"not found: metrics are at /metrics\n", "text/plain; charset=utf-8")
            return
        self._send(200, self.server.exporter.snapshot(), CONTENT_TYPE_LATEST)

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """No line per scrape on stderr."""


def _resolve(address: str, port: int) -> tuple[socket.AddressFamily, tuple[str, int]]:
    """The socket family and address to bind ``address`` (an IPv4/IPv6 address or a name)."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError):
        raise AdapterError(
            f"listen address {address!r} is invalid: not an IPv4 or IPv6 address nor a host "
            "name that resolves (e.g. 0.0.0.0 for every interface, 127.0.0.1, ::)"
        ) from None
    family, _type, _proto, _name, sockaddr = infos[0]
    return family, (str(sockaddr[0]), int(sockaddr[1]))


def _bind_error(exc: OSError, address: str, port: int) -> AdapterError:
    where = f"{address}:{port}"
    match exc.errno:
        case errno.EADDRINUSE:
            why = f"port {port} is already in use on {address}; choose another port"
        case errno.EACCES:
            why = f"no permission to listen on {where} (ports below 1024 need root)"
        case errno.EADDRNOTAVAIL:
            why = f"{address} is not an address of this machine"
        case _:
            why = f"cannot listen on {where}: {exc.strerror or exc}"
    return AdapterError(why)


def serve_metrics(exporter: Exporter, address: str, port: int) -> MetricsServer:
    """Bind ``address:port`` and serve ``exporter``'s snapshot in a daemon thread.

    Close with ``server.shutdown(); server.server_close()``.  Raises AdapterError with the
    reason when the address is invalid or the port cannot be bound.
    """
    family, sockaddr = _resolve(address, port)
    try:
        server = MetricsServer(family, sockaddr, exporter)
    except OSError as exc:
        raise _bind_error(exc, address, port) from None
    threading.Thread(target=server.serve_forever, name="clusterforge-http", daemon=True).start()
    return server


@dataclass(frozen=True)
class RunningExporter:
    """A started exporter: checks on their interval, metrics served on ``url``."""

    node: str
    url: str
    exporter: Exporter
    server: MetricsServer

    def close(self) -> None:
        self.exporter.stop()
        self.server.shutdown()
        self.server.server_close()


def start_exporter(options: ExporterOptions) -> RunningExporter:
    """Validate the inputs, listen, and start the check loop; returns at once."""
    checker = build_checker(options.source)
    exporter = Exporter(checker, interval_s=options.interval_s)
    server = serve_metrics(exporter, options.address, options.port)
    exporter.start()
    host = f"[{options.address}]" if ":" in options.address else options.address
    return RunningExporter(checker.node, f"http://{host}:{options.port}/metrics", exporter, server)
