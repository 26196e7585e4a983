"""A workload resized to pure data parallelism (the break-even re-plans): every model-parallel
degree, the interleaved schedule and the stage split reset together."""

from __future__ import annotations

from pathlib import Path

import yaml

from clusterforge.spec import ClusterSpec, parse_spec

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "colo-512-h100.yaml"


def _interleaved_spec_that_rents() -> ClusterSpec:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["workload"].update({"pipeline_parallel": 4, "virtual_pipeline_stages": 2})
    data["economics"]["utilization"] = 0.2  # renting wins: the break-even sizes are planned
    return parse_spec(data, source=str(EXAMPLE))


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
