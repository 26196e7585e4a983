"""A finding of a design rule: id, severity, message, the numbers that triggered it and a fix.

A rule is a function ``Design -> list[Finding]``; the rules are listed in
:data:`clusterforge.design.rules.RULES`. A :class:`~clusterforge.design.result.Design` carries
its findings, so this module knows nothing of the design.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator

__all__ = ["Finding", "Severity"]

Severity = Literal["error", "warning", "info"]


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    severity: Severity
    message: str
    numbers: dict[str, float | int | str]
    fix: str

    @field_validator("numbers")
    @classmethod
    def _readable(cls, numbers: dict[str, float | int | str]) -> dict[str, float | int | str]:
        """Floats keep 6 significant digits: 9.9, not 9.899999999999999 (binary rounding)."""
        return {k: float(f"{v:.6g}") if isinstance(v, float) else v for k, v in numbers.items()}
