"""Refusals that know their fix carry it as spec values, and the fix removes the refusal."""

from __future__ import annotations

import pytest

from clusterforge.design import plan
from clusterforge.errors import CapacityError, SpecError
from clusterforge.spec import parse_spec


def _refusal(data: dict) -> CapacityError | SpecError:
    with pytest.raises((CapacityError, SpecError)) as info:
        plan(parse_spec(data))
    return info.value


def _with(data: dict, fix: dict) -> dict:
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for path, value in fix.items():
        *sections, name = path.split(".")
        target = out
        for section in sections:
            target = target.setdefault(section, {})
        target[name] = value
    return out


@pytest.mark.parametrize(
    ("data", "first"),
    [
        ({"num_gpus": 72, "node": "gb200-nvl72-tray", "facility": {"cooling_available": ["air"]}},
         "facility.cooling_available"),
        ({"num_gpus": 72, "node": "gb200-nvl72-tray",
          "facility": {"cooling_available": ["direct-to-chip"]}}, "facility.max_rack_kw"),
        ({"num_gpus": 64, "node": "dgx-h100", "facility": {"max_rack_kw": 8}}, "facility.max_rack_kw"),
        ({"num_gpus": 1024, "node": "dgx-h100", "workload": {"model": "llama3-70b",
          "tensor_parallel": 8, "pipeline_parallel": 4, "global_batch": 1000}}, "workload.global_batch"),
        ({"num_gpus": 100_000, "node": "dgx-h100", "network": {"switch": "qm9700", "tiers": 3},
          "facility": {"racks_per_row": 40}}, "network.planes"),
    ],
)  # fmt: skip
def test_each_fix_removes_its_refusal(data, first):
    refusal = _refusal(data)
    assert first in refusal.fix, (str(refusal), refusal.fix)
    fixed = _with(data, refusal.fix)
    try:
        plan(parse_spec(fixed))
    except (CapacityError, SpecError) as later:  # another problem may remain: not this one
        assert str(later) != str(refusal)
