"""The Paxml development rows' two costs (``benchmarks/paxml_recipe_costs.py``): which rows
state them, as their sources say, and what each adds. Development rows only."""

from __future__ import annotations

from benchmarks.paxml_recipe_costs import COSTS, PAXML_FILES, added_ms, with_costs

from clusterforge.perf.input_dropout import input_dropout_s
from clusterforge.perf.parallel import num_micro_batches
from clusterforge.perf.roofline import gpu_perf
from validation.runs import Run, load_runs, predict_run, run_design

DGXC = "pub_paxml_fsdp_h100.toml"


def _development() -> list[Run]:
    return [r for r in load_runs() if r.subset == "development"]


def _stating(cost: str) -> set[str]:
    return {r.name for r in load_runs() if r.subset != "heldout" and getattr(r.stack, cost)}


def test_only_the_dgxc_paxml_recipe_rows_copy_carried_weights() -> None:
    """``--xla_gpu_enable_while_loop_double_buffering=false`` with the pipelined all-gather
    on is dgxc-benchmarking's ``paxml/configure.sh``; JAX-Toolbox's Paxml scripts set
    neither, and no other recipe turns double buffering off."""
    dgxc = {r.name for r in _development() if r.file == DGXC}
    assert len(dgxc) == 7
    assert _stating("scan_carry_copies") == dgxc


def test_only_the_gpt5b_rows_drop_out_layer_inputs() -> None:
    """``GPT5BBase.input_dropout_prob = 0.1``; ``GPT175BBase`` has none."""
    paxml = [r for r in _development() if r.file in PAXML_FILES]
    gpt5b = {r.name for r in paxml if r.arch.num_layers == 24 and r.arch.hidden_size == 4096}
    assert len(gpt5b) == 7
    assert _stating("layer_input_dropout") == gpt5b


def test_each_cost_adds_what_its_mechanism_prices() -> None:
    for run in (r for r in _development() if r.file in PAXML_FILES):
        pred = predict_run(run).prediction
        assert pred is not None
        perf = gpu_perf(run_design(run).compute.gpu, pred.plan.precision)
        dropout_s = input_dropout_s(run.arch, pred.plan, run.stack, perf, run.arch.num_layers)
        micro_batches = num_micro_batches(pred.plan)
        dropped_ms = added_ms(run, ("layer_input_dropout",))
        assert abs(dropped_ms - 1e3 * micro_batches * dropout_s) < 0.01, run.name
        copies_ms = added_ms(run, ("scan_carry_copies",))
        assert (copies_ms > 0.0) == (run.file == DGXC), run.name
        assert abs(added_ms(run, COSTS) - dropped_ms - copies_ms) < 0.05, run.name


def test_rows_without_the_costs_are_untouched() -> None:
    for run in [r for r in _development() if r.file not in PAXML_FILES][:40]:
        assert with_costs(run, ()).stack == run.stack
