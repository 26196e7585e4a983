"""``predict --max-gpus``: the sizes asked, and a sweep's headline lines about one size."""

from __future__ import annotations

import json

from click.testing import CliRunner

from clusterforge.cli.predict import _gpu_counts, command
from tests.conftest import EXAMPLES


def test_max_gpus_includes_n_itself() -> None:
    assert _gpu_counts(None, 600) == (8, 16, 32, 64, 128, 256, 512, 600)
    assert _gpu_counts(None, 512) == (8, 16, 32, 64, 128, 256, 512)
    assert _gpu_counts(None, 4) == (4,)


def test_a_size_above_the_design_whose_count_the_spec_layout_does_not_divide() -> None:
    # The spec's TP8 x PP4 does not divide 520 (above the design's 512): the cluster grows
    # to 520 and each size is still searched over every layout (none fits 520 with a
    # global batch of 1,024: that size is left out, the others answer).
    spec = str(EXAMPLES / "colo-512-h100.yaml")
    args = [spec, "--gpus", "96,520", "--search", "--top", "1", "--json"]
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 0, result.output
    sizes = {row["num_gpus"] for row in json.loads(result.output)["plans"]}
    assert sizes == {96}


def test_sweep_headline_names_the_fastest_size() -> None:
    spec = str(EXAMPLES / "colo-512-h100.yaml")
    result = CliRunner().invoke(command, [spec, "--gpus", "64,512", "--search", "--top", "1"])
    assert result.exit_code == 0, result.output
    assert "tokens/s per GPU on 512 GPUs" in result.output
    assert "with failures and restarts (512 GPUs)" in result.output
