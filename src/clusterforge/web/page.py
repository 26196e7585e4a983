"""The planner page: the spec's form beside its report, rendered with Jinja2."""

from __future__ import annotations

import functools
from importlib import resources

import jinja2

from clusterforge.spec import ClusterSpec
from clusterforge.web.form import form_sections

__all__ = ["planner_page"]


@functools.cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clusterforge.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _asset(name: str) -> str:
    return (resources.files("clusterforge.web") / "templates" / name).read_text(encoding="utf-8")


def planner_page(spec: ClusterSpec, headline: str, version: int) -> str:
    """The whole page: styles and script inlined, the report in a frame from /report.html."""
    return (
        _env()
        .get_template("planner.html.j2")
        .render(
            sections=form_sections(spec),
            headline=headline,
            version=version,
            css=_asset("planner.css"),
            script=_asset("planner.js"),
        )
    )
