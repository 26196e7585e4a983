"""Sizing: from a :class:`ClusterSpec` to a complete :class:`Design` (pure functions).

``plan(spec)`` runs the stages in order: compute → storage → compute fabric → racks →
support fabrics → cabling → power → cooling → cost → findings.
"""

from clusterforge.design.plan import Design, plan

__all__ = ["Design", "plan"]
