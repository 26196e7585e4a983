"""`clusterforge simulate` through the CLI entry point."""

from __future__ import annotations

import json

import pytest

from clusterforge.cli.main import main
from clusterforge.cli.simulate import parse_size
from tests.netsim.designs import EXAMPLES

A = str(EXAMPLES / "seed-design-a.yaml")
B = str(EXAMPLES / "seed-design-b.yaml")


def test_json_has_the_bandwidths_link_classes_and_top_links(capsys):
    code = main(
        ["simulate", A, "--collective", "all_to_all", "--size", "1GiB", "--gpus", "64", "--json"]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    res = out["results"][0]
    for key in (
        "time_s",
        "algbw_gbyte_per_s",
        "busbw_gbyte_per_s",
        "link_class_utilization",
        "top_links",
        "limiting_link",
        "would_drop",
    ):
        assert key in res
    assert res["num_ranks"] == 64
    assert res["top_links"][0]["link_class"] in ("nic-leaf", "leaf-nic")
    assert res["busbw_gbyte_per_s"] > 0


def test_default_sweep_prints_an_nccl_tests_style_table(capsys):
    assert main(["simulate", B]) == 0
    out = capsys.readouterr().out
    for column in ("size", "count", "type", "time", "(us)", "algbw", "busbw", "(GB/s)"):
        assert column in out
    assert "17179869184" in out and "1048576" in out  # 1 MiB .. 16 GiB
    assert "Limiting link" in out


def test_vs_shows_both_designs_side_by_side(capsys):
    code = main(["simulate", A, "--vs", B, "--collective", "all_to_all", "--size", "256MiB"])
    assert code == 0
    out = capsys.readouterr().out
    assert "seed-design-a" in out and "seed-design-b" in out
    assert "rate control" in out  # A's RoCE LAG members overflow; DCQCN cuts the senders


def test_groups_placement_and_routing_options(capsys):
    code = main(
        [
            "simulate",
            B,
            "--groups",
            "dp",
            "--placement",
            "fragmented",
            "--routing",
            "ecmp",
            "--qps",
            "4",
            "--size",
            "64MiB",
            "--json",
        ]
    )
    assert code == 0
    res = json.loads(capsys.readouterr().out)["results"][0]
    assert res["num_groups"] == 16 and res["num_ranks"] == 32  # TP 8 x PP 2 -> DP 32
    assert res["num_qps"] == 4 and res["routing"] == "ecmp"


def test_user_errors_are_one_red_line_and_exit_1(capsys):
    assert main(["simulate", B, "--size", "lots"]) == 1
    err = capsys.readouterr().err
    assert "size" in err and "lots" in err and len(err.strip().splitlines()) == 1
    assert main(["simulate", A, "--algorithm", "nvls", "--size", "1GiB"]) == 1
    assert "nvls" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1GiB", 2**30),
        ("1G", 2**30),
        ("1GB", 10**9),
        ("512MiB", 2**29),
        ("4096", 4096),
        ("1.5KiB", 1536),
    ],
)
def test_parse_size(text, value):
    assert parse_size(text) == value


def test_routing_valiant_on_a_clos_design_is_a_clear_error(capsys):
    assert main(["simulate", B, "--routing", "valiant", "--size", "1GiB"]) == 1
    err = capsys.readouterr().err
    assert "valiant" in err and "dragonfly" in err and len(err.strip().splitlines()) == 1


def test_json_and_table_say_how_the_fabric_answers_congestion(capsys):
    args = ["simulate", B, "--routing", "ecmp", "--size", "1GiB", "--algorithm", "ring"]
    assert main([*args, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)["results"][0]
    assert res["lossless"] is False and res["rate_control"] is True
    assert res["congestion_response"] == "rate" and res["drop_fraction"] == 0
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "DCQCN" in out and "rate control" in out and "would drop" not in out


def test_sweep_prints_every_size_with_algorithm_and_protocol(capsys):
    assert main(["simulate", B, "--sweep", "8B:16GiB", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)["table"]
    assert [r["size"] for r in table] == [2**e for e in range(3, 35)]
    assert {"size", "count", "type", "time_us", "algbw", "busbw"} <= table[0].keys()
    assert table[0]["protocol"] == "ll" and table[-1]["protocol"] == "simple"
    busbw = [r["busbw"] for r in table]
    assert busbw[-1] > 20 * busbw[table.index(next(r for r in table if r["size"] == 2**20))]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--seed", "-5", "--placement", "fragmented", "--size", "1GiB"], ["seed", "-5"]),
        (["--qps", "10000", "--size", "1GiB", "--routing", "ecmp"], ["128"]),
        (["--sweep", "1GiB:8B"], ["sweep"]),
        (["--plot", "/nonexistent-folder-xyz/plot.svg", "--size", "1GiB"], ["does not exist"]),
    ],
)
def test_bad_options_are_one_line_errors(capsys, args, words):
    assert main(["simulate", B, *args]) == 1
    err = capsys.readouterr().err
    assert all(w in err for w in words) and len(err.strip().splitlines()) == 1


def test_plot_does_not_create_missing_folders(tmp_path, capsys):
    target = tmp_path / "missing" / "plot.svg"
    assert main(["simulate", B, "--size", "1GiB", "--plot", str(target)]) == 1
    assert not target.parent.exists()
