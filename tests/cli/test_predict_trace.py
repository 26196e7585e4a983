"""``predict`` names the figures a number came from: the optimizer's bytes per parameter and
aws-ofi-nccl's network latency on an EFA instance, in the table and in ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterforge.cli.main import main

SPEC = """num_gpus: 16
node: %s
network: {fabric: roce, switch: sn5600%s}
workload: {model: llama3-8b, tensor_parallel: 8, global_batch: 16, stack: nemo,
           optimizer_state: fp32-remainders}
"""


def _predict(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    network: str,
    *argv: str,
    node: str = "dgx-h100",
) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC % (node, network))
    assert main(["predict", str(path), *argv]) == 0
    return capsys.readouterr().out


def test_the_table_names_the_optimizer_bytes_and_the_efa_latency(capsys, tmp_path):
    out = " ".join(_predict(capsys, tmp_path, ", efa_instance: p5.48xlarge").split())
    assert "(10 B/param, fp32-remainders)" in out
    assert "75 us, the one aws-ofi-nccl reports on p5.48xlarge" in out
    plain = " ".join(_predict(capsys, tmp_path, "").split())
    assert "aws-ofi-nccl" not in plain


def test_the_json_names_the_optimizer_bytes_and_the_efa_latency(capsys, tmp_path):
    row = json.loads(
        _predict(capsys, tmp_path, ", efa_instance: p5en.48xlarge", "--json", node="dgx-h200")
    )
    best = row["plans"][0]
    assert best["optimizer_bytes_per_param"] == 10.0
    assert best["efa_instance"] == "p5en.48xlarge"
    assert best["efa_net_latency_us"] == pytest.approx(35.0)
    assert best["ep_overlap_chunk_s"] == 0.0  # a dense model
    plain = json.loads(_predict(capsys, tmp_path, "", "--json"))["plans"][0]
    assert "efa_net_latency_us" not in plain
