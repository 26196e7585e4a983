"""The spec, written next to the generated files so that `clusterforge check --expect` on
each node compares the node against the same design."""

from __future__ import annotations

from clusterforge.design import Design
from clusterforge.generate.common import yaml_text

__all__ = ["SPEC_PATH", "spec_yaml"]

# Where the Slurm hooks and the Kubernetes agent expect the spec on a node.
SPEC_PATH = "/etc/clusterforge/spec.yaml"


def spec_yaml(design: Design) -> str:
    """The design's spec as YAML that :func:`clusterforge.spec.load_spec` reads back."""
    data = design.spec.model_dump(mode="json", exclude_none=True)
    header = f"# Spec of cluster {design.spec.name}, written by `clusterforge generate`.\n"
    return header + yaml_text(data)
