"""Monitoring files: prometheus.yml, alert rules, alertmanager.yml, dashboards, counters CSV,
and the SNMP exporter generator config for the rack PDUs.

Every GPU node is scraped on three ports: dcgm-exporter (9400), node_exporter (9100) and the
clusterforge exporter (9410).  Targets are grouped by rack and leaf group so each series carries
``rack``, ``leaf_group`` (and ``spine_block``) labels; a ``node`` label comes from the target
address, which avoids dcgm-exporter's ``Hostname``/``hostname`` label rename (dcgm-exporter
README, "Kubernetes" notes); NIC port series (node_exporter's InfiniBand ones, the clusterforge
exporter's Ethernet/RoCE ones) get a ``rail`` label from the HCA name, mapped through the node
model's compute HCA names (a DGX H100's rail 1 is ``mlx5_3``), also when the exporter runs
without the design.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from clusterforge.design import Design
from clusterforge.generate.common import GeneratedFile, checked_name, yaml_text
from clusterforge.generate.layout import NodePlacement, node_placements
from clusterforge.generate.monitoring.alerts import alert_groups
from clusterforge.generate.monitoring.dashboards import dashboards
from clusterforge.generate.monitoring.metrics import (
    CLUSTERFORGE_EXPORTER_PORT,
    DCGM_COUNTERS_FILE,
    DCGM_EXPORTER_PORT,
    NODE_EXPORTER_PORT,
    dcgm_counters_csv,
)
from clusterforge.generate.monitoring.pdu_snmp import generator_config, pdu_scrape_config
from clusterforge.generate.monitoring.provisioning import provisioning_files
from clusterforge.generate.slurm.accounting import management_roles
from clusterforge.generate.training.launch import hca_names

__all__ = ["SCRAPE_INTERVAL_S", "monitoring_files", "monitoring_host", "prometheus_config"]

# dcgm-exporter collects every 30 000 ms by default (its -c flag): scrape as often.
SCRAPE_INTERVAL_S = 30
EVALUATION_INTERVAL_S = 30
ALERTMANAGER_PORT = 9093
JOBS = (
    ("dcgm", DCGM_EXPORTER_PORT),
    ("node", NODE_EXPORTER_PORT),
    ("clusterforge", CLUSTERFORGE_EXPORTER_PORT),
)


def _labels(p: NodePlacement, cluster: str) -> dict[str, str]:
    labels = {"cluster": cluster, "leaf_group": p.group}
    optional = {"rack": p.rack, "spine_block": p.pod, "nvlink_block": p.nvlink_block}
    labels.update({k: v for k, v in optional.items() if v})
    return labels


def _static_configs(design: Design, port: int) -> list[dict[str, Any]]:
    placements = node_placements(design)
    configs = []
    for _, group in groupby(placements, key=lambda p: (p.rack, p.group, p.pod, p.nvlink_block)):
        members = list(group)
        configs.append(
            {
                "targets": [f"{checked_name(p.name, 'node name')}:{port}" for p in members],
                "labels": _labels(members[0], design.spec.name),
            }
        )
    return configs


def _scrape_config(design: Design, job: str, port: int) -> dict[str, Any]:
    config: dict[str, Any] = {
        "job_name": job,
        "static_configs": _static_configs(design, port),
        "relabel_configs": [
            {
                "source_labels": ["__address__"],
                "regex": r"([^:]+):\d+",
                "target_label": "node",
                "replacement": "$1",
            }
        ],
    }
    if job in ("node", "clusterforge"):
        config["metric_relabel_configs"] = _rail_labels(design)
    return config


def _rail_labels(design: Design) -> list[dict[str, Any]]:
    """``rail`` label from the HCA name: one rule per compute HCA (names from the catalog)."""
    return [
        {
            "source_labels": ["device"],
            "regex": name,
            "target_label": "rail",
            "replacement": str(rail),
        }
        for rail, name in enumerate(hca_names(design))
    ]


def monitoring_host(design: Design) -> str:
    """Where Prometheus, Alertmanager and the SNMP exporter run: the first dedicated
    monitoring server, else the last head node."""
    roles = management_roles(design)
    if roles.get("monitoring"):
        return roles["monitoring"][0]
    heads = roles.get("head") or ["localhost"]
    return heads[-1]


def prometheus_config(design: Design) -> dict[str, Any]:
    """prometheus.yml as data."""
    host = monitoring_host(design)
    return {
        "global": {
            "scrape_interval": f"{SCRAPE_INTERVAL_S}s",
            "evaluation_interval": f"{EVALUATION_INTERVAL_S}s",
            "external_labels": {"cluster": design.spec.name},
        },
        "rule_files": ["rules/*.yml"],
        "alerting": {
            "alertmanagers": [{"static_configs": [{"targets": [f"{host}:{ALERTMANAGER_PORT}"]}]}]
        },
        "scrape_configs": [
            *(_scrape_config(design, job, port) for job, port in JOBS),
            pdu_scrape_config(design, host),
        ],
    }


def _alertmanager() -> dict[str, Any]:
    """One route tree: critical pages the on-call receiver, the rest goes to the team queue."""
    return {
        "route": {
            "receiver": "team",
            "group_by": ["alertname", "cluster", "node"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": [
                {"matchers": ['severity="critical"'], "receiver": "oncall", "repeat_interval": "1h"}
            ],
        },
        "inhibit_rules": [
            {
                "source_matchers": ['alertname="NodeUnhealthy"'],
                "target_matchers": ['severity=~"warning|info"'],
                "equal": ["node"],
            }
        ],
        # Fill in the receivers' notification settings (webhook, e-mail, PagerDuty ...).
        "receivers": [{"name": "team"}, {"name": "oncall"}],
    }


def _yaml(data: dict[str, Any], header: str) -> str:
    return f"# {header}\n# Written by `clusterforge generate`.\n" + yaml_text(data)


def monitoring_files(design: Design) -> list[GeneratedFile]:
    """Every monitoring file for ``design``, paths under ``monitoring/``."""
    name = checked_name(design.spec.name, "cluster name")  # it reaches comment lines too
    files = [
        GeneratedFile(
            "monitoring/prometheus.yml", _yaml(prometheus_config(design), f"Prometheus for {name}")
        ),
        GeneratedFile(
            "monitoring/alertmanager.yml", _yaml(_alertmanager(), f"Alertmanager for {name}")
        ),
        GeneratedFile(f"monitoring/{DCGM_COUNTERS_FILE}", dcgm_counters_csv(design)),
        GeneratedFile(
            "monitoring/snmp/generator.yml",
            _yaml(
                generator_config(),
                f"snmp_exporter generator config for the PDUs of {name}: run the generator "
                "with the PDU vendor MIBs to make snmp.yml, and set the pdu job's module "
                "in prometheus.yml to your PDUs' vendor",
            ),
        ),
    ]
    for stem, rules in alert_groups(design).items():
        files.append(
            GeneratedFile(f"monitoring/rules/{stem}.yml", _yaml(rules, f"{stem} alerts for {name}"))
        )
    for stem, text in dashboards(design).items():
        files.append(GeneratedFile(f"monitoring/dashboards/{stem}.json", text))
    files += provisioning_files(name, host=monitoring_host(design), scrape_s=SCRAPE_INTERVAL_S)
    return files
