"""Slurm's GPU resources: the GRES type of a catalog GPU and ``gres.conf``.

``gres.conf`` (gres.conf(5)) sets ``AutoDetect=nvml`` (``rsmi`` for AMD) and also names each
node's ``Type`` and device ``File``s, which Slurm then checks against what it detects: a
mismatch drains the node. The type is a token of the GPU's id that NVML's device name holds.
"""

from __future__ import annotations

import re

from clusterforge.catalog import Gpu
from clusterforge.design import Design
from clusterforge.errors import GenerateError
from clusterforge.generate.common import hostlist, render_template

__all__ = [
    "AUTODETECT",
    "gres_conf",
    "gres_type",
]

AUTODETECT = {"nvidia": "nvml", "amd": "rsmi"}
_DEVICE_FILES = {"nvidia": ("/dev/nvidia", 0), "amd": ("/dev/dri/renderD", 128)}
_TYPE_RE = re.compile(r"^[a-z0-9]+$")


def gres_type(gpu: Gpu) -> str:
    """Slurm GRES type for a GPU: the id token with a digit that NVML's name contains.

    With AutoDetect, Slurm matches the configured Type against the device name reported by
    NVML, so ``h100`` (from ``h100-sxm``) matches "NVIDIA H100 80GB HBM3".
    """
    tokens = [t for t in gpu.id.split("-") if any(ch.isdigit() for ch in t)] or [gpu.id]
    names = [n.lower() for n in gpu.nvml_names]
    matching = [t for t in tokens if names and all(t in n for n in names)]
    chosen = (matching or tokens)[0].replace(".", "")
    if not _TYPE_RE.fullmatch(chosen):
        raise GenerateError(f"GPU id {gpu.id!r} gives no usable Slurm GRES type ({chosen!r})")
    return chosen


def gres_conf(design: Design) -> str:
    compute = design.compute
    prefix, first = _DEVICE_FILES[compute.gpu.vendor]
    count = compute.gpus_per_node
    files = f"{prefix}{first}" if count == 1 else f"{prefix}[{first}-{first + count - 1}]"
    line = dict(names=hostlist(compute.node_names), gres_type=gres_type(compute.gpu), files=files)
    return render_template(
        "slurm/gres.conf.j2",
        cluster=design.spec.name,
        autodetect=AUTODETECT[compute.gpu.vendor],
        gres_lines=[line],
    )
