"""containers.toml: every catalog GPU has an architecture, every NVIDIA GPU a Megatron-LM
container whose CUDA compiles for it, and the loader refuses a row that claims otherwise."""

from __future__ import annotations

import pytest

from clusterforge.catalog import gpu_architecture, load_catalog, training_container
from clusterforge.catalog.containers import Container
from clusterforge.errors import CatalogError


@pytest.mark.parametrize("gpu_id", load_catalog().gpus.ids())
def test_every_gpu_has_an_architecture(gpu_id: str) -> None:
    arch = gpu_architecture(load_catalog(), gpu_id)
    assert gpu_id in arch.gpus


@pytest.mark.parametrize(
    "gpu_id", [g.id for g in load_catalog().gpus if g.vendor == "nvidia"], ids=str
)
def test_every_nvidia_gpu_gets_a_container_that_compiles_for_it(gpu_id: str) -> None:
    catalog = load_catalog()
    container = training_container(catalog, gpu_id)
    assert container.compiles_for(gpu_architecture(catalog, gpu_id))
    assert container.pretrain_gpt_path.endswith("/pretrain_gpt.py")


def test_blackwell_never_gets_a_container_older_than_cuda_12_8() -> None:
    catalog = load_catalog()
    for gpu_id in ("b200", "gb200"):
        version = training_container(catalog, gpu_id).toolkit_version
        assert tuple(int(p) for p in version.split(".")) >= (12, 8)


def test_the_newest_fitting_container_wins() -> None:
    catalog = load_catalog()
    hopper = [c for c in catalog.containers if "hopper" in c.architectures]
    newest = max(hopper, key=lambda c: c.release_date)
    assert training_container(catalog, "h100-sxm") == newest


def test_a_container_too_old_for_its_architecture_is_refused() -> None:
    catalog = load_catalog()
    old = Container.model_validate(
        {
            **catalog.containers["nemo-24.05"].model_dump(),
            "architectures": ["blackwell"],
        }
    )
    assert not old.compiles_for(catalog.architectures["blackwell"])


def test_a_gpu_without_a_container_is_a_catalog_error() -> None:
    with pytest.raises(CatalogError, match="no megatron container runs on 'mi300x'"):
        training_container(load_catalog(), "mi300x")
