"""The `clusterforge check` agent for Kubernetes: RBAC, the spec ConfigMap and the DaemonSet.

Least privilege: the agent may read and patch nodes (cordon, taint and label need ``patch``;
nodes are cluster-scoped, hence the one ClusterRole) and write events in its own namespace
(a namespaced Role); nothing else.  Its namespace, Pod Security level and network policy:
:mod:`clusterforge.generate.kubernetes.isolation`.  The DaemonSet tolerates every taint, so it keeps running on
the nodes it tainted and can untaint them once healthy: the agent that took a node out is the
one that puts it back, never a person's cordon.
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design

__all__ = ["agent_objects"]

AGENT_NAME = "clusterforge-agent"
AGENT_NAMESPACE = "clusterforge-system"
TRAINING_NAMESPACE = "training"
MONITORING_NAMESPACE = "monitoring"
AGENT_IMAGE = "clusterforge:0.1.0"
EXPORTER_PORT = 9410
CHECK_INTERVAL_S = 300
LABEL_PREFIX = "clusterforge.io/"
STATE_DIR = "/var/lib/clusterforge"  # where `check --state-file auto` keeps counter baselines

# The loop reads only $NODE_NAME (from the pod spec's fieldRef), never a value of the spec.
_CHECK_LOOP = (
    "while true; do clusterforge check --expect /etc/clusterforge/spec.yaml "
    '--node "$NODE_NAME" --action k8s-taint; sleep {interval}; done'
)


def _rbac() -> list[dict[str, Any]]:
    nodes = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
    events = [{"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]
    subject = {"kind": "ServiceAccount", "name": AGENT_NAME, "namespace": AGENT_NAMESPACE}
    namespaced = {"name": AGENT_NAME, "namespace": AGENT_NAMESPACE}
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": AGENT_NAME, "namespace": AGENT_NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": AGENT_NAME},
            "rules": nodes,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": AGENT_NAME},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": AGENT_NAME,
            },
            "subjects": [subject],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": namespaced,
            "rules": events,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": namespaced,
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": AGENT_NAME,
            },
            "subjects": [subject],
        },
    ]


def _container_security(*, kernel_log: bool = False) -> dict[str, Any]:
    """Drop everything; the check container alone keeps CAP_SYSLOG (as root) to read the
    kernel log, where XIDs that NVML events miss are printed (docs/ops.md)."""
    if kernel_log:
        return {
            "runAsUser": 0,
            "runAsNonRoot": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], "add": ["SYSLOG"]},
        }
    return {
        "runAsUser": 65534,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


def _containers(spec_path: str) -> list[dict[str, Any]]:
    node_env = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    # The NVIDIA container runtime exposes the GPUs for NVML without requesting (and so
    # taking) nvidia.com/gpu from the jobs.
    gpu_env = {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}
    mount = {"name": "spec", "mountPath": spec_path.rsplit("/", 1)[0], "readOnly": True}
    check = {
        "name": "check",
        "image": AGENT_IMAGE,
        "command": ["/bin/sh", "-c"],
        "args": [_CHECK_LOOP.format(interval=CHECK_INTERVAL_S)],
        "env": [node_env, gpu_env],
        "volumeMounts": [mount],
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": _container_security(kernel_log=True),
    }
    # Counter baselines survive pod restarts on the host (`check --state-file auto`).
    check["volumeMounts"] = [mount, {"name": "state", "mountPath": STATE_DIR}]
    # The exporter labels its series with the node; without --node it would use the host name.
    exporter = {
        "name": "exporter",
        "image": AGENT_IMAGE,
        "command": [
            "clusterforge",
            "exporter",
            "--port",
            str(EXPORTER_PORT),
            "--node",
            "$(NODE_NAME)",
            "--expect",
            spec_path,
        ],
        "env": [node_env, gpu_env],
        "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
        "volumeMounts": [mount],
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": _container_security(),
    }
    return [check, exporter]


def _daemonset(design: Design, spec_path: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": AGENT_NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": AGENT_NAME, "namespace": AGENT_NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": AGENT_NAME,
                    "runtimeClassName": "nvidia",
                    "nodeSelector": {LABEL_PREFIX + "cluster": design.spec.name},
                    "tolerations": [{"operator": "Exists"}],
                    # Host network: NIC netdevs and RoCE ethtool counters are the host's.
                    "hostNetwork": True,
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    # Host PIDs: NVML lists the GPUs' processes by host PID, and the GPU
                    # process check reads their /proc entries (user, command, cgroup).
                    "hostPID": True,
                    "containers": _containers(spec_path),
                    "volumes": [
                        {"name": "spec", "configMap": {"name": "clusterforge-spec"}},
                        {
                            "name": "state",
                            "hostPath": {"path": STATE_DIR, "type": "DirectoryOrCreate"},
                        },
                    ],
                },
            },
        },
    }


def agent_objects(design: Design, spec_text: str, spec_path: str) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole(Binding) for nodes, Role(Binding) for events, the spec
    ConfigMap and the DaemonSet."""
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "clusterforge-spec", "namespace": AGENT_NAMESPACE},
        "data": {spec_path.rsplit("/", 1)[1]: spec_text},
    }
    return [*_rbac(), config, _daemonset(design, spec_path)]
