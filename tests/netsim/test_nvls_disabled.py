"""All-reduce with NVLink SHARP switched off (``NCCL_NVLS_ENABLE=0``).

With the variable at 0, ``ncclNvlsInit`` (``src/transport/nvls.cc``) leaves ``nvlsSupport``
at 0, so ``updateCollCostTable`` (``src/enqueue.cc``) skips NVLS and NVLS-Tree and NCCL's
tuner weighs the other algorithms only (NVIDIA/nccl v2.26.2-1).  The 20-rack GB200 NVL72
table of coreweave/nccl-tests was measured that way (its jobs set the variable since
commit a736384, 2025-04-14; the table came with commit bee97e7, 2025-05-05)."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.errors import SimulationError
from clusterforge.netsim import FabricGraph, build_fabric_graph, simulate_collective
from clusterforge.spec import parse_spec

GIB = 2**30


def _racks(racks: int) -> FabricGraph:
    return build_fabric_graph(
        plan(
            parse_spec(
                {
                    "num_gpus": 72 * racks,
                    "node": "gb200-nvl72-tray",
                    "spare_fraction": 0,
                    "facility": {"max_rack_kw": 140},
                    "workload": {"tensor_parallel": 8, "global_batch": 72 * racks},
                }
            )
        )
    )


@pytest.fixture(scope="module")
def two_racks() -> FabricGraph:
    return _racks(2)


def test_nvls_off_leaves_ring_and_tree_across_racks(two_racks):
    ranks = np.arange(144)[None, :]
    on = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks)
    off = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks, nvls=False)
    assert on.algorithm == "nvls_tree"
    assert off.algorithm in ("ring", "tree")


def test_nvls_off_inside_one_rack_runs_ring(two_racks):
    ranks = np.arange(72)[None, :]
    on = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks)
    off = simulate_collective(two_racks, "all_reduce", 8 * GIB, ranks, nvls=False)
    assert on.algorithm == "nvls"
    assert off.algorithm == "ring"


@pytest.mark.parametrize("algorithm", ["nvls", "nvls_tree"])
def test_forcing_nvls_while_it_is_off_is_refused(two_racks, algorithm):
    ranks = np.arange(144)[None, :]
    with pytest.raises(SimulationError, match="NCCL_NVLS_ENABLE"):
        simulate_collective(two_racks, "all_reduce", GIB, ranks, algorithm=algorithm, nvls=False)
