"""The local planner web app (``clusterforge serve``): the spec as a form, the report
re-rendered on each change, a JSON API with an OpenAPI description, and downloads.

Needs the ``ui`` extra (FastAPI, uvicorn)."""

from clusterforge.web.app import create_app

__all__ = ["create_app"]
