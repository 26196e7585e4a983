"""Names and values from the spec cannot reach a shell: every value a ``.sh`` / ``.sbatch``
template places is a checked name, a number, a constant or ``shlex``-quoted.

Three proofs: a cluster name with shell metacharacters stops every generator; a static audit
of every script template's placeholders against the table below; and the rendered scripts,
fed hostile values where quoting is the defence, run under ``sh`` without running them.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import jinja2
import jinja2.meta
import pytest

import clusterforge.generate as generate
import clusterforge.generate.slurm.files as slurm
import clusterforge.generate.slurm.scripts as slurm_scripts
from clusterforge.design import Design
from clusterforge.errors import GenerateError
from clusterforge.generate import TARGETS, render
from clusterforge.generate.training.launch import launch_plan

TEMPLATES = Path(generate.__file__).parent / "templates"
HOSTILE = ["lab;reboot", "lab$(id)", "lab`id`", "lab\nreboot", "lab x", "lab'x", 'lab"x', "lab*"]
EVIL = "x'; touch PWNED; $(touch PWNED2) `touch PWNED3` \"\n"

# Every placeholder of a script template, and why it is safe there.
SCRIPT_VALUES = {
    "cluster": "checked_name (comment line)",
    "hook": "constant",
    "consequence": "constant (comment line)",
    "clusterforge_path": "shlex.quote",
    "spec_path": "shlex.quote",
    "script_name": "constant",
    "job_name": "checked_name",
    "partition": "constant",
    "num_nodes": "int",
    "gpus_per_node": "int",
    "num_gpus": "int",
    "parallelism": "ints (comment line)",
    "gres_type": "gres_type() checks [a-z0-9]",
    "num_leaf_groups": "int or None (the line is left out)",
    "fabric": "checked_name",
    "nccl_env": "constant names, shlex.quote values",
    "rendezvous_port": "int",
    "train_args": "shlex.quote",
    "lines": "checked_name node + checked_label_value labels, in a quoted here-document",
    "notes": "constants, ints and a checked_name node id (comment lines)",
    "nodes_config": "constant",
    "channel_device": "constant",
    "channel_dir": "constant",
    "channel_dir_mode": "constant",
    "channel_mode": "constant",
    "munge_key": "constant path",
    "slurmdbd_conf": "constant path",
    "domains": "checked_name block names and hostlist() of checked names, in a quoted "
    "here-document",
}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_cluster_names_stop_every_generator(
    target: str, bad: str, lab_design: Design
) -> None:
    """The spec validates ``name`` as [a-z0-9-]; a design built around that check (here
    with model_copy) is stopped again by each generator before any file is written."""
    design = lab_design.model_copy(
        update={"spec": lab_design.spec.model_copy(update={"name": bad})}
    )
    with pytest.raises(GenerateError, match="not a valid"):
        render(design, [target])


def _script_templates() -> list[Path]:
    return sorted(p for p in TEMPLATES.rglob("*.j2") if p.name.endswith((".sh.j2", ".sbatch.j2")))


@pytest.mark.parametrize("template", _script_templates(), ids=lambda p: p.name)
def test_every_script_placeholder_is_accounted_for(template: Path) -> None:
    env = jinja2.Environment()
    names = jinja2.meta.find_undeclared_variables(env.parse(template.read_text()))
    assert names <= set(SCRIPT_VALUES), names - set(SCRIPT_VALUES)


def _run(script: Path, cwd: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": path,
        "SLURM_JOB_NODELIST": "gpu-0001",
        "SLURM_NNODES": "1",
        "SLURM_JOB_ID": "1",
        "SLURMD_NODENAME": "gpu-0001",
    }
    return subprocess.run(
        ["bash", str(script)], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def _fake(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_quoted_values_reach_programs_as_literal_words(
    lab_design: Design, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hostile paths, NCCL values and training arguments arrive as single literal words:
    no command runs, no file appears."""
    evil_path = str(tmp_path / "bin" / EVIL.strip().replace("\n", ""))
    monkeypatch.setattr(slurm_scripts, "CLUSTERFORGE_PATH", evil_path)
    monkeypatch.setattr(slurm_scripts, "SPEC_PATH", EVIL)
    real = launch_plan(lab_design, 4)
    hostile = dataclasses.replace(
        real,
        train_args=(EVIL, "--seq-length=$(touch PWNED4)"),
        nccl_env=(("NCCL_IB_HCA", EVIL),),
    )
    monkeypatch.setattr(slurm_scripts, "launch_plan", lambda design, n: hostile)
    files = {Path(f.path).name: f.content for f in slurm.slurm_files(lab_design)}
    bin_dir = tmp_path / "bin"
    log = tmp_path / "argv.log"
    record = f'for a in "$@"; do printf "%s\\0" "$a"; done >> {log}'
    _fake(bin_dir, "scontrol", "echo gpu-0001")
    _fake(bin_dir, "srun", f'shift; printf "%s\\0" "NCCL=$NCCL_IB_HCA" >> {log}; {record}')
    _fake(bin_dir, Path(evil_path).name, record)
    work = tmp_path / "work"
    work.mkdir()
    path = f"{bin_dir}:/usr/bin:/bin"
    for name in ("train.sbatch", "clusterforge-healthcheck.sh", "clusterforge-prolog.sh"):
        script = work / name
        script.write_text(files[name])
        out = _run(script, work, path)
        assert out.returncode == 0, (name, out.stderr)
    assert not list(work.glob("PWNED*")) and not list(tmp_path.glob("PWNED*"))
    words = log.read_text().split("\0")
    assert EVIL in words and "--seq-length=$(touch PWNED4)" in words
    assert f"NCCL={EVIL}" in words


def test_generated_scripts_parse(lab_design: Design, tmp_path: Path) -> None:
    for f in render(lab_design):
        if f.path.endswith((".sh", ".sbatch")):
            script = tmp_path / Path(f.path).name
            script.write_text(f.content)
            out = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
            assert out.returncode == 0, (f.path, out.stderr)
