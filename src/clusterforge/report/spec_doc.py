"""The spec reference (docs/spec.md), rendered from the pydantic models so it cannot drift.

Each section of :class:`~clusterforge.spec.ClusterSpec` gets a table of its fields with the
type, the default, the accepted range (from the field's bounds) and the meaning.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from clusterforge.spec import ClusterSpec
from clusterforge.spec.error_messages import field_range

__all__ = ["field_range", "render_spec_reference", "spec_sections"]

COMMAND = (
    "`python -c 'from clusterforge.report.spec_doc import render_spec_reference as r; "
    'print(r(), end="")\' > docs/spec.md`'
)


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a section field (``NetworkSpec`` or ``WorkloadSpec | None``), else None."""
    candidates = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else ()
    for candidate in (annotation, *candidates):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def spec_sections() -> list[tuple[str, type[BaseModel]]]:
    """(title, model) for the top level and every section of the spec, in field order."""
    sections: list[tuple[str, type[BaseModel]]] = [("top level", ClusterSpec)]
    for name, field in ClusterSpec.model_fields.items():
        model = _section_model(field.annotation)
        if model is not None:
            sections.append((name, model))
    return sections


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "**required**"
    factory: Any = field.default_factory
    value = factory() if factory is not None else field.default
    if isinstance(value, BaseModel):
        return "(section)"
    return f"`{value}`" if value is not None else "derived"


def _type(field: FieldInfo) -> str:
    text = re.sub(r"clusterforge\.catalog\.\w+\.", "", str(field.annotation).replace("typing.", ""))
    text = text.replace("clusterforge.spec.", "").replace("Annotated[int, FieldInfo(", "int(")
    return text.replace("<class '", "").replace("'>", "").replace("|", "\\|")


def _rows(model: type[BaseModel]) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        if _section_model(field.annotation) is not None and model is ClusterSpec:
            continue  # documented in its own section
        meaning = (field.description or "").replace("|", "\\|")
        rows.append(
            f"| `{name}` | {_type(field)} | {_default(field)} | {field_range(field)} | {meaning} |"
        )
    return rows


def render_spec_reference() -> str:
    lines = [
        "# Spec reference",
        "",
        f"Generated from `src/clusterforge/spec/` by {COMMAND} (a test keeps it current).",
        "Units are in the field names and descriptions; only `num_gpus` and `gpu` or `node` "
        "are required. A value outside its range is refused with a one-line error; a section "
        "left empty (every line commented out) takes its defaults.",
    ]
    for title, model in spec_sections():
        lines += ["", f"## {title}", ""]
        field = ClusterSpec.model_fields.get(title)
        if field is not None and field.description:
            lines += [field.description + ".", ""]
        lines += ["| field | type | default | range | meaning |", "| --- | --- | --- | --- | --- |"]
        lines += _rows(model)
    return "\n".join(lines) + "\n"
