"""The error band ``predict`` ships: where the real value lies around a prediction, from the
signed errors of every validation run (calibration and held-out) that fits.

With ``error = predicted / published - 1`` the real value is ``predicted / (1 + error)``, so
the 90th percentile of the errors bounds the real value from below and the 10th from above.
"""

from __future__ import annotations

import statistics

import numpy as np

from validation.runs import Outcome

__all__ = ["Band", "band_of"]


class Band(dict[str, float]):
    """``low_fraction``, ``high_fraction``, ``num_runs`` and ``mape``, as stored in
    ``clusterforge/perf/data/uncertainty.toml`` (three decimals)."""


def band_of(outcomes: list[Outcome]) -> Band:
    """The band of ``outcomes`` (runs predicted not to fit count in ``num_runs`` only)."""
    errors = [o.error for o in outcomes if o.prediction is not None]
    p10, p90 = (float(np.percentile(errors, q)) for q in (10, 90))
    return Band(
        low_fraction=round(1.0 / (1.0 + p90) - 1.0, 3),
        high_fraction=round(1.0 / (1.0 + p10) - 1.0, 3),
        num_runs=len(outcomes),
        mape=round(statistics.fmean(abs(e) for e in errors), 3),
    )
