"""How the cluster's management (out-of-band, BMC) network is reached."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clusterforge.spec.base import Section

__all__ = ["BmcAccess", "ManagementSpec"]

BmcAccess = Literal["bastion", "routed"]


class ManagementSpec(Section):
    """Access to the out-of-band network that carries every BMC, switch and PDU console."""

    bmc_access: BmcAccess = Field(
        "bastion",
        description="How operators reach the out-of-band (BMC) network: 'bastion' (a "
        "VPN/SSH bastion is its only entry; it is routed to neither the compute fabric nor "
        "the internet; the BOM and inventory get the bastion) or 'routed' (reachable from "
        "other networks: flagged, since a BMC controls its host's power, firmware and console)",
    )
