"""Every --json output is one JSON object that starts with its schema version and the
command that wrote it (a list at the top, or no version, leaves a script guessing)."""

from __future__ import annotations

import json

import pytest

from clusterforge.cli.main import main
from tests.conftest import EXAMPLES

LAB = str(EXAMPLES / "lab-8-gpu.yaml")
COLO = str(EXAMPLES / "colo-512-h100.yaml")


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("plan", [LAB]),
        ("predict", [LAB]),
        ("simulate", [COLO, "--size", "1MiB", "--gpus", "16"]),
        ("simulate", [COLO, "--vs", COLO, "--size", "1MiB", "--gpus", "16"]),
        ("goodput", [COLO, "--days", "5", "--runs", "20"]),
    ],
)
def test_json_output_is_an_object_with_its_version(command, args, capsys):
    assert main([command, *args, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert isinstance(document, dict)
    assert list(document)[:2] == ["schema_version", "command"]
    assert document["schema_version"] == 1 and document["command"] == command


def test_predict_lists_its_plans_and_simulate_vs_its_studies(capsys):
    assert main(["predict", LAB, "--json"]) == 0
    assert isinstance(json.loads(capsys.readouterr().out)["plans"], list)
    args = [COLO, "--vs", COLO, "--size", "1MiB", "--gpus", "16", "--json"]
    assert main(["simulate", *args]) == 0
    assert len(json.loads(capsys.readouterr().out)["studies"]) == 2
