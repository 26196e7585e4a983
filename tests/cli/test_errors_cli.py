"""Bad input through the CLI: one plain line on stderr, exit 1, nothing written, no traceback.
Run in-process (``clusterforge.cli.main.main``) for speed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterforge.cli.main import main

BASE = "num_gpus: 64\nnode: dgx-h100\n"


def _fails(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 1, (out, err)
    assert "Traceback" not in err and err.startswith("error: "), err
    return err


def _spec(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        ('name: "[/]"\n', "'[/]'"),
        ('"[/red]": 1\n', "[/red]: unknown field"),
        ('name: "[bold]x"\n', "[bold]x"),
    ],
)
def test_user_text_is_printed_not_interpreted_as_markup(capsys, tmp_path, extra, shown):
    err = _fails(capsys, "plan", _spec(tmp_path, BASE + extra))
    assert shown in err


def test_a_pattern_keeps_its_brackets(capsys, tmp_path):
    err = _fails(capsys, "plan", _spec(tmp_path, BASE + "name: Bad\n"))
    assert "^[a-z0-9][a-z0-9-]{0,40}$" in err


def test_output_into_dev_null_is_one_line(capsys, tmp_path):
    err = _fails(capsys, "plan", _spec(tmp_path, BASE), "-o", os.devnull)
    assert "is not a folder" in err


def test_output_under_a_missing_parent_is_refused(capsys, tmp_path):
    target = tmp_path / "missing" / "deeper" / "out"
    err = _fails(capsys, "plan", _spec(tmp_path, BASE), "-o", str(target))
    assert "does not exist; create it first" in err
    assert not (tmp_path / "missing").exists()


def test_output_folder_is_created_when_its_parent_exists(capsys, tmp_path):
    assert main(["plan", _spec(tmp_path, BASE), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "design.json").is_file()


@pytest.mark.parametrize(
    "extra",
    [
        "workload: {tokens_b: .inf}\n",
        "workload: {tokens_b: 1e300}\n",
        "storage: {num_blocks: 100000000}\n",
        "network:\n  nics_per_node: 64\n",
        "name: " + "[" * 5000 + "]" * 5000 + "\n",
        "num_gpus: 128\n",
    ],
)
def test_bad_specs_write_nothing(capsys, tmp_path, extra):
    out = tmp_path / "out"
    _fails(capsys, "plan", _spec(tmp_path, BASE + extra), "-o", str(out))
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]  # no staging left


def test_symlink_loop_and_long_name_and_dev_zero(capsys, tmp_path):
    loop = tmp_path / "loop.yaml"
    os.symlink(loop, loop)
    assert "cannot read spec file" in _fails(capsys, "plan", str(loop))
    _fails(capsys, "plan", str(tmp_path / ("y" * 300)))
    if Path("/dev/zero").exists():
        assert "larger than" in _fails(capsys, "plan", "/dev/zero")


def test_a_commented_out_network_section_plans_with_defaults(capsys, tmp_path):
    spec = _spec(tmp_path, BASE + "network:\n#  fabric: roce\n")
    assert main(["plan", spec, "--json"]) == 0
    assert '"fabric": "infiniband"' in capsys.readouterr().out


def test_piped_tables_keep_whole_words(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["plan"]) == 0
    out = capsys.readouterr().out
    assert "transceivers" in out and "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_simulate_plot_into_a_missing_folder_is_refused(capsys, tmp_path):
    target = tmp_path / "x" / "y.svg"
    err = _fails(capsys, "simulate", "--plot", str(target))
    assert "does not exist" in err and not (tmp_path / "x").exists()


def test_output_with_a_long_name_or_a_link_loop_is_one_line(capsys, tmp_path):
    spec = _spec(tmp_path, BASE)
    assert "too long" in _fails(capsys, "plan", spec, "-o", str(tmp_path / ("z" * 300)))
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    assert "link loop" in _fails(capsys, "plan", spec, "-o", str(loop / "out"))


ROCE = "network: {fabric: roce, switch: sn5600, efa_instance: %s}\n"


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        ("workload: {optimizer_state: fp8}\n", "workload.optimizer_state (got 'fp8')"),
        ("workload: {optimizer_state: bf16}\n", "optimizer_state = 'bf16' with stack"),
        (ROCE % "p5.24xlarge", "network.efa_instance (got 'p5.24xlarge')"),
        (ROCE % "p4d.24xlarge", "'p4d.24xlarge' carries a100-40gb GPUs but node 'dgx-h100'"),
    ],
)
def test_a_bad_optimizer_state_or_efa_instance_is_one_line(capsys, tmp_path, extra, shown):
    err = _fails(capsys, "predict", _spec(tmp_path, BASE + extra))
    assert shown in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("precision", ["mxfp8", "nvfp4"])
def test_a_block_scaled_precision_before_blackwell_is_one_line(capsys, tmp_path, precision):
    spec = _spec(tmp_path, BASE + "workload: {model: llama3-8b}\n")
    err = _fails(capsys, "predict", spec, "--precision", precision)
    assert f"precision {precision} on h100-sxm" in err and "compute capability 10.x" in err
    assert len(err.strip().splitlines()) == 1, err


def test_a_block_scaled_precision_on_a_stack_without_transformer_engine(capsys, tmp_path):
    spec = _spec(tmp_path, "num_gpus: 64\nnode: dgx-b200\nworkload: {stack: torchtitan}\n")
    err = _fails(capsys, "predict", spec, "--precision", "nvfp4")
    assert "Transformer Engine stacks only" in err, err


def test_a_block_scaled_precision_on_b200_is_predicted(capsys, tmp_path):
    spec = _spec(tmp_path, "num_gpus: 64\nnode: dgx-b200\nworkload: {model: llama3-8b}\n")
    assert main(["predict", spec, "--precision", "mxfp8", "--json"]) == 0
    assert '"precision": "mxfp8"' in capsys.readouterr().out
