"""Act on a report: drain/resume a Slurm node, or cordon+taint/uncordon a Kubernetes node.

Rules, after LBNL NHC (github.com/mej/nhc: its ``NHC:`` drain reasons and
``MARK_OFFLINE``) and NVIDIA NVSentinel (docs.nvidia.com/nvsentinel: cordon labels and the
fault-quarantine circuit breaker):

- **Ownership.** clusterforge only undoes what it did: a Slurm node is resumed only when its
  Reason starts with ``clusterforge:`` (NHC resumes only ``NHC:`` reasons); a Kubernetes
  node is uncordoned only when it carries our ``clusterforge.io/cordoned-by`` annotation.
  A node drained or cordoned by a person is never touched.
- **Circuit breaker.** When draining this node would put more than ``max_drain_fraction`` of
  all nodes (and more than one) in the clusterforge-drained state (a bad policy, a
  shared-storage outage), the node is not drained and the decision says so loudly
  (NVSentinel's breaker).  Nodes drained by people do not count.
- **Idempotent.** The reason names only check ids and subjects (not changing values such
  as temperatures), so a second run with the same findings changes nothing.
- **Unknown changes nothing.**  A node that could not be checked is neither drained nor
  resumed.
- **No hangs.**  Every scheduler call has a timeout (``scontrol`` is killed, the Kubernetes
  client gets ``_request_timeout``); the CLI sizes it to what is left of Slurm's 60 s.

:func:`decide` is pure; :class:`SlurmBackend` and :class:`KubernetesBackend` are thin adapters.
"""

from __future__ import annotations

import math
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from clusterforge.errors import AdapterError
from clusterforge.ops.checks import Status
from clusterforge.ops.runner import Report

__all__ = [
    "OWNER_PREFIX",
    "Decision",
    "KubernetesBackend",
    "NodeState",
    "SchedulerBackend",
    "SlurmBackend",
    "apply_action",
    "decide",
    "drain_reason",
]

OWNER_PREFIX = "clusterforge:"
K8S_TAINT_KEY = "clusterforge.io/unhealthy"
K8S_LABEL = "clusterforge.io/health"
K8S_OWNER_ANNOTATION = "clusterforge.io/cordoned-by"
K8S_REASON_ANNOTATION = "clusterforge.io/reason"
_MAX_REASON_CHARS = 200


@dataclass(frozen=True)
class NodeState:
    """A node as the scheduler sees it: drained (or cordoned) and by whom."""

    name: str
    drained: bool
    reason: str | None = None

    @property
    def owned(self) -> bool:
        return self.drained and (self.reason or "").startswith(OWNER_PREFIX)


@dataclass(frozen=True)
class Decision:
    kind: Literal["drain", "resume", "none", "breaker", "error"]
    detail: str


def drain_reason(report: Report) -> str:
    """'clusterforge: gpu.xid: gpu3; gpu.nvml: gpu3' from the failed checks, stable across runs."""
    seen: list[str] = []
    for failure in report.failures():
        item = f"{failure.check}: {failure.subject}"
        if item not in seen:
            seen.append(item)
    text = f"{OWNER_PREFIX} " + "; ".join(seen)
    text = text.replace('"', "'").replace("\n", " ")
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 3] + "..."


def _bare_reason(text: str) -> str:
    """A reason as we wrote it: Slurm may show it with a ' [user@time]' suffix."""
    return re.sub(r"\s*\[[^\]]*@[^\]]*\]$", "", text.strip())


def decide(
    status: Status,
    node: NodeState,
    num_owned_drained: int,
    num_nodes: int,
    max_drain_fraction: float,
    reason: str,
) -> Decision:
    """What to do with one node given its check status and the cluster's drain state."""
    if status == "unknown":
        return Decision("none", "could not check the node: leaving it as it is")
    if status in ("pass", "warn"):
        if node.owned:
            return Decision("resume", "healthy again: resuming the node clusterforge drained")
        return Decision(
            "none", "healthy" if not node.drained else "drained by someone else: left alone"
        )
    if node.drained and not node.owned:
        return Decision("none", f"already drained by someone else ({node.reason}): left alone")
    if node.owned:
        same = _bare_reason(node.reason or "") == reason
        return Decision(
            "none" if same else "drain", "already drained by clusterforge" if same else reason
        )
    would_be = num_owned_drained + 1
    # At least one node may always be drained, so small clusters are not locked out.
    allowed = max(1, math.floor(max_drain_fraction * num_nodes))
    if would_be > allowed:
        return Decision(
            "breaker",
            f"circuit breaker open: draining {node.name} would make {would_be} of {num_nodes} "
            f"nodes drained by clusterforge, above {max_drain_fraction:.0%} ({allowed}); "
            "not draining: investigate a shared cause (storage, network, a bad policy)",
        )
    return Decision("drain", reason)


class SchedulerBackend(Protocol):
    def node_states(self) -> dict[str, NodeState]: ...
    def drain(self, node: str, reason: str) -> None: ...
    def resume(self, node: str) -> None: ...


def apply_action(report: Report, backend: SchedulerBackend, max_drain_fraction: float) -> Decision:
    """Decide and act for ``report.node``; returns what was decided (and done)."""
    states = backend.node_states()
    node = states.get(report.node)
    if node is None:
        return Decision("none", f"node {report.node!r} is not known to the scheduler; nothing done")
    owned = sum(1 for s in states.values() if s.owned)
    decision = decide(
        report.status, node, owned, len(states), max_drain_fraction, drain_reason(report)
    )
    if decision.kind == "drain":
        backend.drain(node.name, decision.detail)
    elif decision.kind == "resume":
        backend.resume(node.name)
    return decision


# --- Slurm ---------------------------------------------------------------------------------

Runner = Callable[[Sequence[str]], str]


def _run(argv: Sequence[str], timeout_s: float = 15.0) -> str:
    """Run a Slurm command; a missing binary or a hang (slurmctld unreachable) is an AdapterError."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except FileNotFoundError:
        raise AdapterError(
            f"{argv[0]} not found: install Slurm's client commands (slurm-client)"
        ) from None
    except subprocess.TimeoutExpired:
        raise AdapterError(f"{' '.join(argv[:2])} did not answer within {timeout_s:g} s") from None
    if done.returncode != 0:
        raise AdapterError(
            f"{' '.join(argv[:3])} failed: {done.stderr.strip() or done.stdout.strip()}"
        )
    return done.stdout


class SlurmBackend:
    """Drain / resume through ``scontrol``; node states from ``sinfo``."""

    def __init__(self, run: Runner | None = None, timeout_s: float = 15.0) -> None:
        self.run: Runner = run or (lambda argv: _run(argv, timeout_s))

    def node_states(self) -> dict[str, NodeState]:
        # %N node, %T long state (e.g. "drained", "draining", "idle"), %E reason; one line per
        # node and partition, so a node in two partitions appears twice.
        out = self.run(["sinfo", "--noheader", "--Node", "--format=%N|%T|%E"])
        states: dict[str, NodeState] = {}
        for line in out.splitlines():
            name, _, rest = line.partition("|")
            state, _, reason = rest.partition("|")
            if not name.strip():
                continue
            drained = "drain" in state.lower()
            text = reason.strip()
            states[name.strip()] = NodeState(
                name.strip(), drained, None if text in ("", "none") else text
            )
        return states

    def drain(self, node: str, reason: str) -> None:
        self.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"])

    def resume(self, node: str) -> None:
        self.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"])


# --- Kubernetes ----------------------------------------------------------------------------


def _core_api() -> Any:
    try:
        from kubernetes import client, config
    except ImportError:
        raise AdapterError(
            "the k8s-taint action needs the 'kubernetes' package; install it with: "
            "pip install 'clusterforge[k8s]'"
        ) from None
    # The kubernetes package has no type hints: name its loaders with the types we rely on.
    load_incluster: Callable[[], None] = config.load_incluster_config
    load_kubeconfig: Callable[[], None] = config.load_kube_config
    try:
        load_incluster()
    except config.ConfigException:
        try:
            load_kubeconfig()
        except (config.ConfigException, OSError) as exc:
            raise AdapterError(
                f"no Kubernetes credentials (in-cluster or kubeconfig): {exc}"
            ) from None
    return client.CoreV1Api()


def _taint_dicts(node: Any) -> list[dict[str, Any]]:
    taints = node.spec.taints or []  # V1NodeSpec.taints is None when the node has none
    return [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]


class KubernetesBackend:
    """Cordon + NoSchedule taint + label/annotations through the API; undone on recovery."""

    def __init__(self, api: Any = None, timeout_s: float = 15.0) -> None:
        self.api = api if api is not None else _core_api()
        self.timeout_s = timeout_s

    def _call(self, method: str, *args: Any) -> Any:
        """One API call with a timeout; an API or network failure is an AdapterError."""
        try:
            return getattr(self.api, method)(*args, _request_timeout=self.timeout_s)
        except Exception as exc:  # ApiException, urllib3 timeouts, connection errors
            if isinstance(exc, AdapterError):
                raise
            raise AdapterError(f"Kubernetes API {method} failed: {exc}") from None

    def _state(self, node: Any) -> NodeState:
        annotations = node.metadata.annotations or {}
        cordoned = bool(node.spec.unschedulable)
        if annotations.get(K8S_OWNER_ANNOTATION) == "clusterforge":
            return NodeState(
                node.metadata.name, cordoned, annotations.get(K8S_REASON_ANNOTATION, OWNER_PREFIX)
            )
        return NodeState(
            node.metadata.name, cordoned, "cordoned by someone else" if cordoned else None
        )

    def node_states(self) -> dict[str, NodeState]:
        return {n.metadata.name: self._state(n) for n in self._call("list_node").items}

    def drain(self, node: str, reason: str) -> None:
        current = self._call("read_node", node)
        taints = [t for t in _taint_dicts(current) if t["key"] != K8S_TAINT_KEY]
        taints.append({"key": K8S_TAINT_KEY, "value": "true", "effect": "NoSchedule"})
        body = {
            "metadata": {
                "labels": {K8S_LABEL: "fail"},
                "annotations": {
                    K8S_OWNER_ANNOTATION: "clusterforge",
                    K8S_REASON_ANNOTATION: reason,
                },
            },
            "spec": {"unschedulable": True, "taints": taints},
        }
        self._call("patch_node", node, body)

    def resume(self, node: str) -> None:
        current = self._call("read_node", node)
        taints = [t for t in _taint_dicts(current) if t["key"] != K8S_TAINT_KEY]
        body = {
            "metadata": {
                "labels": {K8S_LABEL: "pass"},
                "annotations": {K8S_OWNER_ANNOTATION: None, K8S_REASON_ANNOTATION: None},
            },
            "spec": {"unschedulable": False, "taints": taints or None},
        }
        self._call("patch_node", node, body)
