"""Every problem of a form at once: each at its field, each with the change that fixes it."""

from __future__ import annotations

from clusterforge.spec import default_spec
from clusterforge.web.check import check_form
from clusterforge.web.form import form_sections


def _values(**changes: object) -> tuple[dict[str, object], dict[str, bool]]:
    sections = form_sections(default_spec())
    values = {f.path: "" if f.value is None else f.value for s in sections for f in s.fields}
    values.update(changes)
    return values, {s.name: s.enabled for s in sections}


def test_a_valid_form_plans():
    check = check_form(*_values())
    assert check.ok and check.design is not None and check.errors == {}


def test_a_batch_that_does_not_split_is_shown_at_the_batch_with_the_nearest_fix():
    check = check_form(*_values(num_gpus="1024", **{"workload.global_batch": "1000"}))
    assert not check.ok
    assert "global_batch = 1000" in check.errors["workload.global_batch"]
    assert check.fixes["workload.global_batch"] == {"workload.global_batch": 992}  # 31 x DP 32


def test_the_errors_behind_a_fixed_one_are_found_and_the_form_is_not_changed():
    values, enabled = _values(node="gb200-nvl72-tray")
    check = check_form(values, enabled)
    assert list(check.errors) == ["facility.cooling_available", "facility.max_rack_kw"]
    assert check.spec is None and check.design is None
    assert values["facility.max_rack_kw"] == 15.0  # the user's form is untouched


def test_an_error_without_a_fix_stops_the_search():
    check = check_form(*_values(num_gpus="lots"))
    assert check.errors == {"num_gpus": "'lots' is not a whole number"} and check.fixes == {}
