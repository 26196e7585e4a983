"""User errors are SimulationErrors that name the field and the fix (never a CLI flag)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.errors import SimulationError
from clusterforge.netsim import simulate_collective
from tests.netsim.designs import single_node


@pytest.fixture(scope="module")
def graph():
    return single_node("dgx-h100")[1]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"collective": "allreduce"}, "did you mean 'all_reduce'"),
        ({"routing": "spray"}, "routing"),
        ({"algorithm": "nvlsx"}, "algorithm: unknown"),
        ({"protocol": "ll64"}, "protocol: unknown"),
        ({"num_qps": 0}, "num_qps"),
        ({"num_qps": 10_000}, "1 to 128"),  # NCCL's own limit; memory grows with the count
        ({"size_bytes": 0}, "size"),
        ({"size_bytes": float("inf")}, "size"),
        ({"groups": np.array([[0, 0]])}, "twice"),
        ({"groups": np.array([[0, 99]])}, "outside"),
        ({"groups": np.array([[0.5, 1.5]])}, "integer"),
    ],
)
def test_bad_inputs(graph, kwargs, match):
    args = {"collective": "all_reduce", "size_bytes": 2**20, "groups": np.arange(8)[None]}
    args.update(kwargs)
    with pytest.raises(SimulationError, match=match):
        simulate_collective(graph, args.pop("collective"), args.pop("size_bytes"), **args)


def test_algorithm_that_does_not_fit_the_hardware_or_the_collective():
    _, a100 = single_node("dgx-a100")
    with pytest.raises(SimulationError, match="NVLink SHARP"):
        simulate_collective(a100, "all_reduce", 2**20, np.arange(8)[None], algorithm="nvls")
    with pytest.raises(SimulationError, match="tree"):
        simulate_collective(a100, "all_reduce", 2**20, np.arange(8)[None], algorithm="tree")
    with pytest.raises(SimulationError, match="all_gather"):
        simulate_collective(a100, "all_gather", 2**20, np.arange(8)[None], algorithm="direct")


def test_protocol_that_nccl_does_not_run_with_the_algorithm(graph):
    with pytest.raises(SimulationError, match="does not run nvls with ll"):
        simulate_collective(
            graph, "all_reduce", 2**20, np.arange(8)[None], algorithm="nvls", protocol="ll"
        )


def test_a_one_gpu_group_communicates_nothing(graph):
    res = simulate_collective(graph, "all_reduce", 2**20, np.array([[3]]))
    assert res.time_s == 0 and res.busbw_gbyte_per_s == 0 and res.algbw_gbyte_per_s == 0


def test_queue_pairs_times_flows_are_bounded_before_memory_grows():
    from clusterforge.netsim import build_fabric_graph, groups_for
    from tests.netsim.designs import make_design

    design = make_design()
    graph = build_fabric_graph(design)
    groups = groups_for(design, "all")
    with pytest.raises(SimulationError, match="hashed paths"):
        simulate_collective(graph, "all_to_all", 2**30, groups, routing="ecmp", num_qps=128)
