"""The planner's Optimize panel: an optimize spec edited as YAML, searched in this process,
its front drawn and tabled, and any front point loaded into the planner.

``GET /optimize`` is the page; ``POST /api/optimize`` (``{"spec_yaml": ...}``) runs the
search; ``POST /api/optimize/open`` (``{"spec": {...}}``, a front point's spec) sets the
planner's spec, as a form change does. A request must not hold the server for minutes, so
a search runs on one worker (this process) and a space of more than :data:`MAX_DESIGNS`
designs to plan is refused with 422 naming the dimension to narrow; one search runs at a
time. Every problem of the spec comes back as 422 with the field it names, never a traceback.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field

from clusterforge.assess.optimize import OptimizeSpec, SerialEngine, optimize, parse_optimize_spec
from clusterforge.assess.optimize.space import families, variants
from clusterforge.catalog import load_catalog
from clusterforge.errors import ClusterforgeError
from clusterforge.report.html.charts import inline_svg
from clusterforge.report.optimize import front_data, front_picture, search_summary
from clusterforge.spec.safe_yaml import load_yaml_text
from clusterforge.web.page import asset, templates

__all__ = [
    "DEFAULT_OPTIMIZE_YAML",
    "MAX_DESIGNS",
    "OptimizeRequest",
    "OptimizeResponse",
    "OptimizeTooLarge",
    "check_search_size",
    "optimize_page",
    "optimize_routes",
    "parse_request_spec",
]

# designs planned at most (families x cooling and spare variants); each takes ~0.35 s on
# one core here (llama3-70b on 512 to 16,384 H100s, measured with optimize() on this machine),
# so a search stays under ~25 s
MAX_DESIGNS = 64
SOURCE = "spec_yaml"
# "spec_yaml: job.model: ...", "spec_yaml: objective (got ...)", "spec_yaml:
# search.num_gpus.function-after[...]": the field path before the message
_FIELD = re.compile(rf"^{SOURCE}: ([a-z_]+(?:\.[a-z_0-9]+)*?)(?=:| \(|\.[a-z_-]+\[)")

# examples/optimize/build-or-rent.yaml, the panel's starting spec (a test keeps them equal)
DEFAULT_OPTIMIZE_YAML = """\
# "At 20-30 H100s the cloud is cheaper; at 100+ you build." A 70B model trained on 300B
# tokens, H100 only, 16 to 512 GPUs, built or rented; cost per token is the objective.
name: h100-build-or-rent
job:
  model: llama3-70b
  tokens_b: 300
  global_batch: 512
constraints:
  budget_usd: 20000000
  max_rack_kw: 40
objective: cost-per-token
search:
  nodes: [dgx-h100]
  num_gpus: [16, 32, 128, 256, 512]
  fabrics: [infiniband]
  spare_fractions: [0.05]
  procurement: [build, reserved, on-demand]
"""


class OptimizeRequest(BaseModel):
    """An optimize spec, as the YAML ``clusterforge optimize`` reads."""

    spec_yaml: str = Field(description="The optimize spec's YAML text")


class OptimizeResponse(BaseModel):
    """The front (rows as ``optimize --json`` gives them, each with its cluster spec), the
    winner's reasons, the search's counts and the chart as an inline SVG element."""

    name: str
    objective: str
    front: list[dict[str, Any]]
    winner: dict[str, Any] | None
    search: dict[str, int]
    summary: str = Field(description="The search's counts in words")
    chart_svg: str = Field(description="The front's chart, an inline SVG element ('' if none)")
    elapsed_s: float


class OpenRequest(BaseModel):
    """A cluster spec (a front point's ``spec``) for the planner."""

    spec: dict[str, Any] = Field(description="The cluster spec's fields")


@dataclass(frozen=True)
class OptimizeTooLarge(Exception):
    """The search plans more designs than a request may."""

    field: str
    message: str


def _field_of(message: str) -> str:
    """The spec field a message names ('spec_yaml' when it names none: the YAML itself)."""
    match = _FIELD.match(message)
    if match and match[1].split(".")[0] in OptimizeSpec.model_fields:
        return match[1]
    return SOURCE


def _refuse(message: str, field: str | None = None) -> JSONResponse:
    """422 with the message and the field it names ('spec_yaml': the text as a whole)."""
    return JSONResponse(
        status_code=422, content={"detail": message, "field": field or _field_of(message)}
    )


def parse_request_spec(text: str) -> OptimizeSpec:
    """The YAML text as an optimize spec, within the spec files' limits (size, nesting,
    aliases, unique keys); a :class:`ClusterforgeError` names the field."""
    return parse_optimize_spec(load_yaml_text(text, SOURCE), source=SOURCE)


def check_search_size(spec: OptimizeSpec, limit: int = MAX_DESIGNS) -> None:
    """Raise :class:`OptimizeTooLarge` when the spec's space plans more than ``limit`` designs,
    naming the search dimension with the most values (the one to narrow first)."""
    catalog = load_catalog()
    designs = len(families(spec, catalog)) * len(variants(spec))
    if designs <= limit:
        return
    s = spec.search
    sizes = {
        "search.nodes": len(s.nodes or catalog.nodes.ids()),
        "search.num_gpus": len(s.gpu_counts()),
        "search.fabrics": len(s.fabrics),
        "search.nic_gbit_per_s": len(s.nic_gbit_per_s),
        "search.nics_per_node": len(s.nics_per_node),
        "search.topologies": len(s.topologies),
        "search.oversubscription": len(s.oversubscription),
        "search.cooling": len(s.cooling or [None]),
        "search.spare_fractions": len(set(s.spare_fractions)),
    }
    widest = max(sizes, key=lambda name: sizes[name])
    listed = ", ".join(f"{name.removeprefix('search.')} {n}" for name, n in sizes.items() if n > 1)
    raise OptimizeTooLarge(
        widest,
        f"{widest}: the search plans {designs:,} designs ({listed}), more than the "
        f"{limit} the planner searches in one request; narrow {widest} ({sizes[widest]} "
        "values) or run `clusterforge optimize` on the command line",
    )


def _run(spec: OptimizeSpec) -> OptimizeResponse:
    start = time.perf_counter()
    result = optimize(spec, SerialEngine())
    data = front_data(result)
    chart = inline_svg(front_picture(result, "svg")) if result.feasible else ""
    return OptimizeResponse(
        name=data["name"],
        objective=data["objective"],
        front=data["front"],
        winner=data["winner"],
        search=data["search"],
        summary=search_summary(result),
        chart_svg=chart,
        elapsed_s=time.perf_counter() - start,
    )


def optimize_page(headline: str) -> str:
    """The Optimize page: the spec's text, the Search button, and room for the front."""
    return (
        templates()
        .get_template("optimize.html.j2")
        .render(
            headline=headline,
            spec_yaml=DEFAULT_OPTIMIZE_YAML,
            max_designs=MAX_DESIGNS,
            css=asset("planner.css"),
            script=asset("optimize.js"),
        )
    )


def optimize_routes(app: FastAPI, open_spec: Any, headline: Any) -> None:
    """Add the panel's routes: ``open_spec(data)`` loads a cluster spec's fields into the
    planner and returns its answer; ``headline()`` is the planner's current headline."""
    busy = threading.Lock()

    @app.get("/optimize", response_class=HTMLResponse, include_in_schema=False)
    def page() -> str:
        return optimize_page(headline())

    @app.post("/api/optimize", response_model=OptimizeResponse)
    def search(request: OptimizeRequest) -> OptimizeResponse | Response:
        """Search the optimize spec (one worker, at most MAX_DESIGNS designs planned); 422
        names the field of a bad spec or the dimension of a space too large."""
        try:
            spec = parse_request_spec(request.spec_yaml)
            check_search_size(spec)
        except OptimizeTooLarge as exc:
            return _refuse(exc.message, exc.field)
        except ClusterforgeError as exc:
            return _refuse(str(exc))
        if not busy.acquire(blocking=False):
            raise HTTPException(429, "a search is running; send this one when it has finished")
        try:
            return _run(spec)
        except ClusterforgeError as exc:
            return _refuse(str(exc))
        finally:
            busy.release()

    @app.post("/api/optimize/open")
    def open_point(request: OpenRequest) -> Any:
        """Set the planner's spec to a front point's (as a form change does)."""
        return open_spec(request.spec)
