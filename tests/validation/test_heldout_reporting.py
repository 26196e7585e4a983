"""The benchmarks never print a held-out row's figure: held-out runs are listed with the commit
that froze them and, with ``--heldout`` only, scored as a whole."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from validation.runs import load_runs
from validation.sets import read_lock

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
HELD = [r.name for r in load_runs() if r.subset == "heldout"]


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    monkeypatch.setattr(sys, "argv", ["validate_predict.py", *args])
    _module("validate_predict").main()
    return capsys.readouterr().out


@pytest.mark.skipif(not HELD, reason="no held-out run yet")
def test_held_out_runs_are_listed_with_their_commit_never_scored_per_row(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen = {e.id: e.commit for e in read_lock()}
    for args in ((), ("--heldout",)):
        out = _run(capsys, monkeypatch, *args)
        for name in HELD:
            lines = [line for line in out.splitlines() if name in line.split()]
            assert lines == [line for line in lines if f"frozen at {frozen[name][:12]}" in line]
            assert all("%" not in line for line in lines), name
        summaries = [line for line in out.splitlines() if line.startswith("heldout ")]
        assert bool(summaries) == bool(args), args


@pytest.mark.skipif(not HELD, reason="no held-out run yet")
def test_step_breakdown_refuses_held_out_runs() -> None:
    breakdown = _module("step_breakdown")
    with pytest.raises(SystemExit, match="held-out runs are not printed"):
        breakdown.selected_runs([HELD[0]])


def test_step_breakdown_defaults_to_development_torchtitan_nd_runs() -> None:
    breakdown = _module("step_breakdown")
    runs = breakdown.selected_runs([])
    assert runs, "the torchtitan fsdp-nd development runs"
    assert all(r.subset == "development" and r.stack.name == "torchtitan" for r in runs)
    lines = breakdown.describe(runs[0])
    assert any("per layer and micro-batch" in line for line in lines)
