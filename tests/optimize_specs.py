"""A small optimize spec the optimize tests share: Llama 3 8B on 8 or 32 H100, built or on
demand, so a whole search takes a second or two."""

from __future__ import annotations

from typing import Any

SMALL_OPTIMIZE: dict[str, Any] = {
    "job": {"model": "llama3-8b", "tokens_b": 20, "global_batch": 256},
    "search": {
        "nodes": ["dgx-h100"],
        "num_gpus": [8, 32],
        "fabrics": ["infiniband"],
        "spare_fractions": [0.0],
        "procurement": ["build", "on-demand"],
    },
}
