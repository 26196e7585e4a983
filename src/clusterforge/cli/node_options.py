"""Options shared by ``check`` and ``exporter``: what to read on the node, what to expect.

:func:`source_options` adds the options to a click command and hands the command one frozen
:class:`~clusterforge.ops.options.SourceOptions` as ``source``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args

import click

from clusterforge.cli.params import FiniteFloatRange
from clusterforge.ops.expect import ExpectOverrides, Fabric
from clusterforge.ops.options import DEFAULT_BUDGET_S, SourceOptions

__all__ = ["source_options"]

_FILE = click.Path(dir_okay=False, path_type=Path)

_OPTIONS = [
    click.option("--expect", "spec_path", type=_FILE,
                 help="Cluster spec YAML: the node should match its design."),
    click.option("--node", help="Node name for reports and actions (default: short hostname)."),
    click.option("--nvml-fixture", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                 help="Replay recorded NVML readings (JSON) instead of the real GPUs."),
    click.option("--sysfs-root", type=click.Path(exists=True, file_okay=False, path_type=Path),
                 default="/", show_default=True, help="Root of /sys, /proc (a fake tree in tests)."),
    click.option("--timeout-s", type=FiniteFloatRange(1, 3600), default=DEFAULT_BUDGET_S,
                 show_default=True,
                 help="Budget for all readings (Slurm kills a health check after 60 s)."),
    click.option("--xid-policy", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                 help="YAML overriding the default XID actions."),
    click.option("--mount", "mounts", multiple=True,
                 help="Filesystem that must be mounted and writable."),
    click.option("--min-free-gib", type=FiniteFloatRange(min=0),
                 help="Minimum free space on each --mount."),
    click.option("--gpu", "gpu_id", help="Expected catalog GPU id (overrides the spec)."),
    click.option("--num-gpus", type=click.IntRange(min=1), help="Expected GPUs per node."),
    click.option("--num-nics", type=click.IntRange(min=0), help="Expected compute NIC ports."),
    click.option("--nic-gbit-per-s", type=FiniteFloatRange(min=0, min_open=True),
                 help="Expected compute NIC speed, Gb/s."),
    click.option("--fabric", type=click.Choice(get_args(Fabric)), help="Compute fabric."),
    click.option("--driver-version", help="The cluster's NVIDIA driver version."),
    click.option("--cuda-version", help="The cluster's CUDA driver version (e.g. 12.4)."),
    click.option("--allow-process", "allowed_processes", multiple=True,
                 help="Program allowed to hold a GPU outside a job (e.g. a site agent)."),
]  # fmt: skip


def source_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the shared options; the command receives them as ``source: SourceOptions``."""

    @functools.wraps(fn)
    def wrapper(
        *,
        spec_path: Path | None,
        node: str | None,
        nvml_fixture: Path | None,
        sysfs_root: Path,
        timeout_s: float,
        xid_policy: Path | None,
        mounts: tuple[str, ...],
        min_free_gib: float | None,
        gpu_id: str | None,
        num_gpus: int | None,
        num_nics: int | None,
        nic_gbit_per_s: float | None,
        fabric: Literal["infiniband", "roce"] | None,
        driver_version: str | None,
        cuda_version: str | None,
        allowed_processes: tuple[str, ...],
        **rest: Any,
    ) -> Any:
        overrides = ExpectOverrides(
            gpu_id=gpu_id, num_gpus=num_gpus, num_compute_nics=num_nics,
            nic_gbit_per_s=nic_gbit_per_s, fabric=fabric, driver_version=driver_version,
            cuda_driver_version=cuda_version, mounts=tuple(mounts), min_free_gib=min_free_gib,
        )  # fmt: skip
        source = SourceOptions(
            node=node, spec_path=spec_path, nvml_fixture=nvml_fixture, sysfs_root=sysfs_root,
            budget_s=timeout_s, xid_policy_path=xid_policy, overrides=overrides,
            allowed_processes=tuple(allowed_processes),
        )  # fmt: skip
        return fn(source=source, **rest)

    for option in reversed(_OPTIONS):
        wrapper = option(wrapper)
    return wrapper
