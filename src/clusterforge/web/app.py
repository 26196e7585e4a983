"""The local planner: a FastAPI app (https://fastapi.tiangolo.com/) around one spec.

``GET /`` is the spec as a form beside its report; each change is posted to ``/api/form``,
which validates it, plans the design and renders the report again (without the simulation
studies, so it stays interactive). Every problem of the form comes back at its field, with
the change that fixes it where one is known (:mod:`clusterforge.web.check`); an unchanged
spec is not planned again, and only the report sections that changed are reloaded
(:mod:`clusterforge.web.sections`). ``GET /optimize`` searches an optimize spec and loads
a front point into the planner (:mod:`clusterforge.web.optimize`). Requests pass
:mod:`clusterforge.web.guard` first. ``POST /api/plan`` is the JSON API for scripts, described
at ``/openapi.json``; ``/download/...`` serves the spec and every output file. Nothing is
loaded from outside: Swagger UI and ReDoc, which come from a CDN, are switched off.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import yaml
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field

from clusterforge.assess import QUICK, REPORT, Assessment, AssessOptions, assess
from clusterforge.design import Design, plan
from clusterforge.errors import ClusterforgeError
from clusterforge.report.files import assessed_design_data
from clusterforge.report.format import money
from clusterforge.report.html import build_report, render_html
from clusterforge.spec import ClusterSpec, default_spec, parse_spec
from clusterforge.web.check import check_form
from clusterforge.web.guard import RequestGuard, host_names
from clusterforge.web.optimize import optimize_routes
from clusterforge.web.page import planner_page
from clusterforge.web.sections import ReportParts, changed_sections

__all__ = ["FormResult", "FormSubmission", "PlanResult", "Planner", "create_app", "planner_app"]

MEDIA_TYPES = {".json": "application/json", ".csv": "text/csv", ".md": "text/markdown",
               ".svg": "image/svg+xml", ".yaml": "application/yaml", ".html": "text/html",
               ".dot": "text/vnd.graphviz", ".drawio": "application/vnd.jgraph.mxfile"}  # fmt: skip


class FormSubmission(BaseModel):
    """The planner form: values by dotted field path, and which optional sections are on."""

    values: dict[str, Any] = Field(description="Field path (e.g. 'facility.max_rack_kw') -> value")
    enabled: dict[str, bool] = Field(default_factory=dict, description="Optional sections on")


class FormResult(BaseModel):
    """What a form change did: the errors by field path, or the new design's headline."""

    ok: bool
    errors: dict[str, str] = Field(default_factory=dict, description="'' = the whole spec")
    fixes: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Error path -> the field values that remove that error (one-click fix)",
    )
    headline: str = ""
    version: int = Field(0, description="Report version: GET /report.html?v=<version>")
    changed: list[str] | None = Field(
        None,
        description="Report sections that changed (GET /report/section/<id>); "
        "None: reload the whole report",
    )
    elapsed_s: float = Field(0.0, description="Time to validate, plan and render, seconds")


class PlanResult(BaseModel):
    """A planned design: the whole design model as JSON and its findings."""

    name: str
    num_training_gpus: int
    capex_usd: float
    findings: list[dict[str, Any]]
    design: dict[str, Any]


@dataclass
class Planner:
    """The planner's state: the current spec, its design and its rendered report."""

    spec: ClusterSpec
    assessment: Assessment
    report_html: str
    version: int = 0

    @property
    def design(self) -> Design:
        return self.assessment.design

    @property
    def parts(self) -> ReportParts:
        return ReportParts.of(self.report_html)

    @classmethod
    def start(cls, spec: ClusterSpec | None) -> Planner:
        spec = spec or default_spec()
        assessment = assess(plan(spec), QUICK)
        return cls(spec, assessment, render_html(build_report(assessment)))

    def update(self, spec: ClusterSpec, design: Design | None = None) -> list[str] | None:
        """Plan ``spec`` (unless its ``design`` is given) and render its report; the state
        changes only when both succeed. Returns the report sections that changed (None: the
        page around them changed too)."""
        if spec == self.spec:
            return []
        assessment = assess(design or plan(spec), QUICK)
        html = render_html(build_report(assessment))
        changed = changed_sections(self.parts, ReportParts.of(html))
        self.spec, self.assessment, self.report_html = spec, assessment, html
        self.version += 1
        return changed


def _headline(design: Design) -> str:
    c = design.compute
    return (
        f"{design.spec.name}: {c.num_training_gpus:,} GPUs in {c.num_nodes:,} nodes, "
        f"{len(design.racks)} racks, {design.fabric.num_switches:,} fabric switches, capex "
        f"{money(design.cost.capex_usd)}, {len(design.findings)} finding(s)"
    )


def create_app(
    spec: ClusterSpec | None = None, hosts: frozenset[str] = host_names("127.0.0.1")
) -> RequestGuard:
    """The planner app for ``spec`` (None: the built-in default), answering only requests
    addressed to one of ``hosts`` (:func:`clusterforge.web.guard.host_names`)."""
    return RequestGuard(planner_app(spec), hosts)


def planner_app(spec: ClusterSpec | None = None) -> FastAPI:
    """The planner's routes, without the request guard."""
    app = FastAPI(
        title="clusterforge planner",
        summary="Plan a GPU cluster from a spec; the JSON API for scripts is POST /api/plan.",
        docs_url=None,
        redoc_url=None,
    )
    planner = Planner.start(spec)
    lock = threading.Lock()
    _page_routes(app, planner, lock)
    _api_routes(app, planner, lock)
    _download_routes(app, planner, lock)
    _optimize_routes(app, planner, lock)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    return app


async def _invalid_request(request: Request, exc: Exception) -> Response:
    """422 naming each bad field, without echoing the submitted values back."""
    assert isinstance(exc, RequestValidationError)
    detail = [
        {"loc": list(err.get("loc", ())), "msg": str(err.get("msg", "")), "type": err.get("type")}
        for err in exc.errors()[:20]
    ]
    return JSONResponse(status_code=422, content={"detail": detail})


def _page_routes(app: FastAPI, planner: Planner, lock: threading.Lock) -> None:
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> str:
        with lock:
            return planner_page(planner.spec, _headline(planner.design), planner.version)

    @app.get("/report.html", response_class=HTMLResponse, include_in_schema=False)
    def report() -> str:
        with lock:
            return planner.report_html

    @app.get("/report/section/{section}", response_class=HTMLResponse, include_in_schema=False)
    def report_section(section: str) -> str:
        with lock:
            sections = planner.parts.sections
        if section not in sections:
            raise HTTPException(404, f"no report section {section[:64]!r}")
        return sections[section]


def _api_routes(app: FastAPI, planner: Planner, lock: threading.Lock) -> None:
    @app.post("/api/form", response_model=FormResult)
    def change(submission: FormSubmission) -> FormResult:
        """Validate the form, plan it and render the report; errors come back by field."""
        start = time.perf_counter()
        check = check_form(submission.values, submission.enabled)
        if check.spec is None or not check.ok:
            return FormResult(ok=False, errors=check.errors, fixes=check.fixes)
        try:
            with lock:
                changed = planner.update(check.spec, check.design)
                headline, version = _headline(planner.design), planner.version
        except ClusterforgeError as exc:
            return FormResult(ok=False, errors={"": str(exc)})
        return FormResult(ok=True, headline=headline, version=version, changed=changed,
                          elapsed_s=time.perf_counter() - start)  # fmt: skip

    @app.post("/api/plan", response_model=PlanResult)
    def plan_spec(spec: ClusterSpec) -> PlanResult:
        """Plan a spec (the YAML spec's fields as JSON); 422 names a bad field."""
        try:
            design = plan(parse_spec(spec.model_dump(mode="json", exclude_unset=True), "body"))
            data = assessed_design_data(assess(design, QUICK))
        except ClusterforgeError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from None
        return PlanResult(
            name=design.spec.name,
            num_training_gpus=design.compute.num_training_gpus,
            capex_usd=design.cost.capex_usd,
            findings=data["findings"],
            design=data,
        )


def _optimize_routes(app: FastAPI, planner: Planner, lock: threading.Lock) -> None:
    """The Optimize panel (:mod:`clusterforge.web.optimize`), whose front points open here."""

    def open_spec(data: dict[str, Any]) -> FormResult | Response:
        start = time.perf_counter()
        try:
            spec = parse_spec(data, "spec")
            design = plan(spec)
            with lock:
                changed = planner.update(spec, design)
                headline, version = _headline(planner.design), planner.version
        except ClusterforgeError as exc:
            return JSONResponse(status_code=422, content={"detail": str(exc)})
        return FormResult(ok=True, headline=headline, version=version, changed=changed,
                          elapsed_s=time.perf_counter() - start)  # fmt: skip

    def headline() -> str:
        with lock:
            return _headline(planner.design)

    optimize_routes(app, open_spec, headline)


def _download_routes(app: FastAPI, planner: Planner, lock: threading.Lock) -> None:
    @app.get("/download/spec.yaml", response_class=PlainTextResponse)
    def spec_yaml() -> Response:
        """The current spec as YAML (the fields that differ from their defaults)."""
        with lock:
            data = planner.spec.model_dump(mode="json", exclude_defaults=True)
        return _attachment("spec.yaml", yaml.safe_dump(data, sort_keys=False))

    @app.get("/download/design.html")
    def full_report() -> Response:
        """The full report, with the simulation, performance and goodput studies (seconds)."""
        with lock:
            design = planner.design
        return _attachment("design.html", render_html(build_report(assess(design, REPORT))))

    @app.get("/download/{name}")
    def output_file(name: str) -> Response:
        """One of the files ``clusterforge plan -o`` writes (design.json, bom.csv, ...)."""
        from clusterforge.report.files import design_files, plan_files

        with lock:
            design = planner.design
        if name not in design_files(design):
            raise HTTPException(
                404, f"no output {name!r}; one of {', '.join(design_files(design))}"
            )
        return _attachment(name, plan_files(assess(design, AssessOptions()))[name])


def _attachment(name: str, text: str) -> Response:
    media = MEDIA_TYPES.get("." + name.rsplit(".", 1)[-1], "text/plain")
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return Response(content=text, media_type=media, headers=headers)
