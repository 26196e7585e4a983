"""Shared fixtures for the performance-model tests (no network simulator needed)."""

from __future__ import annotations

import pytest
from fabric_double import IdealFabricComm

from clusterforge.catalog import load_catalog


@pytest.fixture
def h100_comm() -> IdealFabricComm:
    return IdealFabricComm.for_node("dgx-h100")


@pytest.fixture
def h100():
    return load_catalog().gpus["h100-sxm"]


@pytest.fixture
def models():
    return load_catalog().models
