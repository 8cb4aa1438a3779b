"""GET /metrics in Prometheus text format, and the per-request counter behind it."""

from __future__ import annotations

from flask import Blueprint, Response, request
from prometheus_client import CONTENT_TYPE_LATEST

from ..metrics import exposition, record_request
from .context import services

blueprint = Blueprint("metrics", __name__)


@blueprint.get("/metrics")
def metrics_text():
    # Unauthenticated like /health, for scrapers: it carries counts and times, never memory content or secrets.
    svc = services()
    return Response(exposition(svc, svc.settings.prometheus_multiproc_dir), headers={"Content-Type": CONTENT_TYPE_LATEST})


def count_request(response: Response) -> Response:
    """Count every answered request by its route pattern (not its path: ids would explode the label set)."""
    route = request.url_rule.rule if request.url_rule else "unmatched"
    record_request(request.method, route, response.status_code)
    return response
