"""Monitoring: Prometheus scrape config (:mod:`.files`), alert rules (:mod:`.alerts`,
:mod:`.network_alerts`, :mod:`.xid_classes`), Grafana dashboards (:mod:`.dashboards`,
:mod:`.panels`), metric names and exporter counters (:mod:`.metrics`), PDU power over SNMP
(:mod:`.pdu_snmp`)."""
