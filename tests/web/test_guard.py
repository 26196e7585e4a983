"""The request guard in front of the planner: host names, body size, JSON constants, and
errors that do not echo the request back."""

from __future__ import annotations

import time

from clusterforge.web.guard import MAX_BODY_BYTES, host_names


def test_a_foreign_host_name_is_refused(client):
    # a DNS-rebinding page reaches 127.0.0.1 but its browser sends its own name
    response = client.get("/", headers={"Host": "attacker.example:8080"})
    assert response.status_code == 421
    assert "--allow-host" in response.json()["detail"]
    assert client.get("/", headers={"Host": "localhost:8080"}).status_code == 200
    assert client.get("/", headers={"Host": "[::1]:8080"}).status_code == 200


def test_the_served_names():
    assert host_names("127.0.0.1") == {"localhost", "127.0.0.1", "::1"}
    assert "planner.lab" in host_names("0.0.0.0", ["Planner.lab"])
    assert "0.0.0.0" not in host_names("0.0.0.0")
    assert "10.1.2.3" in host_names("10.1.2.3")


def test_a_large_body_is_refused_before_it_is_parsed(client):
    body = b'{"values": {"name": "' + b"x" * (60 << 20) + b'"}, "enabled": {}}'
    start = time.perf_counter()
    response = client.post("/api/form", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert time.perf_counter() - start < 5.0  # was 160 s of validation
    assert len(response.text) < 500  # the answer does not echo the input


def test_a_body_without_its_length_is_capped_while_read(client):
    def chunks():
        for _ in range(3):
            yield b" " * (MAX_BODY_BYTES // 2)

    response = client.post(
        "/api/plan", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413


def test_nan_and_infinity_are_422_not_500(client):
    for constant in ("NaN", "Infinity", "-Infinity"):
        body = '{"num_gpus": 64, "node": "dgx-h100", "spare_fraction": ' + constant + "}"
        response = client.post(
            "/api/plan", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 422, constant
        assert constant.lstrip("-") in response.json()["detail"]


def test_a_validation_error_names_the_field_without_echoing_the_value(client):
    huge = "y" * 200_000
    response = client.post("/api/plan", json={"num_gpus": huge})
    assert response.status_code == 422
    assert "num_gpus" in response.text and huge[:1000] not in response.text
    assert len(response.text) < 2000


def test_an_error_that_would_echo_a_nan_is_still_json():
    # the default handler echoed the input, and NaN cannot be written as JSON: a 500
    import warnings

    from clusterforge.web.app import planner_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    bare = TestClient(planner_app(), raise_server_exceptions=False)
    response = bare.post(
        "/api/plan", json={"num_gpus": 64, "node": "dgx-h100", "spare_fraction": "x"}
    )
    assert response.status_code == 422 and "spare_fraction" in response.text
    nan = bare.post("/api/form", content='{"values": {}, "enabled": {"workload": NaN}}',
                    headers={"Content-Type": "application/json"})  # fmt: skip
    assert nan.status_code == 422
