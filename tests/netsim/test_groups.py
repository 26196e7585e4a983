"""Megatron rank order and placements of groups_for."""

from __future__ import annotations

import numpy as np
import pytest

from clusterforge.errors import SimulationError
from clusterforge.job import GROUP_KINDS, JobLayout
from clusterforge.netsim import design_job, groups_for
from tests.netsim.designs import make_design


@pytest.fixture(scope="module")
def design():
    return make_design(
        workload={"tensor_parallel": 8, "pipeline_parallel": 4, "global_batch": 1024}
    )


def test_tp_groups_are_adjacent_ranks_inside_one_node(design):
    tp = groups_for(design, "tp")
    assert tp.shape == (64, 8)
    assert np.all(tp // 8 == tp[:, :1] // 8)


def test_dp_groups_stride_by_tp_and_pp_groups_by_tp_times_dp(design):
    dp = groups_for(design, "dp")
    pp = groups_for(design, "pp")
    assert dp.shape == (32, 16) and pp.shape == (128, 4)
    assert np.all(np.diff(dp, axis=1) == 8)
    assert np.all(np.diff(pp, axis=1) == 8 * 16)


def test_every_gpu_is_in_exactly_one_group_of_each_kind(design):
    for kind in ("tp", "dp", "pp"):
        assert np.array_equal(np.sort(groups_for(design, kind).ravel()), np.arange(512))


def test_fragmented_placement_scatters_nodes_but_keeps_tp_inside_a_node():
    design = make_design(num_gpus=512)
    big = make_design(num_gpus=2048, workload={"tensor_parallel": 8, "global_batch": 1024})
    half = design_job(big, 512)
    packed = groups_for(big, "dp", layout=half)
    frag = groups_for(big, "dp", layout=half, placement="fragmented", seed=4)
    assert packed.max() < 512
    assert frag.max() >= 512  # uses nodes beyond the first 64
    tp = groups_for(big, "tp", layout=half, placement="fragmented", seed=4)
    assert np.all(tp // 8 == tp[:, :1] // 8)
    assert groups_for(design, "all").shape == (1, 512)


def test_every_group_kind_of_the_job_layout_is_simulated(design):
    for kind in GROUP_KINDS:
        assert np.array_equal(groups_for(design, kind), design.job.groups(kind)), kind
    layout = JobLayout(tp=8, dp=8, ep=4)
    assert np.array_equal(groups_for(design, "ep", layout=layout), layout.groups("ep"))


def test_bad_requests_name_the_field():
    design = make_design()
    with pytest.raises(SimulationError, match="groups: unknown"):
        groups_for(design, "dpep")
    with pytest.raises(SimulationError, match="placement: unknown"):
        groups_for(design, "dp", placement="random")
    with pytest.raises(SimulationError, match="num_gpus"):
        design_job(design, 100)
    with pytest.raises(SimulationError, match="num_gpus"):
        groups_for(design, "all", layout=design_job(design, 4096, "all"))
    assert groups_for(design, "all", layout=design_job(design, 100, "all")).shape == (1, 100)


def test_negative_seed_is_a_clear_error_not_a_numpy_traceback():
    with pytest.raises(SimulationError, match="seed: -5"):
        groups_for(make_design(), "dp", placement="fragmented", seed=-5)
