"""Every command line in README.md runs as printed (from a copy of the repository root).

Commands come from the ```bash blocks and from inline code spans that start with
``clusterforge``; the few that need GPU nodes, a Slurm controller or a long-running server
are listed in SKIP with the reason.  Each runs in-process through ``clusterforge.cli.main``.
"""

from __future__ import annotations

import re
import shlex

import pytest

from clusterforge.cli.main import main
from tests.conftest import REPO

README = REPO / "README.md"

SKIP = {
    "--action slurm-drain": "drains a node through scontrol: needs a Slurm controller",
    "--action k8s-taint": "taints a node through the Kubernetes API: needs a cluster",
    "clusterforge exporter": "serves metrics until stopped: a long-running server",
    "clusterforge serve": "serves the planner until stopped: a long-running server "
    "(tests/web runs it on a loopback port)",
    "accept examples/colo-512-h100.yaml --via slurm": "submits jobs: needs the cluster's Slurm "
    "(tests/accept runs it on an emulated one)",
}
# Known defects outside the CLI, tracked here so the line flips to a failure once fixed.
KNOWN_BROKEN: dict[str, str] = {}
# ``check`` inspects the GPUs of this machine: 0 healthy, 1 unhealthy, 2 could not check.
EXIT_CODES = {"clusterforge check": {0, 1, 2}}
PLACEHOLDER = re.compile(r"[\[\]$<>]|\.\.\.|\bSPEC\b|\bOUT\b")


def readme_commands() -> list[str]:
    """Command lines of the README: fenced bash lines and inline spans, comments removed."""
    text = README.read_text()
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        lines += [line.strip() for line in block.splitlines()]
    lines += re.findall(r"`(clusterforge [^`]+)`", text)
    commands = [" ".join(shlex.split(line, comments=True)) for line in lines]
    runnable = [c for c in commands if c.startswith("clusterforge ") and not PLACEHOLDER.search(c)]
    return list(dict.fromkeys(runnable))  # each once, in README order


def test_readme_has_commands():
    assert len(readme_commands()) >= 8


@pytest.mark.parametrize("line", readme_commands())
def test_every_yaml_named_in_a_readme_command_exists(line):
    for token in shlex.split(line):
        if token.endswith((".yaml", ".yml")) and not token.startswith("/etc/"):
            assert (REPO / token).is_file(), f"README names {token}, which does not exist"


@pytest.mark.slow
@pytest.mark.parametrize("line", readme_commands())
def test_readme_command_runs(line, tmp_path, monkeypatch, capsys, request):
    reason = next((why for key, why in SKIP.items() if key in line), None)
    if reason:
        pytest.skip(reason)
    broken = next((why for key, why in KNOWN_BROKEN.items() if key in line), None)
    if broken:
        request.node.add_marker(pytest.mark.xfail(reason=broken, strict=True))
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    code = main(shlex.split(line)[1:])
    err = capsys.readouterr().err
    expected = next((codes for key, codes in EXIT_CODES.items() if line.startswith(key)), {0})
    assert code in expected, f"{line}\nexit {code}\n{err[-2000:]}"
    assert "Traceback" not in err


def test_readme_lists_every_file_plan_writes():
    from clusterforge.design import plan
    from clusterforge.report.files import design_files
    from clusterforge.spec import default_spec

    text = README.read_text()
    section = text[text.index("`plan -o OUT` writes") :][:400]
    names = design_files(plan(default_spec()))
    assert len(names) >= 7
    for name in names:
        assert f"`{name}`" in section, f"README does not list {name}"
