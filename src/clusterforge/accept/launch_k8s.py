"""Kubernetes launcher: each step is an Indexed Job (one pod per node) plus a headless
Service for the rendezvous (Kubernetes docs, "Indexed Job for parallel processing with
static work assignment"; pod hostnames ``<job>-<index>.<service>``)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from clusterforge.accept.launch import Step, StepRun, records_of
from clusterforge.errors import AcceptError

__all__ = ["KubernetesLauncher", "job_manifests"]

PORT = 29500


def _worker_env(step: Step, name: str) -> list[dict[str, Any]]:
    """The rendezvous of a step's ranks: world size, the first pod as master, the node and
    the rank of each pod."""
    return [
        {"name": "WORLD_SIZE", "value": str(len(step.nodes) * step.ranks_per_node)},
        {"name": "MASTER_ADDR", "value": f"{name}-0.{name}"},
        {"name": "MASTER_PORT", "value": str(PORT)},
        {"name": "CF_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        # One rank per pod here; RANK is the completion index (multi-rank pods use torchrun).
        {
            "name": "RANK",
            "valueFrom": {
                "fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                }
            },
        },
    ]


def _node_affinity(nodes: tuple[str, ...]) -> dict[str, Any]:
    """Pods run only on the step's ``nodes`` (by host name)."""
    term = {"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [term]}]
            }
        }
    }


def _one_pod_per_node(name: str) -> list[dict[str, Any]]:
    """Spread the job's pods so that no node holds two."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"job-name": name}},
        }
    ]


def _pod_spec(step: Step, name: str, image: str, gpus: int) -> dict[str, Any]:
    """The pod template of a step's Indexed Job: its worker on the step's nodes, one a node."""
    resources = {"limits": {"nvidia.com/gpu": gpus}} if gpus else {}
    # The fabric rounds meet their partners by node name (perftest's handshake, a TCP port
    # of the partner's server), so their pods use the node's network.
    host = (
        {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"}
        if step.args[:1] == ("fabric",)
        else {}
    )
    worker = {
        "name": "worker",
        "image": image,
        "command": ["python", "-m", "clusterforge.accept.worker", *step.args],
        "env": _worker_env(step, name),
        "resources": resources,
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
    }
    return {
        **host,
        "subdomain": name,
        "restartPolicy": "Never",
        "affinity": _node_affinity(step.nodes),
        "topologySpreadConstraints": _one_pod_per_node(name),
        "containers": [worker],
    }


def job_manifests(step: Step, *, image: str, namespace: str, gpus: int) -> list[dict[str, Any]]:
    """The headless Service and the Indexed Job of one step."""
    name = f"cf-accept-{step.name}"[:52].rstrip("-").lower()
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterIP": "None",
            "selector": {"job-name": name},
            "ports": [{"name": "rendezvous", "port": PORT}],
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "completionMode": "Indexed",
            "completions": len(step.nodes),
            "parallelism": len(step.nodes),
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"job-name": name}},
                "spec": _pod_spec(step, name, image, gpus),
            },
        },
    }
    return [service, job]


@dataclass
class KubernetesLauncher:
    """Apply the step's Job with kubectl, wait for it, collect the pods' logs."""

    work: Path
    image: str
    namespace: str = "default"
    gpus_per_pod: int = 0

    def run(self, step: Step) -> StepRun:
        self.work.mkdir(parents=True, exist_ok=True)
        docs = job_manifests(
            step, image=self.image, namespace=self.namespace, gpus=self.gpus_per_pod
        )
        path = self.work / f"{step.name}.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        if shutil.which("kubectl") is None:
            raise AcceptError(
                f"could not run through Kubernetes: 'kubectl' is not on PATH; the Job is in {path}"
            )
        name = docs[1]["metadata"]["name"]
        ns = ["-n", self.namespace]
        self._kubectl(["apply", "-f", str(path)], step)
        self._kubectl(
            [
                "wait",
                *ns,
                "--for=condition=complete",
                f"job/{name}",
                f"--timeout={int(step.timeout_s)}s",
            ],
            step,
        )
        log = self._kubectl(["logs", *ns, f"job/{name}", "--all-containers", "--prefix"], step)
        return StepRun(step, records_of(log), log, 0)

    def _kubectl(self, args: list[str], step: Step) -> str:
        out = subprocess.run(
            ["kubectl", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=step.timeout_s + 60,
        )
        if out.returncode:
            raise AcceptError(f"kubectl {args[0]} failed: {out.stderr.strip()[:300]}")
        return out.stdout
