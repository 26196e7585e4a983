"""The dcgm-exporter counters file lists every DCGM field that a generated file or
``clusterforge diagnose`` reads.

dcgm-exporter serves only the fields its counters CSV lists (dcgm-exporter README, "Changing
Metrics"), each as a metric of the field's name: a query on a field left out finds nothing,
so an alert never fires and a diagnosis lacks its evidence, with no error anywhere.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from clusterforge.design import Design
from clusterforge.diagnose.collect import JobSelector, read_job
from clusterforge.diagnose.prometheus import Sample
from clusterforge.generate import render
from clusterforge.generate.monitoring.metrics import DCGM_COUNTERS_FILE, dcgm_counters_csv

DCGM_NAME = re.compile(r"\bDCGM_(?:FI|EXP)_[A-Z0-9_]+\b")
# rate() and increase() only make sense on a counter (Prometheus docs, "Query functions").
RATE_OF = re.compile(r"\b(?:rate|irate|increase)\(\s*(DCGM_(?:FI|EXP)_[A-Z0-9_]+)")
# Types dcgm-exporter accepts in the CSV (internal/pkg/counters/variables.go).
EXPORTER_TYPES = {"gauge", "counter", "histogram", "summary", "label"}
# Keys whose values are PromQL: Prometheus rules ("expr"), Grafana targets ("expr") and
# template variables ("query", "definition").
QUERY_KEYS = {"expr", "query", "definition"}


def _counters(text: str) -> dict[str, str]:
    """Field -> Prometheus type, read as dcgm-exporter reads the file: CSV records, '#'
    lines are comments, fields trimmed, exactly three per record."""
    records = [r for r in csv.reader(io.StringIO(text)) if r and not r[0].startswith("#")]
    fields: dict[str, str] = {}
    for record in records:
        name, kind, help_text = (part.strip() for part in record)
        assert kind in EXPORTER_TYPES and help_text, record
        assert name not in fields, f"{name} listed twice"
        fields[name] = kind
    return fields


def _strings_under_query_keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in QUERY_KEYS and isinstance(value, str):
                yield value
            else:
                yield from _strings_under_query_keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings_under_query_keys(item)


def _generated_queries(design: Design) -> list[str]:
    """PromQL of every generated alert rule and dashboard panel or variable."""
    queries: list[str] = []
    for file in render(design, ["monitoring"]):
        if file.path.endswith((".yml", ".yaml")):
            docs = list(yaml.safe_load_all(file.content))
        elif file.path.endswith(".json"):
            docs = [json.loads(file.content)]
        else:
            continue
        queries += [q for doc in docs for q in _strings_under_query_keys(doc)]
    return queries


class _RecordingPrometheus:
    """Answers every query with one GPU's sample and keeps the PromQL it was asked."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def query(self, promql: str) -> list[Sample]:
        self.queries.append(promql)
        return [Sample({"node": "gpu-0001", "gpu": "0"}, 1.0)]


def _diagnose_queries() -> list[str]:
    client = _RecordingPrometheus()
    readings = read_job(client, JobSelector(job="4242"), window="30m")  # type: ignore[arg-type]
    assert len(readings.gpus) == 1 and len(readings.nodes) == 1
    return client.queries


@pytest.fixture(scope="module")
def counters(lab_design: Design) -> dict[str, str]:
    written = {f.path: f.content for f in render(lab_design, ["monitoring"])}
    text = written[f"monitoring/{DCGM_COUNTERS_FILE}"]
    assert text == dcgm_counters_csv(lab_design)
    return _counters(text)


def _assert_collected(queries: list[str], counters: dict[str, str]) -> set[str]:
    names = {name for q in queries for name in DCGM_NAME.findall(q)}
    missing = sorted(names - counters.keys())
    assert not missing, f"queried but not in {DCGM_COUNTERS_FILE}: {missing}"
    not_metrics = sorted(n for n in names if counters[n] not in ("gauge", "counter"))
    assert not not_metrics, f"queried but not a gauge or counter: {not_metrics}"
    rated = {name for q in queries for name in RATE_OF.findall(q)}
    gauges = sorted(n for n in rated if counters[n] != "counter")
    assert not gauges, f"rate()/increase() of fields typed gauge: {gauges}"
    return names


def test_counters_file_lists_every_dcgm_field_diagnose_reads(counters):
    names = _assert_collected(_diagnose_queries(), counters)
    # the fields diagnose's verdicts rest on, so the check cannot pass on an empty set
    assert {
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_DEV_POWER_VIOLATION",
    } <= names


def test_counters_file_lists_every_dcgm_field_the_rules_and_dashboards_query(lab_design, counters):
    names = _assert_collected(_generated_queries(lab_design), counters)
    assert {
        "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    } <= (names)


def test_clock_event_bitmask_uses_the_name_every_current_exporter_resolves(counters):
    # DCGM 4.0 renamed field 112; dcgm-exporter stops on a name its go-dcgm table lacks, and
    # the deprecated spelling is missing there in some 4.x releases.
    assert counters["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"] == "gauge"
    assert "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" not in counters


def test_a_field_left_out_of_the_counters_file_is_reported(counters):
    trimmed = {k: v for k, v in counters.items() if k != "DCGM_FI_PROF_SM_ACTIVE"}
    with pytest.raises(AssertionError, match="DCGM_FI_PROF_SM_ACTIVE"):
        _assert_collected(_diagnose_queries(), trimmed)
    with pytest.raises(AssertionError, match="DCGM_FI_DEV_POWER_VIOLATION"):
        _assert_collected(_diagnose_queries(), {**counters, "DCGM_FI_DEV_POWER_VIOLATION": "gauge"})
