"""Read a YAML spec file safely: bounded size, bounded nesting, bounded alias expansion,
no duplicate keys.

A spec is a few kilobytes of plain mappings, so anything far beyond that is refused before
it can cost time or memory:

* the file is read through a size cap (``/dev/zero`` or a multi-gigabyte file stops at
  :data:`MAX_SPEC_BYTES`);
* nesting deeper than :data:`MAX_DEPTH` is refused while reading the event stream, before
  PyYAML's recursive composer could overflow the Python stack;
* anchors and aliases are expanded in a dry count first: a "billion laughs" document
  (YAML 1.2.2 §3.2.2.2 allows an alias to reuse any anchored node, so ten nested aliases of
  ten make 10^10 values) is refused when its expanded size passes :data:`MAX_EXPANDED_NODES`;
* a key given twice in one mapping is an error naming both lines (YAML 1.2.2 §3.2.1.1: the
  keys of a mapping are unique; PyYAML silently keeps the last one).

Only ``yaml.SafeLoader`` (or its libyaml twin) constructs values: no Python objects.
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any

import yaml

from clusterforge.errors import SpecError
from clusterforge.userfiles import read_capped

__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_NODES",
    "MAX_SPEC_BYTES",
    "excerpt",
    "load_yaml_text",
    "read_spec_text",
]

MAX_SPEC_BYTES = 256 * 1024  # the largest shipped example is under 2 KiB
MAX_DEPTH = 32  # a spec nests four levels (workload.model.<dimension>)
MAX_EXPANDED_NODES = 20_000  # values after alias expansion; a full spec has about 150
MAX_NUMBER_CHARS = 40  # the longest number a spec needs (a token count) has about 15 digits

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """SafeLoader that refuses a mapping key given twice, naming both lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *base`` merges, see below
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = seen.setdefault(key, line)
            except TypeError:  # an unhashable key (a list or a mapping used as a key)
                raise SpecError(
                    f"line {line}: a key must be a plain name, not a list or a mapping"
                ) from None
            if first != line:
                raise SpecError(
                    f"key {excerpt(key)} is given twice (lines {first} and {line}); "
                    "keep one of the two"
                )
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer, refused when its text is longer than any spec value needs (Python
        will not even convert one of more than 4,300 digits)."""
        _check_number_length(node)
        return int(super().construct_yaml_int(node))

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        _check_number_length(node)
        return float(super().construct_yaml_float(node))


def _check_number_length(node: yaml.ScalarNode) -> None:
    text = str(node.value)
    if len(text) > MAX_NUMBER_CHARS:
        raise SpecError(
            f"line {node.start_mark.line + 1}: a number of {len(text):,} characters; no spec "
            f"value needs more than {MAX_NUMBER_CHARS} (quote it if it is meant as a name)"
        )


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _UniqueKeyLoader.construct_yaml_int)
_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:float", _UniqueKeyLoader.construct_yaml_float)


_SHORT = reprlib.Repr()  # Python 3.11's Repr takes no arguments: set the limits
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxtuple = 2, 4, 4, 4
_SHORT.maxstring = _SHORT.maxother = 60


def excerpt(value: object, limit: int = 60) -> str:
    """A short ``repr`` of ``value`` (at most ``limit`` characters, nested containers cut
    before they are walked), so a bad value never floods a message."""
    text = _SHORT.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_spec_text(path: Path) -> str:
    """The text of a spec file, read through :data:`MAX_SPEC_BYTES`; OS errors become
    :class:`SpecError` naming the file."""
    shown = excerpt(str(path), 120)
    raw = read_capped(path, MAX_SPEC_BYTES, "spec file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"spec file {shown} is not UTF-8 text (byte {exc.start}); give a YAML file"
        ) from None


def _check_events(text: str) -> None:
    """Refuse deep nesting and alias bombs from the event stream (iterative, no recursion)."""
    depth, total = 0, 0
    open_counts: list[tuple[str | None, int]] = []  # (anchor, total at start) per open node
    sizes: dict[str, int] = {}  # anchor -> expanded node count
    for event in yaml.parse(text, Loader=_BaseLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else 0
                raise SpecError(f"line {line}: YAML nested deeper than {MAX_DEPTH} levels")
            open_counts.append((event.anchor, total))
            total += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            anchor, start = open_counts.pop()
            if anchor is not None:
                sizes[anchor] = total - start
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in open_counts):
                raise SpecError(f"alias *{event.anchor} refers to itself (a recursive value)")
            total += sizes.get(event.anchor or "", 1)  # PyYAML reports an undefined alias
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        if total > MAX_EXPANDED_NODES:
            raise SpecError(
                f"the YAML expands to more than {MAX_EXPANDED_NODES:,} values (anchors and "
                "aliases repeated); a spec has a few hundred"
            )


def load_yaml_text(text: str, source: str) -> Any:
    """Parse spec YAML with every limit of this module; errors name ``source`` and the line."""
    try:
        _check_events(text)
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except SpecError as exc:
        raise SpecError(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{source}: malformed YAML{where}: {excerpt(problem, 120)}") from None
