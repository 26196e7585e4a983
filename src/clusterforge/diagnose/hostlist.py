"""Slurm host-list expressions expanded to names: ``gpu-00[01-03,07]`` -> four names.

The syntax is Slurm's (``scontrol show hostnames``, slurm.conf(5) "NodeName"): a bracket
holds comma-separated numbers and ``lo-hi`` ranges, zero padding is kept from ``lo``, and
commas outside brackets separate expressions.
"""

from __future__ import annotations

import re

from clusterforge.errors import SpecError

__all__ = ["expand_hostlist"]

_BRACKET_RE = re.compile(r"^([^\[\],]*)\[([^\]]+)\](.*)$")
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
MAX_HOSTS = 100_000  # a typo like [1-9999999] must not eat the memory


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _numbers(body: str, expr: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        match = _RANGE_RE.fullmatch(item.strip())
        if match is None:
            raise SpecError(f"host list {expr!r}: {item!r} is not a number or a lo-hi range")
        lo, hi = match[1], match[2] or match[1]
        if int(hi) < int(lo):
            raise SpecError(f"host list {expr!r}: range {item!r} runs backwards")
        out += [str(n).zfill(len(lo)) for n in range(int(lo), int(hi) + 1)]
        if len(out) > MAX_HOSTS:
            raise SpecError(f"host list {expr!r} names more than {MAX_HOSTS} hosts")
    return out


def _expand_one(expr: str) -> list[str]:
    match = _BRACKET_RE.fullmatch(expr)
    if match is None:
        if any(c in expr for c in "[]"):
            raise SpecError(f"host list {expr!r}: unbalanced brackets")
        return [expr]
    prefix, body, rest = match[1], match[2], match[3]
    tails = _expand_one(rest) if rest else [""]
    return [f"{prefix}{n}{tail}" for n in _numbers(body, expr) for tail in tails]


def expand_hostlist(expr: str) -> tuple[str, ...]:
    """Every host name in ``expr``, in order, without duplicates."""
    names: dict[str, None] = {}
    for part in _split_top(expr):
        names.update(dict.fromkeys(_expand_one(part)))
    if not names:
        raise SpecError(f"host list {expr!r} names no host")
    return tuple(names)
