"""The monitoring half of the rehearsal: the generated alert rules in a real Prometheus,
scraping one ``clusterforge exporter`` per emulated node.

The rule files are loaded as generated.  ``prometheus.yml`` is the generated one with these
rewrites for one machine: the ``clusterforge`` job's targets become this machine's exporter
ports, each labelled with its node's name (the generated relabelling takes the node from the
target's host name, which does not resolve here); the dcgm, node and PDU jobs are dropped (no
such exporters run here); the Alertmanager target is dropped (alerts are read from
Prometheus' own ``/api/v1/alerts``); scrape and evaluation intervals are shortened to
:data:`FAST_INTERVAL_S` so a drill sees a rule's expression turn true within seconds.  The
rules' ``for:`` durations are kept, so an alert is *pending* until its ``for:`` has passed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clusterforge.generate.monitoring import monitoring_files
from clusterforge.rehearse.cluster import Lab
from clusterforge.rehearse.fixtures import healthy_readings, write_readings, xid_readings
from clusterforge.rehearse.model import DrillResult, RehearseOptions

__all__ = [
    "FAST_INTERVAL_S",
    "Monitoring",
    "prometheus_config",
    "prometheus_drill",
    "start_monitoring",
]

FAST_INTERVAL_S = 2
EXPORTER_INTERVAL_S = 2.0  # the exporters re-run the check this often
HEALTH_ALERT = "NodeUnhealthy"  # the generated rule on the health check's verdict


def prometheus_config(generated: dict[str, Any], targets: dict[str, str]) -> dict[str, Any]:
    """The generated prometheus.yml rewritten for exporters at ``targets`` (node -> host:port)."""
    config = {k: v for k, v in generated.items() if k not in ("alerting", "scrape_configs")}
    interval = f"{FAST_INTERVAL_S}s"
    config["global"] = {
        **generated["global"],
        "scrape_interval": interval,
        "evaluation_interval": interval,
    }
    (job,) = [c for c in generated["scrape_configs"] if c["job_name"] == "clusterforge"]
    base_labels = job["static_configs"][0].get("labels", {})
    config["scrape_configs"] = [
        {
            "job_name": "clusterforge",
            "static_configs": [
                {"targets": [address], "labels": {**base_labels, "node": node}}
                for node, address in targets.items()
            ],
        }
    ]
    return config


@dataclass
class Monitoring:
    url: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=5) as response:
            return json.load(response)["data"]

    def alerts(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = self.get("/api/v1/alerts")["alerts"]
        return alerts

    def up_targets(self) -> int:
        targets = self.get("/api/v1/targets")["activeTargets"]
        return sum(1 for t in targets if t["health"] == "up")

    def stop(self) -> None:
        for proc in self.processes:
            proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _exporter(lab: Lab, node: str, port: int) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "clusterforge.cli.main", "exporter", "--expect",
        str(lab.work / "spec.yaml"), "--node", node, "--nvml-fixture", str(lab.readings(node)),
        "--sysfs-root", str(lab.work / "sysfs"), "--num-nics", "0", "--port", str(port),
        "--address", "127.0.0.1", "--interval-s", str(EXPORTER_INTERVAL_S),
    ]  # fmt: skip
    return _spawn(argv, lab.work / "prometheus" / f"exporter-{node}.log")


def _spawn(argv: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output in ``log_path`` (the child keeps the file open)."""
    with log_path.open("wb") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def _write_prometheus_files(lab: Lab, targets: dict[str, str]) -> Path:
    folder = lab.work / "prometheus"
    files = {f.path: f.content for f in monitoring_files(lab.design)}
    (folder / "rules").mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        if path.startswith("monitoring/rules/"):
            (folder / "rules" / Path(path).name).write_text(content)
    config = prometheus_config(yaml.safe_load(files["monitoring/prometheus.yml"]), targets)
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder / "prometheus.yml"


def start_monitoring(lab: Lab, *, prometheus_port: int, first_exporter_port: int) -> Monitoring:
    """One exporter per node and Prometheus with the generated rules; waits for every target."""
    if shutil.which("prometheus") is None:
        raise FileNotFoundError("prometheus is not installed (apt-get install prometheus)")
    (lab.work / "prometheus").mkdir(exist_ok=True)
    ports = {node: first_exporter_port + i for i, node in enumerate(lab.nodes)}
    config = _write_prometheus_files(lab, {n: f"127.0.0.1:{p}" for n, p in ports.items()})
    monitoring = Monitoring(f"http://127.0.0.1:{prometheus_port}")
    monitoring.processes = [_exporter(lab, n, p) for n, p in ports.items()]
    argv = [
        "prometheus", f"--config.file={config}", f"--web.listen-address=127.0.0.1:{prometheus_port}",
        f"--storage.tsdb.path={lab.work / 'prometheus' / 'data'}",
    ]  # fmt: skip
    monitoring.processes.append(_spawn(argv, lab.work / "prometheus" / "prometheus.log"))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if monitoring.up_targets() == len(lab.nodes):
                return monitoring
        except (urllib.error.URLError, OSError, KeyError):
            pass
        time.sleep(1)
    monitoring.stop()
    raise TimeoutError(f"exporters not all up in Prometheus within 90 s: see {config.parent}")


def _alerts_by_node(monitoring: Monitoring) -> dict[str, list[str]]:
    """node -> ['NodeUnhealthy (pending)', ...] for the alerts that name a node."""
    found: dict[str, list[str]] = {}
    for alert in monitoring.alerts():
        node = alert["labels"].get("node")
        if node:
            found.setdefault(node, []).append(f"{alert['labels']['alertname']} ({alert['state']})")
        # alerts without a node label (cluster-wide) are not this drill's business
    return found


def _wait_alerts(
    monitoring: Monitoring, node: str, *, present: bool, timeout_s: float
) -> dict[str, list[str]]:
    deadline = time.monotonic() + timeout_s
    while True:
        found = _alerts_by_node(monitoring)
        has = any(a.startswith(HEALTH_ALERT) for a in found.get(node, []))
        if has == present or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _alert_drill(lab: Lab, monitoring: Monitoring, node: str) -> DrillResult:
    start = time.monotonic()
    write_readings(lab.readings(node), xid_readings(lab.design, gpu_index=3))
    found = _wait_alerts(monitoring, node, present=True, timeout_s=60)
    detect_s = time.monotonic() - start
    mine = [a for a in found.get(node, []) if a.startswith(HEALTH_ALERT)]
    others = {n: a for n, a in found.items() if n != node}
    evidence = [
        f"XID 79 on GPU 3 of {node}: {', '.join(mine) or 'no alert'} after {detect_s:.1f} s"
    ]
    evidence.append(f"other nodes: {others or 'no alerts'}")
    healed = time.monotonic()
    write_readings(lab.readings(node), healthy_readings(lab.design))
    after = _wait_alerts(monitoring, node, present=False, timeout_s=60)
    cleared = not any(a.startswith(HEALTH_ALERT) for a in after.get(node, []))
    recover_s = time.monotonic() - healed
    evidence.append(
        f"healed: alert {'cleared' if cleared else 'still active'} after {recover_s:.1f} s"
    )
    ok = bool(mine) and not others and cleared
    return DrillResult(
        "prometheus", "pass" if ok else "fail", tuple(evidence), time.monotonic() - start,
        detect_s=detect_s if mine else None, recover_s=recover_s if cleared else None,
    )  # fmt: skip


def prometheus_drill(lab: Lab, options: RehearseOptions) -> DrillResult:
    """XID 79 on one node turns the generated health alert on in a real Prometheus; healing
    clears it."""
    if shutil.which("prometheus") is None:
        return DrillResult(
            "prometheus", "skip", ("prometheus is not installed (apt-get install prometheus)",)
        )
    monitoring = start_monitoring(
        lab,
        prometheus_port=options.prometheus_port,
        first_exporter_port=options.first_exporter_port,
    )
    node = lab.nodes[0]
    try:
        return _alert_drill(lab, monitoring, node)
    finally:
        write_readings(lab.readings(node), healthy_readings(lab.design))
        monitoring.stop()
        lab.run_hook(node)  # resumes the node if Slurm's periodic health check drained it
