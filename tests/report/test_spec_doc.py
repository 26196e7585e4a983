"""docs/spec.md is the rendered spec reference: regenerate it when a field changes."""

from __future__ import annotations

from pydantic.fields import FieldInfo

from clusterforge.report.spec_doc import field_range, render_spec_reference, spec_sections
from clusterforge.spec import ClusterSpec
from tests.conftest import REPO


def test_docs_spec_md_is_current():
    assert (REPO / "docs" / "spec.md").read_text() == render_spec_reference(), (
        "regenerate docs/spec.md with the command at its top"
    )


def test_every_field_is_documented():
    text = render_spec_reference()
    sections = spec_sections()
    assert {title for title, _ in sections} >= {"network", "facility", "storage", "workload"}
    for title, model in sections:
        assert f"## {title}" in text
        for name, field in model.model_fields.items():
            if model is ClusterSpec and name in dict(sections):
                continue  # a section: documented by its own fields
            assert field.description, f"{title}.{name}"
            assert f"| `{name}` |" in text
    assert "| `num_gpus` | int | **required** | > 0 to 1,048,576 |" in text


def test_ranges_read_as_intervals():
    assert field_range(FieldInfo(annotation=int, ge=1, le=32)) == "1 to 32"
    assert field_range(FieldInfo(annotation=float, gt=0, le=1e6)) == "> 0 to 1,000,000"
    assert field_range(FieldInfo(annotation=float, ge=0, lt=1)) == "0 to 1 (excl.)"
    assert field_range(FieldInfo(annotation=float, ge=0)) == "at least 0"
    assert field_range(FieldInfo(annotation=str)) == ""
