"""Options that read the same in every command: -o is --output everywhere (generate's old
--out still works, hidden)."""

from __future__ import annotations

import click

from clusterforge.cli.main import COMMANDS, cli


def _command(name: str) -> click.Command:
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    return command


def test_every_o_option_is_called_output():
    for name in COMMANDS:
        for param in _command(name).params:
            if isinstance(param, click.Option) and "-o" in param.opts:
                assert "--output" in param.opts, name


def test_generate_still_takes_out_but_shows_only_output():
    command = _command("generate")
    ctx = command.make_context("generate", ["--out", "folder"])
    assert str(ctx.params["out_alias"]) == "folder"
    shown = command.get_help(click.Context(command))
    assert "--output" in shown and "--out " not in shown and "--out," not in shown
