"""The spec form: generated from the spec models, every field documented, values round-trip,
and every bad value comes back at its field."""

from __future__ import annotations

import pytest

from clusterforge.spec import ClusterSpec, default_spec, load_spec
from clusterforge.web.form import FormErrors, form_sections, spec_from_form, unit_of
from tests.conftest import EXAMPLES


def _values(spec: ClusterSpec) -> tuple[dict[str, object], dict[str, bool]]:
    """What the browser would post for the form of ``spec`` (text inputs send strings)."""
    values: dict[str, object] = {}
    for section in form_sections(spec):
        for f in section.fields:
            keep = isinstance(f.value, bool | list) or f.value is None
            values[f.path] = f.value if keep else str(f.value)
    return values, {s.name: s.enabled for s in form_sections(spec) if s.optional}


def test_every_spec_field_is_in_the_form_with_its_description():
    paths = {f.path for s in form_sections(default_spec()) for f in s.fields}
    for name, info in ClusterSpec.model_fields.items():
        section = getattr(info.annotation, "model_fields", None)
        model = next((a for a in getattr(info.annotation, "__args__", ()) if hasattr(a, "model_fields")), None)  # fmt: skip
        fields = section or (model.model_fields if model else None)
        expected = {f"{name}.{n}" for n in fields} if fields else {name}
        assert expected <= paths
    assert all(f.description for s in form_sections(default_spec()) for f in s.fields)


@pytest.mark.parametrize(
    ("name", "unit"),
    [("max_rack_kw", "kW"), ("nic_gbit_per_s", "Gb/s"), ("checkpoint_interval_s", "s"),
     ("cloud_usd_per_gpu_hour", "$/GPU-hour"), ("rack_u", "U"), ("tokens_b", "billion")],
)  # fmt: skip
def test_units_come_from_the_field_names(name, unit):
    assert unit_of(name) == unit


@pytest.mark.parametrize("example", ["colo-512-h100.yaml", "seed-design-a.yaml", "lab-8-gpu.yaml"])
def test_the_form_of_a_spec_gives_back_the_same_spec(example):
    spec = load_spec(EXAMPLES / example)
    values, enabled = _values(spec)
    assert spec_from_form(values, enabled) == spec


def test_a_value_of_the_wrong_type_is_reported_at_its_field():
    values, enabled = _values(default_spec())
    values["facility.max_rack_kw"] = "fifteen"
    values["workload.tensor_parallel"] = "2.5"
    with pytest.raises(FormErrors) as info:
        spec_from_form(values, enabled)
    assert set(info.value.errors) == {"facility.max_rack_kw", "workload.tensor_parallel"}
    assert "not a number" in info.value.errors["facility.max_rack_kw"]


def test_an_out_of_range_value_is_reported_at_its_field():
    values, enabled = _values(default_spec())
    values["economics.utilization"] = "1.5"
    with pytest.raises(FormErrors) as info:
        spec_from_form(values, enabled)
    assert list(info.value.errors) == ["economics.utilization"]


def test_an_id_outside_the_catalog_is_refused_at_its_field_naming_the_choices():
    values, enabled = _values(default_spec())
    values["network.switch"] = "qm970"
    with pytest.raises(FormErrors) as info:
        spec_from_form(values, enabled)
    assert "qm9700" in info.value.errors["network.switch"]


def test_catalog_ids_are_offered_as_choices():
    fields = {f.path: f for s in form_sections(default_spec()) for f in s.fields}
    assert fields["node"].kind == "select" and "gb200-nvl72-tray" in fields["node"].choices
    assert fields["gpu"].kind == "select" and fields["gpu"].optional
    assert "qm9700" in fields["network.switch"].choices
    assert "llama3-70b" in fields["workload.model"].choices


def test_a_whole_spec_rule_is_reported_for_the_form():
    values, enabled = _values(default_spec())
    values["node"] = ""
    with pytest.raises(FormErrors) as info:
        spec_from_form(values, enabled)
    assert "give 'gpu'" in info.value.errors[""]


def test_turning_the_workload_off_plans_hardware_only():
    values, _ = _values(default_spec())
    assert spec_from_form(values, {"workload": False}).workload is None
