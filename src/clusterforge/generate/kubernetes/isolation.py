"""Isolation of the cluster's namespaces: Pod Security levels, an admission policy for the
training pods, and network policies that deny by default.

Sources (kubernetes.io documentation, read 2026-12-01):

* **Pod Security admission** ("Pod Security Admission", "Pod Security Standards"): a
  namespace's ``pod-security.kubernetes.io/enforce`` label refuses pods above its level;
  ``warn`` and ``audit`` report them.  Each namespace gets the strictest level its own pods
  meet, pinned to the targeted Kubernetes version:

  - ``clusterforge-system``: *privileged*.  The health agent reads the host's NIC counters
    (``hostNetwork``), keeps its counter baselines on the host (``hostPath``) and reads the
    kernel log as root with CAP_SYSLOG; baseline forbids all three.
  - ``training``: *baseline* unless the pods add a capability outside baseline's list.
    RDMA pods add IPC_LOCK (they pin their buffers), which baseline does not admit, so
    such a namespace enforces *privileged*, warns and audits at *baseline*, and
    :func:`training_admission` enforces every baseline control but that one.
* **ValidatingAdmissionPolicy** (``admissionregistration.k8s.io/v1``, GA in Kubernetes 1.30):
  CEL rules checked on every pod created in the training namespace.  Besides baseline's
  controls (no privileged container, host namespace, hostPath, host port or capability
  outside baseline + IPC_LOCK) it refuses ``NVIDIA_VISIBLE_DEVICES``: with the NVIDIA
  container runtime that variable hands a container GPUs the device plugin never
  allocated, so GPUs reach training pods only as ``nvidia.com/gpu`` or DRA claims.
* **NetworkPolicy**: a policy that selects every pod with both policy types and no rule
  denies all traffic; the others open the namespace to itself (rendezvous, NCCL bootstrap)
  and to cluster DNS.  RDMA bypasses the kernel and so these policies: the fabric's
  partitions (InfiniBand partition keys, VLANs) isolate it.
"""

from __future__ import annotations

from typing import Any, Literal

from clusterforge.design import Design
from clusterforge.generate.kubernetes.agent import (
    AGENT_NAME,
    AGENT_NAMESPACE,
    EXPORTER_PORT,
    MONITORING_NAMESPACE,
    TRAINING_NAMESPACE,
)
from clusterforge.generate.kubernetes.rdma import pod_rdma
from clusterforge.generate.kubernetes.versions import KUBERNETES

__all__ = [
    "BASELINE_CAPABILITIES",
    "PodSecurityLevel",
    "namespaces",
    "network_policies",
    "security_notes",
    "training_admission",
    "training_pod_security",
]

PodSecurityLevel = Literal["privileged", "baseline", "restricted"]
PSA_PREFIX = "pod-security.kubernetes.io/"
# The capabilities Pod Security Standards' baseline lets a container add.
BASELINE_CAPABILITIES = (
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
)  # fmt: skip
ADMISSION_POLICY = "training-pods-baseline-gpus-by-allocation"
_NAMESPACE_LABEL = "kubernetes.io/metadata.name"  # set by Kubernetes on every namespace


def _psa_labels(enforce: PodSecurityLevel, report: PodSecurityLevel) -> dict[str, str]:
    version = f"v{KUBERNETES.version}"
    return {
        PSA_PREFIX + "enforce": enforce,
        PSA_PREFIX + "enforce-version": version,
        PSA_PREFIX + "warn": report,
        PSA_PREFIX + "warn-version": version,
        PSA_PREFIX + "audit": report,
        PSA_PREFIX + "audit-version": version,
    }


def _extra_capabilities(design: Design) -> list[str]:
    """Capabilities the training pods add beyond baseline's list (IPC_LOCK for RDMA)."""
    return [c for c in pod_rdma(design).capabilities if c not in BASELINE_CAPABILITIES]


def training_pod_security(design: Design) -> PodSecurityLevel:
    """The Pod Security level the training namespace enforces (see the module docstring)."""
    return "privileged" if _extra_capabilities(design) else "baseline"


def namespaces(design: Design) -> list[dict[str, Any]]:
    """The agent's and the training namespace, each with its Pod Security labels."""
    levels: dict[str, tuple[PodSecurityLevel, PodSecurityLevel]] = {
        AGENT_NAMESPACE: ("privileged", "privileged"),
        TRAINING_NAMESPACE: (training_pod_security(design), "baseline"),
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": _psa_labels(enforce, report)},
        }
        for name, (enforce, report) in levels.items()
    ]


def _validation(expression: str, message: str) -> dict[str, str]:
    return {"expression": expression, "message": message}


def _validations(design: Design) -> list[dict[str, str]]:
    extra = _extra_capabilities(design)
    allowed = [*BASELINE_CAPABILITIES, *extra]
    caps = ", ".join(f"'{c}'" for c in allowed)
    sc = "!has(c.securityContext)"
    return [
        _validation(
            "variables.containers.all(c, " + sc + " || !has(c.securityContext.privileged) "
            "|| !c.securityContext.privileged)",
            "privileged containers are refused: GPUs come from nvidia.com/gpu or a DRA claim",
        ),
        _validation(
            " && ".join(
                f"!(has(object.spec.{k}) && object.spec.{k})"
                for k in ("hostNetwork", "hostPID", "hostIPC")
            ),
            "host network, PID and IPC namespaces are refused",
        ),
        _validation(
            "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))",
            "hostPath volumes are refused (no /dev/nvidia* or host files in training pods)",
        ),
        _validation(
            "variables.containers.all(c, " + sc + " || !has(c.securityContext.capabilities) "
            "|| !has(c.securityContext.capabilities.add) "
            f"|| c.securityContext.capabilities.add.all(cap, cap in [{caps}]))",
            "added capabilities must be among baseline's" + "".join(f" and {c}" for c in extra),
        ),
        _validation(
            "variables.containers.all(c, !has(c.ports) || c.ports.all(p, !has(p.hostPort) "
            "|| p.hostPort == 0))",
            "host ports are refused",
        ),
        _validation(
            "variables.containers.all(c, !has(c.env) "
            "|| c.env.all(e, e.name != 'NVIDIA_VISIBLE_DEVICES'))",
            "NVIDIA_VISIBLE_DEVICES is refused: it bypasses the device plugin's allocation",
        ),
    ]


def training_admission(design: Design) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy for pods of the training namespace, and its binding."""
    containers = (
        "object.spec.containers + (has(object.spec.initContainers) ? "
        "object.spec.initContainers : []) + (has(object.spec.ephemeralContainers) ? "
        "object.spec.ephemeralContainers : [])"
    )
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": ADMISSION_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "variables": [{"name": "containers", "expression": containers}],
            "validations": _validations(design),
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": ADMISSION_POLICY},
        "spec": {
            "policyName": ADMISSION_POLICY,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {_NAMESPACE_LABEL: TRAINING_NAMESPACE}}
            },
        },
    }
    return [policy, binding]


def _policy(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def network_policies() -> list[dict[str, Any]]:
    """Agent: only Prometheus (namespace ``monitoring``) reaches the exporter port (the agent
    runs on the host network, where policies apply only if the network plugin enforces them
    for host-network pods).  Training: deny all, then the namespace itself and DNS."""
    monitoring = {"namespaceSelector": {"matchLabels": {_NAMESPACE_LABEL: MONITORING_NAMESPACE}}}
    same_namespace: list[dict[str, Any]] = [{"podSelector": {}}]
    dns = {
        "to": [
            {
                "namespaceSelector": {"matchLabels": {_NAMESPACE_LABEL: "kube-system"}},
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            }
        ],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }
    return [
        _policy(
            "exporter-from-monitoring",
            AGENT_NAMESPACE,
            {
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": AGENT_NAME}},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {"from": [monitoring], "ports": [{"protocol": "TCP", "port": EXPORTER_PORT}]}
                ],
            },
        ),
        _policy(
            "default-deny",
            TRAINING_NAMESPACE,
            {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
        ),
        _policy(
            "same-namespace-only",
            TRAINING_NAMESPACE,
            {
                "podSelector": {},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": same_namespace}],
                "egress": [{"to": same_namespace}],
            },
        ),
        _policy(
            "dns",
            TRAINING_NAMESPACE,
            {"podSelector": {}, "policyTypes": ["Egress"], "egress": [dns]},
        ),
    ]


def security_notes(design: Design) -> list[str]:
    """What the manifests enforce and what stays with the operator, for the README."""
    level = training_pod_security(design)
    extra = ", ".join(_extra_capabilities(design))
    why = f" (the RDMA pods add {extra}, outside baseline)" if extra else ""
    return [
        f"Namespace `{TRAINING_NAMESPACE}` enforces Pod Security `{level}`{why}, warns and "
        f"audits at `baseline`; `pod-admission.yaml` refuses there every pod baseline would "
        f"refuse{' except for ' + extra if extra else ''}, and NVIDIA_VISIBLE_DEVICES: GPUs "
        "reach training pods only as `nvidia.com/gpu` or DRA claims.",
        f"Namespace `{AGENT_NAMESPACE}` enforces `privileged`: the health agent reads host "
        "NIC counters (host network), keeps counter baselines on the host (hostPath) and reads "
        "the kernel log (root with CAP_SYSLOG).  Let only cluster administrators create pods there.",
        f"Network: `{TRAINING_NAMESPACE}` denies all traffic but its own pods and cluster DNS "
        "(a job that downloads data or logs to a service needs its own policy); RDMA traffic "
        "bypasses network policies: isolate it with the fabric's partitions or VLANs.",
        "RBAC: the agent's service account may read and patch nodes (a ClusterRole: nodes are "
        "cluster-scoped) and write events in its namespace; no wildcard, no cluster-admin.",
        "Secrets: no file here holds one.  Create registry or data credentials with `kubectl "
        "create secret` in the namespace that uses them, and never bind `cluster-admin` to a "
        "job's service account.",
    ]
