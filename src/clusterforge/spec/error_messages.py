"""pydantic validation errors as one line: ``field.path (got value): message; ...``.

The line is for a terminal: values are cut to a short excerpt (a bad value may be a huge
list), keys with control characters are shown escaped, at most :data:`MAX_SHOWN_ERRORS`
problems are listed, and an unknown key gets the section's close matches.
"""

from __future__ import annotations

import types
import typing
from typing import Any

import annotated_types as at
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from clusterforge.errors import did_you_mean
from clusterforge.spec.safe_yaml import excerpt

__all__ = ["MAX_SHOWN_ERRORS", "field_range", "format_validation_error"]

MAX_SHOWN_ERRORS = 5  # problems listed in one message; the rest are counted


def format_validation_error(exc: ValidationError, source: str, root: type[BaseModel]) -> str:
    """One clause per problem of ``exc`` (raised validating ``root``), prefixed by ``source``."""
    errors = exc.errors()
    parts = [_format_one(err, root) for err in errors[:MAX_SHOWN_ERRORS]]
    if len(errors) > MAX_SHOWN_ERRORS:
        parts.append(f"and {len(errors) - MAX_SHOWN_ERRORS} more problems")
    return f"{source}: " + "; ".join(parts)


def _format_one(err: Any, root: type[BaseModel]) -> str:
    loc = ".".join(_shown_key(p) for p in err["loc"])
    value = err.get("input")
    shown = "" if isinstance(value, dict) else f" (got {excerpt(value)})"
    msg = err["msg"].removeprefix("Value error, ")
    match err["type"]:
        case "extra_forbidden":
            fields = _known_fields(root, err["loc"][:-1])
            msg = f"unknown field{did_you_mean(str(err['loc'][-1])[:40], fields)}"
            shown = ""
        case "model_type" | "dict_type" | "model_attributes_type":
            msg = "must be a section: a mapping of field: value lines"
        case "finite_number":
            msg = "must be a finite number (not .inf or .nan)"
        case "greater_than" | "greater_than_equal" | "less_than" | "less_than_equal":
            field = _field_at(root, err["loc"])
            if field is not None and field_range(field):
                msg = f"out of range ({field_range(field)})"
    return f"{loc or '(top level)'}{shown}: {msg}"


def _shown_key(part: object) -> str:
    """A field path element as text: a plain name as is, anything else (a number, a key with
    control characters or quotes) as a short ``repr``."""
    if isinstance(part, str) and part.isprintable() and len(part) <= 40:
        return part
    return excerpt(part, 40)


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a section field: ``NetworkSpec`` or ``WorkloadSpec | None``."""
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else ()
    for candidate in (annotation, *args):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _field_at(root: type[BaseModel], loc: tuple[Any, ...]) -> FieldInfo | None:
    """The field at ``loc`` (a section path, then a field name), or None."""
    model: type[BaseModel] | None = root
    for part in loc[:-1]:
        field = model.model_fields.get(str(part)) if model else None
        model = _section_model(field.annotation) if field else None
    return model.model_fields.get(str(loc[-1])) if model and loc else None


def _known_fields(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names of the section at ``loc`` (empty when ``loc`` is not a section)."""
    model: type[BaseModel] | None = root
    for part in loc:
        field = model.model_fields.get(str(part)) if model else None
        model = _section_model(field.annotation) if field else None
    return list(model.model_fields) if model else []


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) <= 1e15:
        value = int(value)
    if isinstance(value, int) and abs(value) >= 10_000:
        return f"{value:,}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def field_range(field: FieldInfo) -> str:
    """The accepted range of a numeric field, e.g. ``1 to 32`` or ``> 0 to 1,000,000``; "" when
    the field has no bounds (text, choices, flags)."""
    low = high = ""
    for bound in field.metadata:
        match bound:
            case at.Ge(ge=v):
                low = _number(v)
            case at.Gt(gt=v):
                low = f"> {_number(v)}"
            case at.Le(le=v):
                high = _number(v)
            case at.Lt(lt=v):
                high = f"< {_number(v)}"
    if low and high:
        return f"{low} to {high.removeprefix('< ')}" + (" (excl.)" if high[0] == "<" else "")
    if low:
        return f"at least {low}"
    return f"at most {high}" if high else ""
