"""Helpers shared by every generator: name checks, host lists, templates, the file record.

Names that reach a generated file (node, switch, rack, cluster names) pass through
:func:`checked_name` even though the spec already restricts its own ``name``: a file that a
daemon parses or a shell executes must never receive a character that ends a field, starts a
comment or opens a command substitution.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import jinja2
import yaml

from clusterforge.errors import GenerateError

__all__ = [
    "GeneratedFile",
    "checked_label_value",
    "checked_name",
    "hostlist",
    "render_template",
    "yaml_text",
]

# Host names (RFC 1123 label, lower case) and our switch/rack names.
_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
# Kubernetes label values (k8s.io/apimachinery validation: 63 chars, alnum at both ends).
_LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$")
_NUMBERED_RE = re.compile(r"^(.*?)(\d+)$")


@dataclass(frozen=True)
class GeneratedFile:
    """One output file: its path relative to the output folder, its text and its mode."""

    path: str
    content: str
    mode: int = 0o644


def checked_name(value: str, what: str) -> str:
    """Return ``value`` if it is a safe lower-case host-style name, else raise GenerateError."""
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise GenerateError(
            f"{what} {value!r} is not a valid name for generated files: use 1-63 characters "
            "a-z, 0-9 and '-', starting and ending with a letter or digit"
        )
    return value


def checked_label_value(value: str, what: str) -> str:
    """Return ``value`` if Kubernetes accepts it as a label value, else raise GenerateError."""
    if not _LABEL_VALUE_RE.fullmatch(value):
        raise GenerateError(f"{what} {value!r} is not a valid Kubernetes label value")
    return value


def hostlist(names: Iterable[str]) -> str:
    """Slurm host-list expression: ``gpu-0001, gpu-0002, gpu-0004`` -> ``gpu-[0001-0002,0004]``.

    Names are grouped by prefix and digit width, in first-seen order; each name is checked.
    """
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in names:
        checked_name(name, "host name")
        match = _NUMBERED_RE.fullmatch(name)
        if match is None:
            plain.append(name)
            continue
        groups.setdefault((match[1], len(match[2])), []).append(int(match[2]))
    parts = [_bracket(prefix, width, numbers) for (prefix, width), numbers in groups.items()]
    if not parts and not plain:
        raise GenerateError("an empty host list cannot be written")
    return ",".join(parts + plain)


def _bracket(prefix: str, width: int, numbers: Sequence[int]) -> str:
    runs = _runs(sorted(set(numbers)))
    if len(runs) == 1 and runs[0][0] == runs[0][1]:
        return f"{prefix}{runs[0][0]:0{width}d}"
    text = ",".join(
        f"{lo:0{width}d}" if lo == hi else f"{lo:0{width}d}-{hi:0{width}d}" for lo, hi in runs
    )
    return f"{prefix}[{text}]"


def _runs(numbers: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and runs[-1][1] == n - 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clusterforge.generate", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_template(name: str, **values: Any) -> str:
    """Render ``templates/<name>``; a missing value is an error, never an empty string."""
    try:
        return _environment().get_template(name).render(**values)
    except jinja2.UndefinedError as exc:  # a bug in a generator, but name the template
        raise GenerateError(f"template {name}: {exc.message}") from exc


class _PlainDumper(yaml.SafeDumper):
    """Never writes anchors and aliases: each object is spelled out where it is used."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def yaml_text(data: Any, *, many: bool = False) -> str:
    """YAML for a value (or, with ``many``, a list of documents), keys in insertion order."""
    if many:
        return yaml.dump_all(
            data, Dumper=_PlainDumper, sort_keys=False, explicit_start=True, width=120
        )
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, width=120)
