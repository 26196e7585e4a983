"""XID policy (what an XID means for the node) and the kernel-log parser that finds XIDs.

The default policy is data: ``data/xid_policy.yaml`` (the "Resolution Bucket" of NVIDIA's
XID catalog, and the XIDs DCGM's health watch fails on in ``DcgmHealthWatch.cpp``).  A site
policy file overrides single codes.  Kernel lines look like
``NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus.`` (the format of
NVIDIA's "Xid Errors" document, which Azure HPC health checks' ``check_gpu_xid`` greps).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml

from clusterforge.errors import CheckError, did_you_mean
from clusterforge.ops.readings import XidEvent, normalize_pci_bus_id
from clusterforge.userfiles import read_capped

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


_POLICY_KEYS = ("xids", "default_action")
_POLICY_SHAPE = "an XID policy has 'xids' (XID number: drain, warn or ignore) and 'default_action'"


def _action(value: object, where: str) -> XidAction:
    match value:
        case "drain" | "warn" | "ignore":
            return value
        case _:
            raise CheckError(f"{where}: action {value!r} is not one of {', '.join(_ACTIONS)}")


def _check_keys(data: dict[Any, Any], where: str) -> None:
    """Reject a file that is something else, such as a cluster spec given by mistake."""
    unknown = [str(k) for k in data if k not in _POLICY_KEYS]
    if not unknown:
        return
    from clusterforge.spec import ClusterSpec

    spec_keys = [k for k in unknown if k in ClusterSpec.model_fields]
    if spec_keys:
        raise CheckError(
            f"{where} looks like a cluster spec (keys {', '.join(spec_keys[:4])}), not an XID "
            f"policy; {_POLICY_SHAPE}"
        )
    hint = did_you_mean(unknown[0], _POLICY_KEYS)
    raise CheckError(f"{where}: unknown key {unknown[0]!r}{hint}; {_POLICY_SHAPE}")


def _rule(key: object, entry: object, rules: dict[int, XidRule], where: str) -> XidRule:
    """One site entry (``79: drain`` or ``79: {action: drain}``), over the rule it replaces."""
    try:
        xid = int(str(key))
    except ValueError:
        raise CheckError(f"{where}: xids: {key!r} is not an XID number") from None
    old = rules.get(xid)
    fields = {"action": entry} if isinstance(entry, str) else entry
    if not isinstance(fields, dict):
        raise CheckError(
            f"{where}: xids.{xid}: {entry!r} is neither an action nor a mapping with 'action'"
        )
    return XidRule(
        xid=xid,
        action=_action(fields.get("action"), f"{where}: xids.{xid}"),
        mnemonic=str(fields.get("mnemonic", old.mnemonic if old else "")),
        catalog=str(fields.get("catalog", old.catalog if old else "")),
    )


def _parse_policy(data: object, where: str, base: XidPolicy | None) -> XidPolicy:
    if not isinstance(data, dict):
        raise CheckError(f"{where}: {_POLICY_SHAPE}, as a YAML mapping")
    _check_keys(data, where)
    entries = data.get("xids") or {}
    if not isinstance(entries, dict):
        raise CheckError(f"{where}: xids: expected a mapping of XID number to action")
    rules = dict(base.rules) if base else {}
    for key, entry in entries.items():
        rule = _rule(key, entry, rules, where)
        rules[rule.xid] = rule
    default = data.get("default_action", base.default_action if base else "warn")
    return XidPolicy(rules=rules, default_action=_action(default, f"{where}: default_action"))


MAX_POLICY_BYTES = 1024 * 1024  # the shipped policy, every XID named, is under 16 KiB


def _read_policy(path: Path) -> object:
    name = repr(str(path))
    try:
        text = read_capped(path, MAX_POLICY_BYTES, "XID policy file", CheckError).decode("utf-8")
        return yaml.safe_load(text)
    except UnicodeDecodeError as exc:
        raise CheckError(
            f"XID policy file {name} is not a text file (byte {exc.start} is not UTF-8)"
        ) from None
    except yaml.YAMLError as exc:
        raise CheckError(f"XID policy file {name} is not valid YAML: {exc}") from None
    except OSError as exc:
        raise CheckError(f"XID policy file {name} cannot be read: {exc.strerror}") from None


def load_xid_policy(override: str | Path | None = None) -> XidPolicy:
    """The packaged default policy, with a site file's codes laid over it."""
    text = (
        resources.files("clusterforge.ops").joinpath("data", "xid_policy.yaml").read_text("utf-8")
    )
    policy = _parse_policy(yaml.safe_load(text), "default XID policy", None)
    if override is None:
        return policy
    return _parse_policy(_read_policy(Path(override)), f"XID policy file {str(override)!r}", policy)


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
    cleared should not drain the node forever (Azure HPC health checks' ``check_gpu_xid``
    counts only the last 2 h by default).  Lines without a timestamp are kept.
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
