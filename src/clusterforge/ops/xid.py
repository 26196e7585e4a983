"""XID policy (what an XID means for the node) and the kernel-log parser that finds XIDs.

The default policy is data: ``data/xid_policy.yaml`` (NVIDIA's XID catalog buckets and
DCGM's fatal list, operations.md §1.2 and §18).  A site file given with ``--xid-policy``
overrides single codes.  Kernel lines look like
``NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus.`` (the format the
Azure NHC check ``azure_gpu_xid.nhc`` greps, operations.md §8).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from clusterforge.errors import CheckError
from clusterforge.ops.readings import XidEvent, normalize_pci_bus_id

__all__ = [
    "XidAction",
    "XidPolicy",
    "XidRule",
    "load_xid_policy",
    "parse_kernel_xids",
]

XidAction = Literal["drain", "warn", "ignore"]
_ACTIONS = ("drain", "warn", "ignore")


@dataclass(frozen=True)
class XidRule:
    xid: int
    action: XidAction
    mnemonic: str = ""
    catalog: str = ""


@dataclass(frozen=True)
class XidPolicy:
    """XID -> action; codes not listed get ``default_action``."""

    rules: dict[int, XidRule] = field(default_factory=dict)
    default_action: XidAction = "warn"

    def rule(self, xid: int) -> XidRule:
        return self.rules.get(
            xid, XidRule(xid=xid, action=self.default_action, mnemonic="unlisted XID")
        )


def _action(value: Any, where: str) -> XidAction:
    if value not in _ACTIONS:
        raise CheckError(f"{where}: action {value!r} is not one of {', '.join(_ACTIONS)}")
    return value


def _parse_policy(data: Any, where: str, base: XidPolicy | None) -> XidPolicy:
    if not isinstance(data, dict):
        raise CheckError(f"{where}: an XID policy is a mapping with 'xids' and 'default_action'")
    rules = dict(base.rules) if base else {}
    for key, entry in (data.get("xids") or {}).items():
        try:
            xid = int(key)
        except (TypeError, ValueError):
            raise CheckError(f"{where}: xids: {key!r} is not an XID number") from None
        entry = {"action": entry} if isinstance(entry, str) else dict(entry)
        old = rules.get(xid)
        rules[xid] = XidRule(
            xid=xid,
            action=_action(entry.get("action"), f"{where}: xids.{xid}"),
            mnemonic=str(entry.get("mnemonic", old.mnemonic if old else "")),
            catalog=str(entry.get("catalog", old.catalog if old else "")),
        )
    default = data.get("default_action", base.default_action if base else "warn")
    return XidPolicy(rules=rules, default_action=_action(default, f"{where}: default_action"))


def load_xid_policy(override: str | Path | None = None) -> XidPolicy:
    """The packaged default policy, with a site file's codes laid over it."""
    text = (
        resources.files("clusterforge.ops").joinpath("data", "xid_policy.yaml").read_text("utf-8")
    )
    policy = _parse_policy(yaml.safe_load(text), "default XID policy", None)
    if override is None:
        return policy
    path = Path(override)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckError(f"XID policy file {str(path)!r} does not exist") from None
    except yaml.YAMLError as exc:
        raise CheckError(f"XID policy file {str(path)!r} is not valid YAML: {exc}") from None
    return _parse_policy(data, str(path), policy)


_XID_LINE = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)")
_ISO_PREFIX = re.compile(r"^\[?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]?\d*[+-]\d\d:?\d\d)")


def _line_age_s(line: str, now: datetime | None) -> float | None:
    match = _ISO_PREFIX.match(line)
    if match is None or now is None:
        return None
    stamp = datetime.fromisoformat(match.group(1).replace(",", "."))
    return (now - stamp).total_seconds()


def parse_kernel_xids(
    text: str, now: datetime | None = None, window_s: float | None = None
) -> list[XidEvent]:
    """XIDs in ``dmesg --time-format iso`` output, newest last.

    With ``window_s``, lines older than that are dropped: an XID from yesterday that a reset
    cleared should not drain the node forever (Azure NHC counts only the last 2 h,
    operations.md §8).  Lines without a timestamp are kept.
    """
    events = []
    for line in text.splitlines():
        match = _XID_LINE.search(line)
        if match is None:
            continue
        age_s = _line_age_s(line, now)
        if window_s is not None and age_s is not None and age_s > window_s:
            continue
        events.append(
            XidEvent(
                xid=int(match.group(2)),
                pci_bus_id=normalize_pci_bus_id(match.group(1)),
                source="kernel",
                age_s=age_s,
            )
        )
    return events
