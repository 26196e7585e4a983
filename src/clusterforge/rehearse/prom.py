"""The monitoring half of the rehearsal: the generated alert rules in a real Prometheus,
scraping one ``clusterforge exporter`` per emulated node and the stand-ins of
:mod:`clusterforge.rehearse.standins`.

``prometheus.yml`` is the generated one with these rewrites for one machine: each kept job
(``clusterforge``; ``node`` and ``dcgm`` when their stand-ins run) scrapes this machine's
ports, each target labelled with its node's name (the generated relabelling takes the node
from the target's host name, which does not resolve here), its other settings (the ``node``
job's rail relabelling) as generated; the PDU job and any job without a stand-in are
dropped; the Alertmanager target is dropped (alerts are read from Prometheus' own
``/api/v1/alerts``); scrape and evaluation intervals become :data:`FAST_INTERVAL_S`.

The rule files are a rehearsal copy in which only the ``for:`` durations longer than the
rehearsal's are shortened to it, so an alert fires within a drill rather than after minutes;
:func:`rehearsal_rules` proves every other line equals the generated file.
"""

from __future__ import annotations

import json
import re
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

from clusterforge.generate.monitoring.files import monitoring_files
from clusterforge.rehearse.cluster import Lab
from clusterforge.rehearse.netns import Links

__all__ = [
    "FAST_INTERVAL_S",
    "Monitoring",
    "ScrapeTargets",
    "prometheus_config",
    "rehearsal_rules",
    "start_monitoring",
]

FAST_INTERVAL_S = 2
EXPORTER_INTERVAL_S = 2.0  # the exporters re-run the check this often
_FOR_RE = re.compile(r"^(\s*)for: (\d+)([smh])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600}


def rehearsal_rules(generated: str, for_s: int) -> tuple[str, int]:
    """The rule file with each ``for:`` longer than ``for_s`` seconds set to it, and how
    many were; raises AssertionError unless every other line is the generated one."""
    lines, num_changed = [], 0
    for line in generated.splitlines():
        match = _FOR_RE.match(line)
        if match and int(match[2]) * _UNIT_S[match[3]] > for_s:
            line = f"{match[1]}for: {for_s}s"
            num_changed += 1
        lines.append(line)
    copy = "\n".join(lines) + "\n"
    for before, after in zip(generated.splitlines(), copy.splitlines(), strict=True):
        assert before == after or (_FOR_RE.match(before) and _FOR_RE.match(after)), before
    return copy, num_changed


@dataclass(frozen=True)
class ScrapeTargets:
    """node -> host:port of each kind of exporter this rehearsal runs."""

    clusterforge: dict[str, str]
    node: dict[str, str] = field(default_factory=dict)  # link stand-ins (node_exporter's names)
    dcgm: dict[str, str] = field(default_factory=dict)  # clock stand-ins (dcgm-exporter's names)


def _local_job(job: dict[str, Any], targets: dict[str, str]) -> dict[str, Any]:
    base_labels = job["static_configs"][0].get("labels", {})
    kept = {k: v for k, v in job.items() if k not in ("static_configs", "relabel_configs")}
    kept["static_configs"] = [
        {"targets": [address], "labels": {**base_labels, "node": node}}
        for node, address in targets.items()
    ]
    return kept


def prometheus_config(generated: dict[str, Any], targets: ScrapeTargets) -> dict[str, Any]:
    """The generated prometheus.yml rewritten for this machine's exporters."""
    config = {k: v for k, v in generated.items() if k not in ("alerting", "scrape_configs")}
    interval = f"{FAST_INTERVAL_S}s"
    config["global"] = {
        **generated["global"],
        "scrape_interval": interval,
        "evaluation_interval": interval,
    }
    wanted = {"clusterforge": targets.clusterforge, "node": targets.node, "dcgm": targets.dcgm}
    config["scrape_configs"] = [
        _local_job(job, wanted[job["job_name"]])
        for job in generated["scrape_configs"]
        if wanted.get(job["job_name"])
    ]
    return config


@dataclass
class Monitoring:
    url: str
    rules_note: str = ""  # what the rehearsal changed in the generated rules
    processes: dict[str, list[subprocess.Popen[bytes]]] = field(default_factory=dict)
    links: Links | None = None

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=5) as response:
            return json.load(response)["data"]

    def alerts(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = self.get("/api/v1/alerts")["alerts"]
        return alerts

    def up_targets(self) -> int:
        targets = self.get("/api/v1/targets")["activeTargets"]
        return sum(1 for t in targets if t["health"] == "up")

    def node_pids(self, node: str) -> list[int]:
        """The node's own exporters (they slow down with the node)."""
        return [p.pid for p in self.processes.get(node, [])]

    def stop(self) -> None:
        every = [p for group in self.processes.values() for p in group]
        for proc in every:
            proc.terminate()
        for proc in every:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.links is not None:
            self.links.close()


def _spawn(argv: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output in ``log_path`` (the child keeps the file open)."""
    with log_path.open("wb") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def _exporter(lab: Lab, node: str, port: int) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "clusterforge.cli.main", "exporter", "--expect",
        str(lab.work / "spec.yaml"), "--node", node, "--nvml-fixture", str(lab.readings(node)),
        "--sysfs-root", str(lab.work / "sysfs"), "--num-nics", "0", "--port", str(port),
        "--address", "127.0.0.1", "--interval-s", str(EXPORTER_INTERVAL_S),
    ]  # fmt: skip
    return _spawn(argv, lab.work / "prometheus" / f"exporter-{node}.log")


def _clock(lab: Lab, node: str, port: int) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "clusterforge.rehearse.standins", "clock", "--port", str(port)]
    return _spawn(argv, lab.work / "prometheus" / f"clock-{node}.log")


def _write_prometheus_files(lab: Lab, targets: ScrapeTargets, for_s: int) -> tuple[Path, str]:
    folder = lab.work / "prometheus"
    files = {f.path: f.content for f in monitoring_files(lab.design)}
    (folder / "rules").mkdir(parents=True, exist_ok=True)
    num_changed = 0
    for path, content in files.items():
        if path.startswith("monitoring/rules/"):
            copy, changed = rehearsal_rules(content, for_s)
            (folder / "rules" / Path(path).name).write_text(copy)
            num_changed += changed
    config = prometheus_config(yaml.safe_load(files["monitoring/prometheus.yml"]), targets)
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    note = (
        f"rules as generated but {num_changed} 'for:' shortened to {for_s}s "
        f"(every other line checked equal); scrape and evaluation every {FAST_INTERVAL_S}s"
    )
    return folder / "prometheus.yml", note


@dataclass(frozen=True)
class MonitoringPorts:
    prometheus: int
    first_exporter: int  # node i's exporter listens on this + i
    first_clock: int  # node i's clock stand-in listens on this + i


def start_monitoring(
    lab: Lab, ports: MonitoringPorts, *, for_s: int, links: Links | None = None
) -> Monitoring:
    """The exporters and stand-ins, and Prometheus with the rehearsal's copy of the rules;
    waits until every target is up.  Owns ``links`` from here on (stops them too)."""
    if shutil.which("prometheus") is None:
        raise FileNotFoundError("prometheus is not installed (apt-get install prometheus)")
    (lab.work / "prometheus").mkdir(exist_ok=True)
    monitoring = Monitoring(f"http://127.0.0.1:{ports.prometheus}", links=links)
    addresses: dict[str, dict[str, str]] = {"clusterforge": {}, "dcgm": {}}
    for i, node in enumerate(lab.nodes):
        exporter, clock = ports.first_exporter + i, ports.first_clock + i
        monitoring.processes[node] = [_exporter(lab, node, exporter), _clock(lab, node, clock)]
        addresses["clusterforge"][node] = f"127.0.0.1:{exporter}"
        addresses["dcgm"][node] = f"127.0.0.1:{clock}"
    node_targets = {n: p.address for n, p in links.ports.items()} if links else {}
    targets = ScrapeTargets(addresses["clusterforge"], node_targets, addresses["dcgm"])
    config, monitoring.rules_note = _write_prometheus_files(lab, targets, for_s)
    argv = [
        "prometheus", f"--config.file={config}", f"--web.listen-address=127.0.0.1:{ports.prometheus}",
        f"--storage.tsdb.path={lab.work / 'prometheus' / 'data'}",
    ]  # fmt: skip
    monitoring.processes["prometheus"] = [_spawn(argv, lab.work / "prometheus" / "prometheus.log")]
    expected = len(targets.clusterforge) + len(targets.node) + len(targets.dcgm)
    _wait_targets(monitoring, expected, config.parent)
    return monitoring


def _wait_targets(
    monitoring: Monitoring, expected: int, folder: Path, timeout_s: float = 90
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if monitoring.up_targets() == expected:
                return
        except (urllib.error.URLError, OSError, KeyError):
            pass
        time.sleep(1)
    monitoring.stop()
    raise TimeoutError(f"{expected} targets not all up in Prometheus within 90 s: see {folder}")
