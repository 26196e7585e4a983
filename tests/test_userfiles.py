"""The tool never harms the machine it runs on: writes never replace a device, a pipe or a
link with a regular file, keep the umask's permissions, and reads are capped."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from clusterforge.cli.main import main
from clusterforge.errors import CheckError, SpecError
from clusterforge.userfiles import read_capped, write_file

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="making a device node needs root")
LAB = str(Path(__file__).parent.parent / "examples" / "lab-8-gpu.yaml")


def _char_device(path: Path, major: int, minor: int) -> Path:
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
    return path


@needs_root
def test_report_to_a_null_device_writes_into_it_and_keeps_it_a_device(tmp_path, capsys):
    """`report -o /dev/null` as root used to rename a file over the device node."""
    null = _char_device(tmp_path / "null", 1, 3)  # a /dev/null of our own
    assert main(["report", LAB, "-o", str(null)]) == 0
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert os.major(os.stat(null).st_rdev) == 1 and os.minor(os.stat(null).st_rdev) == 3


@needs_root
def test_a_full_device_is_a_one_line_error_not_a_file(tmp_path):
    full = _char_device(tmp_path / "full", 1, 7)
    with pytest.raises(SpecError, match="No space left"):
        write_file(full, "x" * 100_000)
    assert stat.S_ISCHR(os.stat(full).st_mode)


@needs_root
@pytest.mark.parametrize(
    ("kind", "device", "words"),
    [
        (stat.S_IFBLK, (7, 0), "block device"),  # a loop disk
        (stat.S_IFCHR, (1, 1), "character device 1,1"),  # /dev/mem
    ],
)
def test_disks_and_memory_are_refused_untouched(tmp_path, kind, device, words):
    node = tmp_path / "dev"
    os.mknod(node, 0o600 | kind, os.makedev(*device))
    with pytest.raises(SpecError, match=words):
        write_file(node, "<html>")
    assert stat.S_IFMT(os.stat(node).st_mode) == kind


def test_a_pipe_is_written_in_place(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so the writer's open does not block
    try:
        write_file(fifo, "hello")
        assert os.read(reader, 100) == b"hello"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_link_is_followed_and_stays_a_link(tmp_path):
    target = tmp_path / "real.html"
    target.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    assert write_file(link, "new") == target
    assert link.is_symlink() and target.read_text() == "new"


def test_a_dangling_link_creates_its_target(tmp_path):
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "later.html")
    write_file(link, "made")
    assert link.is_symlink() and (tmp_path / "later.html").read_text() == "made"


def test_a_new_file_gets_the_umask_mode_and_an_old_one_keeps_its_own(tmp_path):
    old_umask = os.umask(0o022)
    try:
        fresh = write_file(tmp_path / "new.html", "a")
        kept = tmp_path / "kept.html"
        kept.write_text("b")
        kept.chmod(0o640)
        write_file(kept, "c")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(fresh).st_mode) == 0o644  # was 0600 from mkstemp
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o640


def test_plan_output_folder_keeps_a_link_inside_it(tmp_path):
    out = tmp_path / "out"
    assert main(["plan", LAB, "-o", str(out)]) == 0
    elsewhere = tmp_path / "design.json"
    (out / "design.json").rename(elsewhere)
    (out / "design.json").symlink_to(elsewhere)
    assert main(["plan", LAB, "-o", str(out)]) == 0
    assert (out / "design.json").is_symlink() and elsewhere.read_text().startswith("{")


def test_reads_stop_at_the_cap():
    start = time.perf_counter()
    with pytest.raises(CheckError, match="larger than 1 MiB"):
        read_capped(Path("/dev/zero"), 1024 * 1024, "XID policy file", CheckError)
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("option", ["--nvml-fixture", "--xid-policy"])
def test_check_refuses_an_endless_input_file(option, capsys):
    """`check --nvml-fixture /dev/zero` read 5.8 GiB before failing."""
    assert main(["check", option, "/dev/zero", "--node", "n1"]) == 1
    err = capsys.readouterr().err
    assert "/dev/zero" in err and "larger than" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["plan", "predict", "simulate", "goodput", "report"])
def test_a_5000_digit_integer_is_one_error_line(tmp_path, command, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"num_gpus: {'9' * 5000}\nnode: dgx-h100\n")
    assert main([command, str(spec)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "line 1" in err and "5,000 characters" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["goodput", LAB, "--days", "nan"],  # a NaN passed click's range check: a traceback
        ["check", "--node", "n1", "--min-free-gib", "inf", "--mount", "/"],
        ["check", "--node", "n1", "--min-free-gib", "nan", "--mount", "/"],
    ],
)
def test_numbers_on_the_command_line_must_be_finite(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "not a finite number" in err and "Traceback" not in err


def test_a_nanosecond_checkpoint_interval_is_bounded_by_a_step(tmp_path, capsys):
    """`reliability.checkpoint_interval_s: 1e-9` reached 5.9 GiB and a MemoryError: a
    checkpoint falls between steps, so the interval is at least one step, and the
    Monte Carlo's size is checked before it allocates."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(Path(LAB).read_text() + "reliability:\n  checkpoint_interval_s: 1.0e-9\n")
    start = time.perf_counter()
    assert main(["goodput", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "set in the spec" in out and "(1 step)" in out
    assert time.perf_counter() - start < 60


def test_a_life_too_long_to_simulate_is_refused_before_it_allocates():
    """A job that checkpoints far more than it trains: one life alone is more interruptions
    than the Monte Carlo holds, said before any array is made."""
    from clusterforge.errors import PlanError
    from clusterforge.goodput.montecarlo import LifeParams, simulate_lives

    p = LifeParams(work_s=86400.0 * 20, tau_s=1e-9, delta_s=24.0, restart_s=900.0,
                   mtbf_s=6.4e3 * 3600, p_spare=0.5, num_spares=0, repair_s=5 * 86400.0)  # fmt: skip
    with pytest.raises(PlanError, match="checkpoint_interval_s"):
        simulate_lives(p, runs=1000)


def test_ten_years_of_a_hundred_thousand_lives_is_refused_with_the_runs_that_fit(capsys):
    """`goodput --days 3650 --runs 100000` on the 100k example reached 5.2 GiB."""
    spec = str(Path(LAB).parent / "colossus-100k-h100.yaml")
    assert main(["goodput", spec, "--days", "3650", "--runs", "100000"]) == 1
    err = capsys.readouterr().err
    assert "lower the runs to" in err and "Traceback" not in err


def test_generate_follows_a_linked_output_folder_and_keeps_the_link(tmp_path):
    """`out/slurm -> /etc/slurm`: the linked folder gets the files, the link stays a link
    (renaming it aside then removing it as a folder raised mid-write)."""
    from clusterforge.generate.bundle import write_files
    from clusterforge.generate.common import GeneratedFile

    real = tmp_path / "etc-slurm"
    real.mkdir()
    (real / "old.conf").write_text("old")
    out = tmp_path / "out"
    out.mkdir()
    (out / "slurm").symlink_to(real)
    write_files([GeneratedFile("slurm/slurm.conf", "ClusterName=x\n")], out)
    assert (out / "slurm").is_symlink()
    assert (real / "slurm.conf").read_text() == "ClusterName=x\n"
    assert not (real / "old.conf").exists()  # a folder is replaced as a whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["etc-slurm", "out"]


def test_generate_refuses_to_rename_a_special_file_away(tmp_path):
    from clusterforge.errors import GenerateError
    from clusterforge.generate.bundle import write_files
    from clusterforge.generate.common import GeneratedFile

    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "slurm")
    with pytest.raises(GenerateError, match="special file"):
        write_files([GeneratedFile("slurm/slurm.conf", "x\n")], out)
    assert stat.S_ISFIFO(os.stat(out / "slurm").st_mode)
