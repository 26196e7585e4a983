"""Rules about who can reach the cluster's management plane."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clusterforge.design.rules.finding import Finding

if TYPE_CHECKING:
    from clusterforge.design.result import Design

__all__ = ["bmc_reachable"]

OOB_FABRIC = "out-of-band"


def bmc_reachable(d: Design) -> list[Finding]:
    """A BMC network reachable from elsewhere (``management.bmc_access: routed``), or no
    out-of-band network at all (BMCs then share the in-band one).

    A BMC (IPMI / Redfish) powers its host on and off, flashes its firmware and opens its
    console whatever the operating system says.  NVIDIA's DGX SuperPOD reference
    architecture keeps the out-of-band network separate from the compute and in-band ones;
    NIST SP 800-53 control MA-4(4) ("Authentication and Separation of Maintenance
    Sessions") asks that remote maintenance run over physically or cryptographically
    separated paths, with strong authentication: a VPN bastion in front of a network that
    has no other route.
    """
    oob = next((f for f in d.support_fabrics if f.name == OOB_FABRIC), None)
    if oob is not None and d.spec.management.bmc_access == "bastion":
        return []
    ports = oob.num_endpoint_ports if oob is not None else d.compute.num_nodes
    where = "is routed to other networks" if oob is not None else "does not exist"
    return [
        Finding(
            id="bmc-network-reachable",
            severity="warning",
            message=f"the out-of-band network of {ports} BMC and console ports {where}: "
            "whoever reaches a BMC controls its host's power, firmware and console",
            numbers={"bmc_ports": ports},
            fix="set management.bmc_access: bastion (a VPN/SSH bastion is the only way in; "
            "no route to the compute fabric or the internet)",
        )
    ]
