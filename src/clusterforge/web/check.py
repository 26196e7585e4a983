"""Every problem of a submitted form at once, each at its field with the change that fixes it.

Validation and planning stop at the first problem, so a change that breaks several things
(a liquid-cooled rack-scale node on an air-cooled 15 kW hall: the cooling, then the rack
power) would surface one error per round trip. Here each problem that names its fix
(:attr:`clusterforge.errors.ClusterforgeError.fix`) is recorded, its fix applied to a trial
copy of the form, and the form checked again, until it plans or a problem has no known fix.
The user's form is never changed: the fixes come back to be applied with one click each, or
all together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from clusterforge.design import Design, plan
from clusterforge.errors import ClusterforgeError
from clusterforge.spec import ClusterSpec
from clusterforge.web.form import FormErrors, form_sections, spec_from_form

__all__ = ["FormCheck", "check_form"]

MAX_ROUNDS = 8  # problems found behind one another; a form with more shows the first eight
_PATH = re.compile(r"([a-z_]+(?:\.[a-z_]+)*): (.*)", flags=re.S)


@dataclass
class FormCheck:
    """A checked form: its spec and design when it plans, else every problem found."""

    spec: ClusterSpec | None = None
    design: Design | None = None
    errors: dict[str, str] = field(default_factory=dict)
    fixes: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.design is not None and not self.errors


def _field_paths() -> set[str]:
    return {f.path for s in form_sections(None) for f in s.fields}


def _locate(path: str, message: str, fix: dict[str, Any], paths: set[str]) -> tuple[str, str]:
    """Where an error belongs: its field; else the field its message starts with; else the
    field its fix changes ("workload: global_batch ..." -> workload.global_batch); else the
    whole form ('')."""
    if path in paths:
        return path, message
    full = f"{path}: {message}" if path else message
    match = _PATH.fullmatch(full)
    if match and match[1] in paths:
        return match[1], match[2]
    text = match[2] if match else full
    return next(((p, text) for p in fix if p in paths), ("", full))


def check_form(values: dict[str, Any], enabled: dict[str, bool]) -> FormCheck:
    """Validate and plan the form; on a problem with a known fix, apply the fix to a trial
    copy and look for the next problem (at most :data:`MAX_ROUNDS`)."""
    paths = _field_paths()
    trial = dict(values)
    check = FormCheck()
    for _ in range(MAX_ROUNDS):
        try:
            spec = spec_from_form(trial, enabled)
            design = plan(spec)
        except FormErrors as exc:
            found = [_locate(p, m, exc.fix, paths) for p, m in exc.errors.items()]
            fix = exc.fix if len(found) == 1 else {}
        except ClusterforgeError as exc:
            found = [_locate("", str(exc), exc.fix, paths)]
            fix = exc.fix
        else:
            if not check.errors:
                check.spec, check.design = spec, design
            return check
        for where, text in found:
            check.errors.setdefault(where, text)
        if not fix or all(trial.get(k) == v for k, v in fix.items()):
            return check
        check.fixes.setdefault(found[0][0], fix)
        trial.update(fix)
    return check
