"""The worker's result lines: one ``CFACCEPT {json}`` line per result on stdout.

The launcher (:mod:`clusterforge.accept.launch`) collects them from the job's output, whatever
else the tools print.
"""

from __future__ import annotations

import json
from typing import Any

from clusterforge.accept.worker.env import node_name

__all__ = ["MARKER", "emit"]

MARKER = "CFACCEPT "


def emit(record: dict[str, Any]) -> None:
    """One result line for the launcher to collect."""
    record.setdefault("node", node_name())
    print(MARKER + json.dumps(record, sort_keys=True), flush=True)
