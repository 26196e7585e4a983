"""Run the generators and write their files atomically.

Small files are rendered in memory; large ones (the NetBox inventory) are
:class:`~clusterforge.generate.streamed.StreamedFile` and are rendered while they are written.
Everything goes to a temporary folder next to the output (an error, a :class:`GenerateError`
included, removes it and leaves the output untouched), and each target folder (``slurm/``,
``kubernetes/``, ...) is then moved into place, replacing the previous one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from clusterforge.design import Design
from clusterforge.errors import GenerateError, did_you_mean
from clusterforge.generate.common import GeneratedFile
from clusterforge.generate.streamed import StreamedFile

__all__ = [
    "TARGETS",
    "OutputFile",
    "Progress",
    "generate",
    "parse_targets",
    "render",
    "write_files",
]

OutputFile = GeneratedFile | StreamedFile


def _slurm(design: Design) -> Sequence[OutputFile]:
    from clusterforge.generate.slurm.files import slurm_files

    return slurm_files(design)


def _kubernetes(design: Design) -> Sequence[OutputFile]:
    from clusterforge.generate.kubernetes.files import kubernetes_files

    return kubernetes_files(design)


def _monitoring(design: Design) -> Sequence[OutputFile]:
    from clusterforge.generate.monitoring.files import monitoring_files

    return monitoring_files(design)


def _inventory(design: Design) -> Sequence[OutputFile]:
    from clusterforge.generate.inventory.files import inventory_files

    return inventory_files(design)


TARGETS: dict[str, Callable[[Design], Sequence[OutputFile]]] = {
    "slurm": _slurm,
    "kubernetes": _kubernetes,
    "monitoring": _monitoring,
    "inventory": _inventory,
}


class Progress(Protocol):
    """Told of each step of :func:`generate`: ``total`` is None until the files are known."""

    def __call__(self, what: str, *, done: int, total: int | None) -> None: ...


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


def render(
    design: Design, targets: Sequence[str] | None = None, *, progress: Progress | None = None
) -> list[OutputFile]:
    """Every file of the chosen targets; streamed files are rendered when read or written."""
    files: list[OutputFile] = []
    for name in targets or TARGETS:
        if progress is not None:
            progress(f"rendering {name}", done=0, total=None)
        files.extend(TARGETS[name](design))
    paths = [f.path for f in files]
    if len(paths) != len(set(paths)):
        raise GenerateError("two generators wrote the same path")  # a bug, said plainly
    return files


def generate(
    design: Design,
    out_dir: str | Path,
    targets: Sequence[str] | None = None,
    *,
    progress: Progress | None = None,
) -> list[Path]:
    """Render the chosen targets of ``design`` and write them atomically under ``out_dir``."""
    return write_files(render(design, targets, progress=progress), out_dir, progress=progress)


def _safe_relative(path: str) -> Path:
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts:
        raise GenerateError(f"generated path {path!r} leaves the output folder")
    return relative


def write_files(
    files: Iterable[OutputFile], out_dir: str | Path, *, progress: Progress | None = None
) -> list[Path]:
    """Write ``files`` under ``out_dir``; each top-level folder is replaced as a whole."""
    out = Path(out_dir)
    todo = list(files)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GenerateError(f"cannot create output folder {str(out)!r}: {exc}") from None
    staging = Path(tempfile.mkdtemp(prefix=".clusterforge-", dir=out))
    try:
        written = []
        for done, f in enumerate(todo):
            if progress is not None:
                progress(f"writing {f.path}", done=done, total=len(todo))
            written.append(_stage(f, staging))
        for top in sorted({p.parts[0] for p in written}):
            _replace(staging / top, out / top)
        if progress is not None:
            progress("done", done=len(todo), total=len(todo))
        return [out / p for p in written]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _stage(f: OutputFile, staging: Path) -> Path:
    relative = _safe_relative(f.path)
    target = staging / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(f, GeneratedFile):
        target.write_text(f.content, encoding="utf-8")
    else:
        with target.open("w", encoding="utf-8", newline="") as stream:
            for chunk in f.chunks():
                stream.write(chunk)
    os.chmod(target, f.mode)
    return relative


def _replace(source: Path, target: Path) -> None:
    """Swap ``source`` into ``target``: the old folder is moved aside, then removed.

    A symbolic link (``out/slurm -> /etc/slurm``) is followed: the folder it names is
    replaced and the link stays a link; anything else that is not a folder or a regular
    file (a device, a socket) is refused, never renamed away."""
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    if target.exists() and not (target.is_dir() or target.is_file()):
        raise GenerateError(f"{str(target)!r} is a special file, not a folder: move it away")
    old = target.with_name(f".{target.name}.old")
    _remove(old)
    if target.exists():
        target.rename(old)
    shutil.move(str(source), str(target))  # a rename, or a copy onto another file system
    _remove(old)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
