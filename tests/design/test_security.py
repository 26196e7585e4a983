"""The out-of-band (BMC) network stays behind a bastion: the spec field, the rule that flags a
routed BMC network, the bastion's BOM line and its NetBox device."""

from __future__ import annotations

import re

import pytest

from clusterforge.design import plan
from clusterforge.errors import ClusterforgeError
from clusterforge.generate.inventory.devices import (
    DEVICE_FIELDS,
    device_rows,
    device_type_rows,
    role_rows,
)
from tests.conftest import make_spec


def test_bmc_access_defaults_to_a_bastion() -> None:
    assert make_spec().management.bmc_access == "bastion"


def test_unknown_bmc_access_is_refused_with_the_choices() -> None:
    with pytest.raises(ClusterforgeError, match=r"management\.bmc_access.*bastion.*routed"):
        make_spec(management={"bmc_access": "open"})


def test_a_routed_bmc_network_is_a_finding() -> None:
    routed = plan(make_spec(management={"bmc_access": "routed"}))
    finding = next(f for f in routed.findings if f.id == "bmc-network-reachable")
    assert finding.severity == "warning"
    assert finding.numbers["bmc_ports"] >= routed.compute.num_nodes
    assert "bastion" in finding.fix
    assert "bmc-network-reachable" not in {f.id for f in plan(make_spec()).findings}


def test_the_bastion_is_a_sourced_dated_bom_line() -> None:
    design = plan(make_spec())
    line = next(b for b in design.bom if b.item == "bastion-vpn")
    assert line.category == "management" and line.quantity == 1 and line.unit_usd > 0
    assert "Netgate" in line.source and re.search(r"\d{4}-\d{2}-\d{2}", line.source)
    routed = plan(make_spec(management={"bmc_access": "routed"}))
    assert "bastion-vpn" not in {b.item for b in routed.bom}


def test_the_bastion_is_a_netbox_device_next_to_the_head_node() -> None:
    design = plan(make_spec())
    rows = [dict(zip(DEVICE_FIELDS, r, strict=True)) for r in device_rows(design)]
    bastion = next(r for r in rows if r["role"] == "bastion")
    head = next(r for r in rows if r["name"] == "mgmt-01")
    assert bastion["rack"] == head["rack"] and bastion["position"] == ""
    assert bastion["device_type"] in {t.model for t in device_type_rows(design)}
    assert "bastion" in {r[1] for r in role_rows(design)}
    routed = plan(make_spec(management={"bmc_access": "routed"}))
    assert not [r for r in device_rows(routed) if r[1] == "bastion"]
