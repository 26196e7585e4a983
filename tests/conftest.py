"""Shared fixtures: specs built from small dicts, the catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterforge.catalog import Catalog, load_catalog
from clusterforge.spec import ClusterSpec, parse_spec

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


def make_spec(**fields: Any) -> ClusterSpec:
    """A spec from keyword fields; nested sections as dicts. Defaults to 64 x H100."""
    data: dict[str, Any] = {"num_gpus": 64, "node": "dgx-h100"}
    data.update(fields)
    return parse_spec(data, source="test")
