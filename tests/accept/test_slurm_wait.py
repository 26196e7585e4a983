"""``SlurmLauncher`` waiting on ``sbatch --wait``: a job Slurm holds (a failed prolog requeues
it held) or one past its time is cancelled and refused at once, with where to look.  Stand-in
``sbatch``/``squeue``/``scancel`` scripts on PATH: no Slurm needed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from clusterforge.accept import launch
from clusterforge.accept.launch import SlurmLauncher, Step
from clusterforge.errors import AcceptError


def _stand_ins(bin_dir: Path, squeue_says: str) -> Path:
    """sbatch that submits job 4242 and waits for ever; squeue that reports ``squeue_says``;
    scancel that records its arguments."""
    bin_dir.mkdir()
    cancelled = bin_dir / "cancelled"
    scripts = {
        "sbatch": "#!/bin/sh\necho 'sbatch: warning: a note first' >&2\necho 4242\nexec sleep 60\n",
        "squeue": f"#!/bin/sh\necho '{squeue_says}'\n",
        "scancel": f'#!/bin/sh\necho "$@" >> {cancelled}\n',
    }
    for name, text in scripts.items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)
    return cancelled


@pytest.fixture
def fast_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "POLL_S", 0.1)
    monkeypatch.setattr(launch, "QUEUE_MARGIN_S", 0.0)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, squeue_says: str, timeout_s: float):
    cancelled = _stand_ins(tmp_path / "bin", squeue_says)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    step = Step("nccl", ("--test", "nccl"), ("n1", "n2"), timeout_s=timeout_s)
    start = time.monotonic()
    with pytest.raises(AcceptError) as err:
        SlurmLauncher(tmp_path / "work").run(step)
    return str(err.value), time.monotonic() - start, cancelled.read_text().split()


@pytest.mark.usefixtures("fast_poll")
def test_a_job_held_after_a_failed_prolog_is_cancelled_and_named(tmp_path, monkeypatch):
    said, took_s, cancelled = _run(
        tmp_path, monkeypatch, "PENDING launch_failed_requeued_held", timeout_s=900
    )
    assert "job 4242 is held (launch_failed_requeued_held), cancelled" in said
    assert "sinfo -R" in said and "scontrol show job 4242" in said
    assert cancelled == ["4242"]
    assert took_s < 10  # not the step's 900 s


@pytest.mark.usefixtures("fast_poll")
def test_a_job_waiting_for_resources_runs_to_its_timeout_then_is_cancelled(tmp_path, monkeypatch):
    said, took_s, cancelled = _run(tmp_path, monkeypatch, "PENDING Resources", timeout_s=1)
    assert "job 4242 did not finish within 1 s, cancelled" in said
    assert cancelled == ["4242"]
    assert took_s < 10
