"""Grafana provisioning: the Prometheus data source and a file provider for the dashboards.

Grafana reads YAML files under ``provisioning/datasources`` and ``provisioning/dashboards`` of
its configuration folder at start-up (Grafana documentation, "Provision Grafana"; both files
are ``apiVersion: 1``):

* the data source is the cluster's Prometheus, made the default one, so the dashboards'
  ``datasource`` variable (type ``prometheus``) finds it without a choice; its ``timeInterval``
  is the scrape interval, the smallest step a panel should ask for;
* the dashboard provider loads every JSON file of :data:`DASHBOARDS_PATH` into a folder named
  after the cluster; the generated ``monitoring/dashboards/*.json`` are copied there.
"""

from __future__ import annotations

from typing import Any

from clusterforge.generate.common import GeneratedFile, checked_name, yaml_text

__all__ = [
    "DASHBOARDS_PATH",
    "PROMETHEUS_PORT",
    "dashboard_provider",
    "datasource",
    "provisioning_files",
]

PROMETHEUS_PORT = 9090  # Prometheus' default listen port (--web.listen-address)
DASHBOARDS_PATH = "/var/lib/grafana/dashboards/clusterforge"
DATASOURCE_UID = "prometheus"
PROVIDER_RESCAN_S = 30  # Grafana rereads the folder this often (updateIntervalSeconds)


def datasource(*, host: str, scrape_s: int) -> dict[str, Any]:
    """``provisioning/datasources`` file: the cluster's Prometheus as the default source."""
    return {
        "apiVersion": 1,
        "datasources": [
            {
                "name": "Prometheus",
                "type": "prometheus",
                "uid": DATASOURCE_UID,
                "access": "proxy",
                "url": f"http://{checked_name(host, 'monitoring host')}:{PROMETHEUS_PORT}",
                "isDefault": True,
                "editable": False,
                "jsonData": {"timeInterval": f"{scrape_s}s"},
            }
        ],
    }


def dashboard_provider(cluster: str) -> dict[str, Any]:
    """``provisioning/dashboards`` file: the generated dashboards, read-only in the UI."""
    return {
        "apiVersion": 1,
        "providers": [
            {
                "name": "clusterforge",
                "orgId": 1,
                "folder": checked_name(cluster, "cluster name"),
                "type": "file",
                "disableDeletion": True,
                "allowUiUpdates": False,
                "updateIntervalSeconds": PROVIDER_RESCAN_S,
                "options": {"path": DASHBOARDS_PATH},
            }
        ],
    }


def provisioning_files(cluster: str, *, host: str, scrape_s: int) -> list[GeneratedFile]:
    """Both provisioning files, under ``monitoring/grafana/provisioning/``."""
    top = "monitoring/grafana/provisioning"
    header = "# Written by `clusterforge generate`.\n"
    source = datasource(host=host, scrape_s=scrape_s)
    provider = dashboard_provider(cluster)
    return [
        GeneratedFile(
            f"{top}/datasources/prometheus.yaml",
            f"# Grafana data source: the Prometheus of {cluster}\n{header}{yaml_text(source)}",
        ),
        GeneratedFile(
            f"{top}/dashboards/clusterforge.yaml",
            f"# Grafana dashboards of {cluster}: copy monitoring/dashboards/*.json to "
            f"{DASHBOARDS_PATH}\n{header}{yaml_text(provider)}",
        ),
    ]
