"""A cluster's own measurements as a calibration of the performance model.

Reads a JSON file: either ``clusterforge accept``'s ``report.json`` (translated by
:func:`clusterforge.accept.calibration.calibration_from_report`) or the plain calibration
mapping :func:`clusterforge.perf.calibration_from_dict` documents.
"""

from __future__ import annotations

import json
from pathlib import Path

from clusterforge.accept.calibration import calibration_from_report, is_accept_report
from clusterforge.errors import ClusterforgeError, SpecError
from clusterforge.perf import Calibration, calibration_from_dict

__all__ = ["load_calibration"]

MAX_CALIBRATION_BYTES = 64 * 2**20  # an acceptance report with its collective sweep fits


def load_calibration(path: Path) -> Calibration:
    """The calibration in ``path`` (raises a :class:`ClusterforgeError` naming the problem)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CALIBRATION_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"calibration {path}: cannot read it ({exc.strerror})") from None
    if len(data) > MAX_CALIBRATION_BYTES:
        raise SpecError(f"calibration {path}: larger than 64 MiB; give the accept report.json")
    try:
        raw = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(
            f"calibration {path}: not JSON ({exc}); give clusterforge accept's report.json"
        ) from None
    if not isinstance(raw, dict):
        raise SpecError(
            f"calibration {path}: the top level is {type(raw).__name__}; give a JSON object "
            "(clusterforge accept's report.json)"
        )
    try:
        figures = calibration_from_report(raw) if is_accept_report(raw) else raw
        return calibration_from_dict(figures, source=str(path))
    except ClusterforgeError as exc:
        raise type(exc)(f"{path}: {exc}") from None
