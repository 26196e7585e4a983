"""Grafana provisioning files: the structure Grafana's "Provision Grafana" documentation gives
for data sources and dashboard providers (apiVersion 1), a data source that reaches the
Prometheus prometheus.yml configures, and a provider that serves the generated dashboards."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import yaml

from clusterforge.design import Design
from clusterforge.generate import render
from clusterforge.generate.monitoring.files import SCRAPE_INTERVAL_S, monitoring_host
from clusterforge.generate.monitoring.provisioning import DASHBOARDS_PATH, PROMETHEUS_PORT

_DATASOURCES = {
    "type": "object",
    "required": ["apiVersion", "datasources"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": 1},
        "datasources": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "type", "access", "url"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "type": {"type": "string"},
                    "uid": {"type": "string", "maxLength": 40},
                    "access": {"enum": ["proxy", "direct"]},
                    "url": {"type": "string", "pattern": "^https?://"},
                    "isDefault": {"type": "boolean"},
                    "editable": {"type": "boolean"},
                    "jsonData": {"type": "object"},
                },
            },
        },
    },
}
_PROVIDERS = {
    "type": "object",
    "required": ["apiVersion", "providers"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": 1},
        "providers": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "type", "options"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "orgId": {"type": "integer"},
                    "folder": {"type": "string"},
                    "type": {"const": "file"},
                    "disableDeletion": {"type": "boolean"},
                    "allowUiUpdates": {"type": "boolean"},
                    "updateIntervalSeconds": {"type": "integer", "minimum": 1},
                    "options": {
                        "type": "object",
                        "required": ["path"],
                        "properties": {"path": {"type": "string", "pattern": "^/"}},
                    },
                },
            },
        },
    },
}


def _files(design: Design) -> dict[str, str]:
    return {f.path: f.content for f in render(design, ["monitoring"])}


def test_datasource_is_the_default_prometheus_the_config_describes(lab_design: Design) -> None:
    files = _files(lab_design)
    doc: dict[str, Any] = yaml.safe_load(
        files["monitoring/grafana/provisioning/datasources/prometheus.yaml"]
    )
    jsonschema.validate(doc, _DATASOURCES)
    (source,) = doc["datasources"]
    assert source["type"] == "prometheus" and source["isDefault"] is True
    assert source["url"] == f"http://{monitoring_host(lab_design)}:{PROMETHEUS_PORT}"
    prometheus = yaml.safe_load(files["monitoring/prometheus.yml"])
    assert source["jsonData"]["timeInterval"] == prometheus["global"]["scrape_interval"]
    assert prometheus["global"]["scrape_interval"] == f"{SCRAPE_INTERVAL_S}s"


def test_provider_serves_the_generated_dashboards(lab_design: Design) -> None:
    """Every dashboard asks for a Prometheus data source (its ``datasource`` variable), which
    the provisioned default satisfies; the provider reads the folder they are copied to."""
    files = _files(lab_design)
    text = files["monitoring/grafana/provisioning/dashboards/clusterforge.yaml"]
    doc = yaml.safe_load(text)
    jsonschema.validate(doc, _PROVIDERS)
    (provider,) = doc["providers"]
    assert provider["options"]["path"] == DASHBOARDS_PATH and DASHBOARDS_PATH in text
    assert provider["folder"] == lab_design.spec.name
    dashboards = [json.loads(v) for k, v in files.items() if k.startswith("monitoring/dashboards/")]
    assert dashboards
    for dashboard in dashboards:
        variables = dashboard["templating"]["list"]
        assert {"name": "datasource", "type": "datasource", "query": "prometheus"} in [
            {k: v.get(k) for k in ("name", "type", "query")} for v in variables
        ]
