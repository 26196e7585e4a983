"""One acceptance request from the command line or a script: plan the spec, pick the
launcher, run the suite, write the report, optionally drain the failed nodes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clusterforge.accept.launch import Launcher, LocalLauncher, SlurmLauncher
from clusterforge.accept.launch_k8s import KubernetesLauncher
from clusterforge.accept.suite import AcceptOptions, AcceptReport, Progress, run_acceptance
from clusterforge.errors import SpecError

__all__ = ["AcceptRequest", "Via", "accept_spec", "drain_failed", "parse_size"]

Via = Literal["slurm", "kubernetes", "local"]
SIZE_UNITS = {"B": 1, "K": 2**10, "KIB": 2**10, "M": 2**20, "MIB": 2**20, "G": 2**30, "GIB": 2**30}


def parse_size(text: str) -> int:
    """'16MiB' -> 16777216 (B, KiB, MiB, GiB; K, M, G as binary)."""
    number = text.rstrip("BbIiKkMmGg")
    unit = text[len(number) :].upper() or "B"
    try:
        value = float(number) * SIZE_UNITS[unit]
    except (ValueError, KeyError):
        raise SpecError(f"size {text!r}: use a number and B, KiB, MiB or GiB (e.g. 1GiB)") from None
    if not 8 <= value <= 2**36:
        raise SpecError(f"size {text!r}: between 8 B and 64 GiB")
    return int(value)


@dataclass(frozen=True)
class AcceptRequest:
    spec: Path | None
    via: Via
    work: Path  # report.json here, raw logs and job scripts under raw/
    suite: AcceptOptions
    image: str = "clusterforge-accept:latest"  # Kubernetes worker image


def _launcher(request: AcceptRequest, gpus_per_node: int) -> Launcher:
    raw = request.work / "raw"
    match request.via:
        case "slurm":
            return SlurmLauncher(raw)
        case "kubernetes":
            gpus = 0 if request.suite.cpu else gpus_per_node
            return KubernetesLauncher(raw, request.image, gpus_per_pod=gpus)
        case "local":
            return LocalLauncher()


def accept_spec(request: AcceptRequest, progress: Progress) -> AcceptReport:
    """Plan the spec and run the suite; the report is also written to ``work/report.json``.

    Raises :class:`AcceptError` when the suite could not run at all."""
    from clusterforge.design import plan
    from clusterforge.spec import load_spec

    design = plan(load_spec(request.spec))
    launcher = _launcher(request, design.compute.gpus_per_node)
    report = run_acceptance(design, request.suite, launcher, progress)
    request.work.mkdir(parents=True, exist_ok=True)
    (request.work / "report.json").write_text(json.dumps(report.as_dict(), indent=2) + "\n")
    return report


def drain_failed(report: AcceptReport, via: Via) -> list[str]:
    """Drain (Slurm) or cordon (Kubernetes) the failed nodes with an owned reason, so that
    ``clusterforge check`` may resume them once healthy."""
    from clusterforge.ops.actions import OWNER_PREFIX, KubernetesBackend, SlurmBackend

    if via == "local" or not report.failed_nodes:
        return []
    backend = SlurmBackend() if via == "slurm" else KubernetesBackend()
    for node in report.failed_nodes:
        backend.drain(node, f"{OWNER_PREFIX} accept: failed acceptance")
    return report.failed_nodes
