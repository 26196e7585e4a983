"""Shared fixtures for the ops tests: recorded NVML fixtures and fake sysfs trees."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ops_fixtures import NVML_FIXTURES, build_fake_root, load_sysfs_fixture

from clusterforge.ops.nvml import RecordedNvml


@pytest.fixture(autouse=True)
def no_default_state_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """`clusterforge check` keeps no state in /var/lib unless a test passes --state-file."""
    monkeypatch.setenv("CLUSTERFORGE_CHECK_STATE_FILE", "none")


@pytest.fixture
def fake_root(tmp_path: Path) -> Callable[[str], Path]:
    """fake_root("ib-8x400-healthy.json") -> a directory to use as --sysfs-root."""

    def make(name: str) -> Path:
        return build_fake_root(
            tmp_path / f"root-{name.removesuffix('.json')}", load_sysfs_fixture(name)
        )

    return make


@pytest.fixture
def recorded() -> Iterator[Callable[[str], RecordedNvml]]:
    """recorded("h100-healthy.json") -> RecordedNvml; hanging calls are released at teardown."""
    made: list[RecordedNvml] = []

    def make(name: str) -> RecordedNvml:
        api = RecordedNvml.from_file(NVML_FIXTURES / name)
        made.append(api)
        return api

    yield make
    for api in made:
        api.release()
