"""Reading and writing the user's files without harming the machine.

Every file a command reads from the user (a spec, an NVML fixture, an XID policy, a state
file, a job log) goes through :func:`read_capped`: at most a stated number of bytes, so
``--nvml-fixture /dev/zero`` is an error after a megabyte, not 6 GiB of memory.

Every file a command writes (a report, a picture, the check's state file) goes through
:func:`write_file`, which decides *how* to write from what the path is today:

=========================  =================================================================
the path is                what happens
=========================  =================================================================
new, or a regular file     a temporary file in the same folder, renamed over it (whole or
                           nothing); a new file gets the mode the umask gives (0666 & ~umask),
                           an existing one keeps its mode
a symbolic link            followed: its target is written as above, the link stays a link
``/dev/null``, a terminal  written in place (no rename: renaming over a device as root
or a pipe                  replaces the device node with a regular file)
any other special file     refused with an error naming it (a disk, ``/dev/mem``, a socket)
=========================  =================================================================

The device numbers are Linux's (Documentation/admin-guide/devices.txt in the kernel tree):
``1,3`` is ``/dev/null``, ``1,7`` ``/dev/full``; majors 4 and 5 are virtual consoles and
``/dev/tty``, 136-143 the Unix98 pseudo-terminals.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from clusterforge.errors import ClusterforgeError, SpecError

__all__ = [
    "OutputKind",
    "check_output_file",
    "read_capped",
    "write_file",
]

_STREAM_DEVICES = {(1, 3), (1, 7)}  # /dev/null, /dev/full
_TERMINAL_MAJORS = {4, 5, *range(136, 144)}


def read_capped(
    path: Path,
    limit_bytes: int,
    what: str,
    error: type[ClusterforgeError] = SpecError,
) -> bytes:
    """The bytes of ``path``, at most ``limit_bytes``; longer files, missing files and OS
    errors are ``error`` naming ``what`` and the file (``what`` = "NVML fixture", ...)."""
    shown = repr(str(path)[:200])
    try:
        with open(path, "rb") as handle:
            raw = handle.read(limit_bytes + 1)
    except FileNotFoundError:
        raise error(f"{what} {shown} does not exist") from None
    except IsADirectoryError:
        raise error(f"{what} {shown} is a folder; give a file") from None
    except OSError as exc:
        raise error(f"cannot read {what} {shown}: {exc.strerror or exc}") from None
    if len(raw) > limit_bytes:
        raise error(f"{what} {shown} is larger than {_size(limit_bytes)}; is this the right file?")
    return raw


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB"


class OutputKind:
    """How :func:`write_file` will write a path (see the module's table)."""

    REPLACE = "replace"
    IN_PLACE = "in place"


def check_output_file(path: Path, what: str = "output") -> str:
    """How ``path`` will be written (:class:`OutputKind`), or a :class:`SpecError` when it
    cannot take a file: a folder, a missing folder, a disk or other special file. Cheap:
    call it before the work that makes the content."""
    shown = repr(str(path)[:200])
    try:
        info = os.stat(path)  # follows symbolic links
    except FileNotFoundError:
        target = Path(os.path.realpath(path))  # a dangling link names the file to create
        if not target.parent.is_dir():
            raise SpecError(
                f"{what} {shown}: folder {str(target.parent)[:200]!r} does not exist"
            ) from None
        return OutputKind.REPLACE
    except OSError as exc:
        raise SpecError(f"{what} {shown}: {exc.strerror or exc}") from None
    mode = info.st_mode
    if stat.S_ISREG(mode):
        return OutputKind.REPLACE
    if stat.S_ISDIR(mode):
        raise SpecError(f"{what} {shown} is a folder; give a file name")
    if stat.S_ISFIFO(mode):
        return OutputKind.IN_PLACE
    if stat.S_ISCHR(mode):
        major, minor = os.major(info.st_rdev), os.minor(info.st_rdev)
        if (major, minor) in _STREAM_DEVICES or major in _TERMINAL_MAJORS:
            return OutputKind.IN_PLACE
        kind = f"character device {major},{minor}"
    elif stat.S_ISBLK(mode):
        kind = "block device (a disk)"
    elif stat.S_ISSOCK(mode):
        kind = "socket"
    else:
        kind = "special file"
    raise SpecError(
        f"{what} {shown} is a {kind}; clusterforge writes only regular files, new paths, "
        "/dev/null, terminals and pipes: give a file name"
    )


def write_file(path: Path, content: str | bytes, what: str = "output") -> Path:
    """Write ``content`` to ``path`` as the module's table says; a :class:`SpecError` when
    the path cannot take it. Returns the path written (a link's target for a link)."""
    kind = check_output_file(path, what)
    data = content.encode("utf-8") if isinstance(content, str) else content
    shown = repr(str(path)[:200])
    try:
        if kind == OutputKind.IN_PLACE:
            with open(path, "wb") as handle:
                handle.write(data)
            return path
        target = Path(os.path.realpath(path))
        _replace(target, data)
    except OSError as exc:
        raise SpecError(f"cannot write {what} {shown}: {exc.strerror or exc}") from None
    return target


def _replace(target: Path, data: bytes) -> None:
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, staging = tempfile.mkstemp(prefix=f".{target.name[:40]}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), mode)
        os.replace(staging, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (/proc/self/status
    has a ``Umask:`` line since Linux 4.7); elsewhere set and restored at once."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current
