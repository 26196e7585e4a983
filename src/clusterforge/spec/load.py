"""Loading and validating a spec: YAML to frozen models, checked against the catalog.

:func:`load_spec` turns any problem (malformed YAML, an unknown id, a count that does not
divide) into a :class:`SpecError` whose message names the field, the bad value and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError,
)

from clusterforge.catalog import Catalog, ModelArch, Node, load_catalog
from clusterforge.errors import PlanError, SpecError, did_you_mean
from clusterforge.job import JobLayout
from clusterforge.spec.cluster import DEFAULT_SPEC_YAML, ClusterSpec
from clusterforge.spec.error_messages import format_validation_error
from clusterforge.spec.safe_yaml import excerpt, load_yaml_text, read_spec_text

__all__ = ["default_spec", "job_layout", "load_spec", "parse_spec", "resolve_node_id"]


def parse_spec(data: Any, source: str = "spec", catalog: Catalog | None = None) -> ClusterSpec:
    """Validate a parsed YAML mapping into a :class:`ClusterSpec` (ids and divisibility too)."""
    if not isinstance(data, dict):
        raise SpecError(
            f"{source}: the spec must be a YAML mapping of fields, got {type(data).__name__}"
        )
    try:
        spec = ClusterSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc, source, ClusterSpec)) from None
    _check_against_catalog(spec, catalog or load_catalog(), source)
    return spec


def load_spec(path: str | Path | None, catalog: Catalog | None = None) -> ClusterSpec:
    """Read a YAML spec file (None = the built-in default) and validate it.

    The file is read and parsed within the limits of :mod:`clusterforge.spec.safe_yaml` (size,
    nesting, alias expansion, unique keys)."""
    if path is None:
        return default_spec()
    path = Path(path)
    source = excerpt(str(path), 120).strip("'\"")
    data = load_yaml_text(read_spec_text(path), source)
    return parse_spec(data, source=source, catalog=catalog)


def default_spec() -> ClusterSpec:
    """The built-in default spec (512 x H100 colo, 15 kW racks)."""
    data = load_yaml_text(DEFAULT_SPEC_YAML, "built-in default")
    return parse_spec(data, source="built-in default")


def _lookup(kind: str, table_ids: list[str], value: str, field: str, source: str) -> None:
    if value not in table_ids:
        raise SpecError(
            f"{source}: {field}: unknown {kind} {excerpt(value)}"
            f"{did_you_mean(value[:64], table_ids)}; choose one of: {', '.join(table_ids)}"
        )


def _check_against_catalog(spec: ClusterSpec, catalog: Catalog, source: str) -> None:
    """Cross-field checks that need the catalog: ids exist, counts divide."""
    if spec.gpu is not None:
        _lookup("GPU", catalog.gpus.ids(), spec.gpu, "gpu", source)
    if spec.node is not None:
        _lookup("node", catalog.nodes.ids(), spec.node, "node", source)
    if spec.gpu is not None and spec.node is None:
        _lookup("node", catalog.nodes.ids(), catalog.gpus[spec.gpu].default_node, "gpu", source)
    node_id = resolve_node_id(spec, catalog)
    node = catalog.nodes[node_id]
    _check_compute_nic(spec, node, catalog, source)
    if spec.gpu is not None and node.gpu != spec.gpu:
        raise SpecError(
            f"{source}: node {node_id!r} carries {node.gpu!r}, not gpu {spec.gpu!r}; "
            "drop one of the two fields or pick a matching node"
        )
    if spec.gpus_per_node is not None and spec.gpus_per_node != node.num_gpus:
        raise SpecError(
            f"{source}: gpus_per_node: {spec.gpus_per_node} does not fit node {node_id!r}, "
            f"which has a {node.num_gpus}-GPU board; set gpus_per_node: {node.num_gpus} "
            "(idle GPU slots are still bought and powered)"
        )
    nics = spec.network.nics_per_node
    if nics is not None and nics > node.num_compute_nics:
        raise SpecError(
            f"{source}: network.nics_per_node: {nics} is more than the "
            f"{node.num_compute_nics} compute NIC ports of node {node_id!r}; use at most "
            f"{node.num_compute_nics} (fewer plans a partly cabled fabric)"
        )
    if spec.num_gpus % node.num_gpus:
        raise SpecError(
            f"{source}: num_gpus: {spec.num_gpus} is not a multiple of {node.num_gpus} GPUs per "
            f"node; use {(spec.num_gpus // node.num_gpus + 1) * node.num_gpus}"
        )
    if spec.network.switch is not None:
        _lookup("switch", catalog.switches.ids(), spec.network.switch, "network.switch", source)
    _lookup("storage block", catalog.storage.ids(), spec.storage.block, "storage.block", source)
    if spec.workload is not None and isinstance(spec.workload.model, str):
        _lookup("model", catalog.models.ids(), spec.workload.model, "workload.model", source)
    job_layout(spec, catalog, source)


def resolve_node_id(spec: ClusterSpec, catalog: Catalog) -> str:
    """The node model: the spec's, or the catalog's default node for its GPU."""
    if spec.node is not None:
        return spec.node
    assert spec.gpu is not None  # guaranteed by ClusterSpec._gpu_or_node
    return catalog.gpus[spec.gpu].default_node


def _check_compute_nic(spec: ClusterSpec, node: Node, catalog: Catalog, source: str) -> None:
    """network.* against the node's compute NIC: speed, count and fabric must be ones the
    NIC can run (a ConnectX-7 runs 400, 200 or 100 Gb/s, never 800)."""
    nic, net = catalog.nics[node.compute_nic], spec.network
    if net.nic_gbit_per_s is not None and net.nic_gbit_per_s > nic.port_gbit_per_s:
        raise SpecError(
            f"{source}: network.nic_gbit_per_s: {net.nic_gbit_per_s:g} is faster than node "
            f"{node.id!r}'s compute NIC {nic.id!r} ({nic.port_gbit_per_s:g} Gb/s); use at most "
            f"{nic.port_gbit_per_s:g} or pick a node with faster NICs"
        )
    ports = node.num_compute_nics * nic.num_ports
    if net.nics_per_node is not None and net.nics_per_node > ports:
        raise SpecError(
            f"{source}: network.nics_per_node: {net.nics_per_node} is more than node "
            f"{node.id!r}'s {ports} compute NIC ports; use at most {ports}"
        )
    fabric = "infiniband" if net.fabric == "infiniband" else "ethernet"
    if fabric not in nic.fabrics:
        raise SpecError(
            f"{source}: network.fabric: {net.fabric} needs {fabric} NICs, but node "
            f"{node.id!r}'s compute NIC {nic.id!r} runs {', '.join(nic.fabrics)} only"
        )


def job_layout(spec: ClusterSpec, catalog: Catalog, source: str = "spec") -> JobLayout | None:
    """The job layout of the spec's workload, every structural check applied (None when the
    spec has no workload section: a fabric-only spec plans the hardware alone)."""
    w = spec.workload
    if w is None:
        return None
    try:
        layout = JobLayout.for_gpus(
            spec.num_gpus,
            tp=w.tensor_parallel,
            pp=w.pipeline_parallel,
            cp=w.context_parallel,
            ep=w.expert_parallel,
            dp=w.data_parallel,
            vpp=w.virtual_pipeline_stages,
        )
        layout.check_batch(w.global_batch, w.micro_batch)
        arch = w.model if isinstance(w.model, ModelArch) else catalog.models[w.model]
        layout.check_model(arch, w.seq_length or arch.seq_length)
        layout.split_layers(arch.num_layers, w.pipeline_layers)
    except PlanError as exc:
        raise SpecError(f"{source}: workload: {exc}", fix=exc.fix) from None
    return layout
