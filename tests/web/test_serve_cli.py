"""``clusterforge serve``: options reach the server, bad specs fail before it starts, and a
missing web dependency names the extra to install."""

from __future__ import annotations

import sys

import pytest

from clusterforge.cli import serve
from clusterforge.cli.main import main
from tests.conftest import EXAMPLES


def test_serve_plans_the_spec_and_binds_to_loopback_by_default(monkeypatch, capsys):
    import uvicorn

    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw, app=app))
    assert main(["serve", str(EXAMPLES / "lab-8-gpu.yaml"), "--port", "8123"]) == 0
    assert (seen["host"], seen["port"]) == ("127.0.0.1", 8123)
    assert seen["app"].app.title == "clusterforge planner"
    assert seen["app"].hosts == {"localhost", "127.0.0.1", "::1"}
    assert "http://127.0.0.1:8123/" in capsys.readouterr().out


def test_serve_answers_the_names_it_is_told(monkeypatch):
    import uvicorn

    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw, app=app))
    args = ["serve", "--host", "0.0.0.0", "--allow-host", "planner.lab"]
    assert main(args) == 0
    assert seen["app"].hosts == {"localhost", "127.0.0.1", "::1", "planner.lab"}


def test_serve_refuses_a_bad_spec_before_serving(monkeypatch, tmp_path, capsys):
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("served a bad spec"))
    spec = tmp_path / "bad.yaml"
    spec.write_text("num_gpus: 0\nnode: dgx-h100\n")
    assert main(["serve", str(spec)]) == 1
    assert "num_gpus" in capsys.readouterr().err


def test_serve_without_the_ui_extra_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    assert main(["serve"]) == 1
    assert "pip install 'clusterforge[ui]'" in capsys.readouterr().err
    assert serve.INSTALL_HINT in "pip install 'clusterforge[ui]'"
