"""GET /metrics in Prometheus text format, and the per-request counter behind it."""

from __future__ import annotations

from flask import Blueprint, Response, request
from prometheus_client import CONTENT_TYPE_LATEST

from ..metrics import exposition, record_request
from .context import services
from .models import StoreUnavailableBody
from .openapi import PUBLIC, amend, answers, api

blueprint = Blueprint("metrics", __name__)
PROMETHEUS_TEXT = {"responses": {"200": {"description": "Prometheus text exposition format 0.0.4", "content": {
    CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}}}}}


@blueprint.get("/metrics")
@api.validate(resp=answers("HTTP_200", HTTP_503=StoreUnavailableBody, common_errors=False), security=PUBLIC,
              tags=["operations"])
@amend(PROMETHEUS_TEXT)
def metrics_text():
    """Runs by task and outcome, task durations, memories handled, the lease holder, store health, requests."""
    # Unauthenticated like /health, for scrapers: it carries counts and times, never memory content or secrets.
    svc = services()
    return Response(exposition(svc, svc.settings.prometheus_multiproc_dir), headers={"Content-Type": CONTENT_TYPE_LATEST})


def count_request(response: Response) -> Response:
    """Count every answered request by its route pattern (not its path: ids would explode the label set)."""
    route = request.url_rule.rule if request.url_rule else "unmatched"
    record_request(request.method, route, response.status_code)
    return response
