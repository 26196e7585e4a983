"""Typed rows of the container catalog: GPU architectures with the oldest toolkit that
compiles for each, and the training container images that run on them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clusterforge.catalog.models import CatalogRow

__all__ = ["Container", "GpuArchitecture", "Toolkit"]

Toolkit = Literal["cuda", "rocm"]
"""The GPU compiler toolkit a container is built with: NVIDIA CUDA or AMD ROCm."""


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


class GpuArchitecture(CatalogRow):
    """GPUs that share an instruction set, and the oldest toolkit that compiles for it."""

    toolkit: Toolkit
    isa: str = Field(description="Instruction set the toolkit targets: sm_90, gfx942, ...")
    min_toolkit_version: str = Field(
        pattern=r"^\d+\.\d+$", description="Oldest toolkit release (major.minor) with this ISA"
    )
    gpus: list[str] = Field(min_length=1, description="Catalog GPU ids of this architecture")


class Container(CatalogRow):
    """A training container image: its toolkit, the architectures it runs on, its date."""

    image: str = Field(description="Registry reference with its tag")
    framework: Literal["megatron"] = Field(
        description="Training code the image carries; megatron = Megatron-LM with pretrain_gpt.py"
    )
    toolkit: Toolkit
    toolkit_version: str = Field(
        pattern=r"^\d+\.\d+$", description="Toolkit (major.minor) the image is built with"
    )
    architectures: list[str] = Field(min_length=1, description="GpuArchitecture ids it runs on")
    release_date: str = Field(pattern=r"^\d{4}-\d{2}$", description="Month of release, YYYY-MM")
    pretrain_gpt_path: str = Field(description="Absolute path of pretrain_gpt.py in the image")

    def compiles_for(self, arch: GpuArchitecture) -> bool:
        """True when the image's toolkit is the architecture's and new enough for its ISA."""
        return self.toolkit == arch.toolkit and _version_key(self.toolkit_version) >= _version_key(
            arch.min_toolkit_version
        )
