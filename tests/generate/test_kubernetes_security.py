"""Kubernetes isolation: Pod Security labels, the training pods' admission policy, default-deny
network policies, GPUs only through the device plugin or DRA, least-privilege RBAC.

Every example's manifests are scanned.  The Pod Security Standards levels are those of the
Kubernetes documentation ("Pod Security Standards", kubernetes.io, read 2026-12-01); the
admission policy's CEL rules run in cel-python against the generated pods and against pods
it must refuse.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from clusterforge.design import plan
from clusterforge.generate import render
from clusterforge.generate.kubernetes.agent import AGENT_NAMESPACE, TRAINING_NAMESPACE
from clusterforge.spec import load_spec
from tests.generate.test_generate import _all_specs
from tests.generate.test_kubernetes import K8S_VERSION

SPECS = _all_specs()
PSA = "pod-security.kubernetes.io/"
# Baseline admits these added capabilities and no others (Pod Security Standards).
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
LEVELS = ("restricted", "baseline", "privileged")


@cache
def _objects(spec: Path) -> tuple[dict[str, Any], ...]:
    """Every object of every generated Kubernetes manifest (Helm values files excepted)."""
    files = render(plan(load_spec(spec)), ["kubernetes"])
    docs: list[dict[str, Any]] = []
    for f in files:
        name = Path(f.path).name
        if (
            name.endswith(".yaml")
            and not name.endswith("-values.yaml")
            and name != "kustomization.yaml"
        ):
            docs += [d for d in yaml.safe_load_all(f.content) if d and "kind" in d]
    return tuple(docs)


def _pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod specs an object creates: DaemonSet/Job templates, PyTorchJob replicas."""
    if doc["kind"] == "Pod":
        return [doc["spec"]]
    template = doc.get("spec", {}).get("template")
    if template:
        return [template["spec"]]
    replicas = doc.get("spec", {}).get("pytorchReplicaSpecs", {})
    return [r["template"]["spec"] for r in replicas.values()]


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return list(pod.get("containers", [])) + list(pod.get("initContainers", []))


def _baseline_violations(pod: dict[str, Any]) -> list[str]:
    found = [f"spec.{k}" for k in ("hostNetwork", "hostPID", "hostIPC") if pod.get(k)]
    found += [
        f"hostPath {v['hostPath']['path']}" for v in pod.get("volumes", []) if "hostPath" in v
    ]
    for c in _containers(pod):
        sc = c.get("securityContext", {})
        if sc.get("privileged"):
            found.append(f"{c['name']}: privileged")
        added = set(sc.get("capabilities", {}).get("add", [])) - BASELINE_CAPABILITIES
        found += [f"{c['name']}: capability {cap}" for cap in sorted(added)]
        found += [f"{c['name']}: hostPort" for p in c.get("ports", []) if p.get("hostPort")]
    return found


def _restricted_violations(pod: dict[str, Any]) -> list[str]:
    found = _baseline_violations(pod)
    pod_sc = pod.get("securityContext", {})
    for c in _containers(pod):
        sc = c.get("securityContext", {})
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(f"{c['name']}: allowPrivilegeEscalation")
        if not (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot")):
            found.append(f"{c['name']}: runAsNonRoot")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            found.append(f"{c['name']}: capabilities.drop [ALL]")
        seccomp = sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}
        if seccomp.get("type") not in {"RuntimeDefault", "Localhost"}:
            found.append(f"{c['name']}: seccompProfile")
    return found


def _strictest_level(pods: list[dict[str, Any]]) -> str:
    if not any(_baseline_violations(p) for p in pods):
        return "baseline" if any(_restricted_violations(p) for p in pods) else "restricted"
    return "privileged"


def _namespaces(docs: tuple[dict[str, Any], ...]) -> dict[str, dict[str, str]]:
    return {
        d["metadata"]["name"]: d["metadata"].get("labels", {})
        for d in docs
        if d["kind"] == "Namespace"
    }


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_each_namespace_enforces_the_strictest_level_its_pods_meet(spec: Path) -> None:
    docs = _objects(spec)
    namespaces = _namespaces(docs)
    assert set(namespaces) >= {AGENT_NAMESPACE, TRAINING_NAMESPACE}
    for name, labels in namespaces.items():
        pods = [p for d in docs if d["metadata"].get("namespace") == name for p in _pod_specs(d)]
        level = _strictest_level(pods) if pods else "restricted"
        assert labels.get(PSA + "enforce") == level, (name, labels, level)
        assert labels.get(PSA + "enforce-version") == f"v{K8S_VERSION}"
        # warn and audit never looser than enforce: the cluster tells what keeps it from better
        assert LEVELS.index(labels[PSA + "warn"]) <= LEVELS.index(level)
        assert LEVELS.index(labels[PSA + "audit"]) <= LEVELS.index(level)


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_gpus_only_through_the_device_plugin_or_dra(spec: Path) -> None:
    """No privileged container, no host /dev, no NVIDIA_VISIBLE_DEVICES outside the health
    agent (which reads NVML and requests no GPU), every GPU pod asks nvidia.com/gpu."""
    for doc in _objects(spec):
        for pod in _pod_specs(doc):
            where = f"{doc['kind']}/{doc['metadata']['name']}"
            paths = [v["hostPath"]["path"] for v in pod.get("volumes", []) if "hostPath" in v]
            assert not [p for p in paths if p.startswith("/dev")], (where, paths)
            for c in _containers(pod):
                assert not c.get("securityContext", {}).get("privileged"), where
                env = {e["name"] for e in c.get("env", [])}
                if doc["metadata"].get("namespace") == TRAINING_NAMESPACE:
                    assert "NVIDIA_VISIBLE_DEVICES" not in env, where
                    assert c["resources"]["limits"]["nvidia.com/gpu"] >= 1, where
                elif "NVIDIA_VISIBLE_DEVICES" in env:
                    assert doc["metadata"]["namespace"] == AGENT_NAMESPACE, where
                    assert "nvidia.com/gpu" not in str(c.get("resources", {})), where


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_rbac_is_namespaced_and_has_no_wildcards(spec: Path) -> None:
    """ClusterRoles only for cluster-scoped resources (nodes); nothing binds cluster-admin,
    admin or edit; no '*' in any rule."""
    cluster_scoped = {"nodes"}
    docs = _objects(spec)
    for doc in docs:
        if doc["kind"] in {"Role", "ClusterRole"}:
            for rule in doc["rules"]:
                for key in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule.get(key, []), (doc["metadata"]["name"], rule)
                if doc["kind"] == "ClusterRole":
                    assert set(rule["resources"]) <= cluster_scoped, rule
        if doc["kind"] in {"RoleBinding", "ClusterRoleBinding"}:
            assert doc["roleRef"]["name"] not in {"cluster-admin", "admin", "edit"}, doc
    assert any(d["kind"] == "Role" for d in docs)


def _policies(docs: tuple[dict[str, Any], ...], namespace: str) -> list[dict[str, Any]]:
    return [
        d for d in docs if d["kind"] == "NetworkPolicy" and d["metadata"]["namespace"] == namespace
    ]


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_training_namespace_denies_by_default(spec: Path) -> None:
    """A policy selecting every pod with both directions and no rule denies all; the others
    open only the namespace itself and DNS."""
    policies = _policies(_objects(spec), TRAINING_NAMESPACE)
    deny = [
        p
        for p in policies
        if p["spec"]["podSelector"] == {}
        and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        and not p["spec"].get("ingress")
        and not p["spec"].get("egress")
    ]
    assert deny, policies
    for p in policies:
        for rule in p["spec"].get("ingress", []):
            assert rule["from"] == [{"podSelector": {}}], rule
        for rule in p["spec"].get("egress", []):
            peers = rule["to"]
            dns = {"kubernetes.io/metadata.name": "kube-system"}
            assert peers == [{"podSelector": {}}] or (
                peers[0]["namespaceSelector"]["matchLabels"] == dns
                and {port["port"] for port in rule["ports"]} == {53}
            ), rule


def _admission_policy(docs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicy")


def _admits(policy: dict[str, Any], pod: dict[str, Any]) -> list[str]:
    """The messages of the policy's validations that refuse ``pod`` (cel-python)."""
    celpy = pytest.importorskip("celpy")
    env = celpy.Environment()
    activation: dict[str, Any] = {"object": celpy.json_to_cel(pod)}
    values = {}
    for var in policy["spec"].get("variables", []):
        program = env.program(env.compile(var["expression"]))
        values[var["name"]] = program.evaluate(activation)
    activation["variables"] = celpy.celtypes.MapType(
        {celpy.celtypes.StringType(k): v for k, v in values.items()}
    )
    refused = []
    for check in policy["spec"]["validations"]:
        if not env.program(env.compile(check["expression"])).evaluate(activation):
            refused.append(check["message"])
    return refused


def _training_pod(docs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    job = next(d for d in docs if d["kind"] == "PyTorchJob")
    return {"apiVersion": "v1", "kind": "Pod", "spec": _pod_specs(job)[0]}


def test_admission_policy_admits_the_training_pods_and_refuses_escapes() -> None:
    docs = _objects(SPECS[0])
    policy = _admission_policy(docs)
    for doc in docs:
        if doc["kind"].startswith("ValidatingAdmissionPolicy"):
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    binding = next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["validationActions"] == ["Deny"]
    selector = binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"]
    assert selector == {"kubernetes.io/metadata.name": TRAINING_NAMESPACE}
    pod = _training_pod(docs)
    assert _admits(policy, pod) == []
    container = pod["spec"]["containers"][0]
    escapes: list[tuple[str, dict[str, Any]]] = [
        ("privileged", {**container, "securityContext": {"privileged": True}}),
        ("capabilit", {**container, "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
        ("NVIDIA_VISIBLE_DEVICES", {**container, "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}),
    ]  # fmt: skip
    for word, bad in escapes:
        refused = _admits(policy, {"spec": {**pod["spec"], "containers": [bad]}})
        assert any(word in m for m in refused), (word, refused)
    host_dev = {"name": "dev", "hostPath": {"path": "/dev/nvidia0"}}
    refused = _admits(policy, {"spec": {**pod["spec"], "volumes": [host_dev]}})
    assert any("hostPath" in m for m in refused), refused
    refused = _admits(policy, {"spec": {**pod["spec"], "hostNetwork": True}})
    assert any("host" in m for m in refused), refused


def test_readme_states_the_levels_and_the_operator_s_part() -> None:
    files = {f.path: f.content for f in render(plan(load_spec(SPECS[0])), ["kubernetes"])}
    security = files["kubernetes/README.md"].split("## Security")[1].split("## Install")[0]
    assert (
        f"`{TRAINING_NAMESPACE}` enforces Pod Security `privileged` (the RDMA pods add IPC_LOCK"
        in security
    )
    assert "kubectl create secret" in security and "RDMA traffic" in security
