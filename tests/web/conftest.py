"""An in-process client of the planner app (FastAPI's TestClient, no socket), and for the
Chromium tests the app on a loopback port and a headless browser (one of each per module)."""

from __future__ import annotations

import socket
import threading
import time
import warnings
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi", reason="the planner needs the ui extra (fastapi)")


@pytest.fixture(scope="module")
def client():
    from clusterforge.web.app import create_app

    with warnings.catch_warnings():
        # starlette's TestClient announces, on import, a move from httpx to a renamed fork
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    with TestClient(create_app(), base_url="http://127.0.0.1") as test_client:
        yield test_client


SERVER_WAIT_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    import uvicorn

    from clusterforge.web.app import create_app

    port = _free_port()
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + SERVER_WAIT_S
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from tests.web.browser import selenium_chromium

    chrome = selenium_chromium(width=1600, host_rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
    yield chrome
    chrome.quit()
