"""The spec reference (docs/spec.md), rendered from the pydantic models so it cannot drift."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from clusterforge.spec import (
    ClusterSpec,
    EconomicsSpec,
    FacilitySpec,
    NetworkSpec,
    StorageSpec,
    WorkloadSpec,
)

__all__ = ["render_spec_reference"]

SECTIONS: list[tuple[str, type[BaseModel]]] = [
    ("top level", ClusterSpec),
    ("network", NetworkSpec),
    ("facility", FacilitySpec),
    ("storage", StorageSpec),
    ("workload", WorkloadSpec),
    ("economics", EconomicsSpec),
]


def _default(field: Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "**required**"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        return "(section)"
    return f"`{value}`" if value is not None else "derived"


def _type(field: Any) -> str:
    text = str(field.annotation).replace("typing.", "").replace("clusterforge.catalog.models.", "")
    return text.replace("<class '", "").replace("'>", "").replace("|", "\\|")


def render_spec_reference() -> str:
    lines = [
        "# Spec reference",
        "",
        "Generated from `src/clusterforge/spec.py` by "
        "`python -c 'from clusterforge.report.spec_doc import render_spec_reference as r; "
        'print(r(), end="")\' > docs/spec.md` (a test keeps it current).',
        "Units are in the field names and descriptions; only `num_gpus` and `gpu` or `node` are required.",
    ]
    for title, model in SECTIONS:
        lines += [
            "",
            f"## {title}",
            "",
            "| field | type | default | meaning |",
            "| --- | --- | --- | --- |",
        ]
        for name, field in model.model_fields.items():
            if isinstance(field.default, BaseModel):
                continue
            lines.append(
                f"| `{name}` | {_type(field)} | {_default(field)} | {field.description or ''} |"
            )
    return "\n".join(lines) + "\n"
