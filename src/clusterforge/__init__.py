"""clusterforge: design, simulate, generate and operate GPU clusters for AI training.

The library is organised along the pipeline, imports flowing down: ``catalog``, ``job`` and
``spec`` at the bottom, then ``design``, ``topology``, ``netsim``, ``perf``, ``goodput``,
``generate``, ``ops``, ``accept``, ``diagnose``, ``rehearse``, the assessment layer ``assess``
(the one door to the models for what is shown), and ``report``, ``web`` and the thin ``cli``
on top (the README's architecture section).
"""

from clusterforge.errors import ClusterforgeError

__all__ = ["ClusterforgeError", "__version__"]
__version__ = "0.1.0"
