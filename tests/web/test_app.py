"""The planner app through an in-process client: the page, the form API, the JSON API with
its OpenAPI description, and the downloads."""

from __future__ import annotations

import csv
import io

import yaml

from clusterforge.design import plan
from clusterforge.spec import default_spec, parse_spec
from clusterforge.web.form import form_sections


def _form(**changes: object) -> dict[str, object]:
    values = {
        f.path: "" if f.value is None else f.value
        for s in form_sections(default_spec())
        for f in s.fields
    }
    values.update(changes)
    return {"values": values, "enabled": {"workload": True}}


def test_the_page_is_the_form_and_the_report_frame(client):
    page = client.get("/").text
    assert 'name="facility.max_rack_kw"' in page
    assert "Contracted power per rack" in page and "(kW)" in page
    assert '<iframe id="report"' in page
    assert "://" not in page  # no external assets
    assert client.get("/report.html").text.startswith("<!DOCTYPE html>")


def test_a_form_change_replans_and_rerenders(client):
    before = client.get("/report.html").text
    result = client.post("/api/form", json=_form(**{"facility.max_rack_kw": "35"})).json()
    assert result["ok"] and result["errors"] == {}
    racks = len(plan(default_spec().model_copy(update={"facility": default_spec().facility.model_copy(update={"max_rack_kw": 35.0})})).racks)  # fmt: skip
    assert f"{racks} racks" in result["headline"]
    after = client.get(f"/report.html?v={result['version']}").text
    assert after != before and f"{racks} racks" in after


def test_a_bad_value_comes_back_at_its_field_and_keeps_the_design(client):
    version = client.post("/api/form", json=_form()).json()["version"]
    result = client.post("/api/form", json=_form(**{"network.switch": "qm970"})).json()
    assert not result["ok"]
    assert "qm9700" in result["errors"]["network.switch"]
    again = client.post("/api/form", json=_form()).json()
    # the spec did not change, so nothing is planned again and no section reloads
    assert again["ok"] and again["version"] == version and again["changed"] == []


def test_a_change_reloads_only_the_sections_it_changed(client):
    client.post("/api/form", json=_form())
    before = client.get("/report.html").text
    result = client.post("/api/form", json=_form(**{"economics.years": "5"})).json()
    assert result["ok"] and result["changed"], result
    assert "summary" in result["changed"] and "racks" not in result["changed"]
    for section in result["changed"]:
        html = client.get(f"/report/section/{section}").text
        assert html.startswith(f'<section id="{section}">') and html not in before
    assert client.get("/report/section/nope").status_code == 404


def test_every_error_comes_back_at_its_field_with_its_fix(client):
    version = client.post("/api/form", json=_form()).json()["version"]
    result = client.post("/api/form", json=_form(node="gb200-nvl72-tray")).json()
    assert not result["ok"]
    # both problems of the liquid-cooled 132 kW rack on an air-cooled 15 kW hall, at once
    assert set(result["errors"]) == {"facility.cooling_available", "facility.max_rack_kw"}
    assert result["fixes"]["facility.max_rack_kw"] == {"facility.max_rack_kw": 132}
    assert (
        "direct-to-chip"
        in result["fixes"]["facility.cooling_available"]["facility.cooling_available"]
    )
    fixed = _form(node="gb200-nvl72-tray")
    for fix in result["fixes"].values():
        fixed["values"].update(fix)
    after = client.post("/api/form", json=fixed).json()
    assert after["ok"] and after["version"] == version + 1
    client.post("/api/form", json=_form())


def test_catalog_fields_are_choices(client):
    page = client.get("/").text
    assert '<select id="f-node" name="node">' in page
    assert '<option value="gb200-nvl72-tray">' in page
    assert '<select id="f-workload.model" name="workload.model">' in page


def test_the_plan_api_returns_the_design(client):
    response = client.post("/api/plan", json={"num_gpus": 64, "node": "dgx-h100"})
    assert response.status_code == 200
    body = response.json()
    design = plan(parse_spec({"num_gpus": 64, "node": "dgx-h100"}))
    assert body["capex_usd"] == design.cost.capex_usd
    assert body["design"]["fabric"]["num_switches"] == design.fabric.num_switches


def test_the_plan_api_names_a_bad_field(client):
    response = client.post("/api/plan", json={"num_gpus": 0, "node": "dgx-h100"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "num_gpus"]
    unknown = client.post("/api/plan", json={"num_gpus": 64, "node": "dgx-h10"})
    assert unknown.status_code == 422 and "dgx-h100" in unknown.json()["detail"]


def test_the_api_is_described_by_openapi(client):
    schema = client.get("/openapi.json").json()
    assert {"/api/plan", "/api/form"} <= set(schema["paths"])
    spec_schema = schema["components"]["schemas"]["ClusterSpec"]
    assert "num_gpus" in spec_schema["required"]
    assert client.get("/docs").status_code == 404  # Swagger UI would load from a CDN


def test_the_spec_downloads_as_yaml_that_plans_the_same(client):
    client.post("/api/form", json=_form(**{"facility.max_rack_kw": "25"}))
    response = client.get("/download/spec.yaml")
    assert "attachment" in response.headers["content-disposition"]
    spec = parse_spec(yaml.safe_load(response.text))
    assert spec.facility.max_rack_kw == 25.0


def test_the_output_files_download(client):
    rows = list(csv.reader(io.StringIO(client.get("/download/bom.csv").text)))
    assert rows[0][:3] == ["category", "item", "description"]
    assert client.get("/download/design.json").json()["spec"]["name"] == "colo-512-h100"
    assert client.get("/download/nothing.txt").status_code == 404
    page = client.get("/").text
    for name in ("floor.svg", "fabric.svg", "fabric.drawio", "fabric.dot"):
        assert f'href="/download/{name}"' in page
        assert client.get(f"/download/{name}").status_code == 200, name
    assert (
        client.get("/download/fabric.dot").text.lstrip().startswith(("graph", "digraph", "strict"))
    )
