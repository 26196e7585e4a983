"""Network acceptance at full load: perftest (or a stand-in) between pairs of nodes whose
rails meet across the switch layers, with the ports' loss, error and congestion counters read
before and after each round.

- :mod:`.pairs`: which node meets which, round by round (all cross-leaf pairs for small
  clusters, shifted bisections for large ones);
- :mod:`.counters`: port counter kinds (InfiniBand sysfs, RoCE ``ethtool -S``, a plain Linux
  netdev), their increase over a round, loss and congestion;
- :mod:`.verdicts`: per-port verdicts from the workers' records, each port named with its
  cable from the design's cabling plan.
"""

from clusterforge.accept.fabric.counters import CounterKind, PortWindow, loss_of, port_window
from clusterforge.accept.fabric.pairs import Pair, fabric_rounds
from clusterforge.accept.fabric.verdicts import FabricRules, fabric_results

__all__ = [
    "CounterKind",
    "FabricRules",
    "Pair",
    "PortWindow",
    "fabric_results",
    "fabric_rounds",
    "loss_of",
    "port_window",
]
