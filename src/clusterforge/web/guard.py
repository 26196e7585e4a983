"""What the planner accepts before any route sees a request: its own host names, bounded
bodies, and JSON that is JSON.

* **Host header.** A page on another site can make a browser resolve its own name to
  127.0.0.1 (DNS rebinding) and then read the planner as same-origin. The browser still sends
  the attacker's name in ``Host``, so only the names the planner is served under are answered
  (loopback names, the listen address, and names given with ``serve --allow-host``); anything
  else gets 421 Misdirected Request.
* **Body size.** A body is read up to :data:`MAX_BODY_BYTES`; a larger one (announced by
  Content-Length or found while reading) is refused with 413 before it is parsed, so a 60 MB
  upload costs no validation time.
* **JSON constants.** Python's JSON parser accepts ``NaN`` and ``Infinity``, which RFC 8259
  (section 6) does not allow and no spec field can hold; such a body gets 422 naming the
  constant, not a 500 from deep in the planner.

Pure ASGI (https://asgi.readthedocs.io/), so it wraps the FastAPI app without a framework hook.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["LOOPBACK_HOSTS", "MAX_BODY_BYTES", "RequestGuard", "host_names"]

MAX_BODY_BYTES = 1 << 20  # 1 MiB: the largest spec form is ~10 kB
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def host_names(listen: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The names the planner answers to when listening on ``listen``: loopback, the listen
    address itself (unless a wildcard) and ``extra``, lower-cased."""
    names = {*LOOPBACK_HOSTS, *(e.strip().lower() for e in extra if e.strip())}
    if listen.strip().lower() not in WILDCARDS:
        names.add(listen.strip().lower().strip("[]"))
    return frozenset(names)


def _hostname(header: str) -> str:
    """``Host`` without its port: 'example:8080' -> 'example', '[::1]:80' -> '::1'."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class _Refused(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def _reject_constant(name: str) -> Any:
    raise _Refused(422, f"the JSON body holds {name}, which JSON does not allow; send a number")


class RequestGuard:
    """ASGI middleware: host check, body cap and strict JSON before ``app`` runs."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str], max_body: int = MAX_BODY_BYTES):
        self.app, self.hosts, self.max_body = app, hosts, max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            self._check_host(headers.get("host", ""))
            body = await self._read_body(headers, receive)
            if body and "json" in headers.get("content-type", ""):
                _check_json(body)
        except _Refused as exc:
            await _answer(send, exc.status, exc.detail)
            return
        await self.app(scope, _replay(body, receive), send)

    def _check_host(self, header: str) -> None:
        name = _hostname(header)
        if name not in self.hosts:
            raise _Refused(
                421,
                f"this planner does not serve the host name {name[:64]!r}; open it as "
                f"http://127.0.0.1 or start it with `clusterforge serve --allow-host NAME`",
            )

    async def _read_body(self, headers: dict[str, str], receive: Receive) -> bytes:
        announced = headers.get("content-length", "")
        if announced.isdigit() and int(announced) > self.max_body:
            raise _Refused(413, self._too_large(int(announced)))
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise _Refused(413, self._too_large(size))
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _too_large(self, size: int) -> str:
        return (
            f"the request body ({size:,} bytes or more) is larger than the "
            f"{self.max_body:,} bytes a spec needs; send the spec's fields only"
        )


def _check_json(body: bytes) -> None:
    with contextlib.suppress(ValueError):  # malformed: the app's parser answers 422 with where
        json.loads(body, parse_constant=_reject_constant)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body already read, then the client's own messages (its disconnect)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
