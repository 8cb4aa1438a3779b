"""The Flask application factory: the one place where settings, services and routes come together."""

from __future__ import annotations

import re
import sys

from flask import Flask, request
from flask_cors import CORS

from ..errors import GRAPH_HEADER
from ..dashboard import blueprint as dashboard
from ..logs import configure_logging
from ..service import Services, build_services
from ..settings import Settings, load_settings
from . import consolidate, docs, entities, errors, health, inspection, memories, metrics, proposals, recall
from .strict_request import StrictRequest, refuse_unreadable_head

REQUEST_SWITCH_SECONDS = 0.001  # how long a thread runs before one waiting for the GIL gets it


def create_app(settings: Settings | None = None, services: Services | None = None,
               start_scheduler: bool | None = None) -> Flask:
    """Build an app around its own services; what computes runs starts as the settings say (the scheduler
    thread, or a worker child: service.RunPlacement.start), unless `start_scheduler` is False."""
    settings = settings or load_settings()
    configure_logging(settings)
    services = services or build_services(settings)
    app = Flask("consolidation", static_folder=None)  # no app-wide /static route: /docs serves its own files
    app.request_class = StrictRequest
    # An API answers the path it was asked: `//memory//x` is a 404, not a redirect page (HTML) to `/memory/x`.
    app.url_map.merge_slashes = False
    app.config["MAX_CONTENT_LENGTH"] = settings.max_request_bytes
    app.json.sort_keys = False
    app.extensions["consolidation"] = services
    errors.register(app)
    for blueprint in (consolidate.blueprint, inspection.blueprint, proposals.blueprint, entities.blueprint,
                      memories.blueprint, recall.blueprint,
                      health.blueprint, metrics.blueprint, docs.blueprint, dashboard):
        app.register_blueprint(blueprint)
    app.after_request(metrics.count_request)
    app.before_request(services.demand.enter)
    app.before_request(lambda: refuse_unreadable_head(request))
    app.teardown_request(lambda _error: services.demand.leave())
    _allow_origins(app, settings.cors_origins)
    # A run's Python holds the GIL while requests wait: each of a request's store round trips waited up to the
    # 5 ms default for it back. 1 ms halved the status p99 during a 100k run (50 -> 28 ms), at no cost to the run.
    sys.setswitchinterval(REQUEST_SWITCH_SECONDS)
    services.start_consolidating(start_scheduler)
    return app


def _allow_origins(app: Flask, origins: tuple[str, ...]) -> None:
    """Cross-origin calls from exactly these origins (none by default); the token travels in a header, never
    in a cookie, so credentials are not allowed."""
    if not origins:
        return
    # Compiled exact patterns: flask-cors would read a string holding "[" (an IPv6 host) as a regular expression.
    CORS(app, origins=[re.compile(re.escape(origin) + r"\Z", re.IGNORECASE) for origin in origins],
         allow_headers=["Authorization", "Content-Type", GRAPH_HEADER], supports_credentials=False, max_age=600,
         vary_header=True)
