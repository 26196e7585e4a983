"""The one error hierarchy of clusterforge.

Every error a user can cause derives from :class:`ClusterforgeError`; the CLI catches that
root once, prints one red line and exits 1.  Anything else is a bug and keeps its traceback.

::

    ClusterforgeError
    ├── SpecError          the user's YAML spec or a command-line value is invalid
    ├── CatalogError       an unknown catalog id, or a catalog data file is malformed
    ├── CapacityError      the requirement cannot be built (a node exceeds the rack cap, a
    │                      topology cannot reach the endpoint count with the chosen switch)
    ├── PlanError          a parallelism / training plan is inconsistent
    ├── SimulationError    a simulation request does not fit the design
    ├── GenerateError      a generator cannot render a file from the design
    ├── CheckError         a health check could not run (e.g. NVML missing)
    ├── AcceptError        an acceptance test could not run, or its output cannot be read
    └── AdapterError       an optional dependency or external program is missing or failed
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "AcceptError",
    "AdapterError",
    "CapacityError",
    "CatalogError",
    "CheckError",
    "ClusterforgeError",
    "GenerateError",
    "PlanError",
    "SimulationError",
    "SpecError",
    "did_you_mean",
]


class ClusterforgeError(Exception):
    """Root of every error a user can cause; its message is one line for the terminal.

    ``fix``, where the raiser knows one, is the change that removes this error, as spec field
    paths and their new values (``{"facility.max_rack_kw": 132}``): the planner offers it as
    a one-click fix, and applies it tentatively to find the errors this one hides."""

    def __init__(self, *args: object, fix: Mapping[str, Any] | None = None) -> None:
        super().__init__(*args)
        self.fix: dict[str, Any] = dict(fix or {})


class SpecError(ClusterforgeError):
    """The spec (YAML or CLI values) is invalid; the message names the field and the fix."""


class CatalogError(ClusterforgeError):
    """An id is not in the catalog, or a catalog file is malformed."""


class CapacityError(ClusterforgeError):
    """The requirement cannot be met with the chosen parts or facility."""


class PlanError(ClusterforgeError):
    """A training/parallelism plan is inconsistent with the model or the cluster."""


class SimulationError(ClusterforgeError):
    """A simulation request does not fit the design."""


class GenerateError(ClusterforgeError):
    """A generator cannot produce a file from the design."""


class CheckError(ClusterforgeError):
    """A health check could not be run at all."""


class AcceptError(ClusterforgeError):
    """An acceptance test could not run, or a tool's output cannot be read."""


class AdapterError(ClusterforgeError):
    """An optional dependency or external program is missing or failed."""


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """Return a suffix like " (did you mean 'h100-sxm'?)" or "" when nothing is close."""
    close = difflib.get_close_matches(value.lower(), [c.lower() for c in choices], n=3, cutoff=0.5)
    if not close:
        return ""
    originals = {c.lower(): c for c in choices}
    return " (did you mean " + " or ".join(repr(originals[c]) for c in close) + "?)"
