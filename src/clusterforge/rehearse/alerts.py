"""The alert drills: a fault on one node turns a generated alert to *firing* in the real
Prometheus, on that node only; the heal clears it.

``detect_s`` runs from the fault to the alert firing: the exporter's next reading, a scrape,
an evaluation and the rule's (rehearsal) ``for:`` duration.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from clusterforge.rehearse.cluster import Lab
from clusterforge.rehearse.fixtures import healthy_readings, write_readings, xid_readings
from clusterforge.rehearse.model import DrillName, DrillResult
from clusterforge.rehearse.prom import Monitoring

__all__ = ["firing", "nic_flap_drill", "prometheus_drill"]

HEALTH_ALERT = "NodeUnhealthy"  # the generated rule on the health check's verdict
PORT_DOWN_ALERT = "IbPortDown"  # the generated rule on a compute HCA port not ACTIVE
LINK_DOWNED_ALERT = "IbLinkDowned"  # the generated rule on a port that went down and back
_FLAP_S = 1.0  # a flap: down for less than a scrape interval, then up again
_XID_GPU = 3


def firing(monitoring: Monitoring, alertname: str) -> set[str]:
    """The nodes on which ``alertname`` fires (pending alerts are not counted)."""
    return {
        a["labels"].get("node", "?")
        for a in monitoring.alerts()
        if a["labels"]["alertname"] == alertname and a["state"] == "firing"
    }


def _wait(test: Callable[[], bool], timeout_s: float) -> float | None:
    """Seconds until ``test()`` held, or None when it did not within ``timeout_s``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if test():
            return time.monotonic() - start
        time.sleep(0.5)
    return None


def _alert_timeout_s(for_s: int) -> float:
    return for_s + 45.0  # reading, scrape, evaluation and a loaded machine's slack


def _verdict(
    name: DrillName, evidence: list[str], start: float, ok: bool, **times: float | None
) -> DrillResult:
    ok = ok and all(t is not None for t in times.values())
    return DrillResult(
        name, "pass" if ok else "fail", tuple(evidence), time.monotonic() - start, **times
    )


def prometheus_drill(lab: Lab, monitoring: Monitoring, for_s: int) -> DrillResult:
    """XID 79 on one node fires the generated health alert for that node only; healing
    clears it."""
    node = lab.nodes[0]
    evidence = [monitoring.rules_note]
    start = time.monotonic()
    write_readings(lab.readings(node), xid_readings(lab.design, gpu_index=_XID_GPU))
    try:
        detect = _wait(lambda: HEALTH_ALERT in _names(monitoring, node), _alert_timeout_s(for_s))
        others = sorted(firing(monitoring, HEALTH_ALERT) - {node})
        evidence.append(
            f"XID 79 on GPU {_XID_GPU} of {node}: {HEALTH_ALERT} "
            + (f"firing after {detect:.1f} s" if detect is not None else "not firing")
            + f"; on other nodes: {', '.join(others) or 'none'}"
        )
    finally:
        write_readings(lab.readings(node), healthy_readings(lab.design))
    recover = _wait(lambda: HEALTH_ALERT not in _names(monitoring, node), 60)
    evidence.append(f"healed: {HEALTH_ALERT} " + _cleared(recover))
    lab.run_hook(node)  # resumes the node if Slurm's periodic health check drained it
    return _verdict("prometheus", evidence, start, not others, detect_s=detect, recover_s=recover)


def _names(monitoring: Monitoring, node: str) -> set[str]:
    """The alerts firing on ``node``."""
    return {
        a["labels"]["alertname"]
        for a in monitoring.alerts()
        if a["labels"].get("node") == node and a["state"] == "firing"
    }


def _cleared(seconds: float | None) -> str:
    return f"cleared after {seconds:.1f} s" if seconds is not None else "still firing"


def nic_flap_drill(lab: Lab, monitoring: Monitoring, for_s: int) -> DrillResult:
    """A flap of one node's rail fires the link-downed alert; the port held down fires the
    port-down alert; up again, that clears.  Other nodes stay quiet."""
    assert monitoring.links is not None
    node = lab.nodes[min(2, len(lab.nodes) - 1)]
    port = monitoring.links.ports[node]
    evidence = [f"{node}: {port.netdev} in netns {port.netns}, switch end {port.far_end}"]
    start = time.monotonic()
    try:
        monitoring.links.set_far_end(node, up=False)
        time.sleep(_FLAP_S)
        monitoring.links.set_far_end(node, up=True)
        timeout_s = _alert_timeout_s(for_s)
        detect = _wait(lambda: LINK_DOWNED_ALERT in _names(monitoring, node), timeout_s)
        evidence.append(f"flap ({_FLAP_S:g} s down): {LINK_DOWNED_ALERT} " + _after(detect))
        monitoring.links.set_far_end(node, up=False)
        down = _wait(lambda: PORT_DOWN_ALERT in _names(monitoring, node), timeout_s)
        evidence.append(f"held down: {PORT_DOWN_ALERT} " + _after(down))
    finally:
        monitoring.links.set_far_end(node, up=True)
    recover = _wait(lambda: PORT_DOWN_ALERT not in _names(monitoring, node), 60)
    evidence.append(f"up again: {PORT_DOWN_ALERT} " + _cleared(recover))
    others = sorted(
        (firing(monitoring, PORT_DOWN_ALERT) | firing(monitoring, LINK_DOWNED_ALERT)) - {node}
    )
    evidence.append(f"link alerts on other nodes: {', '.join(others) or 'none'}")
    ok = down is not None and not others
    return _verdict("nic-flap", evidence, start, ok, detect_s=detect, recover_s=recover)


def _after(seconds: float | None) -> str:
    return f"firing after {seconds:.1f} s" if seconds is not None else "not firing"
