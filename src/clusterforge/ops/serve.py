"""The exporter's HTTP side: serve the cached metrics snapshot, bounded and fast.

A scrape copies the bytes the last check run rendered (:meth:`Exporter.snapshot`); it never
runs a check or builds a metric (Prometheus documentation, "Writing exporters": scrapes must
be cheap; expensive collection belongs on its own schedule).  One asyncio event loop in one
daemon thread serves every connection: no thread per scrape, so a burst of scrapers costs
no thread start-ups and cannot grow the thread count.  Connections are HTTP/1.1 keep-alive
(RFC 9112 section 9.3), as Prometheus scrapes; the server answers GET and HEAD of
``/metrics`` (and ``/``), closes a connection idle for :data:`IDLE_TIMEOUT_S`, and drops
one whose request head exceeds :data:`MAX_HEAD_BYTES`.

The listen backlog is :data:`LISTEN_BACKLOG` rather than :mod:`socketserver`'s 5: when the
accept queue overflows, Linux drops the SYN and the client waits out a 1 s, then 3 s
retransmission timeout (listen(2), "backlog"; tcp(7), ``tcp_syn_retries``), which is how a
burst of 100 scrapers saw multi-second scrapes and timeouts.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from clusterforge.errors import AdapterError
from clusterforge.ops.checker import build_checker
from clusterforge.ops.exporter import Exporter, Snapshot
from clusterforge.ops.options import ExporterOptions

__all__ = [
    "IDLE_TIMEOUT_S",
    "LISTEN_BACKLOG",
    "MAX_HEAD_BYTES",
    "MetricsServer",
    "RunningExporter",
    "serve_metrics",
    "start_exporter",
]

# Pending connections the kernel queues before accept(); Linux caps it at
# net.core.somaxconn (4096 by default since kernel 5.4).
LISTEN_BACKLOG = 1024
# A connection idle this long (no request) is closed, so idle clients cannot pile up.
IDLE_TIMEOUT_S = 30.0
# A request head (request line and header fields) longer than this closes the connection.
MAX_HEAD_BYTES = 64 * 1024
_METRIC_PATHS = ("/metrics", "/")
_NOT_FOUND = b"not found: metrics are at /metrics\n"


def _response(
    status: str, content_type: str, body: bytes, *, head: bool, close: bool, gzipped: bool = False
) -> bytes:
    lines = [
        f"HTTP/1.1 {status}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        *(["Content-Encoding: gzip"] if gzipped else []),
        *(["Connection: close"] if close else []),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + (b"" if head else body)


def _fields(head: bytes) -> dict[bytes, bytes]:
    """Header fields of a request head, names lower-cased (RFC 9110 section 5.1)."""
    return {
        name.strip().lower(): value.strip().lower()
        for name, _, value in (line.partition(b":") for line in head.split(b"\r\n")[1:])
    }


def _wants_close(request_line: bytes, fields: dict[bytes, bytes]) -> bool:
    """HTTP/1.0 closes unless asked to keep alive; HTTP/1.1 keeps alive unless asked to close
    (RFC 9112 section 9.3).  A request with a body is answered, then closed: none is expected."""
    if request_line.endswith(b"HTTP/1.0"):
        return fields.get(b"connection") != b"keep-alive"
    return fields.get(b"connection") == b"close" or b"content-length" in fields


def _accepts_gzip(accept_encoding: bytes) -> bool:
    """``Accept-Encoding`` lists gzip (or ``*``) without ``q=0`` (RFC 9110 section 12.5.3)."""
    for item in accept_encoding.split(b","):
        coding, _, params = item.partition(b";")
        if coding.strip() not in (b"gzip", b"*"):
            continue
        weight = params.strip().removeprefix(b"q=")
        try:
            return not weight or float(weight) > 0
        except ValueError:
            return False
    return False


def _answer(head: bytes, snapshot: Snapshot) -> tuple[bytes, bool]:
    """The response to one request head, and whether to close the connection after it."""
    request_line = head.partition(b"\r\n")[0]
    method, _, rest = request_line.partition(b" ")
    fields = _fields(head)
    close = _wants_close(request_line, fields)
    if method not in (b"GET", b"HEAD"):
        return _response("405 Method Not Allowed", "text/plain", b"", head=False, close=True), True
    is_head = method == b"HEAD"
    target = rest.partition(b" ")[0].decode("latin-1")
    if urlsplit(target).path not in _METRIC_PATHS:
        body = _response("404 Not Found", "text/plain; charset=utf-8", _NOT_FOUND,
                         head=is_head, close=close)  # fmt: skip
        return body, close
    gzipped = _accepts_gzip(fields.get(b"accept-encoding", b""))
    body = snapshot.gzip if gzipped else snapshot.text
    response = _response(
        "200 OK", CONTENT_TYPE_LATEST, body, head=is_head, close=close, gzipped=gzipped
    )
    return response, close


class _ScrapeProtocol(asyncio.Protocol):
    """One client connection: answer each request head in turn (keep-alive, pipelining).

    A raw protocol rather than asyncio streams: no task per connection or per request, which
    is most of the cost of a scrape when the body is already rendered.
    """

    def __init__(self, exporter: Exporter, loop: asyncio.AbstractEventLoop) -> None:
        self._exporter, self._loop = exporter, loop
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None
        self._idle: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._arm_idle_timer()

    def _arm_idle_timer(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        if self._transport is not None:
            self._idle = self._loop.call_later(IDLE_TIMEOUT_S, self._transport.close)

    def data_received(self, data: bytes) -> None:
        transport = self._transport
        assert transport is not None
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            head = bytes(self._buffer[:end])
            del self._buffer[: end + 4]
            response, close = _answer(head, self._exporter.snapshot())
            transport.write(response)
            if close:
                transport.close()
                return
        if len(self._buffer) > MAX_HEAD_BYTES:
            transport.close()
            return
        self._arm_idle_timer()

    # A client that sends requests but does not read the answers: stop reading its requests
    # until the answers drain (asyncio flow control), so its buffer cannot grow unbounded.
    def pause_writing(self) -> None:
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        if self._transport is not None:
            self._transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._transport = None


class MetricsServer:
    """Serves one exporter's snapshot on a bound socket, from an event loop in a thread.

    Binding happens in the constructor (so a bad address fails in the caller); serving
    starts with :meth:`start`.  ``shutdown()`` then ``server_close()`` stop it.
    """

    def __init__(
        self, family: socket.AddressFamily, sockaddr: tuple[str, int], exporter: Exporter
    ) -> None:
        self.exporter = exporter
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(sockaddr)
            self.socket.listen(LISTEN_BACKLOG)
        except OSError:
            self.socket.close()
            raise
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="clusterforge-http", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(
            loop.create_server(
                lambda: _ScrapeProtocol(self.exporter, loop),
                sock=self.socket,
                backlog=LISTEN_BACKLOG,
            )
        )
        try:
            loop.run_forever()
        finally:
            server.close()
            loop.run_until_complete(server.wait_closed())

    def shutdown(self) -> None:
        """Stop serving (waits for the loop to stop)."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5.0)

    def server_close(self) -> None:
        self.socket.close()
        if not self._thread.is_alive():
            self._loop.close()


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
    server.start()
    return server


@dataclass(frozen=True)
class RunningExporter:
    """A started exporter: checks on their interval, metrics served on ``url``."""

    node: str
    url: str
    exporter: Exporter
    server: MetricsServer

    def close(self) -> None:
        """Stop both threads; a check run in flight (a hung NVML call) is not waited for
        beyond a second: it is a daemon thread and its state file is written atomically."""
        self.exporter.stop(timeout_s=1.0)
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
