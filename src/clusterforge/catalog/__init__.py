"""The hardware catalog: GPUs, nodes, CPUs, NICs, switches, link media, storage, facility items,
and the training containers that run on each GPU architecture.

Facts live in TOML files under ``data/`` (documented in ``README.md``), each row with its
source. :func:`load_catalog` reads them once; lookups raise :class:`CatalogError` with
close-match suggestions.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from clusterforge.catalog.containers import Container, GpuArchitecture
from clusterforge.catalog.model_arch import LrSchedule, ModelArch
from clusterforge.catalog.models import (
    Cpu,
    FacilityItem,
    FormFactor,
    Gpu,
    HostLink,
    Node,
    PowerEntry,
    PowerPath,
    Scaleup,
    StorageBlock,
)
from clusterforge.catalog.network import Cage, Medium, Nic, Part, PortMode, Switch
from clusterforge.errors import CatalogError, did_you_mean

__all__ = [
    "Cage",
    "Catalog",
    "Container",
    "Cpu",
    "FacilityItem",
    "FormFactor",
    "Gpu",
    "GpuArchitecture",
    "HostLink",
    "LrSchedule",
    "Medium",
    "ModelArch",
    "Nic",
    "Node",
    "Part",
    "PortMode",
    "PowerEntry",
    "PowerPath",
    "Scaleup",
    "StorageBlock",
    "Switch",
    "Table",
    "gpu_architecture",
    "host_dram_gbyte_per_s",
    "load_catalog",
    "training_container",
]

RowT = TypeVar("RowT", bound=BaseModel)


@dataclass(frozen=True)
class Table(Generic[RowT]):
    """Rows of one catalog file, by id."""

    kind: str
    rows: dict[str, RowT]

    def __getitem__(self, row_id: str) -> RowT:
        try:
            return self.rows[row_id]
        except KeyError:
            hint = did_you_mean(row_id, self.rows)
            known = ", ".join(sorted(self.rows))
            raise CatalogError(
                f"unknown {self.kind} {row_id!r}{hint}; known {self.kind}s: {known}"
            ) from None

    def __contains__(self, row_id: object) -> bool:
        return row_id in self.rows

    def __iter__(self) -> Iterator[RowT]:
        return iter(self.rows.values())

    def ids(self) -> list[str]:
        return sorted(self.rows)


@dataclass(frozen=True)
class Catalog:
    gpus: Table[Gpu]
    nodes: Table[Node]
    cpus: Table[Cpu]
    nics: Table[Nic]
    switches: Table[Switch]
    media: Table[Medium]
    parts: Table[Part]
    storage: Table[StorageBlock]
    facility: Table[FacilityItem]
    power_paths: Table[PowerPath]
    models: Table[ModelArch]
    architectures: Table[GpuArchitecture]
    containers: Table[Container]


def _load_table(filename: str, key: str, model: type[RowT]) -> Table[RowT]:
    text = resources.files("clusterforge.catalog").joinpath("data", filename).read_text("utf-8")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"catalog file {filename} is not valid TOML: {exc}") from None
    rows: dict[str, RowT] = {}
    for index, entry in enumerate(raw.get(key, [])):
        try:
            row = model.model_validate(entry)
        except ValidationError as exc:
            raise CatalogError(f"catalog file {filename}, [[{key}]] #{index + 1}: {exc}") from None
        rows[row.id] = row  # type: ignore[attr-defined]
    return Table(kind=key, rows=rows)


@cache
def load_catalog() -> Catalog:
    """Load and cross-check the packaged catalog (cached: it is immutable)."""
    catalog = Catalog(
        gpus=_load_table("gpus.toml", "gpu", Gpu),
        nodes=_load_table("nodes.toml", "node", Node),
        cpus=_load_table("cpus.toml", "cpu", Cpu),
        nics=_load_table("nics.toml", "nic", Nic),
        switches=_load_table("switches.toml", "switch", Switch),
        media=_load_table("media.toml", "medium", Medium),
        parts=_load_table("media.toml", "part", Part),
        storage=_load_table("storage.toml", "storage", StorageBlock),
        facility=_load_table("facility.toml", "item", FacilityItem),
        power_paths=_load_table("facility.toml", "power_path", PowerPath),
        models=_load_table("models.toml", "model", ModelArch),
        architectures=_load_table("containers.toml", "architecture", GpuArchitecture),
        containers=_load_table("containers.toml", "container", Container),
    )
    _check_references(catalog)
    return catalog


def _check_references(catalog: Catalog) -> None:
    """Every id a row names exists, and a GPU's default node carries that GPU."""
    for node in catalog.nodes:
        catalog.gpus[node.gpu]
        catalog.cpus[node.cpu]
        catalog.nics[node.compute_nic]
    for path in catalog.power_paths:
        for item_id in (path.circuit_device, *path.circuit_items):
            catalog.facility[item_id]
    for arch in catalog.architectures:
        for gpu_id in arch.gpus:
            catalog.gpus[gpu_id]
    for part in catalog.parts:
        for medium_id in part.media:
            catalog.media[medium_id]
    for container in catalog.containers:
        for arch_id in container.architectures:
            if not container.compiles_for(catalog.architectures[arch_id]):
                raise CatalogError(
                    f"containers.toml: {container.id} lists {arch_id!r}, but its "
                    f"{container.toolkit} {container.toolkit_version} cannot compile for it"
                )
    for gpu in catalog.gpus:
        if catalog.nodes[gpu.default_node].gpu != gpu.id:
            raise CatalogError(
                f"gpus.toml: {gpu.id}.default_node {gpu.default_node!r} carries "
                f"{catalog.nodes[gpu.default_node].gpu!r}, not {gpu.id!r}"
            )


def gpu_architecture(catalog: Catalog, gpu_id: str) -> GpuArchitecture:
    """The architecture row that lists ``gpu_id``."""
    catalog.gpus[gpu_id]  # an unknown GPU gets the table's did-you-mean error
    for arch in catalog.architectures:
        if gpu_id in arch.gpus:
            return arch
    raise CatalogError(f"containers.toml: no [[architecture]] lists GPU {gpu_id!r}")


def training_container(catalog: Catalog, gpu_id: str, framework: str = "megatron") -> Container:
    """The newest container of ``framework`` that runs on ``gpu_id``'s architecture.

    Newest by release month; the table's rows say which architectures each image supports.
    """
    arch = gpu_architecture(catalog, gpu_id)
    fitting = [
        c for c in catalog.containers if c.framework == framework and arch.id in c.architectures
    ]
    if not fitting:
        raise CatalogError(
            f"containers.toml: no {framework} container runs on {gpu_id!r} "
            f"({arch.name}, {arch.toolkit} {arch.isa}); add a [[container]] row for it"
        )
    return max(fitting, key=lambda c: c.release_date)


def host_dram_gbyte_per_s(catalog: Catalog, node: Node) -> float | None:
    """Peak host DRAM bandwidth of a node, GB/s: its sockets x one CPU's
    (``Cpu.memory_gbyte_per_s``); None when the catalog has no figure for its CPU."""
    cpu = catalog.cpus.rows.get(node.cpu)
    if cpu is None or cpu.memory_gbyte_per_s is None:
        return None
    return node.num_cpus * cpu.memory_gbyte_per_s
