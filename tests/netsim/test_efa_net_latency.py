"""``network.efa_instance``: aws-ofi-nccl's reported network latency (``props->latency``,
``src/platform-aws.cpp``) is NCCL's ``latencyInter``, added to every network step of its
latency model, twice for Simple (NVIDIA/nccl ``src/graph/tuning.cc``)."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from importlib import resources
from typing import Any, get_args

import numpy as np
import pytest

from clusterforge.catalog import load_catalog
from clusterforge.design.fabric.network import EFA_INSTANCE_GPUS
from clusterforge.errors import CapacityError, SimulationError, SpecError
from clusterforge.netsim import build_fabric_graph, simulate_collective
from clusterforge.netsim.latency import nccl_latency_s
from clusterforge.netsim.ofi_tuner import EFA_INSTANCES, net_latency_s
from clusterforge.netsim.tuner import TuningContext
from clusterforge.spec import parse_spec
from clusterforge.spec.sections import EfaInstance
from clusterforge.topology import FabricGraph
from tests.netsim.designs import make_design


def _h100(nodes: int, **network: Any) -> FabricGraph:
    design = make_design(
        num_gpus=8 * nodes,
        node="dgx-h100",
        network={"fabric": "roce", "switch": "sn5600", **network},
        workload={"tensor_parallel": 8, "global_batch": 8 * nodes},
    )
    return build_fabric_graph(design)


def test_the_plugin_table_and_the_spec_name_the_same_instances():
    text = resources.files("clusterforge.netsim").joinpath("data/ofi_tuner.toml").read_text()
    assert set(tomllib.loads(text)["net_latency_us"]) == set(EFA_INSTANCES)
    assert net_latency_s("p5.48xlarge") == pytest.approx(75e-6)
    assert net_latency_s("p6-b200.48xlarge") == pytest.approx(35e-6)
    assert net_latency_s(None) == 0.0
    with pytest.raises(SimulationError, match=r"did you mean 'p5\.48xlarge'"):
        net_latency_s("p5.48xlarg")


def test_each_network_step_pays_the_plugin_latency_twice_for_simple():
    ranks = np.arange(16)[None, :]
    rdma = simulate_collective(_h100(2), "all_reduce", 8192, ranks, algorithm="tree")
    efa = simulate_collective(
        _h100(2, efa_instance="p5.48xlarge"), "all_reduce", 8192, ranks, algorithm="tree"
    )
    # two network steps of a 2-node tree, 75 us each in place of the graph's path latency
    assert efa.time_s - rdma.time_s == pytest.approx(150e-6, abs=3e-6)

    ctx = TuningContext("all_reduce", 16, 2, "hopper", "nvlink", 1e-6)
    efa_ctx = replace(ctx, net_plugin_latency_s=75e-6)
    for proto, steps in (("ll", 2), ("simple", 4)):
        extra = nccl_latency_s("tree", proto, efa_ctx) - nccl_latency_s("tree", proto, ctx)
        assert extra == pytest.approx(steps * 74e-6)


def test_one_node_calls_do_not_move():
    ranks = np.arange(8)[None, :]
    rdma = simulate_collective(_h100(1), "all_reduce", 2**20, ranks)
    efa = simulate_collective(_h100(1, efa_instance="p5.48xlarge"), "all_reduce", 2**20, ranks)
    assert efa.time_s == rdma.time_s


def test_a_bad_instance_names_the_field_and_the_choices():
    with pytest.raises(SpecError) as info:
        parse_spec({"num_gpus": 16, "node": "dgx-h100", "network": {"efa_instance": "p5"}})
    assert "network.efa_instance" in str(info.value)
    assert "'p5.48xlarge'" in str(info.value)


def test_each_instance_names_a_catalog_gpu_and_another_gpu_is_refused():
    catalog = load_catalog()
    assert set(EFA_INSTANCE_GPUS) == set(get_args(EfaInstance))
    assert set(EFA_INSTANCE_GPUS.values()) <= {g.id for g in catalog.gpus}
    with pytest.raises(CapacityError, match=r"use p5e\.48xlarge or p5en\.48xlarge"):
        make_design(
            num_gpus=16,
            node="dgx-h200",
            network={"fabric": "roce", "switch": "sn5600", "efa_instance": "p5.48xlarge"},
            workload={"tensor_parallel": 8, "global_batch": 16},
        )
