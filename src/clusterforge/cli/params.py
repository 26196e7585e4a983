"""Command-line value types shared by the commands."""

from __future__ import annotations

import math
from typing import Any

import click

__all__ = ["FiniteFloat", "FiniteFloatRange"]


class FiniteFloatRange(click.FloatRange):
    """click's ``FloatRange`` that also refuses ``nan`` and ``inf``: a NaN passes every
    comparison click makes, and an infinite count of days or seconds has no meaning."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


FiniteFloat = FiniteFloatRange()
