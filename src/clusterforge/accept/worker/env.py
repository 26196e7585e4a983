"""What the worker finds on its node: the node's name, and torch when it is installed."""

from __future__ import annotations

import os
import socket
from typing import Any

__all__ = ["load_torch", "node_name"]


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or os.environ.get("CF_NODE") or socket.gethostname()


def load_torch() -> Any | None:
    try:
        import torch
    except ImportError:
        return None
    return torch
