"""Generators: Slurm, Kubernetes, monitoring and inventory files from a :class:`Design`.

``render(design, targets)`` returns the files in memory; ``write_files(files, out)`` writes
them atomically.  Each generator is a pure function ``Design -> list[GeneratedFile]``.
"""

from clusterforge.generate.bundle import TARGETS, parse_targets, render, write_files
from clusterforge.generate.common import GeneratedFile

__all__ = ["TARGETS", "GeneratedFile", "parse_targets", "render", "write_files"]
