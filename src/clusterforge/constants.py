"""Model constants as data: every constant a value with its unit, a tag and a source.

The models' constants live in TOML files beside the code that uses them (package data, read
once). A table with a ``tag`` key is one constant::

    [ramp.bytes]
    value = 11534336                 # a number, an array, or a table of arrays
    unit = "bytes"
    tag = "fitted"                   # datasheet | measured | derived | fitted
    source = "what the figure is and where it comes from"
    fitted_on = ["h200-8-nvls-1m"]   # fitted only: ids of the rows it was fitted on

``ratio = [a, b]`` may stand for ``value`` when a constant is a quotient of published figures
(370 GB/s measured on a 450 GB/s link): the value is ``a / b``, computed here, so the file
keeps the figures a reader checks against the source.  Any other table groups constants; a
constant's name is its dotted path (``ramp.bytes``, ``scaleup_payload_share.nvlink5.ring``).
A file that also holds other data (per-GPU rows) keeps its constants under one table, named
when it is read.

Tags say how a figure was obtained: ``datasheet`` (published by the vendor: a datasheet, the
documentation or the source code of the library modelled), ``measured`` (a published
measurement, used as it is), ``derived`` (computed from other figures by the rule its
source states) and ``fitted`` (chosen so that the model reproduces the rows named in
``fitted_on``; the ids are those of the calibration rows under ``validation/``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal, get_args

__all__ = ["TAGS", "Constant", "ConstantTable", "Tag", "parse_constants", "read_constants"]

Tag = Literal["datasheet", "measured", "derived", "fitted"]
TAGS: tuple[Tag, ...] = get_args(Tag)
_KEYS = frozenset({"value", "ratio", "unit", "tag", "source", "fitted_on"})

Value = float | int | list[float] | dict[str, object]


@dataclass(frozen=True)
class Constant:
    """One constant: its value (number, array or table of arrays), unit and provenance."""

    name: str
    value: Value
    unit: str
    tag: Tag
    source: str
    fitted_on: tuple[str, ...] = ()


def _number(name: str, raw: object) -> float | int:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ValueError(f"constant {name}: expected a number, got {raw!r}")
    return raw


def _constant(name: str, raw: dict[str, object]) -> Constant:
    unknown = set(raw) - _KEYS
    if unknown:
        raise ValueError(f"constant {name}: unknown keys {sorted(unknown)}")
    if ("value" in raw) == ("ratio" in raw):
        raise ValueError(f"constant {name}: give exactly one of value and ratio")
    if "ratio" in raw:
        ratio = raw["ratio"]
        if not isinstance(ratio, list) or len(ratio) != 2:
            raise ValueError(f"constant {name}: ratio is [numerator, denominator]")
        value: Value = _number(name, ratio[0]) / _number(name, ratio[1])
    else:
        value = raw["value"]  # type: ignore[assignment]
    tag, unit, source = raw.get("tag"), raw.get("unit"), raw.get("source")
    if tag not in TAGS:
        raise ValueError(f"constant {name}: tag {tag!r} is not one of {', '.join(TAGS)}")
    if not isinstance(unit, str) or not isinstance(source, str) or not source.strip():
        raise ValueError(f"constant {name}: needs a unit and a source")
    fitted_on = raw.get("fitted_on", [])
    if not isinstance(fitted_on, list) or (tag == "fitted") != bool(fitted_on):
        raise ValueError(f"constant {name}: fitted_on lists the rows of a fitted constant only")
    return Constant(name, value, unit, tag, source, tuple(str(r) for r in fitted_on))


def _walk(prefix: str, table: dict[str, object]) -> Iterator[Constant]:
    for key, raw in table.items():
        name = f"{prefix}{key}"
        if not isinstance(raw, dict):
            raise ValueError(f"constant {name}: expected a table with value, unit, tag, source")
        if "tag" in raw:
            yield _constant(name, raw)
        else:
            yield from _walk(f"{name}.", raw)


@dataclass(frozen=True)
class ConstantTable(Mapping[str, Constant]):
    """The constants of one file by dotted name, with typed accessors for their values."""

    filename: str
    constants: dict[str, Constant]

    def __getitem__(self, name: str) -> Constant:
        try:
            return self.constants[name]
        except KeyError:
            raise KeyError(f"{self.filename} has no constant {name!r}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.constants)

    def __len__(self) -> int:
        return len(self.constants)

    def number(self, name: str) -> float:
        """A scalar constant as a float."""
        return float(_number(name, self[name].value))

    def integer(self, name: str) -> int:
        """A scalar constant that must be a whole number (a count, a size in bytes)."""
        value = self[name].value
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"constant {name}: expected an integer, got {value!r}")
        return value

    def numbers(self, name: str) -> tuple[float, ...]:
        """An array constant as a tuple of floats."""
        return _numbers(name, self[name].value)

    def rows(self, name: str) -> dict[str, tuple[float, ...]]:
        """A table of arrays (``{key: [numbers]}``) as tuples of floats by key."""
        value = self[name].value
        if not isinstance(value, dict):
            raise ValueError(f"constant {name}: expected a table of arrays")
        return {key: _numbers(f"{name}.{key}", row) for key, row in value.items()}

    def tables(self, name: str) -> dict[str, dict[str, tuple[float, ...]]]:
        """A table of tables of arrays, as nested dicts of tuples of floats."""
        value = self[name].value
        if not isinstance(value, dict):
            raise ValueError(f"constant {name}: expected a table of tables")
        out: dict[str, dict[str, tuple[float, ...]]] = {}
        for key, table in value.items():
            if not isinstance(table, dict):
                raise ValueError(f"constant {name}.{key}: expected a table of arrays")
            out[key] = {k: _numbers(f"{name}.{key}.{k}", row) for k, row in table.items()}
        return out

    def group(self, prefix: str) -> dict[str, float]:
        """Scalar constants under ``prefix`` by the rest of their name (``a.b`` for deeper)."""
        start = f"{prefix}."
        return {
            name.removeprefix(start): self.number(name)
            for name in self.constants
            if name.startswith(start)
        }


def _numbers(name: str, raw: object) -> tuple[float, ...]:
    if not isinstance(raw, list):
        raise ValueError(f"constant {name}: expected an array of numbers, got {raw!r}")
    return tuple(float(_number(name, x)) for x in raw)


def parse_constants(text: str, filename: str, section: str | None = None) -> ConstantTable:
    """The constants of one TOML text, or of its table ``section`` when the file also holds
    other data; ``ValueError`` names the first malformed constant."""
    raw = tomllib.loads(text)
    if section is not None:
        raw = raw[section]
    constants = {c.name: c for c in _walk("", raw)}
    return ConstantTable(filename, constants)


@cache
def read_constants(package: str, filename: str, section: str | None = None) -> ConstantTable:
    """The constants of ``data/<filename>`` in ``package`` (read once; they are immutable)."""
    text = resources.files(package).joinpath("data", filename).read_text("utf-8")
    return parse_constants(text, filename, section)
