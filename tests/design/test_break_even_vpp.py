"""The break-even re-plans of an interleaved pipeline spec: pp and vpp reset together."""

from __future__ import annotations

from pathlib import Path

import yaml

from clusterforge.design import plan
from clusterforge.job import JobLayout
from clusterforge.spec import ClusterSpec, parse_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "colo-512-h100.yaml"


def _interleaved_spec_that_rents() -> ClusterSpec:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["workload"].update({"pipeline_parallel": 4, "virtual_pipeline_stages": 2})
    data["economics"]["utilization"] = 0.2  # renting wins: the break-even sizes are planned
    return parse_spec(data, source=str(EXAMPLE))


def test_an_interleaved_pipeline_spec_plans_with_its_break_even_size() -> None:
    spec = _interleaved_spec_that_rents()
    design = plan(spec)
    assert design.job == JobLayout(tp=8, pp=4, dp=16, vpp=2)
    break_even = getattr(design.cost, "break_even_gpus", None)
    assert break_even is None or break_even >= 1


def test_data_parallel_workload_has_no_interleaving_left() -> None:
    workload = _interleaved_spec_that_rents().workload
    assert workload is not None
    sized = workload.data_parallel_at(1024)
    assert (sized.tensor_parallel, sized.pipeline_parallel, sized.virtual_pipeline_stages) == (
        1,
        1,
        1,
    )
    assert (sized.data_parallel, sized.global_batch, sized.micro_batch) == (1024, 1024, 1)
