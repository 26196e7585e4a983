"""The HTTP adapter: instant queries against Prometheus's API (``/api/v1/query``).

Prometheus HTTP API (prometheus.io/docs/prometheus/latest/querying/api/): a GET or a
form-encoded POST with ``query`` and ``time`` returns ``{"status": "success", "data": {"resultType": "vector",
"result": [{"metric": {...}, "value": [t, "v"]}]}}``.  Standard library only, so the
command runs on a bare login node.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from clusterforge.errors import AdapterError, SpecError

__all__ = ["PrometheusClient", "PrometheusError", "PrometheusUnreachableError", "Sample"]

# One instant query's answer: a vector of one sample per GPU of 100,000 GPUs is about 30 MB
# of JSON; a larger answer is a query gone wrong, not a job to diagnose.
MAX_RESPONSE_BYTES = 256 * 2**20


class PrometheusError(AdapterError):
    """Prometheus answered, but not with a result (a bad query, an error status)."""


class PrometheusUnreachableError(AdapterError):
    """Nothing answered at the Prometheus address."""


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class PrometheusClient:
    """Instant queries at one fixed evaluation time (seconds since the epoch)."""

    base_url: str
    at_s: float
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        scheme = urllib.parse.urlsplit(self.base_url).scheme
        if scheme not in ("http", "https"):
            raise SpecError(
                f"Prometheus address {self.base_url!r} must start with http:// or https://"
            )

    def _capped(self, raw: bytes) -> bytes:
        if len(raw) > MAX_RESPONSE_BYTES:
            raise PrometheusError(
                f"Prometheus at {self.base_url} answered more than "
                f"{MAX_RESPONSE_BYTES // 2**20} MiB for one query; narrow --nodes or --job"
            )
        return raw

    def _post(self, path: str, params: dict[str, str]) -> Any:
        """POST the form: a host-list matcher for thousands of nodes outgrows a GET URL."""
        body = urllib.parse.urlencode(params).encode()
        request = urllib.request.Request(self.base_url.rstrip("/") + path, data=body)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(self._capped(response.read(MAX_RESPONSE_BYTES + 1)))
        except urllib.error.HTTPError as exc:  # 400/422/503 carry a JSON error body
            try:
                body = json.loads(exc.read(MAX_RESPONSE_BYTES))
            except ValueError:
                raise PrometheusError(f"Prometheus at {self.base_url}: HTTP {exc.code}") from None
            raise PrometheusError(f"Prometheus: {body.get('error', exc.reason)}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PrometheusUnreachableError(
                f"cannot reach Prometheus at {self.base_url}: {reason}"
            ) from None
        except ValueError:
            raise PrometheusError(f"{self.base_url} did not answer with JSON") from None

    def query(self, promql: str) -> list[Sample]:
        """An instant vector; NaN and infinite values (0/0, x/0) are left out."""
        body = self._post("/api/v1/query", {"query": promql, "time": f"{self.at_s:.3f}"})
        if body.get("status") != "success":
            raise PrometheusError(f"Prometheus: {body.get('error', 'query failed')}")
        data = body["data"]
        if data.get("resultType") != "vector":
            raise PrometheusError(
                f"expected a vector from {promql!r}, got {data.get('resultType')}"
            )
        samples = [Sample(dict(r["metric"]), float(r["value"][1])) for r in data["result"]]
        return [s for s in samples if math.isfinite(s.value)]
