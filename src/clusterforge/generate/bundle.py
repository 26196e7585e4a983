"""Run the generators and write their files atomically.

All files are rendered in memory first (a :class:`GenerateError` leaves the disk untouched),
written to a temporary folder next to the output, and each target folder (``slurm/``,
``kubernetes/``, ...) is then moved into place, replacing the previous one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from clusterforge.design import Design
from clusterforge.errors import GenerateError, did_you_mean
from clusterforge.generate.common import GeneratedFile

__all__ = ["TARGETS", "parse_targets", "render", "write_files"]


def _slurm(design: Design) -> list[GeneratedFile]:
    from clusterforge.generate.slurm import slurm_files

    return slurm_files(design)


def _kubernetes(design: Design) -> list[GeneratedFile]:
    from clusterforge.generate.kubernetes import kubernetes_files

    return kubernetes_files(design)


def _monitoring(design: Design) -> list[GeneratedFile]:
    from clusterforge.generate.monitoring import monitoring_files

    return monitoring_files(design)


def _inventory(design: Design) -> list[GeneratedFile]:
    from clusterforge.generate.inventory import inventory_files

    return inventory_files(design)


TARGETS: dict[str, Callable[[Design], list[GeneratedFile]]] = {
    "slurm": _slurm,
    "kubernetes": _kubernetes,
    "monitoring": _monitoring,
    "inventory": _inventory,
}


def parse_targets(text: str | None) -> list[str]:
    """``"slurm,monitoring"`` -> ``["slurm", "monitoring"]``; None or "" -> every target."""
    if not text:
        return list(TARGETS)
    names = [t.strip() for t in text.split(",") if t.strip()]
    for name in names:
        if name not in TARGETS:
            raise GenerateError(
                f"--only: unknown target {name!r}{did_you_mean(name, TARGETS)}; "
                f"choose from {', '.join(TARGETS)}"
            )
    return list(dict.fromkeys(names))


def render(design: Design, targets: Sequence[str] | None = None) -> list[GeneratedFile]:
    """Every file of the chosen targets, in memory."""
    files: list[GeneratedFile] = []
    for name in targets or TARGETS:
        files.extend(TARGETS[name](design))
    paths = [f.path for f in files]
    if len(paths) != len(set(paths)):
        raise GenerateError("two generators wrote the same path")  # a bug, said plainly
    return files


def _safe_relative(path: str) -> Path:
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts:
        raise GenerateError(f"generated path {path!r} leaves the output folder")
    return relative


def write_files(files: Iterable[GeneratedFile], out_dir: str | Path) -> list[Path]:
    """Write ``files`` under ``out_dir``; each top-level folder is replaced as a whole."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GenerateError(f"cannot create output folder {str(out)!r}: {exc}") from None
    staging = Path(tempfile.mkdtemp(prefix=".clusterforge-", dir=out))
    try:
        written = [_stage(f, staging) for f in files]
        tops = sorted({p.parts[0] for p in written})
        for top in tops:
            _replace(staging / top, out / top)
        return [out / p for p in written]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _stage(f: GeneratedFile, staging: Path) -> Path:
    relative = _safe_relative(f.path)
    target = staging / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f.content, encoding="utf-8")
    os.chmod(target, f.mode)
    return relative


def _replace(source: Path, target: Path) -> None:
    """Swap ``source`` into ``target``: the old folder is moved aside, then removed."""
    old = target.with_name(f".{target.name}.old")
    if old.exists():
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    if target.exists():
        target.rename(old)
    source.rename(target)
    if old.exists():
        shutil.rmtree(old) if old.is_dir() else old.unlink()
