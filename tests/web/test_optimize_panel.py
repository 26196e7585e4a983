"""The planner's Optimize panel through an in-process client: the page with its starting
spec, a small search's front, a space too large refused naming the field to narrow, a bad
spec refused naming its field, and "Open in planner" changing the planner's design."""

from __future__ import annotations

import yaml

from tests.conftest import EXAMPLES
from tests.optimize_specs import SMALL_OPTIMIZE

SMALL = {"name": "small-front", **SMALL_OPTIMIZE}


def _search(client, data: object):
    text = data if isinstance(data, str) else yaml.safe_dump(data)
    return client.post("/api/optimize", json={"spec_yaml": text})


def test_the_page_starts_from_the_build_or_rent_example(client):
    from clusterforge.web.optimize import DEFAULT_OPTIMIZE_YAML

    example = (EXAMPLES / "optimize" / "build-or-rent.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(DEFAULT_OPTIMIZE_YAML) == yaml.safe_load(example)
    page = client.get("/optimize").text
    assert 'id="spec-yaml"' in page and "name: h100-build-or-rent" in page
    assert "://" not in page  # no external assets
    assert 'href="/optimize"' in client.get("/").text  # the planner links to it


def test_a_small_search_returns_its_front_chart_and_winner(client):
    answer = _search(client, SMALL)
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert len(result["front"]) >= 2
    assert result["chart_svg"].startswith("<svg") and "front" in result["chart_svg"]
    assert result["winner"]["winner"] == result["front"][0]["design"]  # objective time
    assert result["search"]["families"] == 2 and "searched 2 families" in result["summary"]
    assert all(p["spec"]["num_gpus"] == p["num_gpus"] for p in result["front"])


def test_a_search_space_too_large_is_refused_naming_the_field_to_narrow(client):
    wide = {**SMALL, "search": {**SMALL["search"], "num_gpus": {"min": 8, "max": 16384},
                                "nodes": None, "fabrics": ["infiniband", "roce"]}}  # fmt: skip
    answer = _search(client, wide)
    assert answer.status_code == 422
    body = answer.json()
    assert body["field"] == "search.nodes"
    assert "search.nodes" in body["detail"] and "clusterforge optimize" in body["detail"]


def test_a_bad_spec_is_422_naming_the_field(client):
    answer = _search(client, {**SMALL, "objective": "fastest"})
    assert answer.status_code == 422
    assert answer.json()["field"] == "objective"
    assert "time" in answer.json()["detail"]
    unknown = {**SMALL, "job": {**SMALL["job"], "model": "llama3-8x"}}
    assert _search(client, unknown).json()["field"] == "job.model"


def test_bad_yaml_is_422_not_a_traceback(client):
    answer = _search(client, "job: [\n")
    assert answer.status_code == 422
    body = answer.json()
    assert body["field"] == "spec_yaml" and "line" in body["detail"]
    assert _search(client, "- 1\n").status_code == 422
    assert client.post("/api/optimize", json={"yaml": "x"}).status_code == 422


def test_open_in_planner_changes_the_planners_headline(client):
    before = client.get("/").text
    front = _search(client, SMALL).json()["front"]
    point = front[-1]  # the cheapest: 8 GPUs
    answer = client.post("/api/optimize/open", json={"spec": point["spec"]})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["ok"] and f"small-front: {point['num_gpus']} GPUs" in result["headline"]
    page = client.get("/").text
    assert page != before and result["headline"] in page
    spec = yaml.safe_load(client.get("/download/spec.yaml").text)
    assert spec["num_gpus"] == point["num_gpus"] and spec["name"] == "small-front"


def test_opening_a_bad_spec_is_422_and_leaves_the_planner(client):
    before = client.get("/").text
    answer = client.post("/api/optimize/open", json={"spec": {"num_gpus": -3}})
    assert answer.status_code == 422 and "num_gpus" in answer.json()["detail"]
    assert client.get("/").text == before
