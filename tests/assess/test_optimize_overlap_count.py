"""``optimize``'s count of plans refused under the EP overlap is the plan search's own count
at the same sizes (the same candidates, the same rule), and zero without the overlap."""

from __future__ import annotations

from clusterforge.assess.optimize.bounds import _bound_base, overlap_refusals
from clusterforge.catalog import load_catalog
from clusterforge.perf import resolve_model, search, workload_stack
from clusterforge.perf.optimizer_offload import host_memory
from clusterforge.perf.search_cache import FreeComm
from clusterforge.spec import WorkloadSpec

JOB = WorkloadSpec(
    model="mixtral-8x7b", tokens_b=10, global_batch=256, expert_parallel_overlap=True
)


def test_the_optimize_count_is_the_searches_count() -> None:
    catalog = load_catalog()
    node = catalog.nodes["dgx-h100"]
    arch, stack = resolve_model(JOB, catalog), workload_stack(JOB)
    sizes = [("dgx-h100", 16), ("dgx-h100", 32)]
    searched = sum(
        search(
            arch,
            _bound_base(JOB, n, arch),
            catalog.gpus[node.gpu],
            FreeComm(),
            node.nvlink_domain_gpus,
            top=1,
            stack=stack,
            host=host_memory(catalog, node),
        ).num_refused
        for _, n in sizes
    )
    assert overlap_refusals(JOB, sizes, catalog) == searched > 0
    off = JOB.model_copy(update={"expert_parallel_overlap": False})
    assert overlap_refusals(off, sizes, catalog) == 0
