"""clusterforge: design, simulate, generate and operate GPU clusters for AI training.

The library is organised along the pipeline: ``catalog`` and ``spec`` at the
bottom, then ``design``, ``topology``, ``netsim``, ``perf``, ``generate``, ``ops``, ``report``
and the thin ``cli`` on top.
"""

from clusterforge.errors import ClusterforgeError

__all__ = ["ClusterforgeError", "__version__"]
__version__ = "0.1.0"
