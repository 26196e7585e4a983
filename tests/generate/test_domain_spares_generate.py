"""Slurm blocks and Kueue topology of a GB200 NVL72 pod holding in-rack spares."""

from __future__ import annotations

from clusterforge.design import plan
from clusterforge.generate.kubernetes.queues import kueue_objects, node_labels
from clusterforge.generate.layout import node_placements
from clusterforge.generate.slurm.files import slurm_files
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES


def _design(**fields: object):
    spec = load_spec(EXAMPLES / "gb200-nvl72-pod.yaml")
    return plan(spec.model_copy(update=fields))


def _files(design) -> dict[str, str]:
    return {f.path: f.content for f in slurm_files(design)}


def test_blocks_hold_the_rack_and_plan_jobs_on_16_trays():
    design = _design(spare_nodes_per_nvlink_domain=2)
    topology = _files(design)["slurm/topology.conf"]
    assert "BlockSizes=16" in topology.splitlines()
    blocks = [line for line in topology.splitlines() if line.startswith("BlockName=")]
    assert len(blocks) == 9
    placements = node_placements(design)
    for block in {p.nvlink_block for p in placements}:
        members = [p for p in placements if p.nvlink_block == block]
        assert len(members) == 18
        assert sum(p.spare for p in members) == 2  # the block's own hot spares


def test_a_pod_without_in_rack_spares_keeps_whole_blocks():
    topology = _files(_design())["slurm/topology.conf"]
    assert "BlockSizes=18" in topology.splitlines()


def test_kueue_sees_16_training_trays_in_each_nvlink_block():
    """The ResourceFlavor selects training nodes only, so each NVLink block offers the
    job 16 trays; the spares carry role=spare until an operator relabels one."""
    design = _design(spare_nodes_per_nvlink_domain=2)
    placements = node_placements(design)
    flavor = next(o for o in kueue_objects(design, placements) if o["kind"] == "ResourceFlavor")
    selector = flavor["spec"]["nodeLabels"]
    per_block: dict[str, int] = {}
    for p in placements:
        labels = node_labels(design, p)
        if all(labels.get(k) == v for k, v in selector.items()):
            per_block[p.nvlink_block or ""] = per_block.get(p.nvlink_block or "", 0) + 1
    assert set(per_block.values()) == {16}
    assert len(per_block) == 9
