"""Validation fixtures: the communication model used for the published runs.

The published clusters (Selene DGX A100 with 8x HDR per node; DGX H100 with 8x 400G) are
non-blocking rail-optimised fat-trees, so an ideal two-tier fabric stands in for them (the
same double as tests/perf; the seed-design tests use the real simulator).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "perf"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
