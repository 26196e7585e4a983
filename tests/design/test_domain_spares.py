"""In-rack spares of rack-scale NVLink domains: jobs on 16 of the 18 trays of a GB200 NVL72."""

from __future__ import annotations

import pytest

from clusterforge.design import plan
from clusterforge.errors import ClusterforgeError, SpecError
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES, make_spec


def _gb200(**fields: object):
    spec = load_spec(EXAMPLES / "gb200-nvl72-pod.yaml")
    return plan(spec.model_copy(update=fields))


def test_two_trays_per_domain_hold_the_job_on_16_of_18():
    """576 GPUs on 16 trays a rack are 9 racks: 144 training trays and 18 in-rack spares."""
    d = _gb200(spare_nodes_per_nvlink_domain=2)
    c = d.compute
    assert c.num_training_gpus == 576
    assert c.num_training_nodes == 144
    assert c.num_nodes == 162 and c.num_spare_nodes == 18
    assert c.num_spares_per_nvlink_domain == 2
    assert c.nvlink_domain_gpus == 72  # the hardware's domain
    assert c.job_nvlink_domain_gpus == 64  # the part of it a job uses
    gpu_racks = [r for r in d.racks if r.role == "gpu"]
    assert len(gpu_racks) == 9
    spare_names = set(c.node_names[c.num_training_nodes :])
    for rack in gpu_racks:
        trays = [dev.name for dev in rack.devices if dev.kind == "node"]
        assert len(trays) == 18
        assert sum(name in spare_names for name in trays) == 2  # the spares stand in the rack


def test_in_rack_spares_are_cabled_like_the_training_trays():
    d = _gb200(spare_nodes_per_nvlink_domain=2)
    assert d.fabric.num_cold_spares == 0
    assert d.fabric.num_spare_pool_leaves == 0
    assert d.fabric.connectivity.num_nodes == d.compute.num_nodes


def test_no_in_rack_spares_keeps_the_pod_as_it_was():
    c = _gb200().compute
    assert (c.num_nodes, c.num_spare_nodes, c.num_spares_per_nvlink_domain) == (144, 0, 0)
    assert c.job_nvlink_domain_gpus == 72


def test_in_rack_spares_need_a_rack_scale_system():
    with pytest.raises(ClusterforgeError, match="spare_nodes_per_nvlink_domain"):
        plan(make_spec(spare_fraction=0, spare_nodes_per_nvlink_domain=2))


def test_in_rack_spares_leave_trays_for_the_job():
    with pytest.raises(ClusterforgeError, match="spare_nodes_per_nvlink_domain"):
        _gb200(spare_nodes_per_nvlink_domain=18)


def test_in_rack_spares_and_a_spare_fraction_are_one_choice():
    with pytest.raises(SpecError, match="spare_fraction"):
        make_spec(node="gb200-nvl72-tray", spare_fraction=0.05, spare_nodes_per_nvlink_domain=2)


def test_the_spares_line_says_which_spares_are_held():
    """A whole spare rack on spare-ports: 16 trays on free leaf ports, 2 cold; in-rack
    spares: 2 in each of 9 domains."""
    from clusterforge.design.spares import spares_held

    whole = spares_held(_gb200(spare_fraction=0.05))
    assert whole.summary == (
        "18 nodes (1 whole rack): 16 on free leaf ports, 2 cold (cabled on swap)"
    )
    in_rack = spares_held(_gb200(spare_nodes_per_nvlink_domain=2))
    assert in_rack.mode == "in-domain"
    assert "2 in each of 9 NVLink domains" in in_rack.summary
    assert "16 of 18" in in_rack.summary
    assert spares_held(_gb200()).summary == "none"


def test_a_pod_without_spares_is_told_to_keep_trays_in_each_rack():
    finding = next(f for f in _gb200().findings if f.id == "no-spares")
    assert "spare_nodes_per_nvlink_domain: 2" in finding.fix
    assert not [f for f in _gb200(spare_nodes_per_nvlink_domain=2).findings if f.id == "no-spares"]
