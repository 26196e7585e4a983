"""How far a prediction may be from the real run: the spread of the model on published runs.

``benchmarks/validate_predict.py --write`` predicts every published run of
``validation/`` and stores the 10th and 90th percentile of the signed errors in
``data/uncertainty.toml``. Since ``real = predicted / (1 + error)``, the real value of a
new prediction lies, for 80 % of those runs, in ``predicted x (1 + low .. 1 + high)``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Band", "validation_band"]


@dataclass(frozen=True)
class Band:
    """Range of the real value relative to a prediction, e.g. -0.09 .. +0.06."""

    low_fraction: float
    high_fraction: float
    num_runs: int
    mape: float

    def range_of(self, value: float) -> tuple[float, float]:
        """(low, high) of the real value around a predicted ``value``."""
        return value * (1 + self.low_fraction), value * (1 + self.high_fraction)

    def describe(self, value: float) -> str:
        """``"1,008 (-9% .. +6%)"``: the value and its range."""
        return f"{value:,.0f} ({self.low_fraction:+.0%} .. {self.high_fraction:+.0%})"


@cache
def validation_band() -> Band:
    """The band measured on the validation runs (``data/uncertainty.toml``)."""
    text = resources.files("clusterforge.perf").joinpath("data", "uncertainty.toml").read_text()
    raw = tomllib.loads(text)
    return Band(
        low_fraction=float(raw["low_fraction"]),
        high_fraction=float(raw["high_fraction"]),
        num_runs=int(raw["num_runs"]),
        mape=float(raw["mape"]),
    )
