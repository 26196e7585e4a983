"""IMEX for NVLink domains that span nodes (GB200/GB300 NVL72): Slurm setup and a ComputeDomain.

CUDA memory shared over NVLink between the trays of one rack-scale system needs NVIDIA's IMEX
service on every tray (NVIDIA "IMEX Service for NVLink Networks" guide):

* **Slurm** uses the guide's "NVLink domain wide" deployment: each tray runs ``nvidia-imex``
  with ``/etc/nvidia-imex/nodes_config.cfg`` listing the IP addresses of every tray of its
  NVLink domain (the IMEX instances reach quorum over exactly that list).
  ``clusterforge-imex-setup.sh`` holds each domain's host list, as read from the design's
  racks, writes that file from DNS on the tray it runs on, and creates the default IMEX
  channel ``/dev/nvidia-caps-imex-channels/channel0`` (the guide's "IMEX Channels": the driver
  registers the ``nvidia-caps-imex-channels`` character device, whose major number
  ``/proc/devices`` lists, but creates no channel node; CUDA's fabric-memory calls fail with a
  permission error until one exists).  Per-job IMEX channels come from
  ``SwitchType=switch/nvidia_imex`` (Slurm 24.05 or later), which slurm.conf sets when the
  target Slurm has it (:mod:`clusterforge.generate.slurm.releases`) and names in a comment
  otherwise.
* **Kubernetes** uses NVIDIA's DRA driver for GPUs (``k8s-dra-driver-gpu``): a
  ``ComputeDomain`` (``resource.nvidia.com/v1beta1``) of the job's nodes makes the driver run
  the IMEX daemons and hand each pod an IMEX channel through the ResourceClaimTemplate it
  names; the training pods claim it (:func:`imex_pod_claim`).
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.generate.common import GeneratedFile, checked_name, hostlist, render_template
from clusterforge.generate.layout import NodePlacement, nodes_per_nvlink_block

__all__ = [
    "COMPUTE_DOMAIN_API",
    "IMEX_CHANNEL_DEVICE",
    "IMEX_CHANNEL_DIR",
    "IMEX_CLAIM",
    "IMEX_SWITCH_TYPE",
    "compute_domain",
    "imex_pod_claim",
    "imex_slurm_files",
    "imex_switch_comments",
    "needs_imex",
]

COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
IMEX_CLAIM = "imex-channel"
IMEX_NODES_CONFIG = "/etc/nvidia-imex/nodes_config.cfg"
IMEX_SWITCH_TYPE = "switch/nvidia_imex"
# NVIDIA IMEX guide, "IMEX Channels": the device name in /proc/devices, the folder of the
# channel nodes and the modes of its example listing (drwxr-xr-x folder, crw-rw-rw- root:root).
IMEX_CHANNEL_DEVICE = "nvidia-caps-imex-channels"
IMEX_CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"
IMEX_CHANNEL_DIR_MODE = "0755"
IMEX_CHANNEL_MODE = "0666"


def needs_imex(design: Design) -> bool:
    """True when one NVLink domain spans several nodes."""
    return nodes_per_nvlink_block(design) > 1


def imex_switch_comments(design: Design, *, plugin: bool) -> list[str]:
    """slurm.conf comment lines on per-job IMEX channels (empty without multi-node NVLink);
    ``plugin``: whether the target Slurm has ``switch/nvidia_imex``."""
    if not needs_imex(design):
        return []
    lines = ["Multi-node NVLink: clusterforge-imex-setup.sh configures IMEX per NVLink domain."]
    if plugin:
        return [*lines, f"{IMEX_SWITCH_TYPE} gives each job its own IMEX channel."]
    return [
        *lines,
        f"This Slurm lacks {IMEX_SWITCH_TYPE} (24.05 or later), so jobs share channel0.",
    ]


def _domains(placements: list[NodePlacement]) -> list[dict[str, str]]:
    members: dict[str, list[str]] = {}
    for p in placements:
        if p.nvlink_block:
            members.setdefault(p.nvlink_block, []).append(p.name)
    return [{"name": block, "hosts": hostlist(names)} for block, names in members.items()]


def imex_slurm_files(design: Design, placements: list[NodePlacement]) -> list[GeneratedFile]:
    """``clusterforge-imex-setup.sh`` for designs whose NVLink domains span nodes."""
    if not needs_imex(design):
        return []
    text = render_template(
        "slurm/imex-setup.sh.j2",
        cluster=checked_name(design.spec.name, "cluster name"),
        nodes_config=IMEX_NODES_CONFIG,
        channel_device=IMEX_CHANNEL_DEVICE,
        channel_dir=IMEX_CHANNEL_DIR,
        channel_dir_mode=IMEX_CHANNEL_DIR_MODE,
        channel_mode=IMEX_CHANNEL_MODE,
        domains=_domains(placements),
    )
    return [GeneratedFile("slurm/clusterforge-imex-setup.sh", text, 0o755)]


def compute_domain(design: Design, *, name: str, namespace: str) -> dict[str, Any]:
    """The ComputeDomain of the training job: its training nodes share IMEX channels."""
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": {"name": checked_name(name, "object name"), "namespace": namespace},
        "spec": {
            "numNodes": design.compute.num_training_nodes,
            "channel": {"resourceClaimTemplate": {"name": f"{name}-channel"}},
        },
    }


def imex_pod_claim(compute_domain_name: str) -> dict[str, str]:
    """The pod-level resource claim on the ComputeDomain's channel template."""
    return {"name": IMEX_CLAIM, "resourceClaimTemplateName": f"{compute_domain_name}-channel"}
