"""XID classes for alerting, read from the XID policy that ``clusterforge check`` applies.

The policy file (``clusterforge/ops/data/xid_policy.yaml``) maps each XID to ``drain``
(hardware: the GPU needs a reset or a replacement), ``warn`` or ``ignore`` (the application's
own fault: 13 graphics engine exception, 31 MMU page fault, 43 GPU stopped processing), from
the "Resolution Bucket" of NVIDIA's XID catalog and DCGM's fatal XIDs.  Alerts page only on
the hardware class, so a user's bad kernel never wakes the on-call.  The file is read as
package data: one policy for the checks and the alerts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

__all__ = ["XidClasses", "xid_classes"]


@dataclass(frozen=True)
class XidClasses:
    """XID numbers by action; XIDs listed nowhere fall in ``warn`` (the policy's default)."""

    drain: tuple[int, ...]
    warn: tuple[int, ...]
    ignore: tuple[int, ...]

    def regex(self, action: str) -> str:
        """PromQL regex of one class, e.g. ``13|31|43``."""
        return "|".join(str(x) for x in getattr(self, action))


@cache
def xid_classes() -> XidClasses:
    text = resources.files("clusterforge.ops").joinpath("data", "xid_policy.yaml").read_text()
    entries = yaml.safe_load(text)["xids"]
    by_action: dict[str, list[int]] = {"drain": [], "warn": [], "ignore": []}
    for xid, entry in entries.items():
        action = entry["action"] if isinstance(entry, dict) else entry
        by_action[str(action)].append(int(xid))
    return XidClasses(**{k: tuple(sorted(v)) for k, v in by_action.items()})
