"""docs/spec.md is the rendered spec reference: regenerate it when a field changes."""

from __future__ import annotations

from clusterforge.report.spec_doc import render_spec_reference
from clusterforge.spec import ClusterSpec, NetworkSpec
from tests.conftest import REPO


def test_docs_spec_md_is_current():
    assert (REPO / "docs" / "spec.md").read_text() == render_spec_reference(), (
        "regenerate docs/spec.md with the command at its top"
    )


def test_every_field_is_documented():
    text = render_spec_reference()
    for model in (ClusterSpec, NetworkSpec):
        for name, field in model.model_fields.items():
            if isinstance(field.default, (NetworkSpec,)) or name in {
                "facility",
                "storage",
                "workload",
                "economics",
            }:
                continue  # sections are documented by their own fields
            assert field.description, name
    assert "| `num_gpus` | int | **required** |" in text
