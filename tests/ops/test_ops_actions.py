"""Drain/resume decisions, the Slurm and Kubernetes backends (with recorded fakes), the breaker."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from clusterforge.errors import AdapterError
from clusterforge.ops.actions import (
    K8S_OWNER_ANNOTATION,
    K8S_REASON_ANNOTATION,
    K8S_TAINT_KEY,
    KubernetesBackend,
    NodeState,
    SlurmBackend,
    apply_action,
    decide,
    drain_reason,
)
from clusterforge.ops.checks import result
from clusterforge.ops.readings import GpuSnapshot, NodeReading
from clusterforge.ops.runner import Report

REASON = "clusterforge: gpu.xid: gpu3"


def report(status: str, node: str = "gpu-002") -> Report:
    results = (
        (
            result(
                "gpu.xid",
                "fail",
                severity="critical",
                subject="gpu3",
                observed="XID 79",
                expected="no XID",
                gpu=3,
            ),
        )
        if status == "fail"
        else ()
    )
    reading = NodeReading(node=node, taken_at_s=0.0, gpu=GpuSnapshot())
    return Report(
        node=node, status=status, results=results, errors=(), duration_s=0.1, reading=reading
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "state", "kind"),
    [
        ("fail", NodeState("n", False), "drain"),
        (
            "fail",
            NodeState("n", True, REASON + " [root@2026-11-30T09:00:00]"),
            "none",
        ),  # idempotent
        ("fail", NodeState("n", True, "clusterforge: nic.link: mlx5_0/1"), "drain"),  # new reason
        ("fail", NodeState("n", True, REASON + "; nic.link: mlx5_0/1"), "drain"),  # fewer now
        ("fail", NodeState("n", True, "bad DIMM, ticket 42"), "none"),  # a person's drain
        ("pass", NodeState("n", True, REASON), "resume"),
        ("warn", NodeState("n", True, REASON), "resume"),
        ("pass", NodeState("n", True, "bad DIMM, ticket 42"), "none"),
        ("pass", NodeState("n", False), "none"),
        ("unknown", NodeState("n", False), "none"),
        ("unknown", NodeState("n", True, REASON), "none"),  # could not check: do not resume
    ],
)
def test_decide(status: str, state: NodeState, kind: str) -> None:
    assert decide(status, state, 0, 100, 0.1, REASON).kind == kind  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("owned", "total", "kind"),
    [(9, 100, "drain"), (10, 100, "breaker"), (0, 4, "drain"), (1, 4, "breaker")],
)
def test_circuit_breaker_at_ten_percent_but_at_least_one_node(
    owned: int, total: int, kind: str
) -> None:
    decision = decide("fail", NodeState("n", False), owned, total, 0.1, REASON)
    assert decision.kind == kind
    if kind == "breaker":
        assert "circuit breaker" in decision.detail


def test_drain_reason_names_checks_and_subjects_only() -> None:
    assert drain_reason(report("fail")) == REASON
    many = dataclasses.replace(
        report("fail"),
        results=tuple(
            result(
                "nic.link",
                "fail",
                severity="critical",
                subject=f"mlx5_{i}/1",
                observed="DOWN",
                expected="ACTIVE",
            )
            for i in range(40)
        ),
    )
    text = drain_reason(many)
    assert text.startswith("clusterforge: nic.link: mlx5_0/1") and len(text) <= 200


class FakeSlurm:
    """Answers sinfo from a state table and records scontrol updates (for the pure tests)."""

    def __init__(self, rows: dict[str, tuple[str, str]]) -> None:
        self.rows = rows
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> str:
        self.calls.append(list(argv))
        if argv[0] == "sinfo":
            return "".join(f"{n}|{s}|{r}\n" for n, (s, r) in self.rows.items())
        node = argv[2].removeprefix("NodeName=")
        if argv[3] == "State=DRAIN":
            self.rows[node] = ("drained", argv[4].removeprefix("Reason="))
        else:
            self.rows[node] = ("idle", "none")
        return ""


def test_slurm_backend_drains_then_resumes() -> None:
    fake = FakeSlurm(
        {"gpu-001": ("idle", "none"), "gpu-002": ("idle", "none"), "gpu-003": ("idle", "none")}
    )
    backend = SlurmBackend(run=fake)
    assert apply_action(report("fail"), backend, 0.5).kind == "drain"
    assert fake.calls[-1] == [
        "scontrol",
        "update",
        "NodeName=gpu-002",
        "State=DRAIN",
        f"Reason={REASON}",
    ]
    assert apply_action(report("fail"), backend, 0.5).kind == "none"  # second run: nothing
    assert fake.calls[-1][0] == "sinfo"
    assert apply_action(report("pass"), backend, 0.5).kind == "resume"
    assert fake.calls[-1] == ["scontrol", "update", "NodeName=gpu-002", "State=RESUME"]


def test_slurm_node_states_dedupe_partitions_and_read_reasons() -> None:
    fake = FakeSlurm({})
    fake.rows = {
        "gpu-001": ("drained", "clusterforge: gpu.ecc: gpu1"),
        "gpu-002": ("draining", "maintenance"),
    }
    states = SlurmBackend(run=fake).node_states()
    assert states["gpu-001"].owned and not states["gpu-002"].owned and states["gpu-002"].drained


def test_unknown_node_is_left_alone() -> None:
    fake = FakeSlurm({"gpu-001": ("idle", "none")})
    assert (
        apply_action(report("fail", node="elsewhere"), SlurmBackend(run=fake), 1.0).kind == "none"
    )


def test_missing_scontrol_is_an_adapter_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(AdapterError, match="not found"):
        SlurmBackend().node_states()


class FakeCoreV1:
    """The three CoreV1Api calls the backend uses, over an in-memory node table."""

    def __init__(self, names: list[str]) -> None:
        self.nodes = {
            n: {"labels": {}, "annotations": {}, "unschedulable": False, "taints": []}
            for n in names
        }
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.timeouts: list[float | None] = []

    def _obj(self, name: str) -> SimpleNamespace:
        node = self.nodes[name]
        taints = [SimpleNamespace(**t) for t in node["taints"]]
        return SimpleNamespace(
            metadata=SimpleNamespace(
                name=name, labels=dict(node["labels"]), annotations=dict(node["annotations"])
            ),
            spec=SimpleNamespace(unschedulable=node["unschedulable"], taints=taints),
        )

    def list_node(self, _request_timeout: float | None = None) -> SimpleNamespace:
        self.timeouts.append(_request_timeout)
        return SimpleNamespace(items=[self._obj(n) for n in self.nodes])

    def read_node(self, name: str, _request_timeout: float | None = None) -> SimpleNamespace:
        self.timeouts.append(_request_timeout)
        return self._obj(name)

    def patch_node(
        self, name: str, body: dict[str, Any], _request_timeout: float | None = None
    ) -> None:
        self.timeouts.append(_request_timeout)
        self.patches.append((name, body))
        node = self.nodes[name]
        for key in ("labels", "annotations"):
            for k, v in body["metadata"].get(key, {}).items():
                if v is None:
                    node[key].pop(k, None)
                else:
                    node[key][k] = v
        node["unschedulable"] = body["spec"]["unschedulable"]
        node["taints"] = body["spec"]["taints"] or []


def test_k8s_cordon_taint_label_and_undo() -> None:
    api = FakeCoreV1(["gpu-001", "gpu-002"])
    api.nodes["gpu-002"]["taints"] = [{"key": "other", "value": "x", "effect": "NoExecute"}]
    backend = KubernetesBackend(api)
    assert apply_action(report("fail"), backend, 0.5).kind == "drain"
    node = api.nodes["gpu-002"]
    assert node["unschedulable"] is True
    assert {"key": K8S_TAINT_KEY, "value": "true", "effect": "NoSchedule"} in node["taints"]
    assert node["labels"]["clusterforge.io/health"] == "fail"
    assert node["annotations"][K8S_OWNER_ANNOTATION] == "clusterforge"
    assert node["annotations"][K8S_REASON_ANNOTATION] == REASON
    assert apply_action(report("fail"), backend, 0.5).kind == "none"  # idempotent
    assert len(api.patches) == 1
    assert apply_action(report("pass"), backend, 0.5).kind == "resume"
    assert node["unschedulable"] is False
    assert node["taints"] == [
        {"key": "other", "value": "x", "effect": "NoExecute"}
    ]  # others' taints kept
    assert K8S_OWNER_ANNOTATION not in node["annotations"]


def test_k8s_node_cordoned_by_a_person_is_never_uncordoned() -> None:
    api = FakeCoreV1(["gpu-001", "gpu-002"])
    api.nodes["gpu-002"]["unschedulable"] = True
    backend = KubernetesBackend(api)
    assert apply_action(report("pass"), backend, 0.5).kind == "none"
    assert apply_action(report("fail"), backend, 0.5).kind == "none"
    assert api.patches == []


def test_k8s_breaker_counts_only_our_cordons() -> None:
    api = FakeCoreV1([f"gpu-{i:03d}" for i in range(1, 11)])
    for name in ("gpu-001", "gpu-003"):
        api.nodes[name]["unschedulable"] = True
        api.nodes[name]["annotations"] = {
            K8S_OWNER_ANNOTATION: "clusterforge",
            K8S_REASON_ANNOTATION: REASON,
        }
    api.nodes["gpu-004"]["unschedulable"] = True  # a person's cordon does not count
    decision = apply_action(report("fail"), KubernetesBackend(api), 0.3)
    assert decision.kind == "drain"  # 3 of 10 drained by us: not above 0.3
    api.nodes["gpu-005"]["annotations"] = {K8S_OWNER_ANNOTATION: "clusterforge"}
    api.nodes["gpu-005"]["unschedulable"] = True
    decision = apply_action(report("fail", node="gpu-006"), KubernetesBackend(api), 0.3)
    assert decision.kind == "breaker" and api.nodes["gpu-006"]["unschedulable"] is False


def test_every_k8s_call_has_a_timeout_and_api_errors_are_adapter_errors() -> None:
    api = FakeCoreV1(["gpu-001", "gpu-002"])
    assert apply_action(report("fail"), KubernetesBackend(api, timeout_s=7.0), 0.5).kind == "drain"
    assert api.timeouts and set(api.timeouts) == {7.0}

    class Unreachable(FakeCoreV1):
        def list_node(self, _request_timeout: float | None = None) -> SimpleNamespace:
            raise TimeoutError("read timed out")

    with pytest.raises(AdapterError, match="list_node failed: read timed out"):
        KubernetesBackend(Unreachable([]), timeout_s=1.0).node_states()


def test_slurm_calls_get_the_backend_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def fake_run(argv: Sequence[str], timeout_s: float = 15.0) -> str:
        seen.append(timeout_s)
        return "gpu-002|idle|none\n"

    monkeypatch.setattr("clusterforge.ops.actions._run", fake_run)
    SlurmBackend(timeout_s=6.0).node_states()
    assert seen == [6.0]
