"""Rack power from the PDUs: an SNMP exporter generator config and the Prometheus scrape job.

GPU power (DCGM) misses CPUs, fans, NICs, switches and PSU losses; the rack's feed limit is
what the PDU measures.  Prometheus reads PDUs through ``snmp_exporter`` (prometheus/
snmp_exporter): its ``generator`` turns ``generator.yml`` (which MIB objects each module walks)
into the exporter's ``snmp.yml`` with the vendor MIBs at hand, and Prometheus scrapes
``/snmp?module=<m>&target=<pdu>`` on the exporter (the exporter's README, "Prometheus
Configuration").  The modules walk the power objects of the three common metered-PDU MIBs:

* APC/Schneider ``PowerNet-MIB``: ``rPDU2DeviceStatusPower`` (hundredths of kW),
  ``rPDU2DeviceStatusEnergy`` (tenths of kWh), ``rPDU2PhaseStatusCurrent`` (tenths of A);
* Server Technology ``Sentry4-MIB``: ``st4InputCordActivePower`` (W),
  ``st4InputCordActiveEnergy``, ``st4LineCurrent`` (hundredths of A);
* Raritan ``PDU2-MIB``: ``measurementsInletSensorValue`` indexed by ``sensorType`` (5 =
  active power, W).

:data:`RACK_POWER_RECORD` sums whichever the PDUs answer into one series per rack in watts.
"""

from __future__ import annotations

from typing import Any

from clusterforge.design import Design
from clusterforge.generate.inventory.ports import rack_device_names

__all__ = [
    "PDU_MODULES",
    "RACK_POWER_RECORD",
    "SNMP_EXPORTER_PORT",
    "generator_config",
    "pdu_scrape_config",
    "rack_power_expr",
]

SNMP_EXPORTER_PORT = 9116  # snmp_exporter's default listen port
SNMP_AUTH = "public_v2"  # the generator's default SNMPv2c community profile; set your own
PDU_MODULES: dict[str, list[str]] = {
    "pdu_apc": ["rPDU2DeviceStatusPower", "rPDU2DeviceStatusEnergy", "rPDU2PhaseStatusCurrent"],
    "pdu_servertech": ["st4InputCordActivePower", "st4InputCordActiveEnergy", "st4LineCurrent"],
    "pdu_raritan": ["measurementsInletSensorValue"],
}
DEFAULT_PDU_MODULE = "pdu_apc"
RACK_POWER_RECORD = "clusterforge:rack_pdu_power_w"
RARITAN_ACTIVE_POWER = 5  # PDU2-MIB SensorTypeEnumeration activePower


def rack_power_expr() -> str:
    """PromQL: PDU power per rack in W, from whichever vendor MIB answers."""
    return (
        'sum by (rack) (rPDU2DeviceStatusPower{job="pdu"}) * 10'
        ' or sum by (rack) (st4InputCordActivePower{job="pdu"})'
        ' or sum by (rack) (measurementsInletSensorValue{job="pdu", '
        f'sensorType="{RARITAN_ACTIVE_POWER}"}})'
    )


def generator_config() -> dict[str, Any]:
    """snmp_exporter ``generator.yml``: one module per PDU MIB."""
    return {
        "auths": {SNMP_AUTH: {"version": 2}},
        "modules": {name: {"walk": list(objects)} for name, objects in PDU_MODULES.items()},
    }


def _pdus_by_rack(design: Design) -> dict[str, list[str]]:
    names = rack_device_names(design)
    pdus: dict[str, list[str]] = {}
    for rack in design.racks:
        for d in rack.devices:
            if d.kind == "pdu":
                pdus.setdefault(rack.name, []).append(names[(rack.name, d.name)])
    return pdus


def pdu_scrape_config(design: Design, exporter_host: str) -> dict[str, Any]:
    """The ``pdu`` job: each PDU through the SNMP exporter, labelled with its rack."""
    return {
        "job_name": "pdu",
        "metrics_path": "/snmp",
        "params": {"module": [DEFAULT_PDU_MODULE], "auth": [SNMP_AUTH]},
        "static_configs": [
            {"targets": pdus, "labels": {"cluster": design.spec.name, "rack": rack}}
            for rack, pdus in _pdus_by_rack(design).items()
        ],
        "relabel_configs": [
            {"source_labels": ["__address__"], "target_label": "__param_target"},
            {"source_labels": ["__param_target"], "target_label": "pdu"},
            {"target_label": "__address__", "replacement": f"{exporter_host}:{SNMP_EXPORTER_PORT}"},
        ],
    }
