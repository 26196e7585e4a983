"""The spec as a web form, generated from the pydantic spec models, and back.

Every leaf field of :class:`~clusterforge.spec.ClusterSpec` becomes one input with its
description, unit (read from the field name's suffix, the naming rule of the spec models) and
accepted range; submitted values are converted by the field's type and validated by
:func:`~clusterforge.spec.parse_spec`, and every problem is returned at its field path.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from clusterforge.catalog import load_catalog
from clusterforge.errors import ClusterforgeError
from clusterforge.spec import ClusterSpec, parse_spec
from clusterforge.spec.error_messages import field_range

__all__ = ["FieldKind", "FormErrors", "FormField", "FormSection", "form_sections", "spec_from_form"]

FieldKind = Literal["number", "integer", "text", "select", "checkbox", "multi"]
SOURCE = "form"
# Unit of a field from its name's suffix, longest suffix first.
UNIT_SUFFIXES = (
    ("_usd_per_gpu_hour", "$/GPU-hour"), ("_usd_per_kw_month", "$/kW-month"),
    ("_usd_per_kwh", "$/kWh"), ("_usd_per_mw", "$/MW"), ("_usd_per_year", "$/year"),
    ("_mbyte_per_s_per_gpu", "MB/s per GPU"), ("_gbyte_per_s", "GB/s"),
    ("_gbit_per_s", "Gb/s"), ("_fraction_per_year", "fraction per year"),
    ("_fraction", "fraction"), ("_tbyte", "TB"), ("_days", "days"), ("_years", "years"),
    ("_kw", "kW"), ("_m", "m"), ("_v", "V"), ("_a", "A"), ("_s", "s"), ("_b", "billion"),
)  # fmt: skip
# Fields whose value is a catalog id: offered as a choice of the catalog table's ids.
CATALOG_FIELDS = {"gpu": "gpus", "node": "nodes", "network.switch": "switches",
                  "storage.block": "storage", "workload.model": "models"}  # fmt: skip
UNIT_NAMES = {"years": "years", "rack_u": "U", "num_gpus": "GPUs", "utilization": "fraction",
              "pue": "ratio", "num_staff": "people"}  # fmt: skip


class FormErrors(ClusterforgeError):
    """The submitted form is not a valid spec: messages by field path ('' = the whole form),
    and the change that would remove them where one is known (``fix``)."""

    def __init__(self, errors: dict[str, str], fix: dict[str, Any] | None = None) -> None:
        super().__init__("; ".join(f"{k or 'spec'}: {v}" for k, v in errors.items()), fix=fix)
        self.errors = errors


@dataclass(frozen=True)
class FormField:
    """One input: its dotted path in the spec, how it is edited and what it holds now."""

    path: str
    label: str
    kind: FieldKind
    description: str
    unit: str
    accepted: str
    value: Any
    choices: tuple[Any, ...] = ()
    optional: bool = False


@dataclass(frozen=True)
class FormSection:
    """The fields of one spec section ('' for the top level); ``enabled`` is False for an
    optional section the spec leaves out (the workload)."""

    name: str
    description: str
    fields: tuple[FormField, ...]
    optional: bool
    enabled: bool


def unit_of(name: str) -> str:
    if name in UNIT_NAMES:
        return UNIT_NAMES[name]
    return next((unit for suffix, unit in UNIT_SUFFIXES if name.endswith(suffix)), "")


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The section model of a field annotated ``Section`` or ``Section | None``; None for a
    value field (``str | ModelArch`` included: a value that may also be given inline)."""
    args = [a for a in (typing.get_args(annotation) or (annotation,)) if a is not type(None)]
    if len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return args[0]
    return None


def _kind(annotation: Any) -> tuple[FieldKind, tuple[Any, ...], bool]:
    """Input kind, choices and whether None is allowed, from a field's annotation."""
    args = typing.get_args(annotation)
    optional = typing.get_origin(annotation) in (typing.Union, types.UnionType) and (
        type(None) in args
    )
    inner = [a for a in args if a is not type(None)] if optional else [annotation]
    base = inner[0]
    if typing.get_origin(base) is Literal:
        return "select", typing.get_args(base), optional
    if typing.get_origin(base) is list:
        item = typing.get_args(base)[0]
        if typing.get_origin(item) is Literal:
            return "multi", typing.get_args(item), optional
        return "text", (), optional
    if base is bool:
        return ("select", (True, False), True) if optional else ("checkbox", (), False)
    if base is int:
        return "integer", (), optional
    if base is float:
        return "number", (), optional
    return "text", (), optional


def _shown(value: Any) -> Any:
    if isinstance(value, list) and value and not isinstance(value[0], str):
        return ", ".join(str(v) for v in value)
    if isinstance(value, BaseModel):
        return getattr(value, "id", "")  # an inline model architecture shows its id
    return value


def _fields(model: type[BaseModel], values: BaseModel | None, prefix: str) -> list[FormField]:
    out = []
    for name, info in model.model_fields.items():
        if _section_model(info.annotation) is not None:
            continue
        kind, choices, optional = _kind(info.annotation)
        if prefix + name in CATALOG_FIELDS:
            kind, choices = "select", _catalog_ids(CATALOG_FIELDS[prefix + name])
        value = getattr(values, name) if values is not None else _default(info)
        out.append(
            FormField(
                path=prefix + name, label=name.replace("_", " "), kind=kind,
                description=info.description or "", unit=unit_of(name),
                accepted=field_range(info), value=_shown(value), choices=choices,
                optional=optional,
            )
        )  # fmt: skip
    return out


def _catalog_ids(table: str) -> tuple[str, ...]:
    return tuple(getattr(load_catalog(), table).ids())


def _default(info: FieldInfo) -> Any:
    return None if info.is_required() else info.get_default(call_default_factory=True)


def form_sections(spec: ClusterSpec | None) -> list[FormSection]:
    """The form of ``spec`` (None: every field at its default): its top-level fields, then
    one section per spec section."""
    sections = [FormSection("", "The cluster", tuple(_fields(ClusterSpec, spec, "")), False, True)]
    for name, info in ClusterSpec.model_fields.items():
        model = _section_model(info.annotation)
        if model is None:
            continue
        current = getattr(spec, name) if spec is not None else None
        doc = (info.description or model.__doc__ or "").strip().splitlines()[0]
        optional = not info.is_required() and info.default is None
        fields = tuple(_fields(model, current, name + "."))
        sections.append(FormSection(name, doc, fields, optional, current is not None))
    return sections


def _convert(field: FormField, raw: Any) -> Any:
    """A submitted value as the field's type; raises ValueError with a message for people."""
    match field.kind:
        case "checkbox":
            return bool(raw)
        case "integer":
            return _parsed(int, raw, "a whole number")
        case "number":
            return _parsed(float, raw, "a number")
        case "select" | "multi":
            picked = [_choice(field, r) for r in _as_list(raw)]
            return picked if field.kind == "multi" else picked[0]
        case "text":
            if field.path == "workload.pipeline_layers":
                return [int(v) for v in re.split(r"[,\s]+", str(raw).strip()) if v]
            return str(raw)
    typing.assert_never(field.kind)


def _parsed(kind: type[int] | type[float], raw: Any, what: str) -> int | float:
    try:
        return kind(str(raw).strip())
    except ValueError:
        raise ValueError(f"{str(raw)[:40]!r} is not {what}") from None


def _as_list(raw: Any) -> list[Any]:
    return list(raw) if isinstance(raw, list | tuple) else [raw]


def _choice(field: FormField, raw: Any) -> Any:
    """The choice whose text is ``raw`` (case-insensitive): '3' -> 3, 'true' -> True."""
    by_text = {str(c).lower(): c for c in field.choices}
    if str(raw).lower() not in by_text:
        raise ValueError(f"{raw!r} is not one of {', '.join(str(c) for c in field.choices)}")
    return by_text[str(raw).lower()]


def _is_blank(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def spec_data(values: dict[str, Any], enabled: dict[str, bool]) -> dict[str, Any]:
    """The spec mapping of submitted ``values`` (path -> value); blanks take defaults.
    Raises :class:`FormErrors` for values that are not of their field's type."""
    data: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for section in form_sections(None):
        if section.optional and not enabled.get(section.name, False):
            continue
        target = data.setdefault(section.name, {}) if section.name else data
        for field in section.fields:
            raw = values.get(field.path)
            if field.kind != "checkbox" and _is_blank(raw):
                continue
            try:
                target[field.path.rsplit(".", 1)[-1]] = _convert(field, raw)
            except ValueError as exc:
                errors[field.path] = str(exc)
    if errors:
        raise FormErrors(errors)
    return data


def spec_from_form(values: dict[str, Any], enabled: dict[str, bool]) -> ClusterSpec:
    """Validate a submitted form into a spec; :class:`FormErrors` names each bad field."""
    data = spec_data(values, enabled)
    try:
        ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise FormErrors(validation_errors(exc)) from None
    try:
        return parse_spec(data, source=SOURCE)
    except ClusterforgeError as exc:  # catalog ids, divisibility: "form: network.switch: ..."
        match = re.match(rf"{SOURCE}: ([a-z_.]+): (.*)", str(exc), flags=re.S)
        errors = {match[1]: match[2]} if match else {"": str(exc)}
        raise FormErrors(errors, fix=exc.fix) from None


def validation_errors(exc: ValidationError) -> dict[str, str]:
    """pydantic's errors by dotted field path ('' for whole-spec rules)."""
    out: dict[str, str] = {}
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"] if isinstance(p, str))
        message = str(err["msg"]).removeprefix("Value error, ")
        out[path] = f"{out[path]}; {message}" if path in out else message
    return out
