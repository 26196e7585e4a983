"""The AWS EFA rows (pub_mleng_efa_nccl.toml, pub_awsome_efa_nccl.toml): the P6-B200
development rows name AWS's OFI tuner plugin (``nccl_tuner``), every development row its EC2
instance (``efa_instance``, the net plugin's reported latency), and the held-out rows keep the
mapping they were frozen with; the NCCL_PROTO=simple and plugin-latency what-ifs
(benchmarks/efa_simple_protocol_whatif.py, benchmarks/efa_plugin_latency_whatif.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from benchmarks.efa_simple_protocol_whatif import CLUSTER, simple_only

from validation.nccl_rows import score
from validation.sets import file_rows

DATA = Path(__file__).resolve().parents[2] / "validation" / "pub_mleng_efa_nccl.toml"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return file_rows(tomllib.loads(DATA.read_text()))


def test_development_p6_rows_name_the_ofi_tuner_and_held_out_rows_do_not(rows):
    p6_dev = [r for r in rows if r["cluster"] == CLUSTER and r["set"] == "development"]
    assert len(p6_dev) == 11
    assert all(r["nccl_tuner"] == "aws-ofi-p6-b200" for r in p6_dev)
    assert not [r["id"] for r in rows if r["set"] == "heldout" and "nccl_tuner" in r]


def test_four_node_rows_run_the_pair_the_plugin_pins(rows):
    by_id = {r["id"]: r for r in rows}
    expected = {
        "pub-mleng-p6b200-4n-ar-16mib": ("tree", "ll128"),
        "pub-mleng-p6b200-4n-ar-64mib": ("ring", "ll128"),
        "pub-mleng-p6b200-4n-ar-256mib": ("nvls_tree", "simple"),
        "pub-mleng-p6b200-4n-ar-1gib": ("ring", "simple"),
    }
    for row_id, pair in expected.items():
        scored = score(by_id[row_id])
        assert (scored.algorithm, scored.protocol) == pair, row_id


def test_the_simple_protocol_what_if_runs_simple_and_refuses_held_out_rows(rows):
    row = next(r for r in rows if r["id"] == "pub-mleng-p6b200-1n-ar-16mib")
    assert score(simple_only(row)).protocol == "simple"
    held = next(r for r in rows if r["set"] == "heldout")
    with pytest.raises(ValueError, match="held-out"):
        simple_only(held)


AWSOME = DATA.parent / "pub_awsome_efa_nccl.toml"
INSTANCES = {
    "aws-p4de-a100-efa-awsome": "p4de.24xlarge",
    "aws-p5-h100-efa-awsome": "p5.48xlarge",
    "aws-p6-b200-efa-mleng": "p6-b200.48xlarge",
    "aws-p5en-h200-efa-mleng": "p5en.48xlarge",
}


def test_development_rows_name_their_efa_instance_and_held_out_rows_do_not(rows):
    both = rows + file_rows(tomllib.loads(AWSOME.read_text()))
    dev = [r for r in both if r["set"] == "development"]
    assert len(dev) == 33
    assert all(r["efa_instance"] == INSTANCES[r["cluster"]] for r in dev)
    assert not [r["id"] for r in both if r["set"] == "heldout" and "efa_instance" in r]


def test_the_plugin_latency_what_if_matches_the_rows_and_refuses_held_out_rows(rows):
    from benchmarks.efa_plugin_latency_whatif import score_rows

    row = next(r for r in rows if r["id"] == "pub-mleng-p6b200-4n-ar-16mib")
    assert score_rows([row], "time")[0].error == pytest.approx(score(row).error, abs=1e-12)
    assert score_rows([row], None)[0].error > score(row).error + 0.4  # 65 % against 14 %
    held = next(r for r in rows if r["set"] == "heldout")
    with pytest.raises(ValueError, match="held-out"):
        score_rows([held], None)
