"""An in-process client of the planner app (FastAPI's TestClient, no socket)."""

from __future__ import annotations

import warnings

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
