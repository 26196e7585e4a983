"""Flow-level network simulator: routing, max-min rate allocation, NCCL-style collectives.

::

    from clusterforge.netsim import build_fabric_graph, groups_for, simulate_collective
    graph = build_fabric_graph(design)                      # once per design
    res = simulate_collective(graph, "all_reduce", 2**30, groups_for(design, "dp"))
    res.busbw_gbyte_per_s, res.limiting_link
"""

from clusterforge.busbw import bus_factor
from clusterforge.netsim.groups import design_job, groups_for
from clusterforge.netsim.model import COLLECTIVES
from clusterforge.netsim.result import ClassUtilization, CollectiveResult, LinkLoad
from clusterforge.netsim.routing import ROUTINGS
from clusterforge.netsim.simulate import simulate_collective
from clusterforge.netsim.vocab import ALGORITHMS, PLACEMENTS, PROTOCOLS
from clusterforge.topology import FabricGraph, build_fabric_graph

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "PLACEMENTS",
    "PROTOCOLS",
    "ROUTINGS",
    "ClassUtilization",
    "CollectiveResult",
    "FabricGraph",
    "LinkLoad",
    "build_fabric_graph",
    "bus_factor",
    "design_job",
    "groups_for",
    "simulate_collective",
]
